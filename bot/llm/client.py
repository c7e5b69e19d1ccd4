"""The chat model for the LLM agent: `ChatOpenAI` over any OpenAI-compatible endpoint, with the
quirks of the providers we support (see REFERENCE.md, "LangChain 1.x").

`provider_for(base_url, model)` recognises the endpoint from its URL (and the model name) and
returns a `Provider` profile; `chat_model(settings, http_client)` builds the client. The quirks:

    dashscope  Qwen on DashScope (compatible-mode): hybrid-thinking Qwen3 models must be told
               `enable_thinking: false` (non-streamed calls fail otherwise, and thinking only costs
               time here); sent in the request body via `extra_body`. Thinking-only models
               (QwQ, *-thinking) are left alone.
    qwen3      Qwen3 served elsewhere (vLLM, SGLang): the same switch goes through the chat
               template, `chat_template_kwargs: {"enable_thinking": false}`.
    deepseek   the thinking mode (`deepseek-reasoner`) cannot run tool calls through plain
               ChatOpenAI (the reasoning content is not sent back); on DeepSeek's own API it is
               the same model as `deepseek-chat`, so that name is used instead. A DeepSeek-R1
               served elsewhere has no tool calling: `Provider.refusal` says so and the agent
               raises `PlannerError` with that message.
    openai     o-series reasoning models reject `parallel_tool_calls`: `disabled_params` keeps
               LangChain from sending it (the agent itself never sends it; parallel calls are
               allowed and run one at a time).
    ollama     `http://host:11434/v1`; any API key works, a placeholder is used when none is set.
    vllm/local local servers need no key either.
    usage      token usage in streams (`stream_options`) only where the provider documents it
               (OpenAI, DeepSeek, DashScope); other compatible servers may reject the option.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx
from langchain_openai import ChatOpenAI

from bot.planner import PlannerError
from bot.settings import Settings

log = logging.getLogger("gpu_advisor.llm")

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal")
_O_SERIES = re.compile(r"^o\d")  # o1, o3-mini, o4-mini ...


@dataclass(frozen=True)
class Provider:
    name: str  # openai, deepseek, dashscope, ollama, vllm, compatible
    model: str  # the model name actually sent
    local: bool = False
    stream_usage: bool = False
    extra_body: dict[str, Any] | None = None
    disabled_params: dict[str, Any] | None = None
    refusal: str | None = None  # why this model cannot be used as an agent (None: it can)
    notes: list[str] = field(default_factory=list)


def _host_port(base_url: str) -> tuple[str, int | None]:
    parsed = urlparse(base_url if "://" in base_url else f"http://{base_url}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    return (parsed.hostname or "").lower(), port


def provider_for(base_url: str, model: str) -> Provider:
    """The provider profile for an endpoint URL and model name."""
    host, port = _host_port(base_url)
    name_l = model.lower()
    local = host in LOCAL_HOSTS or host.endswith(".local") or host.startswith(("192.168.", "10."))
    if host.endswith("openai.com"):
        kind = "openai"
    elif "deepseek" in host:
        kind = "deepseek"
    elif "dashscope" in host or host.endswith("aliyuncs.com"):
        kind = "dashscope"
    elif port == 11434 or "ollama" in host:
        kind = "ollama"
    elif "vllm" in host or (local and port == 8000):
        kind = "vllm"
    else:
        kind = "compatible"

    notes: list[str] = []
    extra_body: dict[str, Any] | None = None
    disabled: dict[str, Any] | None = None
    refusal: str | None = None
    sent_model = model

    thinking_only = "qwq" in name_l or "thinking" in name_l
    if kind == "dashscope" and not thinking_only:
        extra_body = {"enable_thinking": False}
        notes.append("enable_thinking=false (DashScope)")
    elif "qwen3" in name_l and not thinking_only and kind != "ollama":
        extra_body = {"chat_template_kwargs": {"enable_thinking": False}}
        notes.append("chat_template_kwargs.enable_thinking=false (Qwen3 on a compatible server)")

    if "deepseek-reasoner" in name_l or re.search(r"deepseek[-_ ]?r1", name_l):
        if kind == "deepseek":
            sent_model = "deepseek-chat"
            notes.append("deepseek-reasoner -> deepseek-chat (thinking mode cannot call tools through ChatOpenAI)")
        else:
            refusal = (f"model {model!r} is a DeepSeek thinking model, which cannot call tools through this client; "
                       "configure a non-thinking model (deepseek-chat, DeepSeek-V3) in GPU_ADVISOR_LLM_MODEL")

    if kind == "openai" and _O_SERIES.match(name_l):
        disabled = {"parallel_tool_calls": None}
        notes.append("parallel_tool_calls disabled (o-series)")

    return Provider(name=kind, model=sent_model, local=local or kind in ("ollama", "vllm"),
                    stream_usage=kind in ("openai", "deepseek", "dashscope"), extra_body=extra_body,
                    disabled_params=disabled, refusal=refusal, notes=notes)


#: when the answer being written must be done (time.monotonic()); set by `answer_deadline`
_ANSWER_DEADLINE: ContextVar[float | None] = ContextVar("llm_answer_deadline", default=None)


@contextmanager
def answer_deadline(seconds: float | None) -> Iterator[None]:
    """Every model call made inside (one answer: the agent's steps and the repair round) must be
    done `seconds` from now; a call past it fails like a timeout and the advisor answers offline."""
    token = _ANSWER_DEADLINE.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _ANSWER_DEADLINE.reset(token)


def answer_seconds(planner: Any) -> float | None:
    """The per-answer budget of an agent planner: its model's timeout (`GPU_ADVISOR_LLM_TIMEOUT_S`)."""
    timeout = getattr(getattr(planner, "model", None), "request_timeout", None)
    return float(timeout) if isinstance(timeout, int | float) else None


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, deadline: float, request: httpx.Request):
        self.inner, self.deadline, self.request = inner, deadline, request

    def __iter__(self):
        for chunk in self.inner:
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout("the model's answer ran past its deadline", request=self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport whose timeout covers a whole response, not each read: a model that drips
    keep-alive bytes (each read well inside httpx's read timeout) is cut off `seconds` after the
    request went out."""

    def __init__(self, inner: httpx.BaseTransport, seconds: float):
        self.inner, self.seconds = inner, seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        answer = _ANSWER_DEADLINE.get()
        if answer is not None:
            if time.monotonic() >= answer:
                raise httpx.ConnectTimeout("the answer's deadline has passed", request=request)
            deadline = min(deadline, answer)
        response = self.inner.handle_request(request)
        response.stream = _DeadlineStream(response.stream, deadline, request)  # type: ignore[arg-type]
        return response

    def close(self) -> None:
        self.inner.close()


def deadline_client(seconds: float, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An httpx client for the model whose `seconds` bound each whole response (see DeadlineTransport)."""
    return httpx.Client(transport=DeadlineTransport(transport or httpx.HTTPTransport(), seconds), timeout=seconds)


def chat_model(settings: Settings, http_client: httpx.Client | None = None) -> tuple[ChatOpenAI, Provider]:
    """A streaming `ChatOpenAI` for the configured endpoint, and the provider profile it used."""
    if not (settings.llm_base_url and settings.llm_model):
        raise PlannerError("no LLM endpoint configured (GPU_ADVISOR_LLM_BASE_URL and GPU_ADVISOR_LLM_MODEL)")
    provider = provider_for(settings.llm_base_url, settings.llm_model)
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    if not key:
        if not provider.local:
            raise PlannerError(f"GPU_ADVISOR_LLM_API_KEY is not set for {settings.llm_base_url}")
        key = "ollama" if provider.name == "ollama" else "EMPTY"  # local servers accept any key
    options: dict[str, Any] = {}
    if provider.extra_body:
        options["extra_body"] = provider.extra_body
    if provider.disabled_params:
        options["disabled_params"] = provider.disabled_params
    options["http_client"] = http_client or deadline_client(settings.llm_timeout_s)
    for note in provider.notes:
        log.info("LLM provider %s: %s", provider.name, note)
    model = ChatOpenAI(
        base_url=settings.llm_base_url,
        api_key=key,
        model=provider.model,
        use_responses_api=False,
        streaming=True,
        stream_usage=provider.stream_usage,
        timeout=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        **options,
    )
    return model, provider
