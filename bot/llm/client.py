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
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx
from langchain_openai import ChatOpenAI

from bot.core.planner import PlannerError
from bot.core.settings import Settings
from bot.llm.deadline import instrument

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

    if kind == "deepseek":
        # thinking mode streams reasoning_content and, with tools, wants it sent back on every later request
        # (a 400 otherwise), which ChatOpenAI does not do: run the non-thinking mode
        extra_body = {"thinking": {"type": "disabled"}}
        notes.append("thinking disabled (DeepSeek)")
    if "deepseek-reasoner" in name_l or re.search(r"deepseek[-_ ]?r1", name_l):
        if kind == "deepseek":
            sent_model = "deepseek-chat"
            notes.append("deepseek-reasoner -> deepseek-chat (thinking mode cannot call tools through ChatOpenAI)")
        else:
            refusal = (
                f"model {model!r} is a DeepSeek thinking model, which cannot call tools through this client; "
                "configure a non-thinking model (deepseek-chat, DeepSeek-V3) in GPU_ADVISOR_LLM_MODEL"
            )

    if kind == "openai" and _O_SERIES.match(name_l):
        disabled = {"parallel_tool_calls": None}
        notes.append("parallel_tool_calls disabled (o-series)")

    return Provider(
        name=kind,
        model=sent_model,
        local=local or kind in ("ollama", "vllm"),
        stream_usage=kind in ("openai", "deepseek", "dashscope"),
        extra_body=extra_body,
        disabled_params=disabled,
        refusal=refusal,
        notes=notes,
    )


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
    extra_body = dict(provider.extra_body or {})
    if provider.name == "openai":  # LangChain sends it as max_completion_tokens, which OpenAI wants
        options["max_tokens"] = settings.llm_max_tokens
    else:  # the other servers all read max_tokens; not every one knows max_completion_tokens
        extra_body["max_tokens"] = settings.llm_max_tokens
    options["extra_body"] = extra_body
    if provider.disabled_params:
        options["disabled_params"] = provider.disabled_params
    # the answer's deadline governs every request (bot.llm.deadline); retries are the agent's, never of a timeout
    options["http_client"] = instrument(http_client or httpx.Client(timeout=settings.llm_timeout_s))
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
        max_retries=0,
        **options,
    )
    return model, provider
