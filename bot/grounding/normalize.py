"""Figures in disguise, rewritten as plain ASCII figures before extraction, with a map back to the text.

A model (or an injected instruction) can write a figure so that a scanner for ASCII digits misses it:
Chinese numerals ("十万元", "两元", "壹万", "三千五百", "百分之五十"), full-width or other Unicode
digits ("８０ GB", "٨٠"), digits split by invisible characters ("1\u200b200") or spaced one by one
("1 2 0 0 元"). `normalize(text)` returns the text with each of these written plainly
("100000元", "2元", "10000", "3500", "50%", "80 GB", "1200 元") and, for every character of the
result, the position in `text` it came from, so a figure found in the result is reported with the
span the reader sees.

Chinese numerals are rewritten only where they read as a figure: a run with a magnitude character
(十 百 千 万 亿) or a financial numeral (壹 贰 …), or one numeral followed by a unit ("两元", "三倍",
"一张卡"). Words such as 一些, 统一, 万一, 之一 and bare counts ("两种", "一个", "一张卡": a spelled-out count up to nine is prose) are left alone.
"""

from __future__ import annotations

import re
import unicodedata

from bot.grounding.numerals import BIG, DIGITS, FINANCIAL_BIG, FINANCIAL_DIGITS, FINANCIAL_UNITS, UNITS, VARIANT_DIGITS

__all__ = ["normalize"]

_DIGITS = {**DIGITS, **VARIANT_DIGITS, **FINANCIAL_DIGITS}
_SMALL = {**UNITS, **FINANCIAL_UNITS}
_BIG = {**BIG, **FINANCIAL_BIG}
_FINANCIAL = set(FINANCIAL_DIGITS) | set(FINANCIAL_UNITS) | set(FINANCIAL_BIG)
_NUMERAL = "".join(_DIGITS) + "".join(_SMALL) + "".join(_BIG)
#: a run of numerals that starts with a digit or 十 (not 百/千/万/亿 alone: "千万" means "by all means"),
#: with an optional decimal part ("三点五")
_RUN_RE = re.compile(rf"[{''.join(_DIGITS)}十拾][{_NUMERAL}]*(?:点[{''.join(_DIGITS)}]+)?")
_PERCENT_RE = re.compile(rf"百分之([{_NUMERAL}]+(?:点[{''.join(_DIGITS)}]+)?|[0-9]+(?:\.[0-9]+)?)")
#: what makes a single numeral a figure: a unit or measure word right after it
_UNIT_AFTER_RE = re.compile(
    r"[ \t]?(?:元|块|角|美元|倍|%|个?小时|个月|年|天|周|分钟|秒|GB|TB|G\b|B\b|T\b|亿|万|千|百"
    r"|tokens?|个?token|瓦|千瓦|度|W\b|kW\b)",
    re.I,
)
#: words in which a numeral is not a figure
_WORDS_RE = re.compile(
    r"一些|一下|一起|一般|一致|一样|一定|一直|一旦|一切|一边|一方面|统一|唯一|万一|一再|一点点"
    r"|之一|一律|一共|一概|十分|一同|一味|一贯|进一步|一览|一句|一体|一口气|千万|三思"
)
_INVISIBLE = {"\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e"}
_SPACES = "\u2007\u3000"
_FULLWIDTH_KEEP = set("，：；（）！？")  # CJK punctuation stays as it is
#: digits grouped by thousands with a thin or no-break space, underscore or apostrophe: "1 000 000", "1_000"
_GROUPED_RE = re.compile(r"(?<![A-Za-z0-9_.])[0-9]{1,3}(?:[\u00a0\u2009\u202f_'][0-9]{3})+(?![0-9])")
#: digits spaced one by one: "1 2 0 0 元"
_SPACED_RE = re.compile(r"(?<![A-Za-z0-9_.])[0-9](?:[ \t][0-9]){2,}(?![0-9A-Za-z])")
#: a run of characters that stand for themselves (ASCII, CJK ideographs and punctuation, Latin-1, general
#: punctuation, arrows and math signs, the full-width punctuation kept as it is), none of them a numeral, an
#: invisible or special space, or the 百 of "百分之": `normalize` copies such a run whole instead of character by
#: character (the result is the same, only faster; tests/bot/grounding/test_normalize_runs.py)
_PLAIN_RUN = re.compile(
    "(?:(?![" + re.escape("".join(_DIGITS) + "十拾百" + "".join(_INVISIBLE) + _SPACES) + "])"
    "[\x00-\x7f\u00a0-\u00ff\u2010-\u2027\u2030-\u205e\u2190-\u22ff\u3001-\u303f\u4e00-\u9fff"
    + re.escape("".join(sorted(_FULLWIDTH_KEEP)))
    + "])+"
)


