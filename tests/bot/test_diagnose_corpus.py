"""The diagnose corpus of issue 24 (tests/corpus/diagnose/) holds what it says: real threads with their URL, the
asker's own words, the solution in our words labelled with the shared cause ids, a frozen held-out fifth; and its
scorer reads an answer trace as the bench does (the score threshold itself is wired after the diagnose tool lands)."""

import importlib.util
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.core.trace import AnswerTrace, ToolCall

_spec = importlib.util.spec_from_file_location(
    "diagnose_corpus", Path(__file__).resolve().parents[1] / "corpus" / "diagnose.py"
)
dc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = dc
_spec.loader.exec_module(dc)


def test_enough_real_threads_each_once_with_a_frozen_held_out_fifth():
    rows = dc.rows()
    assert len(rows) >= 80
    assert len({r.id for r in rows}) == len(rows) and len({r.url for r in rows}) == len(rows)
    held = [r for r in rows if dc.held_out(r.id)]
    assert len(held) >= 16 and 0.12 <= len(held) / len(rows) <= 0.25
    assert dc.held_out_digest() == dc.FROZEN_HELD_OUT, "the held-out fifth changed (ids or labels)"


def test_each_question_is_the_askers_text_and_each_solution_our_words():
    for r in dc.rows():
        cjk = len(dc.CJK.findall(r.question))
        if r.lang == "zh":
            assert cjk >= 4, r.id  # a Chinese thread asks in Chinese
        else:
            assert cjk <= 0.05 * len(r.question), r.id
        # the solution is ours: no 30-character run of it is copied from the asker's text
        s = r.solution
        assert not any(s[i : i + 30] in r.question for i in range(0, max(1, len(s) - 30))), r.id


def test_every_label_is_a_cause_id_of_the_vocabulary():
    assert len(set(dc.CAUSES)) == len(dc.CAUSES) == 21
    for r in dc.rows():
        assert all(c in dc.CAUSES or c.startswith(dc.OTHER) for c in r.solution_causes), r.id
    named = {c for r in dc.rows() for c in r.solution_causes if c in dc.CAUSES}
    assert len(named) >= 18  # the corpus covers the vocabulary, not a few causes


def test_a_row_with_an_unknown_cause_or_no_source_is_refused():
    good = dc.rows()[0].model_dump()
    with pytest.raises(ValidationError, match="unknown cause id"):
        dc.Thread.model_validate({**good, "solution_causes": ["out_of_memory"]})
    with pytest.raises(ValidationError, match="not a public thread URL"):
        dc.Thread.model_validate({**good, "url": "https://example.com/my-notes"})
    with pytest.raises(ValidationError):
        dc.Thread.model_validate({**good, "made_up_field": 1})


def test_a_quarter_of_the_threads_are_chinese_and_many_report_an_oom():
    rows = dc.rows()
    assert sum(r.lang == "zh" for r in rows) >= 0.25 * len(rows)
    assert sum(r.reported_oom for r in rows) >= 0.3 * len(rows)


def _trace(answer: str, *calls: tuple[str, dict]) -> AnswerTrace:
    tool_calls = [ToolCall(id=f"c{i}", tool=t, input={}, output=o) for i, (t, o) in enumerate(calls)]
    return AnswerTrace(conversation_id="x", answer=answer, language="en", mode="offline", tool_calls=tool_calls)


def test_the_scorer_counts_a_cause_in_the_top_two_and_a_fits_verdict_to_an_oom():
    row = next(r for r in dc.rows() if r.reported_oom and r.solution_causes[0] in dc.CAUSES)
    want = row.solution_causes[0]
    other = next(c for c in dc.CAUSES if c not in row.solution_causes)
    second = _trace("x", ("diagnose", {"causes": [{"cause": other}, {"cause": want}]}))
    third = _trace("x", ("diagnose", {"causes": [{"cause": other}, {"cause": other}, {"cause": want}]}))
    assert dc.top2(row, second) and not dc.top2(row, third)
    # the first fit call's verdict is the answer's; later calls price the suggested changes
    bare = _trace("**It fits.** 14 GB of 24 GB.", ("fit_inference", {"fits": True}))
    fixes = _trace("**It does not fit.**\n\n- TP 2: fits.", ("fit_training", {"fits": False}), ("fit_training", {"fits": True}))  # fmt: skip
    trusted = _trace("**按估算能放下，但您已经遇到 OOM：以实测为准。**", ("fit_training", {"fits": True}))
    assert dc.verdict(row, bare)["bare_fits_to_oom"]
    assert not dc.verdict(row, fixes)["fits_to_oom"]
    assert dc.verdict(row, trusted)["fits_to_oom"] and not dc.verdict(row, trusted)["bare_fits_to_oom"]
    diagnosed = _trace("**The KV pool is 8 GiB short.**\n\nAfter the change it fits.", ("diagnose", {"causes": [{"cause": want}]}), ("fit_inference", {"fits": True}))  # fmt: skip
    assert not dc.verdict(row, diagnosed)["fits_to_oom"] and dc.verdict(row, diagnosed)["top2"]
    scores = dc.score([dc.verdict(row, bare), dc.verdict(row, diagnosed)])
    assert scores["all"]["oom_rows"] == 2 and scores["all"]["fits_to_oom"] == 0.5 and scores["all"]["top2"] == 0.5
