"""Host RAM exhausted (exit code -9, "Killed", CPU OOM): the host RAM the setup needs per node, by term
(tools/memory/host_memory.py), against the RAM the user has, and the one change that closes the gap.

Loading is read the way that reproduces the evidence: under ZeRO-3 the Hugging Face integration builds the model
under zero.Init (the node holds its share of one copy); when that would fit the RAM the user has and one copy per
rank would not, the ranks each loaded the whole checkpoint, and building it under zero.Init is the fix."""

from __future__ import annotations

from dataclasses import replace

from tools.diagnose.context import ENGINES, Candidate, Setup, count, flag_values
from tools.diagnose.facts import say, value, words
from tools.memory.host_memory import HostRam, HostRun, host_ram

#: processes per node a launcher starts when the GPUs are more than one node's (one per GPU)
GPUS_PER_NODE = 8
#: bytes per parameter a checkpoint is loaded in, by the precision the setup states (None: transformers' fp32 default)
LOAD_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 2.0, "int4": 2.0, "nf4": 2.0}
#: frameworks that load in the compute dtype (bf16) whatever the config says: the engines, LLaMA-Factory
_DTYPE_SET = ENGINES | {"llamafactory"}
GB = 1e9
#: the terms that make up each phase (host_memory.HostRam.phases)
PHASE_TERMS = {"load": ("load", "reference"), "train": ("offload_optimizer", "offload_params", "offload_buffers"),
               "build": ("engine_build",)}  # fmt: skip


def gb(n_bytes: float) -> str:
    return f"{n_bytes / GB:,.0f}" if n_bytes >= 10 * GB else f"{n_bytes / GB:.1f}"


def host_causes(s: Setup) -> list[Candidate]:
    """The host-RAM cause of a host OOM, with its figure when the model is known."""
    i = s.inp
    if i.error_kind != "host_oom" and not (i.engine_build and i.error_kind is None):
        return []  # a host OOM, or an engine build (whose host RAM is the question) with no other error
    if s.params is None:  # nothing to compute with: what the log names, and the fix for what is in evidence
        fix = ("preprocessing_num_workers", 4) if "preprocessing_num_workers" in flag_values(i) else (
            "low_cpu_mem_usage", True)  # fmt: skip
        return [Candidate("host_ram", say("named", what="host RAM"), *fix, named=True, prior=0.8)]
    run = as_run(s)
    need = host_ram(run)
    have = _have(s)
    if have is not None and need.total <= have and not run.engine_build_bytes:
        per_rank = replace(run, zero_init=False)
        if run.zero_init and host_ram(per_rank).total > have:  # one copy per rank is what reproduces the OOM
            run, need = per_rank, host_ram(per_rank)
    flag, val, after, extra = _closing_fix(s, run, need, have)
    arith = _arith(run, need, have, i)
    out = [Candidate("host_ram", arith, flag, val, named=True, prior=0.85, figure=need.total,
                     after=lambda: after, extra=extra)]  # fmt: skip
    if need.peak_phase == "load" and flag != "low_cpu_mem_usage" and not run.engine_build_bytes:
        short = say("host_load_peak", need=gb(need.total))
        out.append(Candidate("load_time_peak", short, "low_cpu_mem_usage", True, prior=0.35))
    return out


