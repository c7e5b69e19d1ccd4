"""One error shape for every HTTP answer that is not a success, and the handlers that produce it.

    {"error": {"code": "unknown_gpu", "type": "invalid_request_error", "message": "…",
               "field": "gpu", "suggestions": ["NVIDIA A100 SXM4 80GB", …], "request_id": "…"}}

`code` is stable and machine-readable; `message` is one sentence in the caller's language (the
`lang` query parameter, else `Accept-Language`); `type` follows the OpenAI error types so OpenAI
clients show the message. A stack trace never reaches a client.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from tools.errors import AdvisorError, UnknownFabric, UnknownGpu, UnknownModel, UnknownName, Unsupported
from tools.schemas.common import WHITESPACE

log = logging.getLogger("gpu_advisor.api")

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
    504: "server_error",
}
_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
    504: "timeout",
}
#: FastAPI's 400 for a JSON body it cannot decode (not UTF-8); answered as the 422 every other bad JSON body gets
_UNPARSED_BODY = "There was an error parsing the body"
#: seconds a client is asked to wait when the store does not answer
STORE_RETRY_AFTER_S = 5
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: the same rule as a JSON-schema pattern, so /openapi.json says what text is accepted
NO_CONTROL_PATTERN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
#: text with at least one visible character and no control characters (a question, a message)
TEXT_PATTERN = (
    rf"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*[^\x00-\x08\x0e-\x1f\x7f{WHITESPACE}][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
)


class ErrorDetail(BaseModel):
    code: str
    type: str
    message: str
    field: str | None = None
    suggestions: list[str] = []
    request_id: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class ApiError(Exception):
    """Raised by handlers and dependencies; rendered as `ErrorBody` with `status`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        suggestions: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _CODES.get(status, "error")
        self.field = field
        self.suggestions = suggestions or []
        self.headers = headers


def error_payload(
    status: int,
    message: str,
    *,
    code: str | None = None,
    field: str | None = None,
    suggestions: list[str] | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    detail = ErrorDetail(
        code=code or _CODES.get(status, "error"),
        type=_TYPES.get(status, "invalid_request_error"),
        message=message,
        field=field,
        suggestions=suggestions or [],
        request_id=request_id,
    )
    return {"error": detail.model_dump()}


def error_response(
    status: int, message: str, *, headers: dict[str, str] | None = None, request_id: str | None = None, **kw: Any
) -> JSONResponse:
    return JSONResponse(
        error_payload(status, message, request_id=request_id, **kw), status_code=status, headers=headers
    )


def request_lang(request: Request) -> str:
    """ "zh" or "en": the `lang` query parameter, else the first language of `Accept-Language`."""
    lang = request.query_params.get("lang", "")
    if lang in ("zh", "en"):
        return lang
    header = request.headers.get("accept-language", "")
    first = header.split(",")[0].split(";")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"


def _request_id(request: Request) -> str | None:
    return request.scope.get("state", {}).get("request_id")


def advisor_error(err: AdvisorError, lang: str) -> ApiError:
    """An `AdvisorError` as HTTP: 404 for names not in a catalog, else 422 (`unsupported` when the request is
    well formed but the named GPU or model cannot serve it, `invalid_input` otherwise)."""
    if isinstance(err, UnknownName):
        code = (
            "unknown_gpu"
            if isinstance(err, UnknownGpu)
            else "unknown_model"
            if isinstance(err, UnknownModel)
            else "unknown_fabric"
            if isinstance(err, UnknownFabric)
            else "unknown_name"
        )
        return ApiError(404, err.message(lang), code=code, field=err.field, suggestions=list(err.suggestions))
    code = "unsupported" if isinstance(err, Unsupported) else "invalid_input"
    return ApiError(422, err.message(lang), code=code, field=err.field)


def _validation_message(first: dict[str, Any], lang: str) -> tuple[str, str]:
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    field = ".".join(loc) or "body"
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if first.get("type") == "missing":
        return field, (f"缺少字段“{field}”。" if lang == "zh" else f"Missing field {field!r}.")
    if first.get("type") == "extra_forbidden":
        return field, (f"未知的字段“{field}”。" if lang == "zh" else f"Unknown field {field!r}.")
    if first.get("type") == "string_pattern_mismatch" and (first.get("ctx") or {}).get("pattern") in (
        NO_CONTROL_PATTERN,
        TEXT_PATTERN,
    ):
        return field, (
            f"字段“{field}”为空或含有不允许的控制字符（如 NUL）。"
            if lang == "zh"
            else f"Invalid {field}: empty, or control characters such as NUL, which text may not hold."
        )
    if first.get("type") == "json_invalid":
        return "body", ("请求体不是有效的 JSON。" if lang == "zh" else "The request body is not valid JSON.")
    return field, (f"字段“{field}”的值无效：{msg}。" if lang == "zh" else f"Invalid {field}: {msg}.")


def install(app: FastAPI) -> None:
    """Register the handlers that turn every known error into `ErrorBody`."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, err: ApiError) -> JSONResponse:
        return error_response(
            err.status,
            err.message,
            code=err.code,
            field=err.field,
            suggestions=err.suggestions,
            headers=err.headers,
            request_id=_request_id(request),
        )

    @app.exception_handler(AdvisorError)
    async def _advisor_error(request: Request, err: AdvisorError) -> JSONResponse:
        return await _api_error(request, advisor_error(err, request_lang(request)))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, err: RequestValidationError) -> JSONResponse:
        errors = err.errors()
        field, message = _validation_message(errors[0] if errors else {}, request_lang(request))
        return error_response(422, message, code="invalid_input", field=field, request_id=_request_id(request))

    async def _store_down(request: Request, err: Exception) -> JSONResponse:
        log.warning("store unavailable: %s", type(err).__name__)
        zh = request_lang(request) == "zh"
        msg = (
            "服务暂时不可用（数据库无响应），请稍后重试。"
            if zh
            else "The service is briefly unavailable (the database does not answer); try again shortly."
        )
        return error_response(
            503,
            msg,
            code="store_unavailable",
            request_id=_request_id(request),
            headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
        )

    for kind in (OperationalError, InterfaceError, PoolTimeout):  # not reachable, not a bug: 503, retry later
        app.add_exception_handler(kind, _store_down)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        message = err.detail if isinstance(err.detail, str) else "request failed"
        if err.status_code == 400 and message == _UNPARSED_BODY:  # bytes that are not UTF-8 text: not JSON either
            field, message = _validation_message({"type": "json_invalid"}, request_lang(request))
            return error_response(422, message, code="invalid_input", field=field, request_id=_request_id(request))
        if err.status_code == 404 and message == "Not Found":
            message = f"No route {request.url.path}; see /docs for the API."
        return error_response(
            err.status_code, message, headers=getattr(err, "headers", None), request_id=_request_id(request)
        )
