"""What route handlers share: the app's advisor, metrics and API settings as FastAPI dependencies, the error
responses every route documents, and a pydantic model sent as JSON without a second validation."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel

from bot.answer.advisor import Advisor
from bot.api.errors import ErrorBody
from bot.api.metrics import Metrics
from bot.api.settings import ApiSettings


# async: FastAPI runs a plain `def` dependency in a worker thread, a hop (GIL hand-over, thread wake-up) that cost
# more than these attribute reads; three of them were 6% of a /v1/ask under load (bench/README.md)
async def get_advisor(request: Request) -> Advisor:
    return request.app.state.advisor


async def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def get_api_settings(request: Request) -> ApiSettings:
    return request.app.state.api_settings


AdvisorDep = Annotated[Advisor, Depends(get_advisor)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ApiSettingsDep = Annotated[ApiSettings, Depends(get_api_settings)]

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in [
        (401, "missing or invalid API key"),
        (413, "request body too large"),
        (422, "invalid input, naming the field"),
        (429, "rate limited; see Retry-After"),
        (500, "internal error (no details; quote the request id)"),
        (503, "the store does not answer; see Retry-After"),
        (504, "the answer took longer than the server's deadline"),
    ]
}
NOT_FOUND = {404: {"model": ErrorBody, "description": "unknown name, with the closest known names"}}


def json_response(model: BaseModel) -> Response:
    """A model already validated by its own type, serialized once by pydantic (the route's
    `response_model` still documents it; FastAPI does not validate a returned Response again)."""
    return Response(model.model_dump_json(), media_type="application/json")
