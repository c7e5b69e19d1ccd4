"""Slots in money and amounts: token counts, prices per GPU-hour, budgets, per-card prices, figures the
user states to be checked ("H100 是 25 万一张对吧")."""

from __future__ import annotations

import re

from bot.offline.understand import lexicon as lx
from bot.offline.understand.lexicon import to_number
from bot.offline.understand.names import _C
from bot.offline.understand.work import Work, num_range

# --- tokens -------------------------------------------------------------------------------

_EN_MAG = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12, "": 1.0}
_LENGTH_WORDS = _C(r"上下文|context|长度|序列|窗口|输入|输出|input|output|prompt|生成|max")
_TOKENS = (
    _C(rf"(?<![a-z\d.])({lx.NUM_RANGE})\s*(万亿|千亿|百亿|亿|[kmbt])?\s*(?:个)?\s*(?:tokens?|toks?\b|词元)"),
    _C(
        rf"(?:数据量?|语料|训练数据|data(?:set)?|corpus|tokens?)\s*(?:量|规模|是|有|为|约|大概|共|:|改成|改为|换成|加到|增加到|to)*\s*({lx.NUM_RANGE})\s*([mbt])(?![a-z])"
    ),
    # a bare "15T" is a token count, but "1T内存" / "2T RAM" / "4T 硬盘" is memory or disk
    _C(
        r"(?<![a-z\d.\-])(\d+(?:\.\d+)?)\s*(t)(?![a-z])(?!\s*(?:的)?\s*(?:内存|显存|硬盘|磁盘|存储|ram|ssd|nvme|disk|memory))"
    ),
    _C(rf"(?<![\d.])(\d+(?:\.\d+)?\s?万亿|[{lx.ZH_DIGIT_CHARS}十]+万亿)()(?!\s*(?:个)?\s*(?:参数|元|块|美元|rmb))"),
)


def tokens(w: Work) -> None:
    for rx in _TOKENS:
        for m in rx.finditer(w.t):
            rng = num_range(m.group(1))
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


# "5 万条数据，每条 2k token，3 个 epoch": a fine-tuning set given as samples × length × epochs
_SAMPLES = _C(
    rf"(?<![\d.])({lx.NUM})\s*(万|千|k|w)?\s*(?:条|个样本|组|段)(?:数据|样本|对话|指令|问答|训练数据|语料)?"
    rf"|(?<![\d.])({lx.NUM})\s*(k|m|million|thousand)?\s*(?:samples?|examples?|conversations?|instructions?|rows?|records?)"
    r"(?![a-z])"
)
_ABOUT = r"(?:约|大概|长度|length|of|about|around|roughly|approx\.?|approximately|~|≈|is|:|：|\s)*"
_UNITS_OF_DATA = (
    r"(?:samples?|examples?|conversations?|instructions?|rows?|records?|pairs?|dialogues?|documents?|docs?)"
)
_PER_SAMPLE = (
    _C(
        rf"(?:每条|每个样本|每段|平均每条|平均|each|per (?:sample|example|conversation|row|record|instruction|pair)"
        rf"|on average|avg\.?|averaging|average(?: length)?)"
        rf"{_ABOUT}({lx.NUM})(?:\s*(?:-|–|~|to|到|至)\s*(?P<hi>{lx.NUM}))?\s*(k)?\s*(?:个)?\s*(?:tokens?|toks?)(?![a-z])"
    ),
    # "50k samples of ~1k tokens", "20k examples × 2048 tokens", "10,000 conversations with about 800 tokens"
    _C(rf"{_UNITS_OF_DATA}\s*(?:of|with|at|×|x|\*|,)?{_ABOUT}({lx.NUM})\s*(k)?\s*(?:tokens?|toks?)(?![a-z])"),
    # "1,000 tokens each", "2k tokens per sample", "1k tokens on average"
    _C(rf"(?<![\d.])({lx.NUM})\s*(k)?\s*(?:tokens?|toks?)\s*(?:each|apiece|on average|per {_UNITS_OF_DATA})"),
    # "My sample size is probably 5-6 hundred tokens": a range taken at its middle, "hundred" read
    _C(
        r"(?:sample|example|conversation)s?\s+(?:size|length)s?"
        rf"(?:\s*(?:约|大概|of|about|around|is|are|probably|roughly|maybe|:|：))*\s*(?P<n>{lx.NUM})"
        rf"(?:\s*(?:-|–|~|to|到|至)\s*(?P<hi>{lx.NUM}))?\s*(?P<mag>k|hundred|百)?\s*(?:tokens?|toks?)(?![a-z])"
    ),
)
_EPOCHS = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:个)?\s*(?:epochs?|轮|遍)(?![a-z])|(?:epochs?|轮数)\s*(?:=|:|：|是|为)?\s*({lx.NUM})"
)
_K_MAG = {"万": 1e4, "w": 1e4, "千": 1e3, "k": 1e3, "m": 1e6, "million": 1e6, "thousand": 1e3, "": 1.0}
_LENGTH_MAG = {"k": 1024, "hundred": 100, "百": 100}


