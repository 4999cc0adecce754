"""Moving a run's backup between two object stores, against a plain copy between the same two, in one run.

Two moto S3 servers on loopback stand for the buckets of two regions (each its own
process). The source gets a run's backup of ``--gib`` GiB (one weights file plus Keras's
metadata, committed with its manifest as the runtime writes it). Then, each in a fresh
interpreter so its peak memory is its own, alternately:

- plain: what ``aws s3 cp s3://a/k - | aws s3 cp - s3://b/k`` does, per file: boto3's
  GetObject body streamed into ``upload_fileobj`` (s3transfer's defaults);
- cloudtrain: ``cloudtrain.resume.copy.copy_newest``, the copy ``submit --run-id`` and
  ``move_backup`` run: it finds the newest verified backup, streams each file through
  the sha256 check and the progress count, writes the manifest last.

Printed: seconds, MiB/s and peak RSS of each, the best of ``--repeat`` tries, and the
ratio of speeds (target: cloudtrain >= 0.8 of plain) with peak RSS well below the backup's size.

    python benchmarks/backup_copy.py [--gib 1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

SOURCE_BUCKET, DESTINATION_BUCKET = "backups-us-east-1", "backups-eu-west-1"
RUN = "r1"
PREFIX = f"root/runs/{RUN}"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIDLOOPBACK",
    "AWS_SECRET_ACCESS_KEY": "loopback",
    "AWS_DEFAULT_REGION": "us-east-1",
}
MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """A moto S3 server in its own process; its URL once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/moto-api/").close()
            return server, url
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto did not start on {url}")


def client(url: str) -> Any:
    import boto3

    return boto3.session.Session(
        **{k.lower(): v for k, v in CREDENTIALS.items() if k != "AWS_DEFAULT_REGION"}
    ).client("s3", endpoint_url=url, region_name="us-east-1")


def make_backup(url: str, gib: float) -> list[str]:
    """A committed backup of ``gib`` GiB in the source bucket; its keys."""
    from cloudtrain_runtime import manifests

    s3 = client(url)
    s3.create_bucket(Bucket=SOURCE_BUCKET)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoints = Path(tmp) / "checkpoints"
        slot = manifests.new_slot(checkpoints, 3, 0)
        with (slot / "latest.weights.h5").open("wb") as weights:
            for _ in range(int(gib * 1024)):
                weights.write(os.urandom(MIB))
        (slot / "training_metadata.json").write_text('{"epoch": 3, "batch": 0}')
        manifests.commit(slot, manifests.Origin(RUN, "job", 1, "sagemaker"), epoch=3, batch=0, step=300)
        (checkpoints / "cloudtrain-backup.json").write_text(
            json.dumps({"run": RUN, "config": "c", "model": "m"})
        )
        keys = []
        for path in sorted(checkpoints.rglob("*")):
            if path.is_file():
                key = f"{PREFIX}/checkpoints/{path.relative_to(checkpoints).as_posix()}"
                s3.upload_file(str(path), SOURCE_BUCKET, key)
                keys.append(key)
    return keys


def empty_destination(url: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST")).close()
    client(url).create_bucket(Bucket=DESTINATION_BUCKET)


def plain_copy(source: str, destination: str, keys: list[str]) -> int:
    """Each object streamed from GetObject into upload_fileobj, as ``aws s3 cp - `` pipes it."""
    src, dst = client(source), client(destination)
    size = 0
    for key in keys:
        body = src.get_object(Bucket=SOURCE_BUCKET, Key=key)["Body"]
        dst.upload_fileobj(body, DESTINATION_BUCKET, key)
        size += src.head_object(Bucket=SOURCE_BUCKET, Key=key)["ContentLength"]
    return size


def cloudtrain_copy(source: str, destination: str) -> int:
    """The copy a resumed submit runs, between the providers' own S3 stores."""
    from cloudtrain.providers.sagemaker.backups import S3Store
    from cloudtrain.providers.sagemaker.clients import AwsClients
    from cloudtrain.resume.copy import copy_newest

    src = S3Store(AwsClients(region="us-east-1", s3=client(source)), f"s3://{SOURCE_BUCKET}/{PREFIX}")
    dst = S3Store(
        AwsClients(region="eu-west-1", s3=client(destination)), f"s3://{DESTINATION_BUCKET}/{PREFIX}"
    )
    copied = copy_newest(RUN, src, dst, progress=lambda event: None)
    return copied.sent


def child(kind: str, source: str, destination: str, keys: list[str]) -> None:
    """One measurement in this fresh interpreter; prints its seconds, bytes and peak RSS."""
    started = time.perf_counter()
    size = plain_copy(source, destination, keys) if kind == "plain" else cloudtrain_copy(source, destination)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "bytes": size, "peak_rss": peak}))


def measure(kind: str, source: str, destination: str, keys: list[str]) -> dict[str, float]:
    empty_destination(destination)
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, source, destination, json.dumps(keys)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **CREDENTIALS},
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, source, destination, keys = args.child
        child(kind, source, destination, json.loads(keys))
        return
    os.environ.update(CREDENTIALS)
    servers = [start_moto(), start_moto()]
    try:
        (_, source), (_, destination) = servers
        keys = make_backup(source, args.gib)
        runs: dict[str, list[dict[str, float]]] = {"plain": [], "cloudtrain": []}
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(measure(kind, source, destination, keys))
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait()
    best = {kind: min(found, key=lambda r: r["seconds"]) for kind, found in runs.items()}
    for kind, result in best.items():
        rate = result["bytes"] / MIB / result["seconds"]
        print(
            f"{kind:>10}: {result['bytes'] / MIB:,.0f} MiB in {result['seconds']:.1f} s = {rate:.0f} MiB/s, "
            f"peak RSS {result['peak_rss'] / MIB:.0f} MiB (best of {args.repeat})"
        )
    ratio = best["plain"]["seconds"] / best["cloudtrain"]["seconds"]
    print(f"cloudtrain / plain speed: {ratio:.2f} (target >= 0.80)")


if __name__ == "__main__":
    main()
