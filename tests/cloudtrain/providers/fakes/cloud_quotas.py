"""A fake Cloud Quotas API v1: a real gRPC server on 127.0.0.1 speaking ``google.cloud.cloudquotas_v1``.

The real ``CloudQuotasClient`` (google-cloud-quotas) talks to it over an insecure channel,
so requests and responses go through the real protobuf (de)serialisation. It serves
``ListQuotaInfos`` for one service, paginated (``page_size`` is honoured, a small
``PAGE_SIZE`` otherwise, so the client's pager is exercised), with the ``QuotaInfo``
shape the API returns: the quota id, the metric (``aiplatform.googleapis.com/...``) and
one ``dimensions_infos`` entry per region (``details.value``: the limit; -1 unlimited)
(cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos).
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.cloud import cloudquotas_v1

from .vertex_jobservice import Failure

SERVICE = "google.api.cloudquotas.v1.CloudQuotas"
PAGE_SIZE = 2


@dataclass
class FakeCloudQuotas:
    """The quotas of each project's services; ``serve()`` serves them on a free loopback port."""

    infos: dict[str, list[cloudquotas_v1.QuotaInfo]] = field(default_factory=lambda: defaultdict(list))
    requests: list[tuple[str, Any]] = field(default_factory=list)
    failures: dict[str, deque[Failure]] = field(default_factory=lambda: defaultdict(deque))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set_quota(self, project: str, metric: str, limits: dict[str, int], *, quota_id: str = "") -> None:
        """Give ``project`` the quota ``metric`` (``service/name``) with a limit per region."""
        service, name = metric.split("/", 1)
        parent = f"projects/{project}/locations/global/services/{service}"
        quota_id = quota_id or "".join(part.title() for part in name.split("_")) + "PerProjectPerRegion"
        info = cloudquotas_v1.QuotaInfo(
            name=f"{parent}/quotaInfos/{quota_id}",
            quota_id=quota_id,
            metric=metric,
            service=service,
            is_precise=True,
            container_type=cloudquotas_v1.QuotaInfo.ContainerType.PROJECT,
            dimensions=["region"],
            dimensions_infos=[
                cloudquotas_v1.DimensionsInfo(
                    dimensions={"region": region}, details=cloudquotas_v1.QuotaDetails(value=value)
                )
                for region, value in limits.items()
            ],
        )
        with self._lock:
            self.infos[parent].append(info)

    def fail(
        self, method: str, code: grpc.StatusCode, times: int = 1, *, message: str = "", reason: str = ""
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail with ``code`` (and Google's ``message``)."""
        self.failures[method].extend([Failure(code, message, reason)] * times)

    def reset(self) -> None:
        with self._lock:
            self.infos.clear()
            self.requests.clear()
            self.failures.clear()

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.unary_unary_rpc_method_handler(
            self._list,
            request_deserializer=cloudquotas_v1.ListQuotaInfosRequest.deserialize,
            response_serializer=cloudquotas_v1.ListQuotaInfosResponse.serialize,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {"ListQuotaInfos": handler}),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            yield f"127.0.0.1:{port}"
        finally:
            server.stop(grace=None)

    def _list(self, request: Any, context: grpc.ServicerContext) -> cloudquotas_v1.ListQuotaInfosResponse:
        with self._lock:
            self.requests.append(("ListQuotaInfos", request))
            if self.failures["ListQuotaInfos"]:
                self.failures["ListQuotaInfos"].popleft().abort(context, "injected failure of ListQuotaInfos")
            infos = list(self.infos.get(request.parent, ()))
        start = int(request.page_token or 0)
        size = request.page_size or PAGE_SIZE
        page = infos[start : start + size]
        token = str(start + size) if start + size < len(infos) else ""
        return cloudquotas_v1.ListQuotaInfosResponse(quota_infos=page, next_page_token=token)
