"""A gap the user measured between two named cards, beside the gap their hardware explains: the verdict a
"why is A slower than B / is that normal" question asks for, put first.

The gap is read from the user's words, never made up: a ratio said in words ("A10 的推理速度比 3090 慢一倍",
"910B 耗时约为 A100 的 2 至 3 倍", "3x slower than"), else one time per card ("3090 要 1.8s，A10 要 4.8s";
"6卡H800 25h … 2卡A800 … 实际需要将近130小时", per card when each time comes with its card count). A time said as
an expectation ("理论上 75 小时", "should take") is no measurement.

What the hardware explains comes from `compare_gpus` (the catalog's ratios of the faster card to the slower one):
one stream's decode follows memory bandwidth; training follows BF16 compute, and a small model's training often
follows bandwidth instead, so a training gap anywhere between the two ratios is the hardware's. The verdict is
`tools.speed.measured.verdict` on the slower card's relative speed, the band every speed verdict uses: the
hardware explains it (normal), the gap is larger (the software or the setup on the slower card), or smaller (the
faster card is not used to its limit). The sentence quotes the user's figures and the catalog's ratios only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out
from bot.offline.understand.request.forms import SERVING_RUN, TRAINING_RUN
from bot.offline.understand.request.model import Mention, Request
from bot.offline.understand.request.reader import canonical, normalised
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError
from tools.speed.measured import verdict

_NUM = {"一": 1.0, "两": 2.0, "二": 2.0, "三": 3.0, "四": 4.0, "五": 5.0, "半": 0.5}
_N = r"(\d+(?:\.\d+)?|[一两二三四五半])"
#: "慢一倍", "慢了 1 倍左右", "快两倍": the slower card takes (1 + N) times as long (Chinese "慢一倍" is twice the time)
_ZH_MORE = re.compile(r"(慢|快)了?\s*(?:约|大约|将近|近)?\s*" + _N + r"\s*倍")
#: "约为 A100 的 2 至 3 倍", "是…的3倍": N times (a range when two figures)
_ZH_TIMES = re.compile(r"的\s*(?:约|大约)?\s*" + _N + r"\s*(?:(?:至|到|~|～|-|—)\s*" + _N + r")?\s*倍")
_EN = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:(?:-|to|~)\s*(\d+(?:\.\d+)?)\s*)?(?:x|×|times)\s+(slower|faster|longer|quicker)"
    r"|\b(twice|three times) as (slow|fast|long)",
    re.IGNORECASE,
)
_FASTER_WORDS = re.compile(r"快|faster|quicker|fast\b", re.IGNORECASE)
#: a time said as what it should take, not what it took
_EXPECTED = re.compile(r"理论|预计|预期|应该|应当|估计|expected|should|theoretical|estimated", re.IGNORECASE)
_UNIT_S = (
    (re.compile(r"ms|毫秒", re.I), 0.001),
    (re.compile(r"min|分钟", re.I), 60.0),
    (re.compile(r"h|小时|hour", re.I), 3600.0),
    (re.compile(r"天|day", re.I), 86400.0),
    (re.compile(r"s|秒|sec", re.I), 1.0),
)


@dataclass(frozen=True)
class Gap:
    slow: str  # catalog id of the slower card
    fast: str
    low: float  # the slower card's time over the faster card's, per card (a range from low to high)
    high: float
    words: str  # the user's words that state it, quoted in the answer
    per_card: bool = False  # the times came with card counts: compared per card (card-hours)


def _number(word: str) -> float:
    return _NUM[word] if word in _NUM else float(word)


def _seconds(text: str) -> float | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*(\S*)", text)
    if not m:
        return None
    unit = m.group(2)
    factor = next((f for rx, f in _UNIT_S if rx.match(unit)), None)
    return float(m.group(1)) * factor if factor else None


_CLAUSE_END = re.compile(r"[，,;；。！？!?\n]|\band\b|\bwhile\b|而")


def _clause(text: str, at: int) -> tuple[int, int]:
    """The clause around offset `at`: from the last comma, stop or "and" before it to the next one."""
    opens = max((m.end() for m in _CLAUSE_END.finditer(text, 0, at)), default=0)
    closes = _CLAUSE_END.search(text, at)
    return opens, closes.start() if closes else len(text)


#: words around a card's name that name no card ("英伟达3090GPU", "昇腾 910B 显卡")
_CARD_WORDS = re.compile(r"英伟达|nvidia|华为|huawei|昇腾|ascend|显卡|\bgpus?\b|gpu$|的卡$", re.IGNORECASE)


def _cards(mentions: list[Mention]) -> list[Mention]:
    """The card mentions, each valued by its catalog id (a name with a vendor or "GPU" around it resolved
    without them); a card the catalog lacks is left out."""
    out = []
    for m in mentions:
        if m.role != "gpu" or not isinstance(m.value, str):
            continue
        known = m.value if _catalog_gpu(m.value) else canonical(_CARD_WORDS.sub("", m.text).strip())
        if known and _catalog_gpu(known):
            out.append(m.model_copy(update={"value": known}))
    return out


def _catalog_gpu(name: str) -> bool:
    try:
        return get_gpu(name).id == name
    except AdvisorError:
        return False


def _from_times(text: str, mentions: list[Mention]) -> Gap | None:
    """One measured time per card, each said right after (or before) its card: the per-card gap."""
    cards = _cards(mentions)
    by_card: dict[str, tuple[float, float | None, str]] = {}
    for m in mentions:
        if m.role != "wall_clock" or _EXPECTED.search(text[max(0, m.start - 8) : m.start]):
            continue
        seconds = _seconds(m.text)
        clause = _clause(text, m.start)
        near = [c for c in cards if clause[0] <= c.start < clause[1]] or [
            c for c in cards if text.rfind("\n", 0, m.start) < c.start < m.start and m.start - c.start <= 40
        ]  # the card of its clause ("3090要1.8s", "14 hours on 8 H800"), else the one named just before it
        if not seconds or not near:
            continue
        card = min(near, key=lambda c: abs(c.start - m.start))
        told = next(
            (g for g in mentions if g.role == "gpus_total" and g.start <= card.start <= g.end + 1
             and re.search(r"\d+", g.text)),
            None,
        )  # fmt: skip
        count = float(re.search(r"\d+", told.text).group(0)) if told else None
        label = text[min(told.start, card.start) : max(told.end, card.end)] if told else card.text
        by_card[str(card.value)] = (seconds, count, f"{label} {m.text}")  # a later time of the card is the measured one
    if len(by_card) != 2:
        return None
    counted = all(count for _, count, _ in by_card.values())  # per card only when both times come with their counts
    work = {card: (t * (n if counted else 1.0), words) for card, (t, n, words) in by_card.items()}
    (a, (ta, wa)), (b, (tb, wb)) = sorted(work.items(), key=lambda kv: -kv[1][0])
    if not tb:
        return None
    differ = counted and len({n for _, n, _ in by_card.values()}) > 1
    return Gap(slow=a, fast=b, low=ta / tb, high=ta / tb, words=f"{wa} / {wb}", per_card=differ)


def _from_words(text: str, mentions: list[Mention]) -> Gap | None:
    """A ratio said in words, of the first two cards named: the card named before the words is the subject."""
    names = list(dict.fromkeys(str(c.value) for c in _cards(mentions)))
    if len(names) < 2:
        return None
    if m := _ZH_MORE.search(text):
        n = _number(m.group(2))
        low = high = 1.0 + n
        faster = m.group(1) == "快"
    elif m := _ZH_TIMES.search(text):
        low = _number(m.group(1))
        high = _number(m.group(2)) if m.group(2) else low
        faster = False  # "耗时约为 A100 的 2 至 3 倍": the subject takes that many times as long
    elif m := _EN.search(text):
        if m.group(4):
            low = high = 2.0 if m.group(4).lower() == "twice" else 3.0
            faster = m.group(5).lower() == "fast"
        else:
            low = float(m.group(1))
            high = float(m.group(2)) if m.group(2) else low
            faster = bool(_FASTER_WORDS.match(m.group(3)))
    else:
        return None
    if low <= 1.0 or high > 20:
        return None
    opens = max(text.rfind(c, 0, m.start()) for c in "。！？!?\n") + 1  # the sentence that says it
    said = [c for c in _cards(mentions) if opens <= c.start < m.start()]
    subject = str(said[0].value) if said else names[0]
    words = text[said[0].start : m.end()] if said and m.start() - said[0].start <= 40 else m.group(0)
    other = next(n for n in names if n != subject)
    slow, fast = (other, subject) if faster else (subject, other)
    return Gap(slow=slow, fast=fast, low=low, high=high, words=words.strip())


def measured_gap(text: str, mentions: list[Mention]) -> Gap | None:
    """The gap the user measured between two catalog cards, else None."""
    return _from_times(text, mentions) or _from_words(text, mentions)


def add(request: Request, run: ToolRun, out: Out, at: int) -> None:
    """Put the verdict on a measured gap between two named cards first (`at`): explained by the hardware or not."""
    text = normalised(request.text)  # the text the mentions' offsets refer to
    gap = measured_gap(text, request.mentions)
    if gap is None:
        return
    try:
        r = run("compare_gpus", {"gpus": [gap.slow, gap.fast]})
    except AdvisorError:
        return
    rows, ratios = r.get("rows") or [], r.get("ratios_to_first") or []
    if len(rows) < 2 or len(ratios) < 2:
        return
    bw, tf = ratios[1].get("bandwidth"), ratios[1].get("bf16")
    low = text.lower()
    training = bool(TRAINING_RUN.search(low)) and not SERVING_RUN.search(low)
    band = [x for x in ((bw, tf) if training else (bw,)) if x]
    if not band:
        return
    # the slower card's speed relative to the faster one against what the hardware gives it: even the smallest gap
    # said slower than the largest hardware ratio explains (the software), or even the largest one faster than the
    # smallest ratio (the faster card not used to its limit); anything between is the hardware's
    said = "low" if verdict(1 / gap.low, 1 / max(band)) in ("low", "very_low") else "normal"
    if verdict(1 / gap.high, 1 / min(band)) == "high":
        said = "high"
    kind = "train" if training else "decode"
    key = {"normal": "gap_normal", "low": "gap_software", "high": "gap_small"}[said]
    reversed_ = said == "low" and max(band) < 1  # the slower card has the stronger hardware: none of it is explained
    ratio = say(
        "gap_ratio_plain" if reversed_ else f"gap_ratio_{kind}",
        out.lang,
        fast=rows[1]["name"],
        slow=rows[0]["name"],
        bw=f"{bw:g}×" if bw else "—",
        tf=f"{tf:g}×" if tf else "—",
    )
    words = gap.words + (say("gap_per_card", out.lang) if gap.per_card else "")
    line = say(
        "gap_reversed" if reversed_ else key,
        out.lang,
        words=words,
        slow=rows[0]["name"],
        fast=rows[1]["name"],
        ratio=ratio,
    )
    # CUDA beside another stack: the stack's operators first (a CUDA-only check list would not apply to it)
    stack = said == "low" and rows[0].get("vendor") not in (None, "nvidia") and rows[1].get("vendor") == "nvidia"
    if said != "normal" and not (stack and kind == "decode"):
        line += " " + say(f"{key}_{kind}", out.lang)
    if stack:
        line += " " + say("gap_stack", out.lang, slow=rows[0]["name"])
    out.blocks.insert(at, line)
