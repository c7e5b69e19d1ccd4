"""No A800 purchase quote is on file (issue 25): the cards are priced at the A100 80GB's quote (same GA100
silicon), and the answer says there is no A800 price and whose price it used, rather than passing the A100's
price off as an A800's."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("question", "no_price", "a100"),
    [
        (
            "买 8 张 A800 80GB 大概要多少钱？",
            "目录中没有 NVIDIA A800 SXM4 80GB 的公开价格",
            "A100 SXM4 80GB（采购 6.0 万元–9.0 万元/卡",
        ),
        (
            "How much does it cost to buy 8 A800 80GB GPUs?",
            "There is no published price for NVIDIA A800 SXM4 80GB on file",
            "A100 SXM4 80GB (60,000 CNY–90,000 CNY per card",
        ),
    ],
)
def test_an_a800_price_says_it_is_the_a100s(advisor, question, no_price, a100):
    t = advisor.ask(question)
    head = t.answer.split("\n")[0]
    assert ("48.0–72.0 万元" in head) or ("480,000–720,000 CNY" in head)  # 8 × the A100's 6–9 万
    assert no_price in t.answer and a100 in t.answer
