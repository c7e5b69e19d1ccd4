"""The parts of a message that ask for a verdict, read from the sentence's form whatever its topic: a choice ("A 还是
B？", "A or B?", "选哪个", "which should we pick", "值不值") and a yes/no ("…吗？", "是否…", "能否…", "会不会…", "is it
normal / expected / possible", "would 2 H100 be enough?"), each with its sentence, in the order asked.

`clauses` lists them (the plan answers each with one verdict line, `compose/verdicts.py`); `placed` gives the asks
the form places: a choice sentence asks `choose`; yes/no sentences that weigh two setups of cards (two sentences
each naming a card, or "A100/A800 80G 足够吗") ask `choose` too, since the answer must say which of them does it;
a sentence that sets two things against each other in a comparative ("比 … 多", "低于", "less powerful than") asks
`compare`."""

from __future__ import annotations

import re
from typing import NamedTuple

from bot.offline.understand.patterns import C
from bot.offline.understand.question import ParsedQuestion

#: a question word of choice, or options laid out as plans ("方案一 … 方案二"): a pick is asked for
CHOICE_WORDS = (
    r"选哪|选什么|哪个(?!参数|文件|版本|目录|地方|位置|配置项)|哪一个|哪种|哪款|哪张|哪家|哪套|哪类|"
    # "which" asking, not relating ("…, which is 5.76 times", "below which"): a thing to pick follows it
    r"(?<!, )(?<!below )(?<!above )(?<!using )\bwhich (?:one|ones|gpus?|cards?|models?|setups?|options?|of|size|"
    r"is (?:better|best|faster|cheaper)|should|would|do|does)\b|值不值|值得吗|划算吗|\bworth\b|"
    r"(?:what|which) (?:size|gpu|card|model|setup|service|provider)s? (?:of (?:the )?model )?(?:should|would|could|can|is|do)\b|"
    r"what would be (?:a )?good|(?:什么|多少|怎样的|哪些)(?:配置|方案)(?:比较|更)?合适"
)
#: a sentence that offers options: "A 还是 B" (not "还是会 / 还是不": "still"), "A or B", or a word of choice; options
#: that are not named things ("是因为 NCCL 还是因为其他的因素": causes) ask for no pick of cards
CHOICE = C(
    r"还是(?!会|不|没|很|有|报|一样|太|要|需要|得|能|可以|用不|跑不|无法|只|在|照样|挺)|或者|或是|\bor\b(?! so\b)|"
    + CHOICE_WORDS
)
_PICK = C(CHOICE_WORDS)
#: options laid out as plans, over lines ("方案一：每节点独立实例 … 方案二：跨节点分布式推理"): a pick between them
_PLANS = re.compile(r"(?:方案|option|plan)\s*[一1a][\s\S]{0,200}?(?:方案|option|plan)\s*[二2b]", re.IGNORECASE)
#: a sentence that asks yes or no: a question particle at its end, a yes/no form, or a leading auxiliary verb
YES_NO = C(
    r"[吗么嘛][\s。.?？!！~～]*$|[吗么嘛]\s*[?？]|是否|能否|能不能|可不可以|可以不|会不会|是不是|有没有必要|要不要|需不需要|"
    r"够不够|行不行|对不对|正不正常|^\s*(?:\d+[.)、．]\s*)?(?:is|are|was|will|would|can|could|should|does|do|did|has|have)\b|"
    r"\b(?:is|are) (?:this|that|it|these|those) (?:\w+ ){0,3}?(?:normal|expected|possible|enough|sufficient|right|true|reasonable)\b|"
    r"\bto be expected\b|\bis it possible\b"
)
#: a sentence asking whether a setup does the job (enough, runs, fits, is possible): a verdict a fit gives
SUFFICE = C(
    r"够|足够|可以|能否|能不能|行不行|可行|能(?:跑|训|微调|部署|运行|推理|完成|支持|放|装)|跑得(?:动|了|起来)|放得下|装得下|"
    r"\benough\b|\bsufficient\b|\bsuffice|possible|\bfits?\b|\bcan (?:i|we|it|you) (?:use|run|train|fine-?tune|serve|load|deploy)\b|"
    r"\binstead of\b"
)
#: two things set against each other: a comparative between them
COMPARATIVE = C(
    r"(?<![比对])比(?!如|较|例|方|赛|率|值|重|特|预期|想象|理论|正常|平时)[^，。,.?？\n]{1,14}(?:多|少|大|小|高|低|贵|便宜|快|慢|强|弱|好|差)|"
    r"低于|高于|领先于?|落后于?|不如|优于|逊于|"
    r"(?:less|more) powerful than|(?:faster|better|worse|cheaper|stronger|weaker) than|outperform\w*|not match\w* (?:with )?(?:the )?"
    r"(?:official|reported|published|benchmark)"
)
#: the end of a sentence: a full stop or question mark, a line break, or an English ". " before a capital
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]*")
_EN_END = re.compile(r"(?<=[a-zA-Z)\]])\.\s+(?=[a-zA-Z])")  # lower-cased text: "… for my vm. would 2h100 …"
_QUESTION_MARK = re.compile(r"[?？]")
#: an English question asked with an auxiliary verb inside the sentence ("8*A100 Is the training speed normal?"), not
#: after a question word ("how much memory does it need?" asks for a figure)
_AUX = re.compile(r"\b(?:is|are|was|will|would|can|could|should|does|do|did)\b", re.IGNORECASE)
_WH = re.compile(r"\b(?:what|how|which|why|where|when|who)\b", re.IGNORECASE)


