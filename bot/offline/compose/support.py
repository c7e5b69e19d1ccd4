"""Citations that support a sentence: a knowledge passage is shown only when one of its sentences says what a
sentence of this answer says (enough content words in common), and its marker goes on that sentence. No
passage, no sources block: an answer made of calculator figures needs none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.offline.compose import relevance
from bot.offline.compose.relevance import shared, terms
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, excerpt
from bot.offline.understand.request.asks import belief_clauses, form_only, knowledge_clauses, worded_clauses
from tools.errors import AdvisorError

#: content words an answer sentence and a passage sentence must share, and the share of the answer sentence's
MIN_SHARED = 3
MIN_SHARE = 0.25
#: words every answer about GPUs shares with every note: they count toward MIN_SHARED, not toward MIN_SPECIFIC
GENERIC = frozenset(
    """gpu gpus memory training train trained card cards model models per about usable needs need needed fits fit
    full fine-tune fine-tuning tuning fine tune it does not nvidia gb tokens token parameters parameter but only short
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


#: words that ask a part rather than say what it is about: a note sharing only these is not on its topic
ASKING_WORDS = frozenset(
    """哪里 这里 那里 一起 起来 原因 正常 是否 怎么 如何 可以 能否 影响 决定 控制 设置 配置 问题 请教 想问 一下 区别
    办法 方法 有没有 请问 为什么 为何 什么 那么 还是 需要 使用 进行 way ways there any how should could can would
    work works does controls control determines decides sets affect affects hurt change difference why
    want know wonder wondering guess 一般来说 比如 例如 想请教 请教下""".split()
)
#: the words that frame a belief to check ("I read … and got the conclusion that …, is this the right
#: understanding?"): what the belief is about is the rest
BELIEF_FRAME = frozenset(
    """read previous issue got conclusion understanding understand right correct wrong true result another question
    sense thought think seems seem said says must have only use going larger bigger more 理解 结论 看到 对吗 是不是 这样 只能 必须
    一定要""".split()
)
#: the words of an asked part quoted back in its heading
ASKED_CHARS = 48
#: … and in the line that names a part not answered (the words are all the user sees of it there)
MISSED_CHARS = 90
#: the share of a how-to's own words (beyond the generic ones) a note must hold to answer it
HOW_TO_SHARE = 0.6


def knowledge_part(asks: list[str], text: str, run: Any, out: Out, at: int, first: bool = False) -> None:
    """The parts asked in words beside the figures ("是单卡的大小，还是多张加起来的大小", "what controls the KV cache
    size", "Is there any way to reshard the 8 pths into 4 pths?"): the sentence of an on-topic note that answers each,
    cited, at `at` (the part was asked first, or `first`) or after the parts before it. A part that no note is on
    topic for and that the answer does not speak to is said as not answered, in the order asked, at the end: never
    dropped without a word (unless the answer is a question back, `first`: the reply answers the question)."""
    at_ = at if first or asks[:1] == ["knowledge"] else None
    explained = set(knowledge_clauses(text)[:2]) if "knowledge" in asks else set()
    beliefs = set(belief_clauses(text))  # a belief to check: a note on its topic answers it, as an explanation
    explained |= beliefs
    clauses = [c for c in worded_clauses(text) if c in explained or c not in knowledge_clauses(text)][:4]
    missed = []
    for clause in clauses:
        before = len(run.citations)
        try:
            r = run("search_knowledge", {"query": clause[:300], "k": 3, "lang": out.lang})
        except AdvisorError:
            return
        words = relevance.terms(clause) - (BELIEF_FRAME if clause in beliefs else frozenset())
        topic = words - ASKING_WORDS  # what the part is about, without the words that ask it ("哪里控制", "正常吗")
        need = max(1, min(2, len(topic)))
        # a how-to, or a part found by its form alone ("有文档不"): its words are the setup's; a note must hold most
        if clause not in explained or (clause not in beliefs and form_only(clause)):
            topic = frozenset(t for t in topic - GENERIC if not _NUMBER.fullmatch(t))
            # most of its words, at least three; a part of two words ("并发越高…显存越多吗") needs both
            need = max(3, math.ceil(HOW_TO_SHARE * len(topic))) if len(topic) != 2 else 2
        ranked = [
            x
            for x in relevance.relevant(words, [x for x in r["passages"] if "```" not in x["text"]])
            if relevance.shared(topic, x["text"]) >= need
        ]
        if clause in beliefs:  # a belief is about its specific words ("qlora"), not the generic ones ("gpu", "model")
            ranked.sort(key=lambda x: (-shared(specific(topic), x["text"]), -shared(topic, x["text"])))
        quoted = ranked[0]["doc_id"] if ranked else None
        run.citations[before:] = [c for c in run.citations[before:] if c.doc_id == quoted]
        bare = _MARKUP.sub("", _ITEM.sub("", clause))  # "- **GPU Configuration:** For …": the words asked
        asked = bare if len(bare) <= ASKED_CHARS else bare[:ASKED_CHARS].rstrip() + "…"
        if not ranked:
            solved = _SOLVE.search(clause) and any(c.tool == "diagnose" for c in run.calls)  # the fix answers it
            if not solved and not spoken(topic, "\n\n".join(out.blocks)):
                missed.append(bare if len(bare) <= MISSED_CHARS else bare[:MISSED_CHARS].rstrip() + "…")
            continue
        sentence = relevance.best_sentences(words, excerpt(ranked[0]["text"], limit=1200))
        docs = list(dict.fromkeys(c.doc_id for c in run.citations))
        block = say("knowledge_part", out.lang, asked=asked, sentence=sentence, n=docs.index(quoted) + 1)
        if block in out.blocks:
            continue
        if at_ is None:
            out.add(block)
        else:
            out.blocks.insert(at_, block)
            at_ += 1
    if missed and not first:  # `first`: the answer is a question back, and the reply answers the question asked
        quote = "”、“" if out.lang == "zh" else '", "'
        out.add_last(say("worded_missed", out.lang, asked=quote.join(missed)))


#: a part that asks how to fix the trouble the message shows: a diagnosis's fix answers it
_SOLVE = re.compile(
    r"怎么解决|如何解决|解决方法|(?:有|什么)办法解决|how (?:to|do i|can i|can we|do we) (?:solve|fix)", re.I
)
#: a list item's mark and Markdown emphasis, left out of the words quoted back
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+\s*[.)、．])\s*")
_MARKUP = re.compile(r"\*\*|__|`")
#: a word of the part's topic that is a bare number ("8", "4") is no sign the answer speaks to it
_NUMBER = re.compile(r"[\d.,]+")


def spoken(topic: frozenset[str], answer: str) -> bool:
    """Whether the answer already speaks to a part's topic: two of its words (one, when it has one) in the answer,
    bare numbers left out (every answer has an 8 or a 4), and so is a short part of a hyphenated word ("pre" of
    "pre-trained": it is not what the part is about)."""
    words = {
        t
        for t in topic
        if not _NUMBER.fullmatch(t) and not (len(t) <= 3 and any(t != u and t in u.split("-") for u in topic))
    }
    return not words or shared(words, answer) >= min(2, len(words))


def worded_after(blocks: list[str], asks: list[str], text: str, run: Any, lang: str) -> str:
    """An answer composed whole elsewhere (a diagnosis that is the answer), with the parts asked in words after it:
    a note's sentence for each, or the line that says which were not answered."""
    out = Out(lang=lang, blocks=[b for b in blocks if b])
    knowledge_part(asks, text, run, out, len(out.blocks))
    return "\n\n".join(out.blocks + out.tail)
