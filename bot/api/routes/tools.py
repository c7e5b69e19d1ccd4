"""The calculators over HTTP: `/v1/catalog/…` (the GPU and model catalogs) and `/v1/tools/{name}` (each
calculator and search_knowledge with its own schema in /openapi.json; an unknown tool is a 404 naming the closest)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import Response
from pydantic import BaseModel

from bot.answer.advisor import Advisor
from bot.api.deps import NOT_FOUND, AdvisorDep, MetricsDep, json_response
from bot.api.errors import ApiError
from bot.api.json_types import strict_body
from bot.api.metrics import Metrics
from bot.core.toolbox import SEARCH, Toolbox
from tools import registry
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import gpus, models
from tools.catalog.model_spec import ModelSpec
from tools.errors import AdvisorError
from tools.schemas.specs import GpuSpecsOutput


def catalog_routes() -> APIRouter:
    router = APIRouter(prefix="/catalog", tags=["catalog"])

    @router.get("/gpus", response_model=list[GpuSpec])
    def catalog_gpus() -> list[GpuSpec]:
        """Every GPU in the catalog, with the source of each figure."""
        return list(gpus())

    @router.get("/gpus/{name}", response_model=GpuSpecsOutput, responses=NOT_FOUND)
    def catalog_gpu(name: Annotated[str, Path(max_length=200)]) -> dict[str, Any]:
        """One GPU by name or alias ("A100 80G", "910B"); 404 lists the closest names."""
        return registry.call("gpu_specs", {"gpu": name})

    @router.get("/models", response_model=list[ModelSpec])
    def catalog_models() -> list[ModelSpec]:
        """Every model in the catalog, with its architecture and sources."""
        return list(models())

    return router


def tool_routes() -> APIRouter:
    router = APIRouter(prefix="/tools", tags=["tools"])
    box = Toolbox(None)  # only for the names and schemas; calls go through the app's advisor
    for name in box.names():
        spec = box.spec(name)
        router.add_api_route(
            f"/{name}",
            _tool_handler(name, strict_body(spec.input_model), spec.output_model),
            methods=["POST"],
            response_model=spec.output_model,
            responses=NOT_FOUND,
            name=f"tool_{name}",
            summary=name,
            description=spec.description or spec.input_model.__doc__ or name,
        )

    @router.post("/{name}", include_in_schema=False)
    def unknown_tool(name: str) -> None:
        close = difflib.get_close_matches(name, box.names(), n=3, cutoff=0.4)
        raise ApiError(
            404,
            f"Unknown tool {name!r}; tools: {', '.join(box.names())}.",
            code="unknown_tool",
            field="name",
            suggestions=close,
        )

    return router


def _tool_handler(name: str, input_model: type[BaseModel], output_model: type[BaseModel]) -> Callable[..., Any]:
    def handler(body: BaseModel, advisor: Advisor, metrics: Metrics) -> Response:
        try:
            if name == SEARCH:
                out = output_model.model_validate(advisor.toolbox.call(name, body.model_dump(exclude_unset=True)))
            else:
                out = registry.run(name, body)
        except AdvisorError:
            metrics.tool_calls.labels(name, "error").inc()
            raise
        metrics.tool_calls.labels(name, "ok").inc()
        return json_response(out)

    kw = inspect.Parameter.KEYWORD_ONLY
    handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("body", kw, annotation=input_model),
            inspect.Parameter("advisor", kw, annotation=AdvisorDep),
            inspect.Parameter("metrics", kw, annotation=MetricsDep),
        ],
        return_annotation=output_model,
    )
    handler.__name__ = f"tool_{name}"
    return handler
