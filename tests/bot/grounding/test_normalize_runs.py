"""`normalize` copies runs of plain characters whole (speed, issue 28); what it returns must be exactly what the
character-by-character reading returns: the figures a reader sees, and the map back to the text."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.grounding import normalize as module
from bot.grounding.numbers import extract_numbers

#: the characters that matter to the reading (numerals, magnitudes, 百分之, invisible and special spaces, full-width
#: and other Unicode digits, units) mixed with plain prose in both languages
ALPHABET = list(
    "零〇○一二两兩三四五六七八九十拾百佰千仟万萬亿億壹贰叁肆伍陆柒捌玖点分之元块倍张卡小时个月年天%"
    "０１２８９ＧＢ．，：；（）！？٨٠\u00ad\u200b\u200c\u2060\ufeff\u2007\u3000\u00a0\u2009\u202f_' \t\n"
    "0123456789.,GBTkWx×≈→·—…“”显存训练推理一些统一万一之一千万十分的是在"
    "abcH100A80gbtokens"
)
SAMPLES = [
    "8 张 H100 80GB，约需 1 2 0 0 元，百分之五十的显存；两元、三倍、十万元、壹万、三千五百、三点五。",
    "1\u200b200 元 ８０ ＧＢ ٨٠ 一些 统一 万一 之一 千万 1 000 000 1_000 二〇二四年",
    "plain ASCII only: 70B on 8 x A100 80GB needs 1.2e21 FLOPs",
]


def _per_character(text: str, monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as m:
        m.setattr(module, "_PLAIN_RUN", re.compile(r"(?!)"))  # never matches: every character read on its own
        return module.normalize(text), [(n.text, n.value, n.unit, n.start, n.end) for n in extract_numbers(text)]


def _runs(text: str):
    return module.normalize(text), [(n.text, n.value, n.unit, n.start, n.end) for n in extract_numbers(text)]


@pytest.mark.parametrize("text", SAMPLES)
def test_runs_read_as_characters_do(text, monkeypatch):
    assert _runs(text) == _per_character(text, monkeypatch)
    assert module.normalize(SAMPLES[0])[0].count("50%") == 1  # the reading itself still happens


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=80))
def test_any_text_reads_the_same(text):
    with pytest.MonkeyPatch.context() as mp:
        assert _runs(text) == _per_character(text, mp)
