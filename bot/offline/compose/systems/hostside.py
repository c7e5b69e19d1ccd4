"""The host side of the machine a buyer orders, when the question asks it beside the GPUs ("hardware requirement
(GPU and CPU) for 70B SFT", "What GPU, ram, and CPU do you recommend", "显卡，CPU和内存怎么选", "How much storage
space"): for the setup the answer sized (the largest GPU count its fits need, on their card), each server's CPU
cores, system RAM and disk (the cards a recommendation picked first), from `plan_cluster`'s `host` (tools/plan/host.py: sizing rules with their sources, the
host RAM a fit computed where larger, the checkpoint's size). With no setup sized (the answer asks for the model),
the rules per GPU, so the CPU and RAM part is answered anyway. Every figure is a tool output."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, gb, num
from bot.offline.understand.frames import DEFAULT_GPU
from bot.offline.understand.request.forms import HOST_SIDE, SERVING_RUN, TRAINING_RUN
from tools.errors import AdvisorError

FIT_TOOLS = ("fit_training", "fit_inference")
#: a language model named in words ("LLM", "大模型")
_LLM = re.compile(r"\bllms?\b|大模型|language model", re.I)


def _pick(run: ToolRun) -> dict[str, Any] | None:
    """The cards a recommendation picked (its best value, else its first option): the machine the answer proposes."""
    recs = [c for c in run.calls if c.tool == "recommend_gpus" and c.id not in run.surveyed]
    if len(recs) != 1:  # none, or one per model: the largest fit below is the machine
        return None
    rec = recs[0]
    o = rec.output
    best = o.get("best_value") or next(iter(o.get("options") or []), None)
    if not best:
        return None
    work = "infer" if o.get("workload") == "infer" else "train"
    args = {"gpu": best["gpu"], "n_gpus": int(best["n_gpus"]), "model": rec.input["model"], "host_workload": work}
    return args | ({"method": o["method"]} if work == "train" and o.get("method") else {})


def _setup(run: ToolRun) -> Any | None:
    """The fit call whose GPU count is the largest the answer sized (a survey's rows are options, not the job)."""
    best, need = None, 0
    for call in run.calls:
        if call.tool not in FIT_TOOLS or call.id in run.surveyed:
            continue
        o = call.output
        n = o.get("n_gpus") if o.get("fits") else o.get("min_gpus")
        if n and n > need:
            best, need = call, int(n)
    return best


def _need_gb(call: Any) -> float | None:
    """The host RAM per server the fit itself computed (an offload's states, a serving loader's page cache)."""
    o = call.output
    if call.tool == "fit_training":
        return o.get("host_ram_gb") or None
    return (o.get("host_ram") or {}).get("per_node_gb") or None


def _args(call: Any) -> dict[str, Any]:
    o = call.output
    n = o.get("n_gpus") if o.get("fits") else o.get("min_gpus")
    args: dict[str, Any] = {"gpu": call.input.get("gpu") or o["gpu"], "n_gpus": int(n), "model": call.input["model"]}
    if call.tool == "fit_training":
        args |= {"host_workload": "train", "method": call.input.get("method", "full")}
    else:
        precision = next((a["value"] for a in o.get("assumptions", []) if a["key"] == "precision"), None)
        args |= {"host_workload": "infer", **({"precision": precision} if precision else {})}
    if (need := _need_gb(call)) is not None:
        args["host_need_gb"] = need
    return args


def add(text: str, run: ToolRun, out: Out) -> bool:
    """Append each server's CPU, RAM and disk for the setup sized, when the question asks for the host side."""
    if not HOST_SIDE.search(text):
        return False
    args = _pick(run)
    if args is None and (call := _setup(run)) is not None:
        args = _args(call)
    if args is None:  # the rules are for AI work: a question about other code (a simulation) is not given them
        llm = TRAINING_RUN.search(text) or SERVING_RUN.search(text) or _LLM.search(text)
        return rules(run, out) if llm else False
    try:
        c = run("plan_cluster", args)
    except AdvisorError:
        return False
    h, lang = c["host"], out.lang
    work = h["workload"]
    ram = (
        gb(h["ram_low_gb"]) if h["ram_low_gb"] == h["ram_high_gb"] else f"{gb(h['ram_low_gb'])}–{gb(h['ram_high_gb'])}"
    )
    low, high = h["ram_multiple_low"], h["ram_multiple_high"]
    mult = num(low) if low == high else f"{num(low)}–{num(high)}"
    need = say("host_side_need", lang, need=gb(h["ram_need_gb"])) if h["ram_need_gb"] else ""
    disk = ""
    if h["checkpoint_gb"]:
        disk = say(f"host_side_disk_{work}", lang, ckpt=gb(h["checkpoint_gb"]), note=h["checkpoint_note"])
    out.add(say("host_side", lang, per=h["gpus_per_node"], gpu=localize_name(c["gpu"], lang),
                work=say(f"host_side_work_{work}", lang), cores_low=h["cores_low"], cores_high=h["cores_high"],
                cpg_low=num(h["cores_per_gpu_low"]), cpg_high=num(h["cores_per_gpu_high"]),
                why=say(f"host_side_why_{work}", lang), ram=ram, vram=gb(h["vram_gb"]), mult=mult, need=need,
                disk=disk, floor=say("host_side_floor", lang, floor=gb(h["ram_floor_gb"])) if h["ram_floor_gb"] else "", ref=h["reference_zh" if lang == "zh" else "reference"]))  # fmt: skip
    return True


def rules(run: ToolRun, out: Out) -> bool:
    """The rules per GPU, for training and for serving, when no setup was sized to apply them to."""
    try:
        t = run("plan_cluster", {"gpu": DEFAULT_GPU, "n_gpus": 1, "host_workload": "train"})["host"]
        i = run("plan_cluster", {"gpu": DEFAULT_GPU, "n_gpus": 1, "host_workload": "infer"})["host"]
    except AdvisorError:
        return False
    out.add(say("host_side_rules", out.lang, t_low=num(t["cores_per_gpu_low"]), t_high=num(t["cores_per_gpu_high"]),
                t_mult_low=num(t["ram_multiple_low"]), t_mult_high=num(t["ram_multiple_high"]),
                i_low=num(i["cores_per_gpu_low"]), i_high=num(i["cores_per_gpu_high"]),
                i_mult=num(i["ram_multiple_low"]), floor=gb(t["ram_floor_gb"]), ref=t["reference_zh" if out.lang == "zh" else "reference"]))  # fmt: skip
    return True
