"""What the offline answer tests share: the text of a development row of the real corpus (never a held-out one), a
conversation asked turn by turn with every turn grounded and nothing the user said dropped, and a trace's calls
of one tool."""

from __future__ import annotations

import functools
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
import real


@functools.cache
def row(row_id: str) -> str:
    found = next(r for r in real.rows() if r["id"] == row_id)
    assert not real.held_out(row_id), "rules are never written from the held-out fifth"
    return found["text"]


def ask(advisor, caplog, *questions):
    caplog.set_level(logging.ERROR, logger="gpu_advisor.advisor")
    cid, traces = None, []
    for q in questions:
        t = advisor.ask(q, conversation_id=cid)
        cid = t.conversation_id
        assert t.ungrounded == [] and t.unused == [], t.answer
        traces.append(t)
    return traces


def calls(trace, tool):
    return [c for c in trace.tool_calls if c.tool == tool]
