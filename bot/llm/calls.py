"""One model request at a time: the streaming relay, the guard every request passes (context fit, deadline,
retries) and the short reason a failure is given in the log and the trace."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from langchain.agents.middleware import wrap_model_call
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphRecursionError

from bot.core.planner import Emit, PlannerError
from bot.llm.deadline import remaining

log = logging.getLogger("gpu_advisor.agent")


class TokenRelay(BaseCallbackHandler):
    """The model's text as it streams (`model_token` events) and the end of each model turn
    (`model_turn_end`, with whether it called tools), for the advisor's grounded streaming."""

    run_inline = True

    def __init__(self, emit: Emit):
        self.emit = emit

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        if token:
            self.emit({"type": "model_token", "text": token})

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        generations = getattr(response, "generations", None) or [[]]
        generation = generations[0][0] if generations[0] else None
        message = getattr(generation, "message", None)
        finish = (getattr(generation, "generation_info", None) or {}).get("finish_reason") or (
            getattr(message, "response_metadata", None) or {}
        ).get("finish_reason")
        self.emit(
            {
                "type": "model_turn_end",
                "tool_calls": bool(getattr(message, "tool_calls", None)),
                "finish_reason": finish,
            }
        )

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        self.emit({"type": "model_turn_end", "tool_calls": False, "error": True})


# ---- model calls: the deadline and the retries ------------------------------------------------------
@dataclass
class Calls:
    n: int = 0


#: failures worth one more try: the request never reached the model, or the server said "later";
#: a timeout is not one of them (the server may still be busy with the first request)
_RETRYABLE = (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError)
_NO_RETRY = (openai.APITimeoutError, httpx.TimeoutException)


def guard_calls(calls: Calls, max_retries: int, fit_request: Callable[[Any], Any]):
    """Middleware around every model request of an answer: fits it in the model's context (earlier turns
    left out first), counts requests, retries connection errors and 429/5xx while the deadline allows
    (short back-off), never retries a timeout, and stops once the answer's deadline has passed."""

    @wrap_model_call
    def guard(request, handler):
        request = fit_request(request)
        for attempt in range(max_retries + 1):
            left = remaining()
            if left is not None and left <= 0:
                raise PlannerError("the answer's deadline passed before the model finished", kind="timeout")
            calls.n += 1
            try:
                return handler(request)
            except _NO_RETRY:
                raise
            except _RETRYABLE as err:
                left = remaining()
                if attempt == max_retries or (left is not None and left < 1.0):
                    raise
                log.info("model request failed (%s), retrying", type(err).__name__)
                time.sleep(min(0.25 * (attempt + 1), (left or 4.0) / 4))
        raise AssertionError("unreachable")

    return guard


# ---- what a failure is called ----------------------------------------------------------------------
def failure_kind(err: BaseException) -> str:
    """The fallback kind of a failure: "timeout", "context" (the request exceeds the model's context) or "endpoint"."""
    if isinstance(err, openai.APITimeoutError | httpx.TimeoutException):
        return "timeout"
    if isinstance(err, openai.BadRequestError) and _CONTEXT_400.search(str(err.message or "")):
        return "context"
    return "endpoint"


#: how OpenAI, vLLM, llama.cpp, Ollama, DeepSeek and DashScope word a request that exceeds the context
_CONTEXT_400 = re.compile(
    r"context[_ ]length|context size|maximum context|context window|too many tokens"
    r"|exceeds? the (?:model'?s? )?(?:max|context)|exceed_context|input is too long|prompt is too long",
    re.IGNORECASE,
)


#: server errors that mean the operator must change how the model server runs, and what to change
_SERVER_HINTS = [
    (
        re.compile(r"enable-auto-tool-choice|tool-call-parser", re.IGNORECASE),
        "start vLLM with --enable-auto-tool-choice and the --tool-call-parser of the model (hermes for Qwen2.5/Qwen3)",
    ),
    (
        re.compile(r"--jinja|Unsupported param: tools", re.IGNORECASE),
        "start llama-server with --jinja (and a chat template that knows tools)",
    ),
    (
        re.compile(r"does not support tools", re.IGNORECASE),
        "this model cannot call tools on this server: configure one that can",
    ),
]


def failure_reason(err: BaseException) -> str:
    """A short reason for the log and the trace, never a stack trace."""
    if isinstance(err, GraphRecursionError):
        return "the model did not finish within the step limit (GPU_ADVISOR_LLM_MAX_STEPS)"
    if isinstance(err, openai.APITimeoutError | httpx.TimeoutException):
        return "the LLM endpoint timed out"
    if isinstance(err, openai.APIConnectionError | httpx.TransportError):
        return f"cannot reach the LLM endpoint ({type(err.__cause__ or err).__name__})"
    if isinstance(err, openai.APIStatusError):
        reason = f"the LLM endpoint answered HTTP {err.status_code}: {_first_line(err.message)}"
        hint = next((h for pattern, h in _SERVER_HINTS if pattern.search(str(err.message or ""))), None)
        if hint:
            log.error("LLM endpoint misconfigured: %s", hint)
            reason += f" ({hint})"
        return reason
    if isinstance(err, openai.APIError):
        return f"the LLM endpoint failed: {_first_line(err.message)}"
    if isinstance(err, json.JSONDecodeError | ValueError | KeyError | TypeError | AttributeError):
        log.warning("unexpected reply from the LLM endpoint", exc_info=err)
        return f"malformed reply from the LLM endpoint ({type(err).__name__})"
    log.exception("LLM agent failed", exc_info=err)
    return f"the LLM agent failed ({type(err).__name__})"


def _first_line(message: str) -> str:
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return line[:200]