def _parse(run: str) -> str | None:
    """A run of Chinese numerals as ASCII digits ("三千五百" -> "3500", "三点五" -> "3.5"); None if malformed."""
    whole, _, frac = run.partition("点")
    total, section, num = 0, 0, None
    for ch in whole:
        if ch in _DIGITS:
            if num is not None:  # "一二三": digits read one by one ("二〇二四")
                num = num * 10 + _DIGITS[ch]
            else:
                num = _DIGITS[ch]
        elif ch in _SMALL:
            section += (1 if num is None else num) * _SMALL[ch]
            num = None
        elif ch in _BIG:
            if _BIG[ch] == 10**8:
                total = (total + section + (num or 0)) * 10**8
                section = 0
            else:
                section = (section + (num or 0)) * 10**4
                if section == 0:
                    section = 10**4
            num = None
        else:
            return None
    value = total + section + (num or 0)
    if frac:
        return f"{value}." + "".join(str(_DIGITS[c]) for c in frac)
    return str(value)


def _is_figure(text: str, start: int, end: int) -> bool:
    run = text[start:end]
    if any(ch in _FINANCIAL for ch in run) or any(ch in _SMALL or ch in _BIG for ch in run) or "点" in run:
        return True
    if len(run) >= 2:  # "二〇二四", "一二"
        return True
    return bool(_UNIT_AFTER_RE.match(text, end))


def _word_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORDS_RE.finditer(text)]


def normalize(text: str) -> tuple[str, list[int], list[int]]:
    """(plain text, starts, ends): character i of the plain text stands for `text[starts[i]:ends[i]]`."""
    if text.isascii() and not _GROUPED_RE.search(text) and not _SPACED_RE.search(text):
        return text, list(range(len(text))), list(range(1, len(text) + 1))
    out: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    words = _word_spans(text)
    percent = {m.start(): m for m in _PERCENT_RE.finditer(text)}
    i, n = 0, len(text)
    while i < n:
        run = _PLAIN_RUN.match(text, i)
        if run:
            j = run.end()
            out.append(run.group())
            origin.extend(range(i, j))
            ends.extend(range(i + 1, j + 1))
            i = j
            continue
        ch = text[i]
        if i in percent:  # "百分之五十" -> "50%"
            m = percent[i]
            inner = m.group(1)
            digits = inner if inner[0].isascii() else _parse(inner)
            if digits is not None:
                out.append(digits + "%")
                origin.extend([i] * (len(digits) + 1))
                ends.extend([m.end()] * (len(digits) + 1))
                i = m.end()
                continue
        if ch in _DIGITS or ch in "十拾":
            m = _RUN_RE.match(text, i)
            inside_word = any(s <= i < e for s, e in words)
            if m and not inside_word and _is_figure(text, m.start(), m.end()):
                digits = _parse(m.group())
                if digits is not None:
                    out.append(digits)
                    origin.extend([i] * len(digits))
                    ends.extend([m.end()] * len(digits))
                    i = m.end()
                    continue
        if ch in _INVISIBLE:
            i += 1
            continue
        if ch in _SPACES:
            ch = " "
        if not ch.isascii():
            if unicodedata.category(ch) == "Nd":
                ch = str(unicodedata.decimal(ch))
            elif "\uff01" <= ch <= "\uff5e" and ch not in _FULLWIDTH_KEEP:  # full-width forms: "ＧＢ", "．"
                ch = chr(ord(ch) - 0xFEE0)
        out.append(ch)
        origin.append(i)
        ends.append(i + 1)
        i += 1
    return _join_digits("".join(out), origin, ends)


def _join_digits(plain: str, starts: list[int], ends: list[int]) -> tuple[str, list[int], list[int]]:
    """Drop the separators inside "1 000 000" and "1 2 0 0", keeping the map in step."""
    spans = [m.span() for m in _GROUPED_RE.finditer(plain)] + [m.span() for m in _SPACED_RE.finditer(plain)]
    if not spans:
        return plain, starts, ends
    drop = {i for s, e in spans for i in range(s, e) if not plain[i].isdigit()}
    kept = [i for i in range(len(plain)) if i not in drop]
    return "".join(plain[i] for i in kept), [starts[i] for i in kept], [ends[i] for i in kept]
