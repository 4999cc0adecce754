"""Cloud Storage on loopback: gcp-storage-emulator in memory, with the example job's bucket.

google-cloud-storage reaches it through ``STORAGE_EMULATOR_HOST``, its own setting for an
emulator. ``reset`` empties the bucket, so one server can serve a whole test session.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator

from gcp_storage_emulator.server import create_server

BUCKET = "my-bucket"  # the bucket of examples/binary_classifier/job.yaml's vertex.storage_root
# Where it is: the example job's region, as Vertex AI requires (Cloud Storage names locations in capitals).
LOCATION = "US-CENTRAL1"


class FakeStorage:
    """The emulator, in memory; ``serve()`` serves it on a free loopback port."""

    def __init__(self) -> None:
        self._server = create_server("127.0.0.1", 0, in_memory=True, default_bucket=BUCKET)

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve while in the block; yields the URL for ``STORAGE_EMULATOR_HOST``."""
        self._server.start()
        try:
            # The emulator binds port 0 itself and has no public accessor for the port it got.
            url = f"http://127.0.0.1:{self._server._api._httpd.server_address[1]}"
            _locate(url, BUCKET, LOCATION)
            yield url
        finally:
            self._server.stop()

    def reset(self) -> None:
        """Delete every object; the buckets stay."""
        self._server.wipe(keep_buckets=True)


def _locate(url: str, bucket: str, location: str) -> None:
    """Put ``bucket`` in ``location``, through the JSON API's buckets.patch (the emulator creates it in US)."""
    body = json.dumps({"location": location}).encode()
    patch = urllib.request.Request(
        f"{url}/storage/v1/b/{bucket}",
        data=body,
        method="PATCH",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(patch).close()
