"""A job that needs more cards than one server holds, answered as a fit ("how many A800 for DeepSeek-V3", "full
training of 70B"): the servers it takes, the network between them, power and racks, and the bill of materials —
`plan_cluster` on the count the fit calculator gave, so a buyer sees the machines and not only a card count.

Shown once per answer, for the largest such count (the first card when several need as many), only where the
answer made no system or capacity plan of its own (those already size nodes and fabric). Every figure is a tool
output."""

from __future__ import annotations

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, money_span, num
from tools.errors import AdvisorError

FIT_TOOLS = ("fit_inference", "fit_training")
#: answers that size servers themselves
PLANS = ("plan_system", "plan_serving", "plan_cluster")


def _largest(run: ToolRun) -> tuple[str, int] | None:
    best: tuple[str, int] | None = None
    for call in run.calls:
        if call.tool not in FIT_TOOLS or call.id in run.surveyed:
            continue  # a survey's row (a card class, a precision) is an option shown, not the job's own count
        o = call.output
        if not o.get("fits") and _fits_as_is(o):
            continue  # a smaller micro-batch or an offload fits the user's own cards: no servers to buy for it
        need = o.get("n_gpus") if o.get("fits") else o.get("min_gpus")
        if need and (best is None or need > best[1]):
            best = (call.input.get("gpu") or o.get("gpu"), int(need))
    return best


#: remedies that train the same thing on the same cards (no change of method, count or card)
_SAME_RUN = frozenset(
    {"micro_batch", "grad_checkpointing", "offload_optimizer", "offload_params", "adamw8bit", "zero3"}
)


def _fits_as_is(output: dict) -> bool:
    return any(
        s.get("change") in _SAME_RUN and s.get("n_gpus") == output.get("n_gpus")
        for s in output.get("suggestions") or []
    )


def across(run: ToolRun, out: Out) -> None:
    """Append the servers for the largest GPU count the answer's fits need, when one server cannot hold it."""
    if any(c.tool in PLANS for c in run.calls):
        return
    found = _largest(run)
    if not found or found[1] <= 8:
        return
    try:
        c = run("plan_cluster", {"gpu": found[0], "n_gpus": found[1]})
    except AdvisorError:
        return
    if c["nodes"] <= 1:
        return
    add_servers(c, out)


def buy_bill(gpu: str, n: int, run: ToolRun, out: Out, at: int) -> bool:
    """ "买 8 张 H20 多少钱": the cards at their purchase range × the count, then the machines that hold them (the
    rest of each server, the network between servers, power and racks), from `plan_cluster`; the cards' line goes
    first (at block `at`). False when the catalog cannot price it (the price sheet already says so)."""
    try:
        c = run("plan_cluster", {"gpu": gpu, "n_gpus": n})
    except AdvisorError:
        return False
    cards = next((b for b in c["bom"] if b["item"].startswith("GPU cards")), None)
    if cards is None or cards["low_cny"] is None or cards["high_cny"] is None:
        return False
    if cards["qty"] != c["n_gpus"]:  # fewer cards than a server holds: the bill is of the full server, said so
        add_servers(c, out, head="buy_servers_full_head")
        return True
    low, high = money_span(cards["low_cny"], cards["high_cny"], out.lang)
    out.blocks.insert(at, say("buy_cards", out.lang, n=c["n_gpus"], gpu=c["gpu"], low=low, high=high))
    add_servers(c, out, head="buy_servers_head")
    return True


def add_servers(c: dict, out: Out, head: str = "nodes_head") -> None:
    """The servers, network, power, racks and bill of a `plan_cluster` output, as one paragraph."""
    lang = out.lang
    name = (c["platform_name_zh"] if lang == "zh" else c["platform_name"]) or say("nodes_generic", lang)
    text = say(head, lang, n=c["n_gpus"], gpu=c["gpu"], nodes=c["nodes"], server=name, per=c["gpus_per_node"])
    net = c["network"]
    if c["nodes"] <= 1:
        pass  # one server: no network between servers to size
    elif net:
        tier = say("nodes_two_tier", lang) if net["tiers"] == 2 else ""
        text += say("nodes_fabric", lang, ports=net["ports"], gbps=num(net["gbps"]), kind=c["nic_kind"],
                    switches=net["switches"], tier=tier, port=c["switch_ports"])  # fmt: skip
    else:
        text += say("nodes_fabric_unsized", lang)
    if c["power_kw"]:
        rack_kw = next(a["value"] for a in c["assumptions"] if a["key"] == "rack_kw")
        text += say("nodes_power", lang, kw=num(c["power_kw"]), node_kw=num(c["node_kw"]), racks=c["racks"],
                    rack_kw=num(rack_kw))  # fmt: skip
    if c["total_low_cny"] is not None and c["total_high_cny"] is not None:
        low, high = money_span(c["total_low_cny"], c["total_high_cny"], lang)
        text += say("nodes_bom", lang, low=low, high=high)
    out.add(text)
