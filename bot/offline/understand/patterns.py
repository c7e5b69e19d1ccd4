"""Compiling the parser's patterns so that parsing stays linear in the length of the question.

Python's `re` backtracks. A pattern such as `(\\d+)\\s*(?:小时|h)` tried at every position of a
4,000-digit run rescans the rest of the run from each start and fails at the end: quadratic work
(seconds for one message). `bounded()` rewrites every unbounded repeat of a single atom (`\\d+`,
`\\s*`, `[a-z]+`, `.*`) into a bounded one (`{1,32}`): no number, unit gap or name a person types is
longer, and each start position then costs a constant, so a whole pass is linear. Repeats of groups
are left alone: every group in the lexicon consumes at least one bounded atom per round.
"""

from __future__ import annotations

import functools
import re

#: the longest run of one atom a pattern may read (digits of a number, spaces in a gap, letters of a word)
MAX_RUN = 32

_TOKEN = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\(\?(?:<?[=!]|[:>])?|[()|]|\{\d*,?\d*\}|[+*?]|.", re.S)


@functools.lru_cache(maxsize=1024)
def bounded(pattern: str, limit: int = MAX_RUN) -> str:
    """`pattern` with `x+` -> `x{1,limit}` and `x*` -> `x{0,limit}` for every single atom x."""
    out: list[str] = []
    atom = False  # whether the last token was something a quantifier may follow
    for tok in _TOKEN.findall(pattern):
        if tok in ("+", "*") and atom:
            out.append(f"{{{1 if tok == '+' else 0},{limit}}}")
            atom = False
            continue
        out.append(tok)
        atom = not (tok.startswith("(") or tok in ("|", ")", "+", "*", "?") or tok.startswith("{"))
    return "".join(out)


def C(pattern: str, flags: int = re.IGNORECASE | re.ASCII) -> re.Pattern[str]:
    """Compile a parser pattern, bounded (ASCII: `\\b` falls between 中文 and Latin letters)."""
    return re.compile(bounded(pattern), flags)


#: the words before a speed the user needs rather than one they measured ("need 30 tokens/s", "要达到 5 token/s",
#: "at least 20 tok/s"; "只能达到 5 token/s" is measured), and the words after one ("5 token/s minimal hardware")
SPEED_TARGET_BEFORE = (
    r"(?:\bneeds?\b|\bneeded\b|\bwant(?:s|ed)?\b|\btarget\b|at least|\bminimum\b|\bgoal\b|aim(?:ing)? (?:for|at)|"
    r"(?<!只能)(?<!只)(?<!才)要达到|需要达到|需要|要求|目标|希望|想要|至少|不低于|起码|保证)[^\d\n]{0,10}$"
)
SPEED_TARGET_AFTER = r"^\s*(?:minimal|minimum|at least|or (?:more|faster|better)|以上)"
