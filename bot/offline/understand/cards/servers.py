"""Whose cards a count is, and servers counted where the card comes only on boards of several GPUs:
"4台H100（80GB）" and "4 H100 machines" are four 8-GPU servers (H100 SXM, H20, MI300X and Ascend modules are not sold
one to a box), and "2 nodes of H100" with no card count holds 16. The answer says the GPUs it took per server
(`gpus_from_nodes`). A count said for a reference setup ("官方benchmark说 2 张…") gives way to the asker's own."""

from __future__ import annotations

from bot.offline.understand import lexicon as lx
from bot.offline.understand.lexicon import to_number
from bot.offline.understand.names import _C, GPU_MARK, USED_MARK
from bot.offline.understand.work import G, Work
from tools.catalog import lookup as catalog
from tools.catalog.servers import platforms

#: "4台H100（80GB）", "4 H100 (80GB) machines": servers of a card that is sold on 8-GPU boards only (SXM, OAM, modules)
_BOARD_NODES = _C(
    rf"(?<![\d.])({lx.NUM}|{lx.EN_NUM})\s*(?:台\s*{G}(?!\s*(?:[x×*]|卡|张|块))|{G}\s*(?:\([^()\n]{{1,16}}\)|（[^（）\n]{{1,16}}）)?"
    r"\s*(?:machines|nodes|servers|boxes)\b)"
)


def _per_node(gid: str) -> int | None:
    """The GPUs one server of this card holds where it comes only on boards (H100 SXM, H20, MI300X, 910B modules):
    the catalog's platform, else the 8 of an HGX/OAM board; None for a card sold one at a time (PCIe)."""
    form = (catalog.get_gpu(gid).form_factor or "").lower()
    if not form.startswith(("sxm", "oam", "module")):
        return None
    per = [p.gpus_per_node for p in platforms() if p.gpu == gid]
    return per[0] if per else 8


def _named_in(w: Work, start: int, end: int) -> str | None:
    """The catalog id of the card named between start and end (its run of GPU marks), if one is."""
    i = w.t.find(GPU_MARK, start, end)
    if i < 0:
        return None
    j = i
    while j < end and w.t[j] == GPU_MARK:
        j += 1
    try:
        return catalog.get_gpu(w.raw[i:j]).id
    except Exception:  # a name the catalog resolves only with its context: not counted here
        return None


def board_servers(w: Work) -> None:
    """ "4台H100", "4 H100 machines": servers of a board-only card, read as nodes before a card count takes the
    figure for GPUs; how many GPUs they hold is `gpus_of_servers`' (the question may say: "4台A800 … 4*8*A800")."""
    if "n_gpus" in w.slots:
        return
    for m in list(_BOARD_NODES.finditer(w.t)):
        nodes, gid = to_number(m.group(1)), _named_in(w, *m.span())
        if not (gid and _per_node(gid) and nodes and nodes == int(nodes)):
            continue
        if getattr(w, "board_gpu", None) is None:
            w.slots["n_nodes"], w.board_gpu = int(nodes), gid
        elif w.slots["n_nodes"] != nodes:
            continue  # other servers ("the official sample ran on 4 H20 machines" counts as the same four)
        w.note("n_gpus", *m.span())  # (again where the same servers are said twice: a translation below)
        w.t = w.t[: m.start()] + "".join(c if c == GPU_MARK else USED_MARK for c in m.group(0)) + w.t[m.end() :]


def gpus_of_servers(w: Work) -> None:
    """Servers and no card count: "4台H100" or "2 nodes of H100" (one card named) hold 8 board GPUs each, said in
    the answer (`gpus_from_nodes`)."""
    if "n_gpus" in w.slots or (w.slots.get("n_nodes") or 0) < 1:
        return
    gid = getattr(w, "board_gpu", None)
    if gid is None:
        ids = set(w.slots.get("gpus") or [])
        if len(ids) != 1 or w.slots["n_nodes"] < 2:
            return
        gid = next(iter(ids))
    if per := _per_node(gid):
        w.slots["n_gpus"] = w.slots["n_nodes"] * per
        w.slots["gpus_from_nodes"] = {"nodes": w.slots["n_nodes"], "per_node": per, "gpu": gid}


#: a setup someone else ran, said before the asker's own: "官方benchmark说，2张a100的80G…", "the README runs it on 8"
_REFERENCE = _C(
    r"(?:官方|benchmark|基准|文档|readme|论文|paper|official|示例|样例|例子|教程|tutorial|report|报告|model card)"
    r"[^。.!?！？\n]{0,30}$"
)
#: the asker's own setup: "我这里4张", "我们用 8 卡", "on my 4 GPUs", "we have 2"
_OWN = _C(
    r"(?:我这里|我这边|我们这里|我这|我的|我用|我们用|我们的|我有|本地|自己的|\bmy\b|\bour\b|\bi have\b|\bwe have\b|"
    r"\bi use\b|\bi(?:'m| am) using\b)[^。.!?！？\n]{0,12}$"
)


def own_count(w: Work, said: list[tuple[int, int]]) -> int | None:
    """The asker's card count where the first count said is a reference's (a benchmark, the docs, the official
    example) and a later one is introduced as the asker's own."""
    if len(said) < 2 or not _REFERENCE.search(w.src[max(0, said[0][0] - 40) : said[0][0]]):
        return None
    return next((n for at, n in said[1:] if _OWN.search(w.src[max(0, at - 20) : at])), None)
