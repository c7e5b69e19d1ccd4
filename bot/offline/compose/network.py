"""The network between nodes, asked about by name ("2 台 8 卡 H800 要不要上 IB", "is 100G Ethernet enough for 4 nodes?"):
the cluster's training run timed on each fabric the question names (and on InfiniBand NDR as the reference when it
names one only), with the share of the step spent waiting on communication, and a verdict on the fabric. The run is
the question's model and tokens, else a stated example (the planner's default model, 1B tokens). Every figure is a
`training_time` output. Beside it, the other thing asked of a run's speed by name: FP8 against BF16
(`precision_speedup`)."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.toolargs import run_args, sharding_args
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, count, duration, method_label, pct
from bot.offline.understand.frames import ASK_DEFAULTS
from bot.offline.understand.parse import ParsedQuestion
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError
from tools.speed.comm import fabrics

#: the reference fabric a single named one is set against
REFERENCE = "ib-ndr"
#: the fabric's own words in a question: its id or an alias as a whole word, and the words people use for them
_WORDS = {
    "ib-ndr": r"infiniband|\bib\b",
    "roce": r"\broce",
    "ethernet-100g": r"100\s*g(?:b(?:e|it)?)?\b|以太网|ethernet",
}
#: within this share of the fastest fabric's time, a slower fabric is enough
ENOUGH = 0.10


def named(text: str) -> list[str]:
    """The fabrics a question names, as `network.yaml` ids, in the order written."""
    low, found = (text or "").lower(), []
    for f in fabrics():
        words = [re.escape(w) for w in (f.id, *f.aliases) if len(w) >= 3] + ([_WORDS[f.id]] if f.id in _WORDS else [])
        if m := re.search(rf"(?<![\w-])(?:{'|'.join(words)})(?![\w-])" if words else r"(?!)", low):
            found.append((m.start(), f.id))
    return list(dict.fromkeys(fid for _, fid in sorted(found)))


#: the link between the cards, asked about in words ("没有 NVLink", "PCIe 够吗", "通信会不会成瓶颈")
_LINK = re.compile(r"nvlink|pcie|卡间|通信|互联|interconnect|communication", re.IGNORECASE)
#: exposed communication above this share of a step makes the link the bottleneck (a rule of thumb, not shown)
BOTTLENECK = 0.15


def applies(text: str, p: ParsedQuestion) -> bool:
    """A multi-node cluster (more than one node's 8 cards, or nodes said) and a fabric named; or several cards and
    their link asked about."""
    if p.workload == "infer":  # serving: the link is timed by a training step here, which is not the job asked
        return False
    nodes = (p.n_gpus or 0) > 8 or (p.n_nodes or 0) >= 2
    return (bool(named(text)) and nodes) or ((p.n_gpus or 0) > 1 and bool(_LINK.search(text or "")))


def network(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    ids = named(p.text) if (p.n_gpus or 0) > 8 or (p.n_nodes or 0) >= 2 else []
    if len(ids) == 1 and ids[0] != REFERENCE:
        ids.append(REFERENCE)
    model = s.get("model") or ASK_DEFAULTS["model"]
    if not s.get("model"):
        out.add(say("network_example", lang, model=localize_name(get_model(model).name, lang)))
    base = {"model": model, "gpu": s["gpu"], "n_gpus": s["n_gpus"], "tokens": int(s.get("tokens") or 1_000_000_000)}
    if s.get("method") in ("full", "lora", "qlora", "freeze"):
        base["method"] = s["method"]
    base.update(sharding_args(s))
    if not ids:  # the cards' own link: what it is, and the share of a step it leaves the run waiting
        g, t = run("gpu_specs", {"gpu": s["gpu"]}), run("training_time", base)
        kind = g["interconnect_kind_zh"] if lang == "zh" else g["interconnect_kind"]
        line = "link_bottleneck" if t["comm_share"] > BOTTLENECK else "link_fine"
        out.add(say(line, lang, n=t["n_gpus"], gpu=t["gpu"], kind=kind, comm=pct(t["comm_share"]),
                    time=duration(t["hours"], lang)))  # fmt: skip
        return
    runs = [(fid, run("training_time", {**base, "nodes_fabric": fid})) for fid in ids]
    fastest = min(t["hours"] for _, t in runs)
    names = {f.id: f.name for f in fabrics()}
    lines = [
        say("fabric_time_line", lang, fabric=names[fid], time=duration(t["hours"], lang), comm=pct(t["comm_share"]))
        for fid, t in runs
    ]
    enough = [names[fid] for fid, t in runs if t["hours"] <= fastest * (1 + ENOUGH)]
    slow = [(names[fid], t) for fid, t in runs if t["hours"] > fastest * (1 + ENOUGH)]
    first = runs[0][1]
    head = say("network_enough", lang, fabrics=" / ".join(enough), n=first["n_gpus"], gpu=first["gpu"])
    if slow:
        name, t = slow[0]
        head += " " + say("network_slow", lang, fabric=name, comm=pct(t["comm_share"]))
    out.add(head)
    out.add("\n".join(lines))


def precision_speedup(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """FP8 vs BF16 training time (same model, GPUs and tokens), through `precision_speedup`."""
    lang = out.lang
    method = s.get("method") or "full"
    try:
        r = run("precision_speedup", run_args(s, method))
    except AdvisorError:
        out.add(say("speedup_no_fp8", lang, gpu=get_gpu(s["gpu"]).name))
        return
    out.add(
        say(
            "speedup_verdict",
            lang,
            ratio=f"{r['speedup']:.2f}",
            n=r["n_gpus"],
            gpu=r["gpu"],
            method_label=method_label(method, lang),
            model=r["model"],
            tokens=count(r["tokens"]),
            bf16=duration(r["baseline"]["hours"], lang),
            fp8=duration(r["faster"]["hours"], lang),
        )
    )
    if r["peak_ratio"]:
        out.add(say("speedup_note", lang, peak=f"{r['peak_ratio']:g}"))
    out.add(assumptions_block(r["assumptions"], lang, ("model_architecture", "mfu", "seq_len")))
