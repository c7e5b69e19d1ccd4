"""Keep every request within the model's context: a token estimate, the context the server reports, and
trimming of earlier turns to what is left.

    limit = context_tokens(base_url, model, http_client, default=8192)   # asked once per process
    messages = fit(system, tools, messages, limit, max_tokens)            # or PlannerError(kind="context")

The estimate needs no tokenizer and errs high for the tokenizers of the models people serve (Qwen,
Llama, DeepSeek, GPT): one token per CJK character, per word, per digit and per other symbol, plus a
few per message. `tests/bot/llm/test_budget.py` holds it against Qwen2.5's own tokenizer.

The context comes from the server when it says: vLLM's `GET /v1/models` (`max_model_len`), llama.cpp's
`GET /props` (`default_generation_settings.n_ctx`, the context it actually runs with) or a
`context_length` field; otherwise from the setting `GPU_ADVISOR_LLM_CONTEXT_TOKENS`.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import httpx
from langchain_core.messages import BaseMessage

from bot.core.language import HAN_CHARS
from bot.core.planner import PlannerError

log = logging.getLogger("gpu_advisor.llm")

PER_MESSAGE = 8  # role markers and separators of a chat template
MARGIN = 64  # the chat template's own text around the system prompt and tools
HISTORY_PREFIX = "history-"  # message ids of earlier turns: the only messages trimmed

_PIECES = re.compile(rf"[{HAN_CHARS}]|[A-Za-z]+|[0-9]|\s(?=[^\sA-Za-z])|[^\sA-Za-z0-9{HAN_CHARS}]")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free upper estimate of the tokens `text` takes (pieces + 10 %)."""
    return math.ceil(len(_PIECES.findall(text or "")) * 1.1)


def message_tokens(message: BaseMessage) -> int:
    content = message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)
    calls = getattr(message, "tool_calls", None) or []
    return (
        PER_MESSAGE
        + estimate_tokens(content)
        + sum(estimate_tokens(json.dumps(c.get("args", {}), ensure_ascii=False)) + 8 for c in calls)
    )


def tools_json(tools: list[Any]) -> str:
    """The tool schemas as the chat template writes them: JSON."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return json.dumps([convert_to_openai_tool(t) for t in tools], ensure_ascii=False)


def tools_tokens(tools: list[Any], count: Callable[[str], int | None] | None = None) -> int:
    """The tokens the tool schemas take in the prompt: the served model's own count when the server tokenizes
    (JSON is where the estimate errs highest: ~1.6x for a small BPE model), else the estimate."""
    text = tools_json(tools)
    exact = count(text) if count is not None else None
    if exact:
        return exact + PER_MESSAGE * len(tools)  # the template's wrapping around each tool
    return estimate_tokens(text)


def server_token_count(base_url: str, model: str, client: httpx.Client, text: str) -> int | None:
    """How many tokens the served model's tokenizer makes of `text`, where the server says: llama.cpp's and
    vLLM's `POST /tokenize` (llama.cpp reads `content`, vLLM `prompt`); None when it cannot."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    for body in ({"content": text}, {"model": model, "prompt": text}):
        try:
            data = _small_json(client, "POST", f"{root}/tokenize", body)
            count = data.get("count") if isinstance(data, dict) else None
            tokens = data.get("tokens") if isinstance(data, dict) else None
            if _int(count):
                return count
            if isinstance(tokens, list) and tokens:
                return len(tokens)
        except (httpx.HTTPError, ValueError, TypeError, AttributeError) as err:
            log.debug("no token count at %s/tokenize: %s", root, err)
    return None


def fit(system: str | int, tools: int, messages: list[BaseMessage], context: int, max_tokens: int) -> list[BaseMessage]:
    """`messages` with the oldest earlier turns left out until the request and the reply fit in `context`;
    `system` is the system prompt or its token count.

    Raises PlannerError(kind="context") when even without earlier turns they do not."""
    fixed = (system if isinstance(system, int) else estimate_tokens(system)) + PER_MESSAGE + tools + MARGIN + max_tokens
    kept = list(messages)
    total = fixed + sum(message_tokens(m) for m in kept)
    dropped = 0
    while total > context:
        index = next((i for i, m in enumerate(kept) if str(m.id or "").startswith(HISTORY_PREFIX)), None)
        if index is None:
            raise PlannerError(
                f"the request needs about {total} tokens (reply included) but the model's context is "
                f"{context}; shorten the question or raise the context",
                kind="context",
            )
        total -= message_tokens(kept.pop(index))
        dropped += 1
    if dropped:
        log.info("left %d earlier message(s) out to fit the model's context of %d tokens", dropped, context)
    return kept


def context_tokens(base_url: str, model: str, client: httpx.Client, default: int) -> int:
    """The context length the server reports for `model`, else `default`."""
    found: list[int] = []
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    for url, read in ((f"{base}/models", _from_models), (f"{root}/props", _from_props)):
        try:
            value = read(_small_json(client, "GET", url, limit_s=1.0), model)
            if value:
                found.append(value)
        except (httpx.HTTPError, ValueError, TypeError, AttributeError) as err:
            log.debug("no context length at %s: %s", url, err)
    if found:
        log.info("LLM context length %d tokens (reported by %s)", min(found), urlparse(base_url).netloc)
        return min(found)
    return default


def _small_json(
    client: httpx.Client, method: str, url: str, body: Any = None, limit_s: float = 2.0, max_bytes: int = 4 << 20
) -> Any:
    """A small JSON reply within `limit_s` of wall time in all (httpx's timeouts are per read, so a server
    dripping bytes would otherwise hold the answer); None for anything but a 200 with JSON in time."""
    start = time.monotonic()
    with client.stream(method, url, json=body, timeout=limit_s) as response:
        if response.status_code != 200:
            return None
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes or time.monotonic() - start > limit_s:
                log.debug("%s %s: no small JSON reply within %.1f s", method, url, limit_s)
                return None
    return json.loads(b"".join(chunks))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_models(body: Any, model: str) -> int | None:
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return None
    dicts = [m for m in items if isinstance(m, dict)]
    mine = [m for m in dicts if m.get("id") == model] or (dicts if len(dicts) == 1 else [])
    for item in mine:
        meta = item.get("meta") if isinstance(item.get("meta"), dict) else {}
        for value in (
            item.get("max_model_len"),
            item.get("context_length"),
            item.get("context_window"),
            meta.get("n_ctx"),
        ):
            if _int(value):
                return value
    return None


def _from_props(body: Any, model: str) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _int(value) or _int(body.get("n_ctx"))
