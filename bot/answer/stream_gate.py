"""Streaming that stays grounded: the model's answer goes out sentence by sentence, each one only once
the answer so far passes the quality gate (bot/answer/gate.py).

    streamer = StreamGate(question, lang, state, emit, run_of=lambda: run)
    streamer.feed(token) ...; streamer.end_turn(tool_calls=False)
    streamer.started, streamer.text      # what was sent: the answer, if anything was

The planner's raw tokens arrive as `model_token` events and each model turn ends with `model_turn_end`
(tool calls or not). Complete units are cut from the text: a sentence (ends with 。！？!? or with . ;
before a space), a line (a table row, a list item), or a whole code block. Until the first unit is sent,
units are held; as soon as the held text passes the whole gate (a calculator ran when the intent needs
a figure, the key figure and a consistent verdict are stated, every figure is grounded, …) it is sent
as `delta` events. After that each new unit is sent if the answer with it still passes, and skipped if
not; a loop, template debris or runaway length ends the stream. The FOLLOW-UPS line is never sent.

What was sent is the answer: the concatenation of the deltas passes the gate by construction, so an
answer is never retracted. When nothing could be sent (the model's text never passed), the advisor
goes on as without streaming: the repair round, then the offline answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from bot.answer.gate import check
from bot.core.planner import Emit, PlanResult

_FOLLOW = re.compile(r"^\s*[*_>]*\s*(?:FOLLOW[- ]?UPS?|追问)\s*[*_]*\s*[:：]", re.IGNORECASE)
_END = re.compile(r"[。！？!?](?:[)）\]」』\"'”*_]*)|[.;；](?=\s)|\n")
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
FATAL = frozenset({"repetition", "markup", "too_long", "wrong_language"})  # after these nothing more is sent


class StreamGate:
    def __init__(
        self, question: str, lang: str, state: Mapping[str, Any] | None, emit: Emit, run_of: Callable[[], Any]
    ):
        self.question, self.lang, self.state, self.emit, self.run_of = question, lang, state, emit, run_of
        self.pending = ""  # text of the current model turn not yet cut into units
        self.held: list[str] = []  # complete units not sent yet (before the first send)
        self.sent: list[str] = []  # units sent, in order
        self.closed = False  # nothing more will be sent (follow-ups reached, or a fatal reason)
        self.refused: list[str] = []  # gate reasons of units skipped after the stream started
        self._gap = ""  # whitespace after the last sent unit, sent before the next one (never at the end)

    @property
    def started(self) -> bool:
        return bool(self.sent)

    @property
    def text(self) -> str:
        return "".join(self.sent)

    # ---- events ------------------------------------------------------------------------------------
    def relay(self, emit: Emit) -> Emit:
        """An emit for the planner: model tokens come here, every other event goes on to `emit`."""

        def handle(event: dict[str, Any]) -> None:
            kind = event.get("type")
            if kind == "model_token":
                self.feed(event.get("text") or "")
            elif kind == "model_turn_end":
                self.end_turn(bool(event.get("tool_calls")), event.get("finish_reason"))
            else:
                emit(event)

        return handle

    def feed(self, token: str) -> None:
        if self.closed:
            return
        self.pending += token
        for unit in self._units(final=False):
            self._unit(unit)

    def end_turn(self, tool_calls: bool, finish_reason: str | None = None) -> None:
        """A model turn ended: with tool calls its text was a preamble (dropped unless already sent); cut off
        by max_tokens (`finish_reason: length`), its unfinished last unit is never sent."""
        if tool_calls and not self.started:
            self.pending, self.held = "", []
            return
        if finish_reason == "length":
            if "truncated" not in self.refused:
                self.refused.append("truncated")
            self.pending, self.held = "", ([] if not self.started else self.held)
            return
        for unit in self._units(final=True):
            self._unit(unit)
        self.pending = ""
        if not self.started:
            self.held = []  # the next attempt (a repair round) starts afresh

    # ---- units -------------------------------------------------------------------------------------
    def _units(self, final: bool) -> list[str]:
        text = self.pending
        if _THINK_OPEN in text:
            if _THINK_CLOSE not in text and not final:
                return []  # wait for the end of the reasoning block
            text = re.sub(r"<think>.*?(?:</think>|$)\s*", "", text, flags=re.DOTALL)
        units: list[str] = []
        pos = 0
        while pos < len(text):
            fence = _FENCE.search(text, pos)
            end = _END.search(text, pos)
            if fence and (end is None or fence.start() <= end.start()) and not text[pos : fence.start()].strip():
                close = _FENCE.search(text, fence.end())
                if close is None:
                    break  # an open code block: wait for its end
                stop = text.find("\n", close.end())
                stop = len(text) if stop < 0 else stop + 1
                if stop == len(text) and not final and not text.endswith("\n"):
                    break
                units.append(text[pos:stop])
                pos = stop
                continue
            if end is None:
                break
            units.append(text[pos : end.end()])
            pos = end.end()
        rest = text[pos:]
        if final and rest.strip():
            units.append(rest)
            rest = ""
        self.pending = rest
        return units

    def _unit(self, unit: str) -> None:
        core = unit.rstrip()
        tail = unit[len(core) :]
        if self.closed:
            return
        if not core.strip():
            if self.started:
                self._gap = _wider(self._gap, unit)
            elif self.held:
                self.held.append(unit)
            return
        if _FOLLOW.match(core):
            self.closed = True
            return
        if not self.started:
            self.held.append(unit)
            candidate = "".join(self.held).strip()
            if self._verdict(candidate).ok:
                self._send(candidate)
                self._gap = "".join(self.held)[len("".join(self.held).rstrip()) :]
                self.held = []
            return
        piece = self._gap + core
        verdict = self._verdict(self.text + piece)
        if verdict.ok:
            self._send(piece)
            self._gap = tail
        else:
            self.refused += [r for r in verdict.reasons if r not in self.refused]
            self._gap = _wider(self._gap, tail)
            if FATAL & set(verdict.reasons):
                self.closed = True

    def _send(self, piece: str) -> None:
        self.sent.append(piece)
        self.emit({"type": "delta", "text": piece})

    def _verdict(self, answer: str):
        run = self.run_of()
        calls = list(run.calls) if run is not None else []
        citations = list(run.citations) if run is not None else []
        errors = max(0, run.attempts - len(run.calls)) if run is not None else 0
        result = PlanResult(answer=answer, language=self.lang, tool_calls=calls, citations=citations)
        return check(self.question, result, lang=self.lang, state=self.state, tool_errors=errors)


def _wider(gap: str, more: str) -> str:
    """The larger of two separators (a paragraph break beats a line break beats a space)."""
    return max(gap, more, key=lambda g: (g.count("\n"), len(g)))
