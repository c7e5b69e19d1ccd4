"""The unit words a figure may carry in Chinese and English ("卡时", "GB/s", "万元" is a magnitude, not a
unit: see `numbers.py`), each normalised to one unit with its dimension and its factor to the
dimension's base, so figures of one dimension compare after conversion; and the per-unit denominators
("元/卡时", "tokens/s")."""

from __future__ import annotations

import re

#: normalised unit -> (dimension, factor to the dimension's base). Units of one dimension convert.
UNITS: dict[str, tuple[str, float]] = {
    "bytes": ("bytes", 1.0),
    "KB": ("bytes", 1e3),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12),
    "PB": ("bytes", 1e15),
    "MiB": ("bytes", 2.0**20),
    "GiB": ("bytes", 2.0**30),
    "TiB": ("bytes", 2.0**40),
    "MB/s": ("bytes/s", 1e6),
    "GB/s": ("bytes/s", 1e9),
    "TB/s": ("bytes/s", 1e12),
    "GiB/s": ("bytes/s", 2.0**30),
    "Gb/s": ("bits/s", 1e9),
    "Tb/s": ("bits/s", 1e12),
    # rates and totals of floating-point work share a dimension: their magnitudes never collide
    "FLOP": ("flop", 1.0),
    "GFLOPS": ("flop", 1e9),
    "TFLOPS": ("flop", 1e12),
    "PFLOPS": ("flop", 1e15),
    "TOPS": ("flop", 1e12),
    "W": ("power", 1.0),
    "kW": ("power", 1e3),
    "MW": ("power", 1e6),
    "kWh": ("energy", 1.0),
    "MWh": ("energy", 1e3),
    # time in hours; a month is 730 h (8,760 h / 12), the TCO convention of tools/units.py.
    # GPU-hours share the dimension: "184,320 小时" for a gpu_hours output is a label slip, not a new figure
    "ms": ("time", 1 / 3.6e6),
    "s": ("time", 1 / 3600),
    "min": ("time", 1 / 60),
    "h": ("time", 1.0),
    "day": ("time", 24.0),
    "week": ("time", 168.0),
    "month": ("time", 730.0),
    "year": ("time", 8760.0),
    "GPU-h": ("time", 1.0),
    "GPU-day": ("time", 24.0),
    "%": ("ratio", 0.01),
    "fraction": ("ratio", 1.0),
    "x": ("times", 1.0),
    "tokens": ("tokens", 1.0),
    "tokens/s": ("tokens/s", 1.0),
    "GPU": ("count", 1.0),
    "node": ("count", 1.0),
    "params": ("params", 1.0),
    "B_params": ("params", 1e9),
}
CURRENCIES = ("CNY", "USD")  # "CNY", "CNY/h", "CNY/month" ... all have the currency as dimension

END = r"(?![A-Za-z0-9_])"  # end of an ASCII unit word (\b fails before CJK, which is \w)

# (normalised unit, alternatives); order matters: the longer or more specific spelling first
UNIT_SPECS: list[tuple[str, str]] = [
    ("GPU-h", rf"(?:GPU|卡)\s?[-·・]?\s?(?:个?小时|hours?{END}|hrs?{END}|h{END})|卡时|卡·时"),
    ("GB/s", r"GB/s|GB/秒|GBps"),
    ("TB/s", r"TB/s|TB/秒|TBps"),
    ("MB/s", r"MB/s"),
    ("GiB/s", r"GiB/s"),
    ("Gb/s", r"Gb/s|Gbps|Gbit/s"),
    ("Tb/s", r"Tb/s|Tbps"),
    ("PFLOPS", rf"PFLOP[Ss]?(?:/s)?{END}|PFlops{END}"),
    ("TFLOPS", rf"TFLOP[Ss]?(?:/s)?{END}|TFlops{END}"),
    ("GFLOPS", rf"GFLOP[Ss]?(?:/s)?{END}"),
    ("TOPS", rf"TOPS{END}"),
    ("FLOP", rf"FLOP[Ss]?{END}|flops{END}|次浮点运算"),
    ("tokens/s", rf"tok(?:en)?s?\s?/\s?(?:s{END}|秒|sec{END})|tokens?\s?每秒|tokens? per second{END}"),
    ("tokens", rf"(?:个\s?)?tokens?{END}|词元|(?:个\s?)?Token{END}"),
    ("params", rf"(?:个\s?)?参数|parameters{END}|params{END}"),
    ("GiB", rf"GiB{END}"),
    ("TiB", rf"TiB{END}"),
    ("MiB", rf"MiB{END}"),
    ("GB", rf"GB{END}|G(?![A-Za-z0-9_/])"),
    ("TB", rf"TB{END}"),
    ("MB", rf"MB{END}"),
    ("KB", rf"[Kk]B{END}"),
    ("PB", rf"PB{END}"),
    ("bytes", rf"bytes?{END}|字节"),
    ("kWh", rf"kWh{END}|KWh{END}|千瓦时|度电"),
    ("MWh", rf"MWh{END}"),
    ("kW", rf"kW{END}|KW{END}|千瓦"),
    ("MW", rf"MW{END}|兆瓦"),
    ("W", rf"W{END}|瓦"),
    ("CNY", rf"元|块钱|RMB{END}|CNY{END}|人民币"),
    ("USD", rf"美元|美金|USD{END}|dollars?{END}"),
    ("%", rf"%|％|个百分点|percent{END}|pct{END}"),
    ("x", rf"倍|times{END}"),
    ("GPU", rf"(?:张|块)\s?(?:GPU|卡|显卡)|(?:张|块)(?=\s?\x02)|张|GPUs?{END}|显卡|加速卡|卡|cards?{END}"),
    ("CNY", r"块"),
    ("node", rf"台(?:服务器|机器)?|nodes?{END}|节点|servers?{END}|机器"),
    ("ms", rf"毫秒|ms{END}"),
    ("min", rf"分钟|minutes?{END}|mins?{END}"),
    ("h", rf"个?小时|hours?{END}|hrs?{END}|h{END}"),
    ("s", rf"秒|seconds?{END}|secs?{END}|s{END}"),
    ("day", rf"天|days?{END}"),
    ("week", rf"周|weeks?{END}|个?星期"),
    ("month", rf"个月|months?{END}|月"),
    ("year", rf"年|years?{END}|yrs?{END}"),
]
UNIT_RE = re.compile(r"[ \t]?(?:" + "|".join(f"(?P<u{i}>{alt})" for i, (_, alt) in enumerate(UNIT_SPECS)) + ")")
DENOMS: list[tuple[str, str]] = [
    ("GPU-h", rf"卡时|卡·时|卡/小时|卡/时|卡小时|GPU\s?[-·]?\s?(?:hours?|hrs?|h){END}|卡\s?每小时|GPU/h{END}"),
    ("h", rf"小时|时|hours?{END}|hrs?{END}|h{END}"),
    ("day", rf"天|days?{END}"),
    ("month", rf"月|months?{END}|mo{END}"),
    ("year", rf"年|years?{END}|yrs?{END}"),
    ("kWh", rf"度|kWh{END}"),
    ("GPU", rf"卡|张|GPU{END}|cards?{END}"),
    ("s", rf"秒|s{END}"),
    ("Mtokens", rf"(?:百万|1M|M)\s?tokens?{END}"),
    ("Ktokens", rf"(?:千|1K|K)\s?tokens?{END}"),
]
DENOM_RE = re.compile(
    r"[ \t]?(?:/|每|per[ \t])[ \t]?(?:" + "|".join(f"(?P<d{i}>{a})" for i, (_, a) in enumerate(DENOMS)) + ")"
)
