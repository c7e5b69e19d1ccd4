"""Slots of the machine room a user states: the electricity price ("电费一度 0.6", "0.8 元/度", "6 毛一度",
"0.65 CNY/kWh"), the PUE ("PUE 1.5"), the servers per rack ("一个机柜放 2 台") and a rack's power limit ("机柜 20kW"). They replace the TCO
defaults in power_draw and rent_vs_buy. A price in another currency is left alone (the calculators take 元): the reader names it as such."""

from __future__ import annotations

from bot.offline.understand.lexicon import ZH_DIGIT_CHARS, to_number
from bot.offline.understand.names import _C
from bot.offline.understand.work import Work

_N = rf"(\d+(?:\.\d+)?|[{ZH_DIGIT_CHARS}十]+)"
_KWH = r"(?:度电?|千瓦时|kwh|kw·h|kw h)"
_YUAN = r"(元|块钱?|毛|角|cny|rmb|yuan)"
#: a price in another currency ("0.1 USD/kWh", "$0.12 per kWh"): not taken as 元 (the calculators take 元/kWh)
_FOREIGN = r"(?:usd|us\$|\$|dollars?|美元|美金|eur|€|euros?)"
#: what a count counts ("power cost of 4 servers with 8 H100": 4 servers, not a price of 4 元/kWh)
_COUNTED = r"(?:servers?|nodes?|machines?|boxes|gpus?|cards?|racks?|台|张|块|卡|个|节点|机柜|[x×*])"
_ELECTRICITY = (
    # "0.8 元/度", "6 毛一度", "0.65 CNY/kWh", "0.6 元每度电"
    _C(rf"(?<![\d.$¥])\s*{_N}\s*{_YUAN}\s*(?:/|每|一|per|a)\s*{_KWH}"),
    # "电费一度 0.6", "电价 0.55 元", "电费按 0.7", "electricity at 0.6 CNY", "power costs 0.6 yuan per kwh"
    _C(
        rf"(?:电费|电价|工业电价|商业电价|电|electricity(?: price| cost| rate)?|power (?:price|cost|rate))\s*(?:是|为|按|算|约|大概|大约|只要|才|"
        rf"每度|一度|1度|每千瓦时|per kwh|is|at|of|costs?|=|:|：|\s)*\s*{_N}(?!\s*度)(?!\s*{_FOREIGN})(?!\s*{_COUNTED})\s*(?:{_YUAN})?(?!\s*(?:kw|千瓦|w\b|瓦|万|%|小时|h\b|年|月|天))"
    ),
)
_PUE = _C(r"\bpue\s*(?:是|为|按|算|约|大概|=|:|：|of|at|is|around|about|\s)*\s*(\d(?:\.\d+)?)")
_RACK_LIMIT = (
    _C(
        r"(?:机柜|柜子|每柜|一柜|单柜|每个机柜|racks?)\s*(?:功率|供电|电力|限制|上限|限额|只有|最多|power|limit(?:ed)?|to|are|is|of|has"
        r"|at|:|：|\s)*\s*"
        r"(\d+(?:\.\d+)?)\s*(?:kw|千瓦)"
    ),
    _C(r"(\d+(?:\.\d+)?)\s*(?:kw|千瓦)\s*(?:的)?\s*(?:机柜|柜子|racks?)"),
)
_RACK = (
    _C(rf"(?:一个|每个?|单个?)?\s*(?:机柜|柜子|柜)\s*(?:放|装|上|塞|能放)?\s*{_N}\s*(?:台|个节点|节点)"),
    _C(r"(\d+)\s*(?:servers?|nodes?|boxes)\s*(?:per|a|in (?:a|one|each))\s*rack"),
)


def facility(w: Work) -> None:
    for rx in _ELECTRICITY:
        for m in rx.finditer(w.t):
            value = to_number(m.group(1))
            unit = (m.group(2) or "元") if m.lastindex and m.lastindex >= 2 else "元"
            if value is None:
                continue
            if unit in ("毛", "角"):
                value /= 10
            if 0 < value <= 5:  # 元/kWh: anything above is not an electricity price
                w.put("electricity_cny_per_kwh", round(value, 4), m, 1)
    if m := _PUE.search(w.t):
        value = float(m.group(1))
        if 1.0 <= value <= 3.0:
            w.put("pue", value, m, 1)
    for rx in _RACK_LIMIT:
        if m := rx.search(w.t):
            value = float(m.group(1))
            if 0 < value <= 200:
                w.put("rack_limit_kw", value, m, 1)
                break
    for rx in _RACK:
        if m := rx.search(w.t):
            value = to_number(m.group(1))
            if value and 1 <= value <= 64:
                w.put("servers_per_rack", int(value), m, 1)
