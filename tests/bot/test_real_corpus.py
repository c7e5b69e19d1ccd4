"""The corpus of real questions holds what it says (verbatim questions with their URLs, labels in the reader's
vocabulary), and over the whole of it — real questions and the team's own corpus — no answer drops a mention
silently (the coverage gate) and no answer has an unsourced figure (grounding)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
import corpus
import real

from bot.offline.understand.request.model import ASKS, ROLES


def test_each_row_is_a_real_question_with_its_source():
    rows = real.rows()
    assert len(rows) >= 300
    assert len({r["id"] for r in rows}) == len(rows) and len({r["url"] for r in rows}) == len(rows)
    for r in rows:
        assert r["url"].startswith("https://") and r["text"].strip() and r.get("accepted")
        assert r.get("expect") and r.get("checks"), r["id"]
        for m in r.get("mentions") or []:
            assert m["text"] in r["text"], (r["id"], m["text"])  # a span of the asker's own words
            assert m["role"] in ROLES or m["role"] in real.ROLE_SAME, (r["id"], m["role"])
        assert set(r["asks"]) <= {*ASKS, "out_of_scope"}, r["id"]


def test_the_held_out_fifth_is_a_fifth():
    held = [r for r in real.rows() if real.held_out(r["id"])]
    assert 0.15 <= len(held) / len(real.rows()) <= 0.25


def test_no_mention_is_dropped_and_no_figure_is_unsourced_over_both_corpora(advisor):
    bad = []
    for r in real.rows():
        trace = advisor.ask(r["text"], source=real.source(r))
        if trace.unused or trace.ungrounded:
            bad.append((r["id"], [u.text for u in trace.unused], [u.text for u in trace.ungrounded]))
    for row in corpus.rows():
        cid = None
        for turn in corpus.turns(row):
            trace = advisor.ask(turn["q"], conversation_id=cid)
            cid = trace.conversation_id
            if trace.unused or trace.ungrounded:
                bad.append((row["id"], [u.text for u in trace.unused], [u.text for u in trace.ungrounded]))
    assert bad == []
