"""Citations that support a sentence: a knowledge passage is shown only when one of its sentences says what a
sentence of this answer says (enough content words in common), and its marker goes on that sentence. No
passage, no sources block: an answer made of calculator figures needs none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.offline.compose.relevance import shared, terms

#: content words an answer sentence and a passage sentence must share, and the share of the answer sentence's
MIN_SHARED = 3
MIN_SHARE = 0.25
#: words every answer about GPUs shares with every note: they count toward MIN_SHARED, not toward MIN_SPECIFIC
GENERIC = frozenset(
    """gpu gpus memory training train trained card cards model models per about usable needs need needed fits fit
    full fine-tune fine-tuning tuning it does not nvidia gb tokens token parameters parameter but only short
    with without than more less one two single
    显存 训练 每卡 模型 推理 可用 约需 全参 微调 参数 显卡 一张 单卡 why 原因 怎么办""".split()
)
#: content words beyond the generic ones that must be shared
MIN_SPECIFIC = 2
_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)(?=\s)")
_SKIP_LINE = re.compile(r"^\s*(?:\||[-*]\s*\*\*|\*\*(?:假设|Assumptions|参考|Sources|您提到|What you mentioned))")
#: a sentence that names a source (a price's origin) carries no claim of its own to support
_NAMES_SOURCE = re.compile(r"来源|[Ss]ource")


@dataclass
class Support:
    block: int  # index in Out.blocks
    end: int  # where the sentence ends in that block (the marker goes here)
    passage: dict[str, Any]
    quote: str  # the passage's sentence that supports it


def _sentences(block: str):
    start = 0
    for line in block.splitlines(keepends=True):
        if not _SKIP_LINE.match(line):
            cut = 0
            for m in _SENTENCE_END.finditer(line.rstrip("\n")):
                # a bare verdict ("**放不下。**") belongs to the sentence that says what does not fit
                if m.start() > cut and len(line[cut : m.start()].strip(" *")) >= 8:
                    yield start + cut, start + m.start(), line[cut : m.start()]
                    cut = m.start()
            rest = line.rstrip("\n")[cut:]
            if rest.strip():
                yield start + cut, start + cut + len(rest), rest
        start += len(line)


_FIGURE = re.compile(r"^[\d.,]+(?:[ac-z%][a-z%]*)?$")  # "80gb", "46.4" are figures; "13b" names a model size


def specific(words: set[str]) -> set[str]:
    """The words that say what a sentence is about: not generic, not a bare figure ("80gb", "46.4")."""
    return {w for w in words if w not in GENERIC and not _FIGURE.match(w)}


@lru_cache(maxsize=1024)
def _passage_sentences(text: str) -> tuple[str, ...]:
    """The passage's sentences, without its heading line ("title › section") or code (memoized: notes recur)."""
    lines = re.sub(r"```.*?(?:```|$)", "\n", text, flags=re.S).splitlines()  # no code: a config line claims nothing
    heads = [part.strip() for line in lines if "›" in line for part in line.split("›")]  # the note's own claims
    body = "\n".join(
        [*heads, *(line for line in lines if "›" not in line and not line.lstrip().startswith(("`", "$")))]
    )
    parts = (s.strip(" >-*") for s in re.split(r"(?<=[。！？!?])|(?<=\.)\s|\n", body))
    return tuple(s for s in parts if len(s) >= 8 and "`" not in s)


def supports(blocks: list[str], passages: list[dict[str, Any]]) -> list[Support]:
    """For each passage, the answer sentence it supports best (if any), one passage per sentence."""
    found: list[Support] = []
    taken: set[tuple[int, int]] = set()
    for passage in passages:
        best: tuple[int, Support] | None = None
        psent = _passage_sentences(passage["text"])
        for b, block in enumerate(blocks):
            for _, end, sentence in _sentences(block):
                if _NAMES_SOURCE.search(sentence):
                    continue
                words = terms(sentence)
                if len(words) < MIN_SHARED or (b, end) in taken:
                    continue
                about = specific(words)
                for quote in psent:
                    n = shared(words, quote)
                    if (
                        n >= MIN_SHARED
                        and n >= MIN_SHARE * min(len(words), len(terms(quote)))
                        and shared(about, quote) >= MIN_SPECIFIC
                        and (best is None or n > best[0])
                    ):
                        best = (n, Support(block=b, end=end, passage=passage, quote=quote))
        if best:
            found.append(best[1])
            taken.add((best[1].block, best[1].end))
    return found
