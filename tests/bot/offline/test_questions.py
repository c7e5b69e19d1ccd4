"""The offline planner over the golden question corpus: tools called, key figures, no ungrounded number."""

import logging
from pathlib import Path

import pytest
import yaml

from bot.answer.advisor import Advisor
from bot.core.store import Store
from bot.core.toolbox import Toolbox
from bot.offline.rules import RulesPlanner
from knowledge.config import KnowledgeConfig
from knowledge.retrieval import Retriever

ROWS = yaml.safe_load((Path(__file__).parents[2] / "golden" / "questions.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def advisor(tmp_path_factory):
    data = tmp_path_factory.mktemp("advisor")
    retriever = Retriever.from_config(KnowledgeConfig(data_dir=data))
    adv = Advisor(store=Store(f"sqlite:///{data}/store.sqlite3"), toolbox=Toolbox(retriever), offline=RulesPlanner())
    yield adv
    adv.store.close()


def _last(trace, tool):
    calls = [c for c in trace.tool_calls if c.tool == tool]
    assert calls, f"{tool} was not called; calls: {[c.tool for c in trace.tool_calls]}"
    return calls[-1]


def _value(trace, path):
    """ "tool.part.key…" reads the tool's last call; "tool[0].part.key…" its first; part "assumed" reads the
    calculator's own assumptions (what it used, whether given or its default)."""
    tool, part, *keys = path.split(".")
    if tool.endswith("]"):
        tool, index = tool[:-1].split("[")
        call = [c for c in trace.tool_calls if c.tool == tool][int(index)]
    else:
        call = _last(trace, tool)
    if part == "assumed":  # "tool.assumed.key": the value the calculator used, given or default
        return next(a["value"] for a in call.output["assumptions"] if a["key"] == keys[0])
    node = getattr(call, part)
    for k in keys:
        node = node[k]
    return node


def _check(trace, turn, caplog):
    called = [c.tool for c in trace.tool_calls]
    for tool in turn.get("tools", []):
        assert tool in called, f"expected {tool}; called {called}\n{trace.answer}"
    if turn.get("tools") == []:
        assert not [t for t in called if t != "search_knowledge"] or "expect" in turn, (called, trace.answer)
    for path, want in (turn.get("expect") or {}).items():
        got = _value(trace, path)
        if isinstance(want, float | int) and not isinstance(want, bool) and isinstance(got, float | int):
            assert got == pytest.approx(want, rel=1e-6), (path, got, trace.answer)
        elif isinstance(want, str) and isinstance(got, str) and path.endswith(".model") and want[-1] in "Bb":
            assert got.lower() == want.lower()
        else:
            assert got == want, (path, got)
    for phrase in turn.get("contains", []):
        assert phrase in trace.answer, f"{phrase!r} not in answer:\n{trace.answer}"
    for phrase in turn.get("absent", []):
        assert phrase not in trace.answer, f"{phrase!r} in answer:\n{trace.answer}"
    assert trace.ungrounded == []
    dropped = [r.getMessage() for r in caplog.records if "ungrounded numbers" in r.getMessage()]
    assert not dropped, f"the planner wrote unsourced figures (sentences were dropped): {dropped}\n{trace.answer}"
    assert trace.mode == "offline"
    assert trace.answer.strip()


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_golden_question(advisor, row, caplog):
    caplog.set_level(logging.ERROR, logger="gpu_advisor.advisor")
    turns = row.get("turns") or [row]
    cid = None
    for turn in turns:
        caplog.clear()
        trace = advisor.ask(turn["q"], conversation_id=cid)
        cid = trace.conversation_id
        _check(trace, turn, caplog)


def test_corpus_shape():
    questions = [t["q"] for r in ROWS for t in (r.get("turns") or [r])]
    zh = [q for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
    assert len(questions) >= 80
    assert len(zh) / len(questions) >= 0.6
    assert sum(1 for r in ROWS if r.get("turns")) >= 5


def test_answer_language_follows_the_question(advisor):
    assert advisor.ask("单卡 A100 能放下 Qwen2.5-7B 推理吗").language == "zh"
    assert advisor.ask("Can one A100 serve Qwen2.5-7B?").language == "en"


def test_conversation_survives_a_restart(advisor, tmp_path):
    url = f"sqlite:///{tmp_path}/s.sqlite3"
    first = Advisor(store=Store(url), toolbox=advisor.toolbox, offline=RulesPlanner())
    t1 = first.ask("70B 全参训练，单卡 A100 够吗？")
    first.store.close()
    again = Advisor(store=Store(url), toolbox=advisor.toolbox, offline=RulesPlanner())
    t2 = again.ask("那换成H800呢？", conversation_id=t1.conversation_id)
    call = _last(t2, "fit_training")
    assert call.input["model"] == "70B" and call.input["gpu"] == "h800-sxm5-80gb"


def test_empty_question_is_a_clear_error(advisor):
    from bot.answer.advisor import QuestionError

    with pytest.raises(QuestionError) as err:
        advisor.ask("   ")
    assert "请输入" in err.value.message("zh")
