"""Request ids, structured JSON logs, Prometheus metrics and the last-resort 500 for the HTTP API.

`RequestContext` wraps the whole app: it takes `X-Request-ID` from the request (or makes one), puts it
in every log line written while the request runs and in the response headers, times the request,
counts it by route template and status, and turns any exception that escaped the handlers into
`500 {"error": {"code": "internal", ...}}` (logged with the stack; the client gets none).

Metrics (one registry per app, so two apps in one process never collide):
    gpu_advisor_http_requests_total{route, method, status}
    gpu_advisor_http_request_duration_seconds{route}        histogram
    gpu_advisor_answers_total{mode}                          answers by offline / llm / llm-fallback
    gpu_advisor_gate_total{reason}                           LLM answers' quality-gate reasons (bot/answer/gate.py)
    gpu_advisor_llm_fallbacks_total{kind}                    why an LLM answer was not shipped (gate, timeout, …)
    gpu_advisor_tool_calls_total{tool, outcome}              POST /v1/tools/{name}
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.api.errors import error_response

log = logging.getLogger("gpu_advisor.api")
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "gpu_advisor_http_requests",
            "HTTP requests by route template and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gpu_advisor_http_request_duration_seconds",
            "Time to the end of the response",
            ["route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.answers = Counter("gpu_advisor_answers", "Answers by planner mode", ["mode"], registry=self.registry)
        self.tool_calls = Counter(
            "gpu_advisor_tool_calls", "Direct calculator calls", ["tool", "outcome"], registry=self.registry
        )
        self.gate = Counter(
            "gpu_advisor_gate",
            "Quality-gate reasons met by LLM answers (repaired or not)",
            ["reason"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "gpu_advisor_llm_fallbacks",
            "LLM answers replaced by the offline planner, by kind",
            ["kind"],
            registry=self.registry,
        )

    def count_answer(self, trace: Any) -> None:
        """Count one answer (an AnswerTrace or its JSON dict): its mode, gate reasons and fallback kind."""
        data = trace if isinstance(trace, dict) else {k: getattr(trace, k) for k in ("mode", "gate", "fallback_reason")}
        self.answers.labels(data.get("mode", "offline")).inc()
        for reason in data.get("gate") or []:
            self.gate.labels(reason).inc()
        if data.get("fallback_reason"):
            self.fallbacks.labels(str(data["fallback_reason"]).split(":", 1)[0]).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestContext:
    """Outermost ASGI middleware: request id, timing, metrics, access log, last-resort 500."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        token = REQUEST_ID.set(rid)
        status = 500
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                MutableHeaders(scope=message)["X-Request-ID"] = rid
            await send(message)

        t0 = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if not started:
                response = error_response(
                    500,
                    "Internal error; quote this request id when reporting it: " + rid,
                    code="internal",
                    request_id=rid,
                )
                await response(scope, receive, send_with_id)
            status = 500
        finally:
            elapsed = time.perf_counter() - t0
            template = route_template(scope)
            self.metrics.requests.labels(template, scope["method"], str(status)).inc()
            self.metrics.latency.labels(template).observe(elapsed)
            client = scope.get("client")
            log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "path": scope.get("path"),
                    "route": template,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                    "client": client[0] if client else None,
                    "key_id": scope.get("state", {}).get("key_id"),
                },
            )
            REQUEST_ID.reset(token)


def route_template(scope: Scope) -> str:
    """The matched route as a template ("/v1/conversations/{conversation_id}"), "unmatched" if none.

    Routers included in routers keep relative paths, so the template is rebuilt from the request
    path by putting each path parameter's name back in place of its value.
    """
    if scope.get("route") is None:
        return "unmatched"
    path: str = scope.get("path", "")
    for name, value in (scope.get("path_params") or {}).items():
        head, sep, tail = path.rpartition("/" + str(value))
        if sep and (not tail or tail.startswith("/")):
            path = f"{head}/{{{name}}}{tail}"
    return path


_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id and any `extra` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or REQUEST_ID.get()
        if rid:
            entry["request_id"] = rid
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def logging_config(level: str = "info") -> dict:
    """A `logging.config.dictConfig` for the server: JSON lines on stderr, uvicorn's access log off."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"level": level.upper()},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"level": "WARNING", "propagate": False},
        },
    }
