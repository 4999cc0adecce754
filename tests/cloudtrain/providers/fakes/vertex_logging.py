"""A fake Cloud Logging ``entries:list`` endpoint on 127.0.0.1, over real HTTP.

It understands the filter the Vertex backend sends (resource type, job ID, lower
timestamp bound joined by AND) and rejects any other, pages results by ``pageSize``
and ``pageToken``, and returns entries in the REST ``LogEntry`` JSON form. It fails on
demand: an HTTP status with Google's JSON error body (``fail``, with an optional
``ErrorInfo`` reason such as ``SERVICE_DISABLED``), or a connection closed without an
answer (``hang_up``). ``reset`` empties it, so one server can serve a whole test session.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CLAUSE = re.compile(r'\A(resource\.type|resource\.labels\.job_id|timestamp)(=|>=)"([^"]*)"\Z')
# google.rpc code names of the statuses tests ask for (google/rpc/code.proto).
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
HANG_UP = 0


@dataclass
class FakeLogging:
    """Log entries by project; ``serve()`` serves them on a free loopback port."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _clock: int = 0

    def fail(self, status: int, times: int = 1, *, message: str = "", reason: str = "") -> None:
        """Answer the next ``times`` requests with HTTP ``status`` (403, 503, ...).

        ``message`` is Google's text (default: "injected HTTP STATUS"); ``reason`` adds an
        ``ErrorInfo`` detail with that reason, as Google sends for a disabled API.
        """
        error: dict[str, Any] = {
            "code": status,
            "message": message or f"injected HTTP {status}",
            "status": STATUS_NAMES.get(status, "UNKNOWN"),
        }
        if reason:
            info = {
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": {"service": "logging.googleapis.com"},
            }
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", **info}]
        self.failures.extend([(status, {"error": error})] * times)

    def hang_up(self, times: int = 1) -> None:
        """Close the connection of the next ``times`` requests without answering."""
        self.failures.extend([(HANG_UP, {})] * times)

    def reset(self) -> None:
        """Forget every entry, request and planned failure; the server keeps serving."""
        fresh = FakeLogging()
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(fresh, name))

    def write(self, project: str, job_number: str, task: str | None, text: str) -> None:
        """Add one entry as Vertex writes it: ``task`` like ``workerpool0-0``, None for the service."""
        self._clock += 1
        entry: dict[str, Any] = {
            "logName": f"projects/{project}/logs/workerpool0-0",
            "insertId": f"id{self._clock:06d}",
            "timestamp": f"2026-12-02T10:00:{self._clock // 1000:02d}.{self._clock % 1000:03d}000Z",
            "resource": {"type": "ml_job", "labels": {"job_id": job_number, "project_id": project}},
            "textPayload": text + "\n",
        }
        if task is not None:
            entry["labels"] = {"ml.googleapis.com/task_name": task}
        self.entries.append(entry)

    def list(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The response to one ``entries:list`` request body; status ``HANG_UP``: none."""
        self.requests.append(body)
        if self.failures:
            return self.failures.pop(0)
        clauses = body.get("filter", "").split(" AND ")
        matches = [CLAUSE.match(clause) for clause in clauses]
        if not all(matches) or body.get("orderBy") != "timestamp asc":
            return 400, {"error": {"code": 400, "message": f"Unsupported filter: {body.get('filter')}"}}
        selected = [e for e in self.entries if all(_holds(m, e) for m in matches if m)]
        start = int(body.get("pageToken") or 0)
        end = start + int(body.get("pageSize", 50))
        page: dict[str, Any] = {"entries": selected[start:end]} if selected[start:end] else {}
        if end < len(selected):
            page["nextPageToken"] = str(end)
        return 200, page

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on 127.0.0.1:<free port> while in the block; yields ``host:port``."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def _holds(match: re.Match[str], entry: dict[str, Any]) -> bool:
    key, op, value = match.groups()
    actual = {
        "resource.type": entry["resource"]["type"],
        "resource.labels.job_id": entry["resource"]["labels"]["job_id"],
        "timestamp": entry["timestamp"],
    }[key]
    return actual == value if op == "=" else actual >= value


def _handler(fake: FakeLogging) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            code, payload = fake.list(body) if self.path == "/v2/entries:list" else (404, {})
            if code == HANG_UP:
                self.close_connection = True
                return
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the recorded requests instead."""

    return Handler
