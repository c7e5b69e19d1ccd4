"""Slots in counts and durations: GPUs and nodes, hours per day, deadlines, months, GPU-hours, sequence
and context lengths, batch and concurrency."""

from __future__ import annotations

import re

from bot.offline.understand import lexicon as lx
from bot.offline.understand.cards.servers import board_servers, gpus_of_servers, own_count
from bot.offline.understand.lexicon import to_number
from bot.offline.understand.names import _C, GPU_MARK, USED_MARK
from bot.offline.understand.paste.degrees import launch_counts
from bot.offline.understand.work import G, Work, num_range, set_number
from tools.catalog import lookup as catalog

# --- counts, time, lengths --------------------------------------------------------------------

_N = rf"(?:{lx.NUM_RANGE}|{lx.EN_NUM})"
_NODES_AND_CARDS = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台|机(?![器房])|个?节点|nodes?|servers?|machines?|boxes)\s*(?:{G})?\s*(?:服务器|机器|主机|servers?)?\s*(?:[,，、]?\s*(?:每台|每机|每个节点|each with|of|with|x|×|\*)?\s*)"
    rf"({lx.NUM})\s*(?:[x×*]\s*)?(?:张|块|片)?\s*(?:[x×*]\s*)?(?:卡|显卡|gpus?|cards?|{G})"
)
#: "2台 H100*8", "3 nodes of A800 x8": servers, then the card and how many each holds
_NODES_THEN_CARDS = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台|机(?![器房])|个?节点|nodes?(?: of)?|servers?(?: of)?|machines?(?: of)?)\s*"
    rf"{G}\s*(?:\(\s*{G}\s*\)\s*)?[x×*]\s*(\d+)(?![\d.])"
)
_GRID = _C(rf"(?<![\d.a-z])(\d+)\s*[x×*]\s*(\d+)\s*(?:张|卡|gpus?)?\s*[x×*]?\s*{G}")
#: "96 DGX-A100 (8x40G)", "2 台 HGX H100（8×80GB）": servers named by their platform, with the GPUs each holds
_PLATFORM_NODES = _C(
    rf"(?<![\d.])(\d+)\s*(?:台|个|nodes? of|servers? of|[x×*])?\s*(?:nvidia\s+)?[dh]gx[-\s]?{G}\s*"
    rf"\(\s*(\d+)\s*(?:张|块)?\s*[x×*][^()\n]{{1,12}}\)"  # the card's memory may be read already
)
#: nodes, then what each holds a few words on: "4 nodes that each have 8 A40", "3 台服务器，每台 8 张 A800"
_NODES_EACH = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台|个?节点|nodes?|servers?|machines?|boxes)[^\n。.;；\d]{{0,24}}?"
    rf"(?:each|每台|每个节点|每节点|per node|apiece)[^\n\d]{{0,14}}?({lx.NUM})\s*(?:[x×*]\s*)?(?:张|块)?\s*(?:{G}|卡|gpus?|cards?)"
)
#: "2*8*80G": nodes × GPUs per node × each card's memory
_GRID_MEMORY = _C(r"(?<![\d.a-z])(\d+)\s*[x×*]\s*(\d+)\s*[x×*]\s*(\d{2,3})\s*(?:g|gb|gib)(?![a-z\d])")
_CARDS = (
    _C(
        rf"(?<![\d.a-z])(-?{_N})\s*(?:张|块|片|个)?\s*(?:{G}\s*)?(?:卡|显卡|gpus?|cards?|accelerators?)(?!时|小时|·时)(?!\s*[:：])"
    ),
    # "4 x A100", "8张H800", "4个80G A100", "8 张 40GB 的 A100": a card's memory may stand between the count and it;
    # "8*(v100 32G)": the card in brackets after the count
    _C(
        rf"(?<![\d.a-z])(-?{lx.NUM}|{lx.EN_NUM})\s*(?:[x×*]\s*[（(]?\s*|张\s*|块\s*|台\s*|个\s*)?"
        rf"(?:(?<=[张块台个\s])\d{{2,3}}\s*g(?:b|i?b)?\s*(?:的\s*)?)?{G}"
    ),
    # "A800(80GB) X8", "A100（40G）× 4", "S4000 48G x8": the card's memory may stand between the card and the count
    _C(rf"{G}\s*(?:\(\s*{G}\s*\)\s*|[（(]?\d{{2,3}}\s*g(?:b|ib)?[)）]?\s*)?(?:[x×*]|\*)\s*(\d+)(?![\d.])"),
    # a parts list: "GPU: RTX 4090 24G 涡轮显卡 *2" (the card, its memory and kind, then the quantity)
    _C(rf"{G}\s*(?:\d{{2,3}}\s*g(?:b|ib)?)?[^\n\d*×]{{0,8}}?(?:显卡|卡|gpus?|cards?)\s*[*×]\s*(\d+)(?![\d.])"),
    _C(rf"(?<![\d.a-z])(-?{lx.NUM})\s*(?:张|块)(?![钱元])(?!\s*{USED_MARK})"),
)
#: how many cards a board or server takes, not how many the user has: "主板 (最大支持4张GPU)", "supports up to 8 GPUs"
_CAPACITY_BEFORE = _C(
    r"(?:最大|最多|最高|可)?(?:支持|扩展到|可插|能插|插满)\s*$|(?:supports?|takes|holds)\s+up\s+to\s+$"
)
#: a card's index, not a count: "0卡的显存占用", "0号卡", a row of a pasted nvidia-smi table
_INDEX_AFTER = _C(r"^\s*(?:的|号|上的|上|显存|突然|占用|利用率)")
#: a real count elsewhere in the question makes a "0卡" the first card's index
_OTHER_COUNT = _C(r"(?<![\d.])[1-9]\d*\s*(?:张|块|卡)|[x×*]\s*[1-9]\d*(?![\d.])|(?<![\d.])[1-9]\d*\s*[x×*]")
#: the parallelism a pasted launch command gives: its GPUs ("--tensor-parallel-size 4", "--nproc_per_node 8")
#: "on an H100", "one 4090": one card ("an H800 run", "an H100 cluster" are not counts)
_AN = _C(
    rf"(?<![a-z])(?:an?|one)\s+{G}(?!\s*[x×*]?\s*\d)(?!\s*(?:run|job|cluster|server|node|instance|box|machine|setup|pod|rental|fleet|farm|system)s?\b)"
)
_OF_THOSE = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:of (?:those|these|them|the same)|such (?:gpus|cards)|个这样的|张这样的|张这种)"
)
_HALF_TIME = _C(
    r"一半时间|一半的时间|半天在用|half (?:of )?the time|50\s*%\s*(?:of the time|utili[sz]ation|利用率|的时间)|利用率\s*50\s*%"
)
_ONE_CARD = _C(r"单卡|单张|一张卡|single[- ]gpu|one gpu|a single gpu|单个gpu")
_TWO_CARDS = _C(r"双卡")
_NODES = _C(rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*-?\s*(?:台|机(?![器房])|个?节点|nodes?|servers?|machines?)")
_ONE_NODE = _C(r"单机|单台|单节点|one node|single node|a single (?:node|server|machine)")

_HOURS_PER_DAY = (
    _C(r"24\s*/\s*7|7\s*[x×*]\s*24|全天候?|24\s*小时(?:不停|运行|开机|在线|满载|跑)|around the clock|全年无休|不停机"),
    _C(
        rf"(?:每天|一天|每日|日均|天天|平均每天|per day|a day)\s*(?:只|就|大约|大概|约|差不多|平均)?\s*(?:跑|用|开|运行|工作|训练|使用|只)?\s*(?:约|大概)?\s*({lx.NUM_RANGE})\s*(?:个)?\s*(?:小时|钟头|h|hours?|hrs?)(?![a-z])"
    ),
    _C(rf"({lx.NUM_RANGE})\s*(?:个)?\s*(?:小时|h|hours?|hrs?)\s*(?:a|per|/|每|一)\s*(?:day|天)"),
)
_DEADLINE = (
    _C(rf"({lx.NUM}|半|{lx.EN_NUM}|a|an)\s*(?:个)?\s*(天|日|周|星期|礼拜|小时|h|月)\s*(?:之内|以内|内)"),
    _C(rf"(?:within|in under|in less than|under|by)\s+({lx.NUM}|{lx.EN_NUM}|a|an)\s*(hours?|days?|weeks?|months?)"),
    _C(
        rf"({lx.NUM}|{lx.EN_NUM})\s*(?:个)?\s*(天|周|小时|hours?|days?|weeks?)\s*(?:能|可以|要|得|就)?\s*(?:训完|跑完|完成|搞定|训练完|出结果|finish|done)"
    ),
)
_UNIT_DAYS = {"天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30, "小时": 1 / 24, "h": 1 / 24}
#: "一年电费", "每月用电", "a year in electricity": a period a bill is quoted for, not how long the cards are used
_RATE_AFTER = r"(?!\s*(?:的)?(?:电费|电量|用电|耗电|能耗|电|的电|租金|房租|托管费))"
#: GPU-hours right after "一个月" / "1 month": the month is the rate's period ("一个月大概 200 卡时")
_RATE_OF_USE = _C(rf"\s*(?:大概|大约|约|差不多|用|跑|要|共)?\s*(?:{lx.NUM})\s*(?:个)?\s*(?:卡时|卡小时|gpu[- ]?hours?)")
_MONTHS = (
    _C(rf"(?<![每/])({lx.NUM_RANGE}|半)\s*(个月|年)(半)?{_RATE_AFTER}"),
    _C(rf"({lx.NUM_RANGE}|{lx.EN_NUM}|half a)\s*(months?|years?|yrs?)(?![a-z])(?!\s*(?:of|in) (?:electricity|power))"),
)
#: "for a year", "the yearly cost", "annual", "monthly": one year or one month said in words (as "一年" is)
_MONTHS_WORD = _C(
    r"(?<![\w-])(?:(?:a|one) (year|month)|(year|month)ly|(annual)(?:ly)?)(?![a-z])"
    r"(?!\s*(?:of|in) (?:electricity|power))(?!\s*(?:electricity|power))"
)

_K = r"(\d+(?:\.\d+)?\s*[km]?)(?![a-z\d])(?!\s*(?:个|路|人|用户|张|卡|台|并发|users?|concurrent|requests?|gpus?))"
_SEQ = (
    _C(
        rf"(?:seq(?:uence)?[_\s-]*(?:len(?:gth)?)?|序列长度|序列长|max[_\s-]*(?:seq|model)?[_\s-]*len(?:gth)?|max[_\s-]*words|cutoff[_\s-]*len|上下文(?:长度|窗口)?|context(?:[_\s-]*(?:length|len|window))?|ctx|长度)\s*(?:=|:|是|为|of|设为|设置为|开到|要|{lx.CHANGE_TO})?\s*(?:约|大概)?\s*{_K}"
    ),
    _C(rf"(?<![\d.]){_K}\s*(?:的)?\s*(?:tokens?\s*)?(?:上下文|context|长度|序列|长文本|seq(?:uence)?)"),
    # a bare "32k" / "128K" is a length (money in k needs a currency sign; token amounts say tokens)
    _C(
        r"(?<![\d.$¥])(\d+(?:\.\d+)?\s*k)(?![a-z\d])(?!\s*(?:tokens?|元|块|rmb|usd|美元|刀|卡时|小时|hours?|gpu|张|卡|条|个|人|用户|样本|steps?|步|samples?|examples?|conversations?|instructions?|rows?|records?|pairs?|dialogues?|documents?|docs?))"
    ),
)
#: shortest length read as a sequence or context ("上下文 64 并发" is not a 64-token context)
MIN_LENGTH = 128
_MICRO = _C(
    r"(?:micro[_\s-]*batch(?:[_\s-]*size)?|mbs|micro[_\s-]*bs|per[_\s-]device[_\s-](?:train[_\s-])?batch[_\s-]size)\s*(?:=|:|是|为|of)?\s*(\d+)"
)
_BATCH = (
    _C(
        rf"(?:global[_\s-]*batch(?:[_\s-]*size)?|gbs|batch[_\s-]*size|batch|bs|批大小|批量大小|批次大小|批量|批次)\s*(?:=|:|是|为|of|is|was|设为|开到|{lx.CHANGE_TO})?\s*(\d+)"
    ),
    _C(r"(?<![\d.])(\d+)\s*(?:的)?\s*(?:batch|bs)(?![a-z])"),
)
_CONCURRENCY = (
    _C(
        rf"(?:并发(?:数|量)?(?:峰值|高峰)?|concurrency(?: of)?|同时在线|同时)\s*(?:估计|预计|预估)?\s*(?:=|:|是|为|要|达到|大概|约|有|支持|超过|高于|大于|{lx.CHANGE_TO})?\s*({lx.NUM})\s*(?:个|路|人|用户|请求)?"
    ),
    _C(
        rf"(?<![\d.])({lx.NUM})\s*(?:个|路)?\s*(?:人|用户|请求)?\s*(?:并发|concurrent|simultaneous|人同时|个?用户同时|同时在线|路并发)"
    ),
    _C(r"(?<![\d.])(\d+)\s*(?:users|requests)\s*(?:at once|at the same time|in parallel|simultaneously)"),
    # requests in flight need a word of simultaneity: "for 64 concurrent users", "100 sessions"; the people who
    # use a model ("serve it to about 12 people", "给 300 人用", "300 人使用") are its users, read as daily users
    # (request/figures.py) and turned into requests in flight by plan_serving, with the reading said
    _C(
        rf"(?:\bfor|serve|serving|support|supports|handle|\bto)\s+(?:about\s+|around\s+|roughly\s+|approximately\s+|up to\s+|~\s*)?({lx.NUM})\s+(?:(?:concurrent|simultaneous)\s+(?:users|people|persons|customers|sessions|colleagues|employees)|sessions)"
    ),
    _C(rf"(?<![\d.])({lx.NUM})\s*(?:个|名|位)?\s*(?:人|用户|员工)\s*(?:同时\s*(?:用|使用|在线|访问)|在线)"),
    _C(rf"并行\s*(?:有|来)?\s*({lx.NUM})\s*(?:个|路)?\s*(?:人|用户)?\s*(?:的)?\s*请求"),  # "并行有100个人请求"
)

#: the people who use a model, said as a count ("给 300 人用", "300 人使用", "serve it to about 12 people"): daily
#: users, not requests in flight; found here only to tell the intent classifier that traffic was given
_PEOPLE = (
    _C(
        rf"(?:\bfor|serve|serving|support|supports|handle|\bto|\bwith|\bhave)\s+(?:about\s+|around\s+|roughly\s+|approximately\s+|up to\s+|~\s*)?({lx.NUM})\s+(?:active\s+)?(?:users|people|persons|customers|colleagues|employees)"
    ),
    _C(rf"(?:给|供|让|支持|服务)\s*({lx.NUM})\s*(?:个|名|位)?\s*(?:人|用户|客户|员工|同学)"),
    _C(rf"(?<![\d.])({lx.NUM})\s*(?:个|名|位)?\s*(?:人|用户|员工)\s*(?:用|使用|访问)"),
)


def counts(w: Work) -> None:
    if not any(rx.search(w.t) for rx in (_NODES_EACH, _NODES_AND_CARDS, _NODES_THEN_CARDS, _PLATFORM_NODES)):
        board_servers(w)  # no GPUs per server said: before a card count takes "4台H100" for four GPUs
    for m in _NODES_EACH.finditer(w.t):  # "4 nodes that each have 8 A40", "3 台服务器，每台 8 张 A800"
        nodes, cards = to_number(m.group(1)), to_number(m.group(2))
        if nodes and cards and "n_gpus" not in w.slots:
            w.slots.setdefault("n_nodes", int(nodes))
            w.note("n_gpus", *m.span())
            w.slots["n_gpus"] = int(nodes * cards)
            w.t = w.t[: m.start()] + "".join(c if c == GPU_MARK else USED_MARK for c in m.group(0)) + w.t[m.end() :]
    for m in _NODES_AND_CARDS.finditer(w.t):
        nodes, cards = to_number(m.group(1)), to_number(m.group(2))
        if nodes is None or cards is None:
            continue
        explicit_each = re.search(r"每台|每机|每个节点|each|of|x|×|\*", m.group(0))
        # "两台8卡" = 2 x 8; "2机16卡" = 16 in all: a count above one server's 8 that the nodes divide is a total
        total = cards if (not explicit_each and cards > 8 and nodes and cards % nodes == 0) else nodes * cards
        w.slots.setdefault("n_nodes", int(nodes))
        w.put("n_gpus", int(total), m)
    for m in _NODES_THEN_CARDS.finditer(w.t):
        nodes = to_number(m.group(1))
        if nodes is None:
            continue
        w.slots.setdefault("n_nodes", int(nodes))
        w.put("n_gpus", int(nodes) * int(m.group(2)), m, 0, mark=GPU_MARK)
    for m in _PLATFORM_NODES.finditer(w.t):
        w.slots.setdefault("n_nodes", int(m.group(1)))
        w.put("n_gpus", int(m.group(1)) * int(m.group(2)), m, 0, mark=GPU_MARK)
    for m in _GRID.finditer(w.t):
        w.slots.setdefault("n_nodes", int(m.group(1)))
        w.put("n_gpus", int(m.group(1)) * int(m.group(2)), m, 0, mark=GPU_MARK)
    said: list[tuple[int, int]] = []
    for rx in _CARDS:
        for m in rx.finditer(w.t):
            line = w.t[w.t.rfind("\n", 0, m.start()) + 1 : (w.t.find("\n", m.end()) + 1 or len(w.t) + 1) - 1]
            if line.count("|") >= 2:
                continue  # a row of a pasted table (nvidia-smi): its first column is the GPU's index
            if _CAPACITY_BEFORE.search(w.t, max(0, m.start() - 16), m.start()):
                continue  # "最大支持4张GPU": the board's slots, not the cards the user has
            text = m.group(1)
            sign = -1 if text.startswith("-") else 1
            rng = num_range(text.lstrip("-"))
            if rng is None:
                continue
            value = sign * round(rng[1])
            if value == 0 and (_INDEX_AFTER.match(w.t[m.end() :]) or _OTHER_COUNT.search(w.src)):
                continue  # "0卡的显存占用是2g多", "A800*8 … 0卡突然飙升": which card, not how many
            if rng[0] != rng[1]:
                w.slots["ranges"].setdefault("n_gpus", [rng[0], rng[1]])
            if value < 1:
                w.slots["invalid"].append(w.span(m.start(1), m.end()).replace(GPU_MARK, ""))
            w.note("n_gpus", *m.span())
            w.slots.setdefault("n_gpus", value)
            said.append((m.start(), value))
            # keep the GPU marker so "8×H800 and 4×A100" still sees the second GPU
            w.t = (
                w.t[: m.start()]
                + "".join(c if c == GPU_MARK else USED_MARK for c in w.t[m.start() : m.end()])
                + w.t[m.end() :]
            )
    if own := own_count(w, sorted(said)):
        w.slots["n_gpus"] = own  # "官方说 2 张 80G 可以…，我这里 4 张 40G": the asker's cards, not the reference's
    if "n_gpus" not in w.slots:
        launch_counts(w)
    if "n_gpus" not in w.slots and (m := _AN.search(w.t)):
        w.put("n_gpus", 1, m, mark=GPU_MARK)
    if "n_gpus" not in w.slots and (m := _OF_THOSE.search(w.t)):
        value = to_number(m.group(1))
        if value is not None:
            w.put("n_gpus", int(value), m)
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
    gpus_of_servers(w)  # "4台H100", "2 nodes of H100": the GPUs the servers hold


def grids(w: Work) -> None:
    """ "2*8*80G": nodes × GPUs per node × each card's memory, read before the memory figure is taken for a claim."""
    for m in _GRID_MEMORY.finditer(w.t):
        w.slots.setdefault("n_nodes", int(m.group(1)))
        w.put("n_gpus", int(m.group(1)) * int(m.group(2)), m)


def durations(w: Work) -> None:
    if m := _HALF_TIME.search(w.t):
        w.put("hours_per_day", 12.0, m)
    for i, rx in enumerate(_HOURS_PER_DAY):
        for m in rx.finditer(w.t):
            if i == 0:
                w.put("hours_per_day", 24.0, m)
            else:
                set_number(w, "hours_per_day", m.group(1), m, 0)
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
            if _RATE_OF_USE.match(w.src, m.end()) and to_number(num) == 1:
                continue  # "一个月大概 200 卡时": the period of a rate of use, not how many months
            rng = (0.5, 0.5) if num in ("半", "half a") else num_range(num)
            if rng is None:
                continue
            per = 12 if unit.startswith(("年", "y")) else 1
            extra = 6 if m.lastindex and m.lastindex >= 3 and m.group(3) else 0
            lo, hi = rng[0] * per + extra, rng[1] * per + extra
            if lo != hi:
                w.slots["ranges"].setdefault("months", [lo, hi])
            w.put("months", hi, m)
    if "months" not in w.slots and (m := _MONTHS_WORD.search(w.t)):
        w.put("months", 1.0 if "month" in (m.group(1) or m.group(2) or "") else 12.0, m)


_GPU_HOURS = _C(
    rf"(?<![\d.])({lx.NUM})\s*(?:个)?\s*(?:{G}\s*)?(?:卡时|卡·时|卡小时|gpu[- ]?hours?|gpu[- ]?hrs?)(?![a-z])"
)
_HOURS = _C(rf"(?<![\d.])({lx.NUM})\s*(?:个)?\s*(?:小时|钟头|hours?|hrs?)(?![a-z])")


def gpu_hours(w: Work) -> None:
    """ "5000 卡时", "5000 H800 GPU-hours" (the GPU name stays a GPU: only the number is masked)."""
    for m in _GPU_HOURS.finditer(w.t):
        rng = num_range(m.group(1))
        if rng is None:
            continue
        if rng[0] != rng[1]:
            w.slots["ranges"].setdefault("gpu_hours", [rng[0], rng[1]])
        w.slots.setdefault("gpu_hours", rng[1])
        w.note("gpu_hours", *m.span())
        w.t = (
            w.t[: m.start()]
            + "".join(c if c == GPU_MARK else USED_MARK for c in w.t[m.start() : m.end()])
            + w.t[m.end() :]
        )


#: a period the cards are used for, in days or weeks, after a verb of use ("租两周", "训 10 天", "for two weeks");
#: "两周内" / "within 2 weeks" is a deadline (`durations`, which runs first and masks it)
_PERIOD = (
    _C(
        rf"(?<!每周)(?<!每月)(?<!一周)(?<!星期)(?:租|训|跑|用|训练|使用|占用|包)\s*(?:了|上)?\s*(?:约|大概|大约)?\s*"
        rf"(({lx.NUM}|{lx.EN_NUM})\s*(?:个)?\s*(天|周|星期|礼拜))(?!\s*(?:之内|以内|内|左右内))"
    ),
    _C(rf"(?<![a-z])for\s+(?:about\s+|around\s+)?(({lx.NUM}|{lx.EN_NUM}|a|an)\s*(days?|weeks?))(?![a-z])"),
)
_PERIOD_DAYS = {"天": 1, "周": 7, "星期": 7, "礼拜": 7, "day": 1, "week": 7}


def hours(w: Work) -> None:
    """Wall-clock time the cards run: "跑 1000 小时", or a period of use in days or weeks ("租 16 张训两周")."""
    for m in _HOURS.finditer(w.t):
        set_number(w, "hours", m.group(1), m, 0)
    if "hours" in w.slots:
        return
    for rx in _PERIOD:
        if m := rx.search(w.t):
            num = m.group(2)
            value = 1.0 if num in ("a", "an") else to_number(num)
            days = _PERIOD_DAYS.get(m.group(3).rstrip("s"))
            if value and days:
                w.put("hours", value * days * 24, m, 1)
                return


def _k_value(text: str) -> int:
    text = text.replace(" ", "")
    scale = {"k": 1024, "m": 1024 * 1024}.get(text[-1:])  # "32k", "1M" (a 1M-token context: 2^20, as 1k is 2^10)
    return int(float(text[:-1]) * scale) if scale else int(float(text))


def lengths(w: Work) -> None:
    infer = bool(re.search(r"推理|部署|serving|inference|上下文|context|并发|vllm", w.src))
    train = bool(re.search(r"训练|微调|train|fine-?tun|lora|全参|pretrain|seq", w.src))
    slot = "context_len" if infer and not train else "seq_len"
    for rx in _CONCURRENCY:
        for m in rx.finditer(w.t):
            value = to_number(m.group(1))
            if value is not None:
                w.put("concurrency", int(value), m)
    for rx in _SEQ:
        for m in rx.finditer(w.t):
            value = _k_value(m.group(1))
            if value >= MIN_LENGTH:
                w.put(slot, value, m)
    if m := _MICRO.search(w.t):
        w.put("micro_batch", int(m.group(1)), m)
    for rx in _BATCH:
        for m in rx.finditer(w.t):
            w.put(_batch_role(m.group(0), train and not infer, w), int(m.group(1)), m)
    w.people = any(rx.search(w.t) for rx in _PEOPLE)
    if "batch" not in w.slots and "concurrency" in w.slots:
        w.slots["batch"] = w.slots["concurrency"]


_GLOBAL = re.compile(r"global|gbs|total|全局|总")


def _batch_role(said: str, training: bool, w: Work) -> str:
    """ "batch 4" in a fine-tuning question is what trainers' batch-size flags mean, sequences per GPU per step."""
    if training and "micro_batch" not in w.slots and not _GLOBAL.search(said):
        return "micro_batch"
    return "batch"


_BARE_B = re.compile(r"\d+(?:\.\d+)?B")


def moe_sizes(w: Work) -> None:
    """ "400B total, 20B active, MoE" / "总参 400B、激活 20B 的 MoE": the two sizes are one MoE, "400B-A20B" (sized on a
    generic MoE shape: weights on the total, compute and decode bandwidth on the active), not two dense models."""
    active = catalog.parse_active_count(w.src)
    sizes = [m for m in w.slots["models"] if _BARE_B.fullmatch(m)]
    if active is None or len(sizes) < 2:
        return
    active_label = next((m for m in sizes if abs(float(m[:-1]) * 1e9 - active) < 1e6), None)
    total = max(sizes, key=lambda m: float(m[:-1]))
    if active_label is None or float(total[:-1]) * 1e9 <= active:
        return
    label = f"{total}-A{active_label}"
    models = w.slots["models"]
    models[models.index(total)] = label
    models.remove(active_label)
    for typed, value in w.slots["stand_ins"].items():
        if value == total:  # "GLM-5.2，总参 355B、激活 32B": the named model stands on that MoE
            w.slots["stand_ins"][typed] = label
