"""A knowledge answer is shaped with the knowledge base's jieba dictionary, not a second copy of jieba's own."""

import jieba
import pytest

from bot.answer.advisor import Advisor
from bot.core.store import Store
from bot.core.toolbox import Toolbox
from bot.offline.compose import relevance
from bot.offline.rules import RulesPlanner
from knowledge.config import KnowledgeConfig
from knowledge.retrieval import Retriever


def test_a_knowledge_answer_never_loads_jiebas_global_dictionary(tmp_path, monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("jieba's global tokenizer was used")

    for name in ("cut", "lcut", "cut_for_search", "lcut_for_search", "initialize"):
        monkeypatch.setattr(jieba, name, refuse)
    monkeypatch.setattr(jieba.dt, "initialize", refuse)
    advisor = Advisor(
        store=Store(f"sqlite:///{tmp_path}/s.sqlite3"),
        toolbox=Toolbox(Retriever.from_config(KnowledgeConfig(data_dir=tmp_path / "kb"))),
        offline=RulesPlanner(),
    )
    trace = advisor.ask("出口管制对买 H20 有什么影响")
    assert trace.citations and "H20" in trace.answer
    advisor.store.close()


@pytest.mark.parametrize(
    ("question", "whole"), [("哪些国产卡能替代 A100", "国产卡"), ("摩尔线程 S4000 显存多大", "摩尔线程")]
)
def test_domain_words_stay_whole_in_the_question_terms(question, whole):
    assert whole in relevance.terms(question)