def sample_tokens(w: Work) -> None:
    """Training tokens from samples × tokens per sample × epochs (1 when not said); only when the question gives
    no token total itself. The parts stay in `tokens_from`, so the answer can show the product and its factors."""
    if "tokens" in w.slots:
        _epochs_of_tokens(w)
        return
    ms = _SAMPLES.search(w.t)
    ml = next((m for rx in _PER_SAMPLE if (m := rx.search(w.t))), None)
    if not (ms and ml):
        return
    count, mag = (ms.group(1), ms.group(2)) if ms.group(1) else (ms.group(3), ms.group(4))
    samples = to_number(count)
    named = ml.groupdict()
    low = to_number(ml.group(1))
    high = to_number(named["hi"]) if named.get("hi") else None
    length = (low + high) / 2 if low and high else low  # "5-6 hundred": its middle
    if not samples or not length:
        return
    samples *= _K_MAG.get((mag or "").lower(), 1.0)
    length *= _LENGTH_MAG.get(((named["mag"] if "mag" in named else ml.groups()[-1]) or "").lower(), 1)
    me = _EPOCHS.search(w.t)
    epochs = to_number(me.group(1) or me.group(2)) if me else 1
    if not epochs or epochs > 1000:
        return
    w.slots["tokens_from"] = {"samples": samples, "tokens_per_sample": length, "epochs": epochs}
    w.put("tokens", samples * length * epochs, ms)
    w.note("tokens", *ml.span())
    if me:
        w.mask(*me.span())


def sample_length(w: Work) -> None:
    """A dataset given as samples of a length and no sequence length: the run's sequences hold one sample, the next
    power of two at or above it (a trainer's cutoff_len is set to cover the samples), 512 at least, 32K at most."""
    given = w.slots.get("tokens_from") or {}
    if "tokens_per_sample" not in given or "seq_len" in w.slots or "context_len" in w.slots:
        return
    seq = 512
    while seq < given["tokens_per_sample"] and seq < 32768:
        seq *= 2
    w.slots["seq_len"] = given["seq_len"] = seq


def _epochs_of_tokens(w: Work) -> None:
    """ "1B tokens 训 3 轮", "2B tokens for 3 epochs": the token total is one pass; the run is that × epochs."""
    me = _EPOCHS.search(w.t)
    epochs = to_number(me.group(1) or me.group(2)) if me else None
    if not epochs or epochs <= 1 or epochs > 1000:
        return
    per_epoch = w.slots["tokens"]
    w.slots["tokens_from"] = {"tokens_per_epoch": per_epoch, "epochs": epochs}
    w.slots["tokens"] = per_epoch * epochs
    w.note("tokens", *me.span())
    w.mask(*me.span())


# --- money --------------------------------------------------------------------------------