def as_run(s: Setup) -> HostRun:
    """The setup as host RAM sees it: ranks per node, nodes, what is offloaded, the load dtype, zero.Init."""
    i = s.inp
    params = float(s.params.total)
    build = i.engine_build
    if build:  # one process converts and builds, in 16-bit unless fp32 is asked for
        return HostRun(params=params, load_bytes=0.0, engine_build_bytes=4.0 if i.precision == "fp32" else 2.0)
    train = s.workload == "train"
    ranks = min(i.n_gpus, GPUS_PER_NODE) if train else 1
    nodes = -(-i.n_gpus // GPUS_PER_NODE) if train else 1
    if i.precision in LOAD_BYTES:
        load = LOAD_BYTES[i.precision]
    else:
        load = 2.0 if s.framework in _DTYPE_SET else 4.0
    trainable = None
    if train and i.method in ("lora", "qlora"):
        from tools.diagnose.train import _trainable

        trainable = _trainable(s)
    refs = int(value("trl", "reference_models").get(i.preference, 0)) if train and i.preference else 0
    if refs and i.method in ("lora", "qlora"):
        refs = 0  # the base with the adapter off is the reference (trl docs)
    return HostRun(
        params=params, trainable=trainable, ranks_per_node=ranks, nodes=nodes,
        offload=i.offload if train else "none", load_bytes=load,
        zero_init=train and i.zero_stage == 3, reference_models=refs,
    )  # fmt: skip


def _have(s: Setup) -> float | None:
    i = s.inp
    if i.host_ram_gb is None:
        return None
    return (i.host_ram_gb + (i.swap_gb or 0)) * GB


def _levers(run: HostRun, peak: str, zero3: bool):
    """The changes that lower the peak phase, cheapest first: (flag, value, changed run, cost key)."""
    if peak == "build":
        return
    if peak == "load":
        if run.load_bytes > 2:
            yield "torch_dtype", "bfloat16", replace(run, load_bytes=2.0), "host_dtype"
        if zero3 and not run.zero_init and run.ranks_per_node > 1:  # only ZeRO-3 partitions the model at load
            yield "deepspeed.zero.Init", True, replace(run, zero_init=True), "host_zero_init"
        if run.reference_models:
            yield "finetuning_type", "lora", replace(run, reference_models=0), "host_lora_reference"
    if peak == "train":
        if run.offload == "optimizer+params":
            yield "zero_optimization.offload_param.device", "none", replace(run, offload="optimizer"), "host_param"
        yield "zero_optimization.offload_optimizer.pin_memory", False, None, "host_pin"


def _closing_fix(s: Setup, run: HostRun, need: HostRam, have: float | None):
    """The first lever that brings the need within the RAM the user has (without the RAM: the first that lowers
    the peak); none: more RAM or swap, at least the need. When the estimate fits what they have, something else
    fills the RAM: the data workers when their setting is in evidence, else what to look at."""
    if have is not None and need.total <= have and not run.engine_build_bytes:
        flags = flag_values(s.inp)
        for key in ("preprocessing_num_workers", "dataloader_num_workers"):
            if key in flags:
                return key, 4, {}, {"cost": "host_workers"}
        return "free -g / dmesg", "what else holds host RAM", {}, {"cost": "host_other"}
    for flag, val, changed, cost in _levers(run, need.peak_phase, s.inp.zero_stage == 3):
        if changed is None:
            if have is not None and need.total - need.terms["offload_buffers"] <= have:
                return flag, val, {"tool": "host_memory", "change": flag, "host_ram_gb": round(
                    (need.total - need.terms["offload_buffers"]) / GB, 1), "fits": True}, {"cost": cost}  # fmt: skip
            continue
        after = host_ram(changed).total
        if have is None or after <= have:
            fits = None if have is None else True
            return flag, val, {"tool": "host_memory", "change": flag, "host_ram_gb": round(after / GB, 1),
                               "fits": fits}, {"cost": cost}  # fmt: skip
    first = next(((f, v, c) for f, v, c, _ in _levers(run, need.peak_phase, s.inp.zero_stage == 3) if c), None)
    if first is not None:  # no single change is enough: the RAM it needs with the first one, and as it stands
        f, v, changed = first
        less = host_ram(changed).total
        return "RAM + swap", f"≥ {gb(need.total)} GB (≥ {gb(less)} GB: {f}={v})", {
            "tool": "host_memory", "change": "more RAM", "host_ram_gb": round(need.total / GB, 1),
            "host_ram_gb_with_change": round(less / GB, 1), "with_change": f"{f}={v}"}, {"cost": "host_more"}  # fmt: skip
    return "RAM + swap", f"≥ {gb(need.total)} GB", {"tool": "host_memory", "change": "more RAM",
                                                   "host_ram_gb": round(need.total / GB, 1)}, {"cost": "host_more"}  # fmt: skip


def _arith(run: HostRun, need: HostRam, have: float | None, i) -> tuple[str, str]:
    w = words()["host_terms"]
    fields = {"params": count(run.params), "ranks": run.ranks_per_node, "bytes": f"{run.load_bytes:g}",
              "nodes": run.nodes, "refs": run.reference_models,
              "trainable": count(run.trainable if run.trainable is not None else run.params),
              "mult": f"{value('tensorrt_llm', 'build_host_ram')['multiple']:g}",
              "build_bytes": f"{run.engine_build_bytes:g}"}  # fmt: skip
    key = {"load": "load_zero_init" if run.zero_init else "load"}
    parts = {"en": [], "zh": []}
    for term in PHASE_TERMS[need.peak_phase]:
        fig = need.terms[term]
        if fig <= 0:
            continue
        t = w[key.get(term, term)]
        for lang in ("en", "zh"):
            parts[lang].append(t[lang].format(fig=gb(fig), **fields))
    phase = words()["host_phases"][need.peak_phase]
    if have is None:
        tmpl = "host_need"
    else:
        tmpl = "host_need_have" if need.total > have else "host_build_enough" if run.engine_build_bytes else (
            "host_need_enough")  # fmt: skip
    t = words()["arithmetic"][tmpl]
    have_s = f"{i.host_ram_gb:g} GB" if i.host_ram_gb is not None else ""
    if i.swap_gb:
        have_s += f" + {i.swap_gb:g} GB swap"
    en = t["en"].format(need=gb(need.total), phase=phase["en"], terms=" + ".join(parts["en"]), have=have_s)
    zh = t["zh"].format(need=gb(need.total), phase=phase["zh"], terms=" + ".join(parts["zh"]), have=have_s)
    return en, zh
