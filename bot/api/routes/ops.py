"""GET /healthz, /readyz and /metrics: liveness, readiness (index, store, Chroma, Redis) and Prometheus metrics."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from bot.answer.advisor import Advisor
from bot.api.cluster import Cluster
from bot.api.deps import MetricsDep


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    index_chunks: int
    store: Literal["ok", "unreachable"]
    store_backend: str | None = Field(None, description="postgresql or sqlite")
    chroma: Literal["ok", "embedded", "unreachable"] = Field(
        "embedded", description="the Chroma server's heartbeat, or `embedded` for the in-process index"
    )
    redis: Literal["ok", "off", "unreachable"] = Field(
        "off", description="`off` without REDIS_URL; `unreachable` degrades (per-process limits), it does not fail"
    )
    rate_limit: Literal["shared", "per-process"] = "per-process"
    mode: str | None = None
    skipped_notes: list[str] = Field(
        default_factory=list, description="files in remembered note folders that were not indexed, and why"
    )


def router() -> APIRouter:
    router = APIRouter(tags=["operations"])

    @router.get("/healthz", response_model=Health)
    def healthz() -> Health:
        """The process is up."""
        return Health()

    @router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
    def readyz(request: Request) -> Any:
        """Ready when the knowledge index has chunks, the store answers and the Chroma server (if any) beats.
        Redis is reported but not required: without it limits are counted per worker."""
        cluster: Cluster | None = getattr(request.app.state, "cluster", None)
        advisor: Advisor | None = getattr(request.app.state, "advisor", None)
        if cluster is None:
            body = Readiness(status="not_ready", index_chunks=0, store="unreachable")
        else:
            retriever = advisor.toolbox.retriever if advisor else None
            skipped = list(getattr(getattr(retriever, "index", None), "skipped", []) or [])
            body = Readiness(**cluster.readiness(advisor), skipped_notes=skipped)
        return JSONResponse(body.model_dump(), status_code=200 if body.status == "ready" else 503)

    @router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def metrics(metrics: MetricsDep) -> Response:
        """Prometheus metrics of this worker process."""
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return router
