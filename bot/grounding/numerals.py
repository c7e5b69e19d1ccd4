"""Chinese numerals: the one table that numbers are read with, in a question (the offline parser,
`bot/offline/understand/lexicon.py`) and in an answer (the grounding check's `normalize`).

Both readers share the common forms. Each adds the forms that only its text has, named here so that no
reader keeps a copy: a person typing a question writes 俩 ("俩卡"); an answer (a model's, or an injected
instruction's) can hide a figure in financial or traditional numerals ("壹万", "兩元") or a look-alike ○,
which the grounding check must read and a question never needs.
"""

from __future__ import annotations

#: digits both readers know
DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
#: spoken only: read in questions
COLLOQUIAL_DIGITS = {"俩": 2}
#: financial digits (大写数字): read in answers
FINANCIAL_DIGITS = {
    "壹": 1, "贰": 2, "貳": 2, "叁": 3, "參": 3, "肆": 4, "伍": 5, "陆": 6, "陸": 6, "柒": 7, "捌": 8, "玖": 9,
}  # fmt: skip
#: a traditional 两 and the circle that looks like 〇: read in answers
VARIANT_DIGITS = {"○": 0, "兩": 2}
#: 十 百 千 within a section, and their financial forms
UNITS = {"十": 10, "百": 100, "千": 1000}
FINANCIAL_UNITS = {"拾": 10, "佰": 100, "仟": 1000}
#: 万 亿 between sections, and their traditional forms
BIG = {"万": 10**4, "亿": 10**8}
FINANCIAL_BIG = {"萬": 10**4, "億": 10**8}
#: the magnitude words written after Arabic digits ("1.5万", "2万亿"), longest first
MAGNITUDES = ("万亿", "千亿", "百亿", "亿", "万", "千")
