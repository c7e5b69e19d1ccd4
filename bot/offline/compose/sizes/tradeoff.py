"""Cards traded against days, when a question asks for both ("花了多少GPU和时间", "how many GPUs and how long",
"the number of A100s, number of hours"): a training run's work is fixed, so one count and its time answer only
half of it. The run the answer timed is timed again on doubling counts (from the fewest that hold it in memory),
and each count's days and GPU-hours are shown, so the asker reads the count for the days they can wait.

Every figure is `training_time`'s, on the run's own model, card, tokens, method and sequence; the GPU-hours
growing with the count are the communication `training_time` models, not a figure of this module.
"""

from __future__ import annotations

from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, duration
from bot.offline.understand.request.model import Request
from tools.errors import AdvisorError

#: rows of the table: the first count, then doublings
ROWS = 5
#: the largest count tried (the calculator's range)
MOST = 16384
_RUN = ("model", "gpu", "method")
#: GPU-hours within this share of the first row's: the time scales as one over the count
LINEAR = 1.1


def _timed(run: ToolRun, since: int) -> Any | None:
    """The training run this answer timed: the last timing of its first model that is no survey's row (the time
    block's own, after a method table's), None when it timed none, or several models (a per-model answer already
    has a time for each, a table for each would bury it)."""
    timed = [c for c in run.calls[since:] if c.tool == "training_time" and c.output and c.id not in run.surveyed]
    if not timed or len({c.input.get("model") for c in timed}) != 1:
        return None
    return timed[-1]


def _fewest(run: ToolRun, args: dict[str, Any]) -> int:
    """The fewest cards a memory fit of this answer found for the same model, card and method (0 when none)."""
    found = [
        int(c.output.get("min_gpus") or 0)
        for c in run.calls
        if c.tool == "fit_training" and c.output and all(c.input.get(k, "full") == args.get(k, "full") for k in _RUN)
    ]
    return max(found, default=0)


def counts(first: int) -> list[int]:
    """The counts of the table: `first`, then doubling, at most `ROWS`, none above `MOST`."""
    return [n for n in (first * 2**i for i in range(ROWS)) if n <= MOST]


def add(request: Request, run: ToolRun, out: Out, since: int) -> None:
    """The table of counts and days, after the answer, when the asks hold both a count and a time."""
    if not {"min_count", "time"} <= set(request.asks):
        return
    base = _timed(run, since)
    if base is None:
        return
    args = dict(base.input)
    first = max(int(base.output["n_gpus"]), _fewest(run, args), 1)
    rows, timings = [], []
    for n in counts(first):
        try:
            with run.survey():  # rows of options, not the run the answer sized
                t = base.output if n == base.output["n_gpus"] else run("training_time", {**args, "n_gpus": n})
        except AdvisorError:
            break
        timings.append(t)
        rows.append(
            say(
                "tradeoff_row",
                out.lang,
                n=n,
                time=duration(t["hours"], out.lang),
                low=duration(t["hours_low"], out.lang),
                high=duration(t["hours_high"], out.lang),
                gpu_hours=f"{t['gpu_hours']:,.0f}",
            )
        )
    if len(rows) < 2:
        return
    head = say("tradeoff_head", out.lang, gpu=base.output["gpu"], model=base.output["model"])
    out.add("\n".join([head, "", say("tradeoff_table", out.lang), *rows]))
    one, most = timings[0], timings[-1]
    out.add(
        say(
            "tradeoff_note" if most["gpu_hours"] <= LINEAR * one["gpu_hours"] else "tradeoff_note_comm",
            out.lang,
            first=one["n_gpus"],
            last=most["n_gpus"],
            first_hours=f"{one['gpu_hours']:,.0f}",
            last_hours=f"{most['gpu_hours']:,.0f}",
        )
    )
