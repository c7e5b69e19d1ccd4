"""`Advisor`: the facade every interface calls — `advisor.ask(text, conversation_id) -> AnswerTrace`.

It records the question before answering (nothing a user sent is lost), rebuilds the
conversation context from the store, runs the planner (the LLM turn, `llm_turn.py`, when an endpoint is
configured, else the offline planner; the offline planner again when the LLM's answer cannot be
shipped), checks that every mention of the question is used or explained (`coverage.py`) and that every number in the
answer has a source (`grounded.py`), and stores the trace.
Streaming is `streaming.py`.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bot.answer import asked
from bot.answer.coverage import gate
from bot.answer.grounded import grounded
from bot.answer.llm_turn import LlmTurn, fallback_note, llm_turn
from bot.answer.question import MAX_QUESTION_CHARS, QuestionError, clean_question
from bot.answer.streaming import stream_events
from bot.core import attachments
from bot.core.planner import Context, Emit, Planner, PlannerError, _ignore
from bot.core.settings import Settings
from bot.core.store import LOCAL_OWNER, Store
from bot.core.toolbox import Toolbox
from bot.core.trace import AnswerTrace, NumberRef, Ungrounded, Unused
from bot.offline.compose.proposal import asked as proposal_asked
from bot.offline.say.proposal_words import w as proposal_words
from bot.offline.understand.request.reader import read
from tools.catalog import user_models

__all__ = ["MAX_QUESTION_CHARS", "Advisor", "QuestionError"]

log = logging.getLogger("gpu_advisor.advisor")

HISTORY_TURNS = 6


@dataclass
class Advisor:
    """Built once per process (`Advisor.from_settings()`); thread-safe for concurrent `ask` calls."""

    store: Store
    toolbox: Toolbox
    offline: Planner
    llm: Planner | None = None
    #: how many answers plan at once in this process. Offline planning is pure CPU under one GIL: one
    #: at a time keeps the event loop of a server (and its health checks) responsive and answers
    #: first-come first-served; an LLM answer mostly waits on the network, so many may run together.
    gate: threading.Semaphore | None = None
    #: what links to files an answer hands over start with (Settings.public_url; "": paths on this server)
    link_base: str = ""
    link_days: int = attachments.LINK_DAYS

    def __post_init__(self) -> None:
        if self.gate is None:
            self.gate = threading.Semaphore(1 if self.llm is None else 32)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Advisor:
        from bot.offline.rules import RulesPlanner
        from knowledge.retrieval import Retriever, set_default_retriever

        settings = settings or Settings()
        user_models.use_data_dir(settings.data_dir)  # models added with `gpu-advisor models add` live there
        retriever = Retriever.from_config(settings.knowledge())
        set_default_retriever(retriever)
        llm = None
        if settings.llm_enabled:
            from bot.llm.agent import AgentPlanner

            try:
                llm = AgentPlanner.from_settings(settings)
            except PlannerError as err:  # e.g. a hosted endpoint without a key: answer offline, say why in the log
                log.warning("LLM endpoint not usable, running offline: %s", err)
        return cls(
            store=Store(settings.store_url),
            toolbox=Toolbox(retriever),
            offline=RulesPlanner(),
            llm=llm,
            link_base=settings.public_url,
            link_days=settings.link_days,
        )

    @property
    def mode(self) -> str:
        return self.llm.mode if self.llm else self.offline.mode

    # ------------------------------------------------------------------------------------------
    def ask(
        self,
        text: str,
        conversation_id: str | None = None,
        lang: str | None = None,
        emit: Emit = _ignore,
        owner: str = LOCAL_OWNER,
        channel: str = "api",
        source: str | None = None,
    ) -> AnswerTrace:
        """Answer `text` in conversation `conversation_id` (a new one when None).

        `source`: where the question was asked, when the asker's page shows a place whose model a question that
        names none means: a repository, "QwenLM/Qwen3" or its address (`Context.source`). None in a chat.

        `owner` is the principal the conversation belongs to (see `bot.core.store`): an API key, a widget
        site, a channel workspace ("slack:T0123", "wecom:<corp id>"). A conversation another owner
        holds is refused with `UnknownConversation`, exactly like a missing one."""
        return self.ask_dumped(text, conversation_id, lang, emit, owner, channel, source)[0]

    def ask_dumped(
        self,
        text: str,
        conversation_id: str | None = None,
        lang: str | None = None,
        emit: Emit = _ignore,
        owner: str = LOCAL_OWNER,
        channel: str = "api",
        source: str | None = None,
    ) -> tuple[AnswerTrace, str]:
        """`ask`, with the trace's JSON text as the store keeps it (`model_dump_json()`): POST /v1/ask sends that
        text, so an answer is serialized once, not once for the store and again for the response."""
        text = clean_question(text)
        cid = conversation_id or uuid.uuid4().hex
        idx = self.store.start_turn(cid, text, channel=channel, owner=owner)
        try:
            with self.gate:  # type: ignore[union-attr]
                trace, state = self._answer(text, cid, lang, emit, fresh=idx == 0, source=source)
        except Exception as err:
            self.store.fail_turn(cid, idx, f"{type(err).__name__}: {err}")
            raise
        dumped = trace.model_dump_json()
        self.store.finish_turn(cid, idx, trace, state, dumped=dumped)
        return trace, dumped

    def stream(
        self,
        text: str,
        conversation_id: str | None = None,
        lang: str | None = None,
        owner: str = LOCAL_OWNER,
        channel: str = "api",
    ) -> Iterator[dict[str, Any]]:
        """Events while answering (tool started/finished, answer deltas), then the final trace or an error."""
        return stream_events(self.ask, text, conversation_id, lang, owner, channel)

    # ------------------------------------------------------------------------------------------
    def _context(self, cid: str, lang: str | None, fresh: bool, source: str | None = None) -> Context:
        if fresh:  # the first turn: nothing to read back
            return Context(conversation_id=cid, language=lang, source=source)
        turns = self.store.turns(cid, limit=HISTORY_TURNS + 1)
        answered = [t for t in turns if t.status == "answered" and t.answer]
        history = [(t.question, t.answer) for t in answered]
        state = answered[-1].state if answered else self.store.last_state(cid)
        return Context(conversation_id=cid, history=history, state=state or {}, language=lang, source=source)

    def _answer(
        self, text: str, cid: str, lang: str | None, emit: Emit, fresh: bool = False, source: str | None = None
    ) -> tuple[AnswerTrace, dict]:
        """store -> planner (the LLM turn, else or on its failure the offline planner) -> cover -> ground -> trace."""
        ctx = self._context(cid, lang, fresh, source)
        turn = LlmTurn(None, self.offline.mode)
        if self.llm is not None and not proposal_asked(text):  # "生成方案" is made from the state, in code
            turn = llm_turn(self.llm, self.toolbox, text, ctx, emit)
        mode = "llm-fallback" if turn.fallback is not None else turn.mode
        result = turn.result
        if result is None:
            result = self.offline.plan(text, ctx, self.toolbox.run, emit)
            if turn.fallback is not None:
                result.answer = fallback_note(turn.fallback[0], result.language) + "\n\n" + result.answer
        if result.attachments:  # the files the answer hands over ("生成方案"), linked under it
            result.answer += "\n\n" + self._links(cid, result)
        request = read(text)
        unanswered = asked.gate(request.cued, result)  # no part of the question dropped without a word
        mentions, unused = gate(request, result)  # nothing the user said is dropped without a word
        grounding = grounded(text, result, mode)
        trace = AnswerTrace(
            conversation_id=cid,
            answer=result.answer,
            language=result.language if result.language in ("zh", "en") else "en",
            mode=mode,
            tool_calls=result.tool_calls,
            citations=result.citations,
            numbers=[NumberRef(**n.model_dump()) for n in grounding.numbers],
            ungrounded=[Ungrounded(**u.model_dump()) for u in grounding.ungrounded],
            mentions=mentions,
            unused=[Unused(text=u.text, role=u.role) for u in unused],
            unanswered=unanswered,
            follow_ups=result.follow_ups,
            fallback_reason=f"{turn.fallback[0]}: {turn.fallback[1]}" if turn.fallback else None,
            gate=turn.reasons,
        )
        return trace, result.state

    def _links(self, cid: str, result) -> str:
        """Keep the answer's files for the conversation; one line of signed, dated links to them."""
        token, expires = attachments.save(cid, result.attachments, days=self.link_days)
        secret = self.store.secret(attachments.SECRET_NAME)
        links = " · ".join(
            f"[{name}]({attachments.link(secret, token, cid, expires, name, self.link_base)})"
            for name in result.attachments
        )
        until = dt.datetime.fromtimestamp(expires, dt.UTC).date().isoformat()
        return proposal_words("chat_files", result.language, links=links, until=until)
