"""Relevance of knowledge passages to a question, by the words they share, and the sentence that answers.

Retrieval ranks by fused ranks (RRF), whose scores say nothing about whether a passage is on topic:
a question about the weather still gets five passages back. Here a passage counts only when it shares
enough of the question's content words (jieba words for Chinese, cut by the knowledge base's tokenizer so
a process holds one dictionary; words for English; stop words left out): at least two, and at least a
third of them. The direct answer is the passage's sentence that shares the most.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from bot.core.language import HAN_CHARS
from bot.offline.understand.request.asks import knowledge_clauses
from knowledge.lexical import segment

MIN_SHARED = 2
MIN_SHARE = 0.3
SHORT = 3

_STOP = frozenset(
    """
的 了 吗 呢 吧 啊 呀 是 有 和 与 或 在 就 都 也 还 要 会 能 可以 怎么 怎么样 什么 如何 为什么 为啥 哪些 哪个 这个 那个 一个
我 我们 你 你们 他 她 它 请问 请 一下 多少 一些 还是 如果 应该 需要 比较 现在 今天 一般 大概 是否 能否 这种 那种 没有 不是
the a an of to in on for with and or is are be can do does what which how why when who whose i we you it this that
my our your me us there any some should would could will about from as at by into than then so if not no vs
each all them they their between per also its
因为 是因为 所以 虽然 但是 而且 以及 这会 这样 那样 这些 那些 使用 利用 导致 已经 然后 其他 感谢 谢谢 您好 你好
""".split()
)
_WORD = re.compile(r"[a-z][a-z0-9.+-]*|\d+(?:\.\d+)?[a-z]*", re.I)
_HAN = re.compile(f"[{HAN_CHARS}]+")
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?|[^.\n]+(?:\.(?=\s|$))?")


@lru_cache(maxsize=8192)
def terms(text: str) -> frozenset[str]:
    """The content words of a text, lower-cased. Memoized: a note's sentences and an answer's sentences are cut
    again for every passage an answer weighs (jieba is most of an offline answer's time otherwise)."""
    out = {_joined(w.lower().strip(".-")) for w in _WORD.findall(text)}
    out |= {part for w in list(out) if "-" in w for part in w.split("-") if len(part) > 2}  # "zero2-offload"
    for run in _HAN.findall(text):
        out.update(w for w in segment(run, hmm=True) if len(w) >= 2)
    # a lone Latin letter ("s" of "Gb/s" or "A100's") says nothing a sentence is about
    return frozenset(t for t in out if t and t not in _STOP and not (len(t) == 1 and t.isalpha() and t.isascii()))


def shared(query: set[str], text: str) -> int:
    """How many of the query's words the text holds. A longer word counts at the start of a longer one ("gpu" in
    "gpus", "parallel" in "parallelism", never "port" in "reports"); a word of one or two Latin letters or digits
    only on its own ("h" of "24 h a day" is not in every word with an h, "8" not in "80GB")."""
    low = _lowered(text)
    return sum(1 for t in query if t in low and (not t.isascii() or _alone(t).search(low)))


_LETTER_DIGIT = re.compile(r"(?<=[a-z])-(?=\d)")


@lru_cache(maxsize=8192)
def _lowered(text: str) -> str:
    """A text as `shared` compares it (memoized: a note's sentences are weighed again for every answer sentence)."""
    return _joined(text.lower())


def _joined(text: str) -> str:
    """ "zero-3" and "zero3", "int-8" and "int8", "gpt-3" and "gpt3" written one way."""
    return _LETTER_DIGIT.sub("", text)


@lru_cache(maxsize=4096)
def _alone(term: str) -> re.Pattern[str]:
    """A Latin word where a word starts ("port" is not in "reports"); a word of more than two characters may go on
    ("gpu" in "gpus"), a shorter one stands alone."""
    tail = "" if len(term) > 2 else "(?![a-z0-9])"
    return re.compile(rf"(?<![a-z0-9]){re.escape(term)}{tail}")


def relevant(query: set[str], passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Passages above the cut-off, most shared words first (retrieval order breaks ties)."""
    if not query:
        return []
    # a short question ("拆机卡靠谱吗", "租算力要问清楚哪些事情") has two or three content words: one shared is on topic
    need = 1 if len(query) <= SHORT else max(MIN_SHARED, round(MIN_SHARE * len(query)))
    scored = [(shared(query, p["text"]), i, p) for i, p in enumerate(passages) if _has_prose(p["text"])]
    return [p for n, _, p in sorted(scored, key=lambda x: (-x[0], x[1])) if n >= need]


_CODE_ONLY = re.compile(r"`[^`]+`[.;。]?")


def _prose(text: str) -> list[str]:
    """The sentences of a note that can answer: a command line quoted alone (`gpu-advisor fit …`) is how to check a
    figure, not an answer to a question."""
    sentences = [s.strip(" >-*") for s in _SENTENCE.findall(text) if len(s.strip(" >-*")) >= 8]
    return [s for s in sentences if not _CODE_ONLY.fullmatch(s.strip())]


def _has_prose(text: str) -> bool:
    """Prose beside the heading a passage starts with ("Note title › section"): a passage of command lines only
    (a note's "check it" section) supports and answers nothing."""
    return any(" › " not in s and not s.startswith("#") for s in _prose(text))


def best_sentence(query: set[str], text: str, limit: int = 220) -> str:
    """The sentence of `text` sharing the most words with the question (the first on ties), cut to `limit`."""
    sentences = _prose(text)
    if not sentences:
        return text[:limit]
    best = max(sentences, key=lambda s: (shared(query, s), -sentences.index(s)))
    return best if len(best) <= limit else best[:limit].rstrip() + "…"


def best_sentences(query: set[str], text: str, n: int = 2, limit: int = 320) -> str:
    """The `n` sentences of `text` sharing the most words with the question, in the text's order (a list line
    alone rarely answers; the sentence that leads its section usually goes with it), cut to `limit`."""
    sentences = _prose(text)
    ranked = sorted(range(len(sentences)), key=lambda i: (-shared(query, sentences[i]), i))
    picked = [sentences[i] for i in sorted(ranked[:n]) if shared(query, sentences[i])]
    joined = " ".join(picked) if picked else best_sentence(query, text)
    return joined if len(joined) <= limit else joined[:limit].rstrip() + "…"


def asked(text: str) -> str:
    """What a question asks in words: its sentences that ask how a thing works or what sets it (the rest is the
    setup: a model, a log, a table), else the whole text."""
    return " ".join(knowledge_clauses(text)) or text
