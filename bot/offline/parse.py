"""Offline question parser: a Chinese or English question -> intent and slots (`ParsedQuestion`).

    >>> q = parse("8卡H800全参微调Llama-2-7B，1B tokens 要多久？多少钱？")
    >>> q.intent, q.intents, q.n_gpus, q.method, q.tokens
    ('time', ['time', 'cost'], 8, 'full', 1000000000.0)

Order of work on the NFKC-normalised, lower-cased text: token amounts, then GPU and model names
(matched against the catalogs' names and aliases, longest span first), then money, then the other
slots. Each recognised span is masked with a marker of the same length, so a later pattern never
reads a digit that belongs to a name ("A100 80G") or to an amount ("30万"), and positions stay
those of the user's text for `mentions`. GPU names become the marker `\\ue000`, which lets the count
patterns read "8×H800" and "H800 x 8" as counts of a GPU.

The parser reports what the user typed; judging it (0 GPUs, a negative size) is the planner's and
the calculators' job, helped by `invalid`, which lists the spans that cannot be right.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.language import detect_language
from bot.offline import lexicon as lx
from bot.offline.lexicon import to_number
from bot.offline.names import _C, GPU_MARK, USED_MARK, names_in

Intent = Literal[
    "fit", "min_gpus", "time", "cost", "rent_vs_buy", "compare", "recommend", "speed", "specs", "knowledge",
    "out_of_scope", "greeting",
]  # fmt: skip


class UserFigure(BaseModel):
    """A number the user states as a fact ("H100 是 25 万一张对吧"): to check, never to repeat as fact."""

    model_config = ConfigDict(extra="forbid")
    text: str
    value: float
    unit: str  # "CNY", "USD", "GB", "TFLOPS", "GB/s", "W"
    kind: Literal["price", "price_per_month", "memory", "compute", "bandwidth", "power"]


class ParsedQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    language: Literal["zh", "en"]
    #: intents[0], or, when no cue was found (intents == []), a guess from the slots
    intent: Intent
    #: every intent whose cues scored, strongest first
    intents: list[Intent] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)
    unknown_gpus: list[str] = Field(default_factory=list)
    unknown_models: list[str] = Field(default_factory=list)
    n_gpus: int | None = None  # total across nodes
    n_nodes: int | None = None
    method: Literal["full", "lora", "qlora", "freeze"] | None = None
    workload: Literal["pretrain", "finetune", "infer", "train"] | None = None
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"] | None = None
    mixed_precision: bool = False
    zero_stage: int | None = None
    offload: bool | Literal["optimizer", "param"] | None = None
    seq_len: int | None = None
    context_len: int | None = None
    micro_batch: int | None = None
    batch: int | None = None
    concurrency: int | None = None
    tokens: float | None = None
    budget_cny: float | None = None  # set only when the budget is in CNY (no exchange rate here)
    budget_amount: float | None = None
    budget_currency: Literal["CNY", "USD"] | None = None
    price_cny_per_hour: float | None = None  # per GPU-hour, CNY only
    price_per_hour: float | None = None
    price_currency: Literal["CNY", "USD"] | None = None
    purchase_price_cny: float | None = None  # per card, when the user gives one as an input
    hours: float | None = None  # wall-clock run time the user gives ("跑 1000 小时")
    gpu_hours: float | None = None  # "5000 卡时", "5000 GPU-hours"
    hours_per_day: float | None = None
    months: float | None = None
    deadline_hours: float | None = None
    deadline_days: float | None = None
    china_only: bool = False  # only what can be bought in China (国内能买到, 国产)
    domestic_only: bool = False  # Chinese-made accelerators only (国产, 信创)
    follow_up: bool = False
    injection: bool = False
    user_figures: list[UserFigure] = Field(default_factory=list)
    #: slot -> [low, high] where the user gave a range ("8到16卡"); the slot holds the high end
    ranges: dict[str, list[float]] = Field(default_factory=dict)
    #: slots whose value the user marked as approximate (约, 左右, about)
    approximate: list[str] = Field(default_factory=list)
    #: spans that cannot be right ("0卡", "-5B")
    invalid: list[str] = Field(default_factory=list)
    #: slot -> raw spans matched, for debugging
    mentions: dict[str, list[str]] = Field(default_factory=dict)


G = f"{GPU_MARK}+"


class _Work:
    """The text being parsed, its masked copy and the slots found so far."""

    def __init__(self, text: str):
        self.raw = unicodedata.normalize("NFKC", text).replace("\u3000", " ")
        low = self.raw.lower()
        self.src = low if len(low) == len(self.raw) else self.raw
        self.t = self.src
        self.slots: dict = {"text": text, "mentions": {}, "ranges": {}, "approximate": [], "invalid": [],
                            "user_figures": [], "models": [], "gpus": [], "unknown_gpus": [], "unknown_models": []}  # fmt: skip

    def span(self, start: int, end: int) -> str:
        return self.raw[start:end].strip()

    def mask(self, start: int, end: int, mark: str = USED_MARK) -> None:
        self.t = self.t[:start] + mark * (end - start) + self.t[end:]

    def note(self, slot: str, start: int, end: int) -> None:
        self.slots["mentions"].setdefault(slot, []).append(self.span(start, end))
        before, after = self.src[max(0, start - 6) : start], self.src[end : end + 4]
        if (_APPROX_BEFORE.search(before) and not _NOT_APPROX.search(self.src[max(0, start - 12) : start])) or _APPROX_AFTER.search(after) or _APPROX_IN.search(self.src[start:end]):
            if slot not in self.slots["approximate"]:
                self.slots["approximate"].append(slot)

    def put(self, slot: str, value, m: re.Match, group: int = 0, *, mark: str = USED_MARK, keep: bool = True) -> None:
        """Set `slot` (first mention wins unless keep=False), note and mask the match."""
        if slot not in self.slots or not keep:
            self.slots[slot] = value
        self.note(slot, m.start(group), m.end(group))
        self.mask(m.start(), m.end(), mark)


_APPROX_BEFORE = _C(lx.APPROX_BEFORE)
_APPROX_AFTER = _C(lx.APPROX_AFTER)
_APPROX_IN = _C(r"约|大概|左右|around|about|~")
_NOT_APPROX = _C(r"(?:what|how)\s+about\s*$")


def _num_range(text: str) -> tuple[float, float] | None:
    """"8" -> (8, 8); "30-50" -> (30, 50); "两到三" -> (2, 3); None when not a number."""
    parts = re.split(r"\s*(?:到|至|~|–|—|(?<=[\d一二两三四五六七八九十])-)\s*", text.strip(), maxsplit=1)
    values = [to_number(p) for p in parts]
    if any(v is None for v in values):
        return None
    lo, hi = values[0], values[-1]
    # "30-50万": the magnitude written once applies to both ends
    if len(values) == 2 and not re.search(r"[万亿千]", parts[0]) and (base := to_number(re.sub(r"[万亿千\s]", "", parts[1]))):
        lo *= hi / base
    return lo, hi


def _set_number(w: _Work, slot: str, text: str, m: re.Match, group: int, scale: float = 1.0, *, as_int: bool = False):
    rng = _num_range(text)
    if rng is None:
        return None
    lo, hi = rng[0] * scale, rng[1] * scale
    if lo != hi:
        w.slots["ranges"].setdefault(slot, [lo, hi])
    value = round(hi) if as_int else hi
    w.put(slot, value, m, group)
    return value


# --- tokens -------------------------------------------------------------------------------

_EN_MAG = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12, "": 1.0}
_LENGTH_WORDS = _C(r"上下文|context|长度|序列|窗口|输入|输出|input|output|prompt|生成|max")
_TOKENS = (
    _C(rf"(?<![a-z\d.])({lx.NUM_RANGE})\s*(万亿|千亿|百亿|亿|[kmbt])?\s*(?:个)?\s*(?:tokens?|toks?\b|词元)"),
    _C(rf"(?:数据量?|语料|训练数据|data(?:set)?|corpus)\s*(?:量|规模|是|有|为|约|大概|共|:)*\s*({lx.NUM_RANGE})\s*([bt])(?![a-z])"),
    _C(r"(?<![a-z\d.\-])(\d+(?:\.\d+)?)\s*(t)(?![a-z])"),
    _C(r"(?<![\d.])(\d+(?:\.\d+)?\s?万亿|[一二两三四五六七八九十]+万亿)()(?!\s*(?:个)?\s*(?:参数|元|块|美元|rmb))"),
)


def _tokens(w: _Work) -> None:
    for rx in _TOKENS:
        for m in rx.finditer(w.t):
            rng = _num_range(m.group(1))
            if rng is None:
                continue
            mag = _EN_MAG.get((m.group(2) or "").lower()) or to_number("1" + m.group(2))
            value = rng[1] * mag
            near = w.t[max(0, m.start() - 8) : m.start()] + w.t[m.end() : m.end() + 8]
            if value < 1e6 or _LENGTH_WORDS.search(near):
                continue  # "4096 tokens 上下文", "输出 500 token": lengths, not a corpus
            if rng[0] != rng[1]:
                w.slots["ranges"].setdefault("tokens", [rng[0] * mag, value])
            w.put("tokens", value, m)


# --- money --------------------------------------------------------------------------------

_CUR = r"(元|块钱|块(?![卡显a-z\d])|rmb|人民币|cny|美元|美金|刀|usd|dollars?)"
_HOUR = r"(?:(?:/|每|一|per|an?)\s*(?:张|块|个)?\s*(?:卡|gpu|card)?\s*[·/\-]?\s*(?:每|一|per)?\s*(?:卡时|卡小时|小时|钟头|hour|hr|h)(?![a-z])|/\s*(?:卡|gpu)\s*[·/]?\s*(?:时|小时|h)|每卡时)"
_PRICE_HOUR = (
    _C(rf"([¥$])?\s*({lx.NUM})\s*{_CUR}?\s*{_HOUR}"),
    _C(rf"(?:每卡每小时|每小时每卡|每张卡每小时|每卡时|每卡每时|每小时|一小时|per gpu[- ]?hour|per hour|an hour|/hr)\s*(?:是|要|大概|约|收)?\s*([¥$])?\s*({lx.NUM})\s*{_CUR}?"),
)
_MONEY = _C(
    rf"(?<![a-z\d.\-])([¥$])?\s*({lx.NUM_RANGE})\s*(万元|万块|w(?![a-z])|千元|k(?![a-z])|m(?![a-z])|{_CUR[1:-1]})?"
)
_NOT_MONEY_AFTER = _C(r"^\s*(?:条|个|人|用户|样本|次|行|字|token|张|卡|台|年|月|天|小时|参数)")
_BUDGET_BEFORE = _C(r"预算|budget|手头|只有|最多|不超过|不能超过|控制在|under|within|up to|max(?:imum)?|资金|经费|投入|花得起|花\s*$")
_BUDGET_AFTER = _C(r"^\s*(?:以内|之内|以下|左右的预算|的预算|预算|内|能买|可以买|够|budget|能(?:配|上|做)|怎么)")
_PER_CARD = _C(r"一张|每张|单卡|一块|每块|per (?:card|gpu)|each|apiece|/张|/卡|一片")
_PER_MONTH = _C(r"月租|每月|一个月|/月|per month|a month|monthly")
_CONFIRM = _C(lx.CONFIRM)


def _currency(symbol: str | None, unit: str | None) -> str:
    if symbol == "$" or (unit and re.match(r"美|刀|usd|dollar", unit, re.I)):
        return "USD"
    return "CNY"


def _money(w: _Work) -> None:
    confirm = bool(_CONFIRM.search(w.t))
    for rx in _PRICE_HOUR:
        for m in rx.finditer(w.t):
            symbol, num, unit = m.group(1), m.group(2), m.group(3)
            if not (symbol or unit or "卡" in m.group(0) or "gpu" in m.group(0)):
                continue
            value = to_number(num)
            if value is None:
                continue
            cur = _currency(symbol, unit)
            if confirm:
                w.slots["user_figures"].append(dict(text=w.span(*m.span()), value=value, unit=cur, kind="price", at=m.start()))
            w.put("price_currency", cur, m)
            w.slots.setdefault("price_per_hour", value)
            if cur == "CNY":
                w.slots.setdefault("price_cny_per_hour", value)
    for m in _MONEY.finditer(w.t):
        symbol, num, unit = m.group(1), m.group(2), (m.group(3) or "").lower()
        big = re.search(r"[万亿]", num)
        if not (symbol or unit or big) or (unit in ("k", "m") and not symbol) or _NOT_MONEY_AFTER.match(w.t[m.end() :]):
            continue
        if unit == "w" and not re.search(r"预算|budget|买|租|花", w.t):
            continue
        rng = _num_range(num)
        if rng is None:
            continue
        scale = {"万元": 1e4, "万块": 1e4, "w": 1e4, "千元": 1e3, "k": 1e3, "m": 1e6}.get(unit, 1.0)
        lo, value, cur = rng[0] * scale, rng[1] * scale, _currency(symbol, unit)
        before, after = w.t[max(0, m.start() - 12) : m.start()], w.t[m.end() : m.end() + 8]
        near = before[-6:] + after[:6]
        if _BUDGET_BEFORE.search(before) or _BUDGET_AFTER.match(after):
            kind = "budget"
        elif confirm:
            kind = "claim"
        elif _PER_CARD.search(near):
            kind = "per_card"
        elif _PER_MONTH.search(near):
            kind = "per_month"
        else:
            kind = "budget"
        if kind == "budget" and "budget_amount" not in w.slots:
            if lo != value:
                w.slots["ranges"]["budget_amount"] = [lo, value]
            w.slots.update(budget_amount=value, budget_currency=cur)
            if cur == "CNY":
                w.slots["budget_cny"] = value
        elif kind == "per_card" and cur == "CNY":
            w.slots.setdefault("purchase_price_cny", value)
        elif kind in ("claim", "per_month"):
            w.slots["user_figures"].append(
                dict(
                    text=w.span(*m.span()),
                    value=value,
                    unit=cur,
                    kind="price" if kind == "claim" else "price_per_month",
                    at=m.start(),
                )
            )
        w.note(kind if kind != "budget" else "budget_amount", m.start(), m.end())
        w.mask(m.start(), m.end())


_CLAIMS = (
    (_C(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:g|gb|gib)(?![a-z/])"), "GB", "memory"),
    (_C(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:tflops|t(?:算力)?(?=\s*(?:算力|flops)))"), "TFLOPS", "compute"),
    (_C(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(gb/s|tb/s)"), "GB/s", "bandwidth"),
    (_C(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:w|瓦)(?![a-z])"), "W", "power"),
)


_CLAIM_QUESTION = _C(lx.CONFIRM + r"|吗\s*[?？]?\s*$|\?\s*$")


def _claims(w: _Work) -> None:
    if not _CLAIM_QUESTION.search(w.t):
        return
    for rx, unit, kind in _CLAIMS:
        for m in rx.finditer(w.t):
            value = float(m.group(1)) * (1000 if "tb/s" in m.group(0) else 1)
            w.slots["user_figures"].append(dict(text=w.span(*m.span()), value=value, unit=unit, kind=kind, at=m.start()))
            w.note("user_figures", *m.span())
            w.mask(*m.span())


# --- counts, time, lengths --------------------------------------------------------------------

_N = rf"(?:{lx.NUM_RANGE}|{lx.EN_NUM})"
_NODES_AND_CARDS = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台|机(?![器房])|个?节点|nodes?|servers?|machines?|boxes)\s*(?:{G})?\s*(?:服务器|机器|主机|servers?)?\s*(?:[,，、]?\s*(?:每台|每机|每个节点|each with|of|with|x|×|\*)?\s*)"
    rf"({lx.NUM})\s*(?:张|块|片)?\s*(?:卡|显卡|gpus?|cards?|{G})"
)
_GRID = _C(rf"(?<![\d.a-z])(\d+)\s*[x×*]\s*(\d+)\s*(?:张|卡|gpus?)?\s*{G}")
_CARDS = (
    _C(rf"(?<![\d.a-z])(-?{_N})\s*(?:张|块|片|个)?\s*(?:{G}\s*)?(?:卡|显卡|gpus?|cards?|accelerators?)(?!时|小时|·时)"),
    _C(rf"(?<![\d.a-z])(-?{lx.NUM}|{lx.EN_NUM})\s*(?:[x×*]\s*|张\s*|块\s*|台\s*)?{G}"),
    _C(rf"{G}\s*(?:[x×*]|\*)\s*(\d+)(?![\d.])"),
    _C(rf"(?<![\d.a-z])(-?{lx.NUM})\s*(?:张|块)(?![钱元])(?!\s*{USED_MARK})"),
)
_ONE_CARD = _C(r"单卡|单张|一张卡|single[- ]gpu|one gpu|a single gpu|单个gpu")
_TWO_CARDS = _C(r"双卡")
_NODES = _C(rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台|机(?![器房])|个?节点|nodes?|servers?|machines?)")
_ONE_NODE = _C(r"单机|单台|单节点|one node|single node|a single (?:node|server|machine)")

_HOURS_PER_DAY = (
    _C(r"24\s*/\s*7|7\s*[x×*]\s*24|全天候?|24\s*小时(?:不停|运行|开机|在线|满载|跑)|around the clock|全年无休|不停机"),
    _C(rf"(?:每天|一天|每日|日均|天天|per day|a day)\s*(?:只|就|大约)?\s*(?:跑|用|开|运行|工作|训练|使用|只)?\s*(?:约|大概)?\s*({lx.NUM_RANGE})\s*(?:个)?\s*(?:小时|钟头|h|hours?|hrs?)(?![a-z])"),
    _C(rf"({lx.NUM_RANGE})\s*(?:个)?\s*(?:小时|h|hours?|hrs?)\s*(?:a|per|/|每|一)\s*(?:day|天)"),
)
_DEADLINE = (
    _C(rf"({lx.NUM}|半|{lx.EN_NUM}|a|an)\s*(?:个)?\s*(天|日|周|星期|礼拜|小时|h|月)\s*(?:之内|以内|内)"),
    _C(rf"(?:within|in under|in less than|under|by)\s+({lx.NUM}|{lx.EN_NUM}|a|an)\s*(hours?|days?|weeks?|months?)"),
    _C(rf"({lx.NUM}|{lx.EN_NUM})\s*(?:个)?\s*(天|周|小时|hours?|days?|weeks?)\s*(?:能|可以|要|得|就)?\s*(?:训完|跑完|完成|搞定|训练完|出结果|finish|done)"),
)
_UNIT_DAYS = {"天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30, "小时": 1 / 24, "h": 1 / 24}
_MONTHS = (
    _C(rf"({lx.NUM_RANGE}|半)\s*(个月|年)(半)?"),
    _C(rf"({lx.NUM_RANGE}|{lx.EN_NUM}|half a)\s*(months?|years?|yrs?)(?![a-z])"),
)

_K = r"(\d+(?:\.\d+)?\s*k?)(?![a-z\d])"
_SEQ = (
    _C(rf"(?:seq(?:uence)?[_\s-]*(?:len(?:gth)?)?|序列长度|序列长|max[_\s-]*(?:seq[_\s-]*)?len(?:gth)?|cutoff[_\s-]*len|上下文(?:长度|窗口)?|context(?:[_\s-]*(?:length|len|window))?|ctx|长度)\s*(?:=|:|是|为|of|设为|设置为|开到|要)?\s*(?:约|大概)?\s*{_K}"),
    _C(rf"(?<![\d.]){_K}\s*(?:的)?\s*(?:tokens?\s*)?(?:上下文|context|长度|序列|长文本|seq(?:uence)?)"),
)
_MICRO = _C(r"(?:micro[_\s-]*batch(?:[_\s-]*size)?|mbs|micro[_\s-]*bs|per[_\s-]device[_\s-](?:train[_\s-])?batch[_\s-]size)\s*(?:=|:|是|为|of)?\s*(\d+)")
_BATCH = (
    _C(r"(?:global[_\s-]*batch(?:[_\s-]*size)?|gbs|batch[_\s-]*size|batch|bs|批大小|批量大小|批次大小|批量|批次)\s*(?:=|:|是|为|of|设为|开到)?\s*(\d+)"),
    _C(r"(?<![\d.])(\d+)\s*(?:的)?\s*(?:batch|bs)(?![a-z])"),
)
_CONCURRENCY = (
    _C(rf"(?:并发(?:数|量)?|concurrency(?: of)?|同时在线|同时)\s*(?:=|:|是|为|要|达到|大概|约|有|支持)?\s*({lx.NUM})\s*(?:个|路|人|用户|请求)?"),
    _C(rf"(?<![\d.])({lx.NUM})\s*(?:个|路)?\s*(?:人|用户|请求)?\s*(?:并发|concurrent|simultaneous|人同时|个?用户同时|同时在线|路并发)"),
    _C(r"(?<![\d.])(\d+)\s*(?:users|requests)\s*(?:at once|at the same time|in parallel|simultaneously)"),
)


def _counts(w: _Work) -> None:
    for m in _NODES_AND_CARDS.finditer(w.t):
        nodes, cards = to_number(m.group(1)), to_number(m.group(2))
        if nodes is None or cards is None:
            continue
        explicit_each = re.search(r"每台|每机|每个节点|each|of|x|×|\*", m.group(0))
        # "两台8卡" = 2 x 8; "2机16卡" = 16 in all: a count above one server's 8 that the nodes divide is a total
        total = cards if (not explicit_each and cards > 8 and nodes and cards % nodes == 0) else nodes * cards
        w.slots.setdefault("n_nodes", int(nodes))
        w.put("n_gpus", int(total), m)
    for m in _GRID.finditer(w.t):
        w.slots.setdefault("n_nodes", int(m.group(1)))
        w.put("n_gpus", int(m.group(1)) * int(m.group(2)), m, 0, mark=GPU_MARK)
    for rx in _CARDS:
        for m in rx.finditer(w.t):
            text = m.group(1)
            sign = -1 if text.startswith("-") else 1
            rng = _num_range(text.lstrip("-"))
            if rng is None:
                continue
            value = sign * round(rng[1])
            if rng[0] != rng[1]:
                w.slots["ranges"].setdefault("n_gpus", [rng[0], rng[1]])
            if value < 1:
                w.slots["invalid"].append(w.span(m.start(1), m.end()).replace(GPU_MARK, ""))
            w.note("n_gpus", *m.span())
            w.slots.setdefault("n_gpus", value)
            # keep the GPU marker so "8×H800 and 4×A100" still sees the second GPU
            w.t = w.t[: m.start()] + "".join(c if c == GPU_MARK else USED_MARK for c in w.t[m.start() : m.end()]) + w.t[m.end() :]
    if "n_gpus" not in w.slots:
        if m := _ONE_CARD.search(w.t):
            w.put("n_gpus", 1, m)
        elif m := _TWO_CARDS.search(w.t):
            w.put("n_gpus", 2, m)
    if "n_nodes" not in w.slots:
        if m := _NODES.search(w.t):
            value = to_number(m.group(1))
            if value is not None:
                w.put("n_nodes", int(value), m)
        elif m := _ONE_NODE.search(w.t):
            w.put("n_nodes", 1, m)


def _durations(w: _Work) -> None:
    for i, rx in enumerate(_HOURS_PER_DAY):
        for m in rx.finditer(w.t):
            if i == 0:
                w.put("hours_per_day", 24.0, m)
            else:
                _set_number(w, "hours_per_day", m.group(1), m, 0)
    for rx in _DEADLINE:
        for m in rx.finditer(w.t):
            value = to_number(m.group(1)) if m.group(1) not in ("a", "an") else 1.0
            unit = m.group(2).lower().rstrip("s")
            days_per = _UNIT_DAYS.get(unit) or {"hour": 1 / 24, "day": 1, "week": 7, "month": 30}.get(unit)
            if value is None or days_per is None or "deadline_days" in w.slots:
                continue
            w.slots["deadline_hours"] = value * days_per * 24
            w.put("deadline_days", value * days_per, m)
    for rx in _MONTHS:
        for m in rx.finditer(w.t):
            num, unit = m.group(1), m.group(2).lower()
            rng = (0.5, 0.5) if num in ("半", "half a") else _num_range(num)
            if rng is None:
                continue
            per = 12 if unit.startswith(("年", "y")) else 1
            extra = 6 if m.lastindex and m.lastindex >= 3 and m.group(3) else 0
            lo, hi = rng[0] * per + extra, rng[1] * per + extra
            if lo != hi:
                w.slots["ranges"].setdefault("months", [lo, hi])
            w.put("months", hi, m)


_GPU_HOURS = _C(rf"(?<![\d.])({lx.NUM})\s*(?:个)?\s*(?:卡时|卡·时|卡小时|gpu[- ]?hours?|gpu[- ]?hrs?)(?![a-z])")
_HOURS = _C(rf"(?<![\d.])({lx.NUM})\s*(?:个)?\s*(?:小时|钟头|hours?|hrs?)(?![a-z])")


def _hours(w: _Work) -> None:
    for m in _HOURS.finditer(w.t):
        _set_number(w, "hours", m.group(1), m, 0)


def _k_value(text: str) -> int:
    text = text.replace(" ", "")
    return int(float(text[:-1]) * 1024) if text.endswith("k") else int(float(text))


def _lengths(w: _Work) -> None:
    infer = bool(re.search(r"推理|部署|serving|inference|上下文|context|并发|vllm", w.src))
    train = bool(re.search(r"训练|微调|train|fine-?tun|lora|全参|pretrain|seq", w.src))
    slot = "context_len" if infer and not train else "seq_len"
    for rx in _SEQ:
        for m in rx.finditer(w.t):
            w.put(slot, _k_value(m.group(1)), m)
    if m := _MICRO.search(w.t):
        w.put("micro_batch", int(m.group(1)), m)
    for rx in _CONCURRENCY:
        for m in rx.finditer(w.t):
            value = to_number(m.group(1))
            if value is not None:
                w.put("concurrency", int(value), m)
    for rx in _BATCH:
        for m in rx.finditer(w.t):
            w.put("batch", int(m.group(1)), m)
    if "batch" not in w.slots and "concurrency" in w.slots:
        w.slots["batch"] = w.slots["concurrency"]


# --- words: method, precision, settings, flags ----------------------------------------------

_METHODS = [(name, _C(p)) for name, p in lx.METHODS]
_WORKLOADS = {name: _C(p) for name, p in lx.WORKLOADS}
_PRECISIONS = [(name, _C(p)) for name, p in lx.PRECISIONS]
_ZERO = _C(lx.ZERO)
_OFFLOAD = [(False, _C(lx.OFFLOAD_NO)), ("optimizer", _C(lx.OFFLOAD_OPT)), ("param", _C(lx.OFFLOAD_PARAM)), (True, _C(lx.OFFLOAD_ANY))]
_MIXED = _C(lx.MIXED_PRECISION)
_DOMESTIC = _C(lx.CHINA_DOMESTIC)
_AVAILABLE = _C(lx.CHINA_AVAILABLE)
_FOLLOW_UP = _C(lx.FOLLOW_UP)
_INJECTION = _C(lx.INJECTION)


def _first(w: _Work, slot: str, table) -> None:
    hits = [(m.start(), name, m) for name, rx in table if (m := rx.search(w.src))]
    if hits:
        _, name, m = min(hits, key=lambda h: h[0])
        w.slots[slot] = name
        for _, _, other in sorted(hits, key=lambda h: h[0]):
            w.note(slot, *other.span())


def _words(w: _Work) -> None:
    s = w.src
    _first(w, "method", _METHODS)
    _first(w, "precision", _PRECISIONS)
    w.slots["mixed_precision"] = bool(_MIXED.search(s))
    if _WORKLOADS["pretrain"].search(s):
        w.slots["workload"] = "pretrain"
    elif w.slots.get("method") or _WORKLOADS["finetune"].search(s):
        infer, ft = _WORKLOADS["infer"].search(s), _WORKLOADS["finetune"].search(s)
        w.slots["workload"] = "infer" if infer and ft and infer.start() < ft.start() and not w.slots.get("method") else "finetune"
    elif _WORKLOADS["infer"].search(s) or "concurrency" in w.slots:
        w.slots["workload"] = "infer"
    elif _WORKLOADS["train"].search(s):
        w.slots["workload"] = "train"
    if m := _ZERO.search(s):
        w.slots["zero_stage"] = int(m.group(1) or m.group(2))
        w.note("zero_stage", *m.span())
    for value, rx in _OFFLOAD:
        if m := rx.search(s):
            w.slots["offload"] = value
            w.note("offload", *m.span())
            break
    w.slots["domestic_only"] = bool(_DOMESTIC.search(s))
    w.slots["china_only"] = w.slots["domestic_only"] or bool(_AVAILABLE.search(s))
    w.slots["injection"] = bool(_INJECTION.search(s))
    w.slots["follow_up"] = bool(_FOLLOW_UP.search(s.strip()))


# --- language and intent ------------------------------------------------------------------------

_CUES = [(intent, weight, _C(p)) for intent, weight, p in lx.INTENT_CUES]
_GREETING_ONLY = _C(lx.GREETING_ONLY)
_DOMAIN = _C(lx.DOMAIN_WORDS)


def _intents(w: _Work) -> tuple[str, list[str]]:
    s, slots = w.src.strip(), w.slots
    if _GREETING_ONLY.match(s):
        return "greeting", ["greeting"]
    score: dict[str, float] = {}
    for intent, weight, rx in _CUES:
        n = len(rx.findall(s))
        if n:
            score[intent] = score.get(intent, 0.0) + weight * min(n, 2)
    boosts = {
        "recommend": 2 if "budget_amount" in slots and not score.get("rent_vs_buy") else 0,
        "compare": 1.5 if len(slots["gpus"]) + len(slots["unknown_gpus"]) >= 2 and score.get("compare") else 0,
        "speed": 2 if "concurrency" in slots else 0,
        "time": 1 if "tokens" in slots and score.get("time") else 0,
        "cost": 1 if "price_per_hour" in slots else 0,
        "rent_vs_buy": (1 if "months" in slots and "hours_per_day" in slots else 0)
        + (3 if ("purchase_price_cny" in slots or "买" in s) and ("price_per_hour" in slots or "租" in s) else 0),
    }
    for intent, extra in boosts.items():
        if extra:
            score[intent] = score.get(intent, 0.0) + extra
    order = lx.INTENT_PRIORITY
    found = sorted((i for i, v in score.items() if v >= lx.INTENT_THRESHOLD), key=lambda i: (-score[i], order.index(i)))
    if found:
        return found[0], found
    if slots["models"] or slots["unknown_models"]:
        guess = "fit"
    elif slots["gpus"] or slots["unknown_gpus"]:
        guess = "specs"
    elif score.get("greeting"):
        guess = "greeting"
    elif _DOMAIN.search(s) and not slots["injection"]:
        guess = "knowledge"
    else:
        guess = "out_of_scope"
    return guess, []


# --- entry point ------------------------------------------------------------------------------


def parse(text: str) -> ParsedQuestion:
    """Intent and slots of one question; never raises on any string."""
    w = _Work(text or "")
    _tokens(w)
    for m in _GPU_HOURS.finditer(w.t):
        _set_number(w, "gpu_hours", m.group(1), m, 0)
    names_in(w)
    _money(w)
    _claims(w)
    _durations(w)
    _hours(w)
    _lengths(w)
    _counts(w)
    _words(w)
    w.slots["language"] = detect_language(w.raw)
    w.slots["intent"], w.slots["intents"] = _intents(w)
    figures = sorted(w.slots["user_figures"], key=lambda f: f.pop("at"))
    w.slots["user_figures"] = [UserFigure(**f) for f in figures]
    return ParsedQuestion(**w.slots)