#: "4块A100": 块 before a card (its mark) counts the cards, as "4块卡" does; "4块钱" is money
_CUR = r"(元|块钱|块(?![卡显a-z\d\ue000])|rmb|人民币|cny|美元|美金|刀|usd|dollars?|欧元|€|euros?|eur)"
_HOUR = r"(?:(?:/|每|一|per|an?)\s*(?:张|块|个)?\s*(?:卡|gpu|card)?\s*[·/\-]?\s*(?:每|一|per)?\s*(?:卡时|卡小时|小时|钟头|hour|hr|h)(?![a-z])|/\s*(?:卡|gpu)\s*[·/]?\s*(?:时|小时|h)|每卡时)"
_PRICE_HOUR = (
    _C(rf"([¥$])?\s*({lx.NUM})\s*{_CUR}?\s*{_HOUR}"),
    _C(
        rf"(?:每卡每小时|每小时每卡|每张卡每小时|每卡时|每卡每时|每小时|一小时|per gpu[- ]?hour|per hour|an hour|/hr)\s*(?:是|要|大概|约|收)?\s*([¥$])?\s*({lx.NUM})\s*{_CUR}?"
    ),
)
_MONEY = _C(
    rf"(?<![a-z\d.\-])([¥$€])?\s*({lx.NUM_RANGE})\s*(万元|万块|w(?![a-z])|千元|k(?![a-z])|k(?=\s*(?:€|eur))|m(?![a-z])|{_CUR[1:-1]})?"
    rf"(?:\s*{_CUR}(?![a-z]))?"  # "300k CNY", "2万 RMB": the currency after a magnitude
)
#: what makes an amount something other than a sum of money to spend: a count, a duration, or a rate per unit of
#: electricity ("0.1 USD/kWh", "$0.12 per kWh": a tariff, not a budget)
_NOT_MONEY_AFTER = _C(
    r"^\s*(?:条|个|人|用户|样本|次|行|字|token|张|卡|台|年|月|天|小时|参数|(?:/|per|每|一|a)\s*(?:kwh|度|千瓦时))"
)
#: a traffic said in 万 ("日活 5 万", "并发 1 万"): a count of users or requests, not money
_NOT_MONEY_BEFORE = _C(
    r"(?:日活|月活|dau|mau|用户数?|并发(?:数|量)?|访问量|请求数?|qps|调用量)\s*(?:约|大概|有|是|为|达到|:|：)?\s*$"
)
_BUDGET_BEFORE = _C(
    r"预算|budget|手头|只有|最多|不超过|不能超过|控制在|under|within|up to|max(?:imum)?|资金|经费|投入|花得起|花\s*$"
)
_BUDGET_AFTER = _C(r"^\s*(?:以内|之内|以下|左右的预算|的预算|预算|内|能买|可以买|够|budget|能(?:配|上|做)|怎么)")
_PER_CARD = _C(r"一张|每张|单卡|一块|每块|per (?:card|gpu)|each|apiece|/张|/卡|一片")
_PER_MONTH = _C(r"月租|每月|一个月|/月|per month|a month|monthly")
_CONFIRM = _C(lx.CONFIRM)


def _currency(symbol: str | None, unit: str | None) -> str:
    if symbol == "$" or (unit and re.match(r"美|刀|usd|dollar", unit, re.I)):
        return "USD"
    if symbol == "€" or (unit and re.match(r"欧|€|eur", unit, re.I)):  # "1000€", "30 kEuro"
        return "EUR"
    return "CNY"


def money(w: Work) -> None:
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
                w.slots["user_figures"].append(
                    dict(text=w.span(*m.span()), value=value, unit=cur, kind="price", at=m.start())
                )
            w.slots.setdefault("price_currency", cur)
            w.put("price_per_hour", value, m)  # the mention is the price (its currency is a slot beside it)
            if cur == "CNY":
                w.slots.setdefault("price_cny_per_hour", value)
    for m in _MONEY.finditer(w.t):
        symbol, num, unit, named = m.group(1), m.group(2), (m.group(3) or "").lower(), (m.group(4) or "").lower()
        big = re.search(r"[万亿]", num)
        k_or_m = unit in ("k", "m") and not (symbol or named)  # "32k" alone is a length; "300k CNY" is money
        if not (symbol or unit or big) or k_or_m or _NOT_MONEY_AFTER.match(w.t[m.end() : m.end() + 16]):
            continue
        if not symbol and _NOT_MONEY_BEFORE.search(w.t[max(0, m.start() - 12) : m.start()]):
            continue
        if unit == "w" and not re.search(r"预算|budget|买|租|花", w.t):
            continue
        rng = num_range(num)
        if rng is None:
            continue
        scale = {"万元": 1e4, "万块": 1e4, "w": 1e4, "千元": 1e3, "k": 1e3, "m": 1e6}.get(unit, 1.0)
        lo, value, cur = rng[0] * scale, rng[1] * scale, _currency(symbol, named or unit)
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


def claims(w: Work) -> None:
    if not _CLAIM_QUESTION.search(w.t):
        return
    for rx, unit, kind in _CLAIMS:
        for m in rx.finditer(w.t):
            value = float(m.group(1)) * (1000 if "tb/s" in m.group(0) else 1)
            w.slots["user_figures"].append(
                dict(text=w.span(*m.span()), value=value, unit=unit, kind=kind, at=m.start())
            )
            w.note("user_figures", *m.span())
            w.mask(*m.span())