def yes_no(said: str) -> bool:
    """Whether a sentence asks yes or no ("…够吗", "是否…", "8*A100 Is the training speed normal?")."""
    if YES_NO.search(said.rstrip("，,；; ")):
        return True
    aux = _AUX.search(said)
    return bool(aux and _QUESTION_MARK.search(said[aux.end() :]) and not _WH.search(said[: aux.start()]))


_NAMES = frozenset({"gpus", "unknown_gpus"})


class Asked(NamedTuple):
    """One sentence that asks for a verdict: its kind ("choose" or "yes_no"), its words, where it starts."""

    kind: str
    text: str
    start: int


def _sentences(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _SENTENCE.finditer(text):
        cuts = [m.start()] + [m.start() + c.end() for c in _EN_END.finditer(m.group(0))] + [m.end()]
        out += [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]
    return out


#: the commas (and the spaces after a particle) between the parts of a sentence
_PART = re.compile(r"[，,；;]|(?<=[吗么嘛呢])\s+")


def _parts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A sentence's questions: each comma part that asks, with the short part before it when that one asks nothing
    ("继续微调的话，能否在1张4090上完成呢，如果不行2张3090是否可以" is two questions; "这样是显存不够或者算力不行吗"
    is one, without the log before it)."""
    cuts = [start] + [start + m.end() for m in _PART.finditer(text[start:end])] + [end]
    out: list[tuple[int, int]] = []
    before: tuple[int, int] | None = None
    for a, b in zip(cuts, cuts[1:], strict=False):
        part = text[a:b]
        if yes_no(part) or _QUESTION_MARK.search(part) or _PICK.search(part):
            opens = before[0] if before and before[1] - before[0] <= _CONTEXT else a
            out.append((opens, b))
            before = None
        else:
            before = (a, b)
    return out


#: the longest part before a question that is its context ("继续微调的话，")
_CONTEXT = 16


def clauses(text: str) -> list[Asked]:
    """The sentences that ask for a choice or a yes/no, in the order asked (each question of a sentence whose commas
    part several). A sentence is a question by its mark, its particle, its form or a word of choice; a choice needs
    options in it, a yes/no its form. A pasted log's lines ask nothing (the caller blanks them); a sentence over
    240 characters is a paste, not a question."""
    out = []
    for s_start, s_end in _sentences(text):
        for start, end in _parts(text, s_start, s_end):
            said = text[start:end].strip(" ，,；;\t")
            if len(said) > 240 or not said:
                continue
            start += text[start:end].find(said)
            asks_yes_no = yes_no(said)
            asked = asks_yes_no or bool(_QUESTION_MARK.search(said))
            if (asked and CHOICE.search(said)) or _PICK.search(said):
                out.append(Asked("choose", said, start))
            elif asks_yes_no:
                out.append(Asked("yes_no", said, start))
    return out


def _names_in(p: ParsedQuestion, start: int, end: int) -> list[str]:
    return [p.text[a:b] for slot, a, b in p.spans if slot in _NAMES and start <= a < end] if p.text else []


def placed(low: str, p: ParsedQuestion) -> list[tuple[int, str]]:
    """(position, ask) for the asks the sentences' form places in `low` (the lower-cased text, logs blanked, the
    positions of `p.spans`)."""
    out: list[tuple[int, str]] = []
    setups: dict[frozenset[str], int] = {}  # the setups yes/no sentences ask about (a title said again is one)
    for asked in clauses(low):
        end = asked.start + len(asked.text) + 1
        if asked.kind == "choose" and _PICK.search(asked.text):
            out.append((asked.start, "choose"))
        elif SUFFICE.search(asked.text) and (names := _names_in(p, asked.start, end)):
            setups.setdefault(frozenset(n.lower().replace(" ", "") for n in names), asked.start)
            if len(names) >= 2 and re.search(r"[/／]|或", asked.text):  # "两张A100/A800 80G足够吗": either card
                out.append((asked.start, "choose"))
    if m := _PLANS.search(low):
        out.append((m.start(), "choose"))
    if len(setups) >= 2:  # "能否在1张4090上完成呢，如果不行2张3090是否可以": which of the setups does it
        out.append((min(setups.values()), "choose"))
    for m in COMPARATIVE.finditer(low):
        out.append((m.start(), "compare"))
        break
    return out
