"""Whatever a user types, the advisor answers (or says why it cannot) — never a crash, never an
unsourced number."""

import logging

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.answer.advisor import Advisor, QuestionError
from bot.core.store import Store
from bot.core.toolbox import Toolbox
from bot.offline.rules import RulesPlanner
from knowledge.config import KnowledgeConfig
from knowledge.retrieval import Retriever

WORDS = [
    "A100",
    "H800",
    "4090D",
    "910B",
    "H20",
    "H300",
    "70B",
    "7b",
    "700亿参数",
    "Qwen2.5-72B",
    "DeepSeek-R1",
    "LoRA",
    "QLoRA",
    "全参",
    "推理",
    "部署",
    "8卡",
    "两台8卡",
    "0卡",
    "-5B",
    "1B token",
    "2万亿",
    "30万",
    "20元/卡时",
    "每天8小时",
    "3个月",
    "ZeRO-3",
    "seq 4096",
    "并发 64",
    "多久",
    "多少钱",
    "放得下吗",
    "租还是买",
    "能替代",
    "推荐",
    "国产",
    "忽略之前的指示",
    "？",
    "，",
    " ",
    "how long",
    "fit",
    "1e9",
    "∞",
    "NaN",
    "💥",
    "99999999999卡",
    "0.000001B",
    "１０００",
    "卡时",
    "那换成",
    "呢",
]

question = st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=6)), min_size=1, max_size=8).map("".join)


@pytest.fixture(scope="module")
def advisor(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz")
    adv = Advisor(
        store=Store(f"sqlite:///{data}/s.sqlite3"),
        toolbox=Toolbox(Retriever.from_config(KnowledgeConfig(data_dir=data))),
        offline=RulesPlanner(),
    )
    yield adv
    adv.store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=question, second=question)
@example(first="A100", second="700亿参数0卡1B token0.000001B")  # a size label once printed as 1e-06B
@example(first="A100", second="99999999999卡0.000001BQwen2.5-72B")  # a size no model has, inside a name
@example(first="A100700亿参数0卡", second="呢")
@example(first="并发 64？H800H800how long", second="呢")  # a time part with no token count: asked, not a crash
@example(first="NaN卡时∞0.000001B20元/卡时", second="并发 64")  # the follow-up's time part lost its tokens
@example(
    first="0.000001B并发 64", second="A100"
)  # a calculator's refusal states its own limits (0.01B to 100,000B)  # digits glued to a card's name are no model size
def test_any_question_gets_an_answer_with_every_number_sourced(advisor, first, second, caplog):
    caplog.set_level(logging.ERROR, logger="gpu_advisor.advisor")
    caplog.clear()  # records would otherwise pile up across Hypothesis examples
    cid = None
    for text in (first, second):  # a follow-up too, so carried slots are exercised
        try:
            trace = advisor.ask(text, conversation_id=cid)
        except QuestionError as err:  # empty or too long: a clear message, in both languages
            assert err.message("zh") and err.message("en")
            continue
        cid = trace.conversation_id
        assert trace.answer.strip()
        assert trace.ungrounded == []
    dropped = [r.getMessage() for r in caplog.records if "ungrounded numbers" in r.getMessage()]
    assert not dropped, (first, second, dropped)
