"""A scripted OpenAI-compatible chat endpoint for tests, served through `httpx.MockTransport`.

    endpoint = ScriptedOpenAI([
        tool_calls(("fit_training", {"model": "Qwen2.5-7B", "gpu": "A100 80GB"})),
        text("能放下。"),
    ])
    client = endpoint.client()          # pass as ChatOpenAI(http_client=...)
    endpoint.requests                   # the JSON bodies received, in order

Each POST to `.../chat/completions` consumes the next reply. A streamed request (`"stream": true`)
gets Server-Sent Events the way OpenAI sends them: a first `chat.completion.chunk` with the role,
tool calls announced with id and name first and their JSON arguments in small pieces, a last
chunk with `finish_reason`, then `data: [DONE]`. A non-streamed request gets one
`chat.completion` JSON object. A reply may also be an HTTP status (`status(503)`), an exception
the transport raises (`httpx.ConnectError`), or a callable that builds a reply from the request.
When the script runs out, `then` (if given) answers every further request.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

PIECE = 7  # characters per streamed fragment, small so that arguments really arrive in pieces


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    status: int = 200
    error: type[Exception] | None = None
    raw: bytes | None = None  # a body sent as is (malformed responses)
    finish: str | None = None  # the finish_reason to send ("length"); default stop / tool_calls
    stream: Callable[[], Any] | None = None  # a generator of raw SSE bytes, sent as they come (slow or endless)
    error_body: dict[str, Any] | None = None  # the JSON body of an error status (a provider's own wording)
    delay: float = 0.0  # seconds before the reply starts; past the request's read timeout it is a ReadTimeout


def text(content: str) -> Reply:
    """A final assistant message."""
    return Reply(content=content)


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> Reply:
    """An assistant turn that calls one or more tools (in parallel when several)."""
    return Reply(calls=tuple(calls))


def status(code: int) -> Reply:
    return Reply(status=code)


def raises(error: type[Exception]) -> Reply:
    return Reply(error=error)


def raw(body: bytes) -> Reply:
    return Reply(raw=body)


def slow(seconds: float, source: ReplySource) -> Callable[[dict[str, Any]], Reply]:
    """`source`, arriving after `seconds` (a server busy with other requests, or a slow model)."""

    def build(body: dict[str, Any]) -> Reply:
        reply = source(body) if callable(source) else source
        return dataclasses.replace(reply, delay=seconds)

    return build


ReplySource = Reply | Callable[[dict[str, Any]], Reply]


@dataclass
class ScriptedOpenAI:
    replies: list[ReplySource]
    then: ReplySource | None = None
    model: str = "scripted-model"
    models: dict[str, Any] | None = None  # the body of GET /v1/models (404 when None), e.g. vLLM's max_model_len
    props: dict[str, Any] | None = None  # the body of llama.cpp's GET /props (404 when None)
    #: POST /tokenize as "llama.cpp" ({"content"} -> {"tokens"}) or "vllm" ({"model", "prompt"} -> {"count"}),
    #: one token per 4 characters; 404 when None
    tokenize: str | None = None
    #: a server's pace for streamed replies: (seconds to the first token, characters per second after it)
    pace: tuple[float, float] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handler))

    # ------------------------------------------------------------------------------------------
    def handler(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if request.method == "GET" and request.url.path.endswith("/models") and self.models is not None:
            return httpx.Response(200, json=self.models)
        if request.method == "GET" and request.url.path.endswith("/props") and self.props is not None:
            return httpx.Response(200, json=self.props)
        if request.method == "POST" and request.url.path == "/tokenize" and self.tokenize is not None:
            sent = json.loads(request.content)
            if self.tokenize == "llama.cpp" and "content" in sent:
                return httpx.Response(200, json={"tokens": list(range(len(sent["content"]) // 4))})
            if self.tokenize == "vllm" and "prompt" in sent and sent.get("model") == self.model:
                return httpx.Response(200, json={"count": len(sent["prompt"]) // 4, "max_model_len": 4096})
            return httpx.Response(400, json={"error": {"message": "bad tokenize request"}})
        if not request.url.path.endswith("/chat/completions"):
            return httpx.Response(404, json={"error": {"message": f"no route {request.url.path}"}})
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        source = self.replies.pop(0) if self.replies else self.then
        if source is None:
            return httpx.Response(500, json={"error": {"message": "script exhausted", "type": "server_error"}})
        reply = source(body) if callable(source) else source
        if reply.delay:
            read = (request.extensions.get("timeout") or {}).get("read")
            time.sleep(min(reply.delay, read) if read else reply.delay)
            if read and reply.delay > read:  # what a real transport does when nothing arrives in time
                raise httpx.ReadTimeout("scripted: no reply within the read timeout", request=request)
        if reply.error is not None:
            raise reply.error("scripted failure", request=request)
        if reply.status != 200:
            # retry-after-ms keeps the openai client's retry back-off short in tests
            error = reply.error_body or {"error": {"message": "scripted error", "type": "server_error"}}
            return httpx.Response(reply.status, json=error, headers={"retry-after-ms": "1"})
        if reply.stream is not None:
            return httpx.Response(200, content=reply.stream(), headers={"content-type": "text/event-stream"})
        if reply.raw is not None:
            kind = "text/event-stream" if body.get("stream") else "application/json"
            return httpx.Response(200, content=reply.raw, headers={"content-type": kind})
        if body.get("stream"):
            content = self._sse(reply)
            if self.pace:
                content = self._paced(content, *self.pace)
            return httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=self._completion(reply))

    # ------------------------------------------------------------------------------------------
    def _call_ids(self, reply: Reply) -> list[str]:
        return [f"call_scripted_{next(self._ids)}" for _ in reply.calls]

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, (name, args) in zip(self._call_ids(reply), reply.calls, strict=True)
            ]
        finish = reply.finish or ("tool_calls" if reply.calls else "stop")
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    @staticmethod
    def _paced(content: bytes, first_s: float, chars_per_s: float):
        """The SSE events one by one at the server's pace: the first after `first_s`, then by their size."""
        events = [e + b"\n\n" for e in content.split(b"\n\n") if e]

        def send():
            time.sleep(first_s)
            for event in events:
                time.sleep(PIECE / chars_per_s)
                yield event

        return send()

    def _sse(self, reply: Reply) -> bytes:
        out = [self._chunk({"role": "assistant", "content": "" if reply.calls else None})]
        for i in range(0, len(reply.content or ""), PIECE):
            out.append(self._chunk({"content": reply.content[i : i + PIECE]}))
        for index, (cid, (name, args)) in enumerate(zip(self._call_ids(reply), reply.calls, strict=True)):
            out.append(
                self._chunk(
                    {
                        "tool_calls": [
                            {"index": index, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
                        ]
                    }
                )
            )
            arguments = json.dumps(args, ensure_ascii=False)
            for i in range(0, len(arguments), PIECE):
                out.append(
                    self._chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + PIECE]}}]})
                )
        out.append(self._chunk({}, reply.finish or ("tool_calls" if reply.calls else "stop")))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)


def messages_text(body: dict[str, Any]) -> str:
    """Every message's text content in a request body, joined (for assertions)."""
    parts = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"{m.get('role')}: {content or ''}")
    return "\n".join(parts)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The contents of the `tool` messages in a request body, in order."""
    return [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "tool"]


def last_user(body: dict[str, Any]) -> str:
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""
