"""Code-bundle packing against the former approach, measured in the same run.

Generates a project (a CSV of random rows plus small Python modules) and packs it:

- baseline: the former approach, the whole tar built in memory, gzip level 9, hashed;
- cold: ``cloudtrain.bundle.pack`` into an empty cache (streamed to disk);
- warm: the same again, as the next command would (the index answers).

Each measurement runs in a fresh interpreter, so its peak memory is its own. Then the
gzip levels on the same project (the numbers behind ``bundle.LEVEL``), and the command a
user runs: ``cloudtrain submit job.yaml --provider vertex --dry-run`` on a copy of
examples/binary_classifier with the CSV added, twice (target: the second run <= 2 s).

    python benchmarks/bundle_packing.py [--mb 100] [--modules 50] [--skip-cli]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from cloudtrain import bundle

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "binary_classifier"
CLI_TARGET_S = 2.0
LEVELS = (1, 3, 6, 9)


def make_project(root: Path, *, megabytes: int, modules: int) -> Path:
    """A project: ``data/train.csv`` of ``megabytes`` MB of random rows and ``modules`` small modules."""
    rows = random.Random(0)
    block = "".join(
        f"{i},{','.join(f'{rows.gauss(0, 1):.6f}' for _ in range(8))},{rows.randint(0, 1)}\n"
        for i in range(2_000)
    ).encode()  # about 180 KB
    (root / "data").mkdir(parents=True, exist_ok=True)
    with (root / "data" / "train.csv").open("wb") as csv:
        csv.write(b"id,x0,x1,x2,x3,x4,x5,x6,x7,label\n")
        for _ in range(round(megabytes * 1_000_000 / len(block))):
            csv.write(block)  # repeats further apart than gzip's 32 KiB window compress like new rows
    (root / "trainer").mkdir(exist_ok=True)
    for i in range(modules):
        body = "".join(f"def step_{i}_{j}(x):\n    return x * {j} + {i}\n\n\n" for j in range(40))
        (root / "trainer" / f"module_{i:02d}.py").write_text(body)
    return root


def baseline_pack(source: Path, out: Path) -> int:
    """The former ``pack``: the tar and its gzip (level 9) in memory, then hashed and written."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in bundle.collect(source):
            content = (source / rel).read_bytes()
            info = tarfile.TarInfo(rel.as_posix())
            info.size, info.mtime, info.mode = len(content), 315532800, 0o644
            tar.addfile(info, io.BytesIO(content))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, compresslevel=9, filename="") as gz:
        gz.write(raw.getvalue())
    data = packed.getvalue()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{hashlib.sha256(data).hexdigest()[:16]}.tar.gz").write_bytes(data)
    return len(data)


def measure(variant: str, source: Path, out: Path, level: int) -> dict[str, float]:
    """Run one variant here; seconds, bundle bytes and peak resident memory."""
    start = time.perf_counter()
    if variant == "baseline":
        size = baseline_pack(source, out)
    else:
        bundle.LEVEL = level
        size = bundle.pack(source, out).size
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": seconds, "bytes": size, "peak_mb": peak_mb}


def in_fresh_interpreter(
    variant: str, source: Path, out: Path, level: int = bundle.LEVEL
) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", variant, str(source), str(out), str(level)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout))


def cli_runs(source: Path, cache: Path) -> list[float]:
    """Wall seconds of two ``submit --dry-run`` commands on the example with the data added."""
    project = source.parent / "binary_classifier"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("outputs", "__pycache__"))
    shutil.copytree(source / "data", project / "data")
    command = [
        sys.executable,
        "-m",
        "cloudtrain",
        "submit",
        str(project / "job.yaml"),
        "--provider",
        "vertex",
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        subprocess.run([*command, "--dry-run"], check=True, capture_output=True, env=env)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=100, help="size of the generated CSV in MB")
    parser.add_argument("--modules", type=int, default=50, help="small Python modules in the project")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the end-to-end CLI runs")
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        variant, source, out, level = args.measure
        print(json.dumps(measure(variant, Path(source), Path(out), int(level))))
        return
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        source = make_project(work / "project", megabytes=args.mb, modules=args.modules)
        stamp = time.time_ns() - 60 * 10**9  # a project last edited a minute ago
        for path in source.rglob("*"):
            os.utime(path, ns=(stamp, stamp))
        total = sum(path.stat().st_size for path in source.rglob("*") if path.is_file())
        print(
            f"project: {args.mb} MB CSV + {args.modules} modules ({total / 1e6:.1f} MB), level {bundle.LEVEL}\n"
        )
        rows = {
            "baseline: in memory, gzip 9": in_fresh_interpreter("baseline", source, work / "old"),
            f"streamed, gzip {bundle.LEVEL}, cold": in_fresh_interpreter("pack", source, work / "new"),
            f"streamed, gzip {bundle.LEVEL}, warm": in_fresh_interpreter("pack", source, work / "new"),
        }
        base = rows["baseline: in memory, gzip 9"]
        print(f"{'variant':<30} {'seconds':>8} {'speed-up':>9} {'bundle MB':>10} {'peak MB':>8}")
        for name, row in rows.items():
            speedup = base["seconds"] / row["seconds"]
            print(
                f"{name:<30} {row['seconds']:>8.3f} {speedup:>8.1f}x {row['bytes'] / 1e6:>10.1f} {row['peak_mb']:>8.0f}"
            )
        levels = {
            level: in_fresh_interpreter("pack", source, work / f"level{level}", level) for level in LEVELS
        }
        print(f"\n{'gzip level (cold)':<30} {'seconds':>8} {'bundle MB':>10} {'size vs 1':>10}")
        for level, row in levels.items():
            relative = row["bytes"] / levels[1]["bytes"]
            print(f"{level:<30} {row['seconds']:>8.3f} {row['bytes'] / 1e6:>10.1f} {relative:>10.3f}")
        if not args.skip_cli:
            first, second = cli_runs(source, work / "cache")
            verdict = "ok" if second <= CLI_TARGET_S else "OVER"
            print("\ncloudtrain submit job.yaml --provider vertex --dry-run (the example + the CSV)")
            print(f"{'first run (cold)':<30} {first:>8.3f}")
            print(f"{'second run (warm)':<30} {second:>8.3f}  target <= {CLI_TARGET_S} s: {verdict}")


if __name__ == "__main__":
    main()
