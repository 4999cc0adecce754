"""A fake AWS Service Quotas on loopback, speaking its JSON 1.1 protocol, requests checked by botocore's model.

moto's Service Quotas backend covers only ``vpc`` (moto 5: ``moto/servicequotas``), so the
SageMaker training quotas are served here: ``ListServiceQuotas`` (the account's applied
values) and ``ListAWSDefaultServiceQuotas`` (AWS's defaults), both paginated with
``NextToken`` (a small page, so the reader's paging is exercised), each quota in the
``ServiceQuota`` shape of botocore's ``service-quotas/2019-06-24/service-2.json``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import sagemaker_model

TARGET = "ServiceQuotasV20190624."
PAGE_SIZE = 2


@dataclass
class FakeServiceQuotas:
    """Applied and default quotas by service code; ``serve()`` puts them on a loopback port."""

    applied: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    defaults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: list[tuple[str, str, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def set_quota(
        self, name: str, value: float, *, code: str, applied: bool = True, service: str = "sagemaker"
    ) -> None:
        """A quota ``name`` (``ml.g5.xlarge for training job usage``) of ``value``, applied or AWS's default."""
        quota = {
            "ServiceCode": service,
            "ServiceName": "Amazon SageMaker",
            "QuotaArn": f"arn:aws:servicequotas:us-east-1:123456789012:{service}/{code}",
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
        with self._lock:
            (self.applied if applied else self.defaults).setdefault(service, []).append(quota)

    def fail(self, operation: str, code: str, status: int = 400) -> None:
        """Answer the next call of ``operation`` with error ``code``."""
        self.failures.append((operation, code, status))

    def reset(self) -> None:
        with self._lock:
            self.applied.clear()
            self.defaults.clear()
            self.calls.clear()
            self.failures.clear()

    def serve(self) -> str:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def handle(self, operation: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append((operation, params))
            failing = next((f for f in self.failures if f[0] == operation), None)
            if failing is not None:
                self.failures.remove(failing)
                return failing[2], {"__type": failing[1], "message": f"Injected {failing[1]}"}
            problems = sagemaker_model.problems(operation, params, "service-quotas")
            if problems:
                return 400, {"__type": "ValidationException", "message": "; ".join(problems)}
            table = {"ListServiceQuotas": self.applied, "ListAWSDefaultServiceQuotas": self.defaults}.get(
                operation
            )
            if table is None:
                return 400, {"__type": "UnknownOperationException", "message": f"{operation} is not served"}
            quotas = table.get(params["ServiceCode"], [])
        start = int(params.get("NextToken") or 0)
        size = params.get("MaxResults") or PAGE_SIZE
        page: dict[str, Any] = {"Quotas": quotas[start : start + size]}
        if start + size < len(quotas):
            page["NextToken"] = str(start + size)
        return 200, page


def _handler(service: FakeServiceQuotas) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            target = self.headers.get("X-Amz-Target", "")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            status, payload = service.handle(target.removeprefix(TARGET), body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read ``service.calls`` instead."""

    return Handler
