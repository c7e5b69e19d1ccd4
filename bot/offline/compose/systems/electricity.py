"""The electricity bill asked beside a serving or system plan ("…用 H20 要几台？一年电费多少？"): the plan sizes the
servers and their kW; the bill is `power_draw` on the machines the plan chose (the cheapest priced option that meets
the ask, as the plan shows it), at the hours, tariff and PUE the user gave or the TCO defaults, each said."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose import money
from bot.offline.compose.systems.capacity import cheapest_meeting
from bot.offline.say.render import Out
from bot.offline.say.wording import error_text
from bot.offline.understand.question import ParsedQuestion
from tools.errors import AdvisorError

#: money for the power, not only the kW: the plan's own lines give the kW and racks
_BILL = re.compile(
    r"电费|电价|用电成本|电力成本|耗电成本|electricity (?:cost|bill|price)|power (?:bill|costs?)|energy (?:cost|bill)|"
    r"cost of (?:power|electricity)",
    re.I,
)


def add(text: str, slots: dict[str, Any], p: ParsedQuestion, cued: list[str], run: ToolRun, out: Out) -> None:
    if "power" not in cued or not _BILL.search(text) or any(c.tool == "power_draw" for c in run.calls):
        return
    chosen = _chosen(run)
    if chosen is None:
        return
    args = {**slots, "gpu": chosen["servers"][0]["gpu"], "n_gpus": chosen["n_gpus"]}
    try:
        money.power(args, p, run, out)
    except AdvisorError as err:
        out.add(error_text(err, args, out.lang))


def _chosen(run: ToolRun) -> dict[str, Any] | None:
    plan = next((c.output for c in reversed(run.calls) if c.tool == "plan_system"), None)
    return cheapest_meeting(plan) if plan else None
