"""An answer as events (tool started/finished, answer deltas, then the final trace or an error in the user's
language): the answer runs in a thread, events reach the caller through a queue; never a stack trace."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy.exc import DBAPIError

from bot.answer.question import QuestionError
from bot.core.language import detect_language
from bot.core.store import LOCAL_OWNER, UnknownConversation
from bot.core.trace import AnswerTrace
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.advisor")


def stream_events(
    ask: Callable[..., AnswerTrace],
    text: str,
    conversation_id: str | None = None,
    lang: str | None = None,
    owner: str = LOCAL_OWNER,
    channel: str = "api",
) -> Iterator[dict[str, Any]]:
    """Events while answering (tool started/finished, answer deltas), then the final trace or an error."""
    events: queue.Queue = queue.Queue()
    done = object()

    def work() -> None:
        sent: list[str] = []

        def put(event: dict[str, Any]) -> None:
            if event.get("type") == "delta":
                sent.append(event["text"])
            events.put(event)

        try:
            trace = ask(text, conversation_id, lang, emit=put, owner=owner, channel=channel)
            streamed = "".join(sent)  # sentences the LLM's answer already sent, grounded (bot/answer/stream_gate.py)
            if not trace.answer.startswith(streamed):
                log.error("streamed text is not a prefix of the answer; sending the rest may repeat it")
                streamed = ""
            for piece in _pieces(trace.answer[len(streamed) :]):
                events.put({"type": "delta", "text": piece})
            events.put({"type": "final", "trace": trace.model_dump(mode="json")})
        except AdvisorError as err:
            events.put(
                {"type": "error", "code": error_code(err), "message": err.message(lang or detect_language(text or ""))}
            )
        except UnknownConversation:
            zh = (lang or detect_language(text or "")) == "zh"
            events.put(
                {
                    "type": "error",
                    "code": "unknown_conversation",
                    "message": "没有这个对话。" if zh else "No such conversation.",
                }
            )
        except DBAPIError:
            log.exception("store unavailable")
            zh = (lang or detect_language(text or "")) == "zh"
            events.put(
                {
                    "type": "error",
                    "code": "store_unavailable",
                    "message": "服务暂时不可用，请稍后重试。"
                    if zh
                    else "The service is briefly unavailable; try again shortly.",
                }
            )
        except Exception:  # never a stack trace to the client
            log.exception("stream failed")
            events.put({"type": "error", "code": "internal", "message": "internal error"})
        finally:
            events.put(done)

    threading.Thread(target=work, daemon=True).start()
    while (event := events.get()) is not done:
        yield event


def error_code(err: AdvisorError) -> str:
    """The wire code of a user error: unknown_gpu, unknown_model, invalid_question or invalid_input."""
    from tools.errors import UnknownGpu, UnknownModel

    if isinstance(err, UnknownGpu):
        return "unknown_gpu"
    if isinstance(err, UnknownModel):
        return "unknown_model"
    return "invalid_question" if isinstance(err, QuestionError) else "invalid_input"


def _pieces(answer: str, size: int = 48) -> Iterator[str]:
    """The answer in small pieces for streaming, split at line ends where possible."""
    for line in answer.splitlines(keepends=True):
        for i in range(0, len(line), size):
            yield line[i : i + size]
