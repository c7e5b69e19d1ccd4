"""Training causes: which single allocation reproduces "Tried to allocate X", and which memory term the
calculator (`fit_training` on the user's own setup) says is too large.

Single allocations compared with X (frameworks.yaml `deepspeed`): the fp32 partition of ZeRO-1/2 (4 B ×
params ÷ GPUs), a whole fp32 Adam state or 16-bit gradient without ZeRO, the reduce / all-gather buckets,
ZeRO-3's gathered layer, prefetch bucket and live parameters, the fp32 (and 16-bit) logits of a micro-batch,
one layer's MLP activation, and the attention scores without fused attention.
"""

from __future__ import annotations

from typing import Any

from tools.diagnose.context import Candidate, Setup, count, flag_values, gib
from tools.diagnose.facts import Said, say, value
from tools.errors import AdvisorError
from tools.memory.fit_training import fit_training
from tools.memory.quant_sharding import FLOAT_STORAGES, base_shardable
from tools.schemas.memory import FitTrainingInput
from tools.units import GiB

_TRAIN_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
#: bnb_4bit_quant_storage as configs write it (torch dtype names) -> the calculator's storage names
_STORAGES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "uint8": "uint8",
    **{d: d for d in FLOAT_STORAGES},
}
#: preference objectives the memory calculator counts (SimPO has no reference and the same two sequences as ORPO)
_OBJECTIVES = {"dpo": "dpo", "kto": "kto", "ppo": "ppo", "orpo": "orpo", "simpo": "orpo"}
#: the fix where even a sharded 4-bit base does not fit the GPUs at hand
_BIGGER = "more GPUs (ZeRO-3 / FSDP shard the 4-bit base stored in bf16), or a GPU with more memory"


def quant_storage(s: Setup) -> str:
    """QLoRA's 4-bit storage as the run has it: bnb_4bit_quant_storage as written; an FSDP run stores it in a float
    dtype (FSDP-QLoRA cannot wrap uint8 parameters, tools.memory.quant_sharding), so FSDP shards it; otherwise
    bitsandbytes' default (auto: uint8, whole on every DeepSpeed ZeRO-3 rank)."""
    flags = flag_values(s.inp)
    written = _STORAGES.get(flags.get("bnb_4bit_quant_storage", "").removeprefix("torch.").lower())
    if written:
        return written
    return "bf16" if "fsdp" in flags and flags["fsdp"].lower() not in ("", "false", "none", "no") else "auto"


def stage(s: Setup) -> int | None:
    """The ZeRO stage: as given; unknown (None) when DeepSpeed runs with a config not shown; 0 (DDP) otherwise."""
    if s.inp.zero_stage is not None:
        return s.inp.zero_stage
    return None if s.framework == "deepspeed" else 0


def _args(s: Setup, **change: Any) -> dict[str, Any]:
    i = s.inp
    args = {
        "model": s.model.id, "gpu": s.gpu.id, "method": i.method, "n_gpus": i.n_gpus,
        "precision": i.precision if i.precision in _TRAIN_PRECISIONS else "bf16",
        "zero_stage": stage(s), "offload": i.offload,
        "seq_len": i.seq_len or value("llamafactory", "cutoff_len"), "micro_batch": i.micro_batch,
        "grad_checkpointing": i.grad_checkpointing, "tp": s.inp.tp or 1, "pp": i.pp,
        "objective": _OBJECTIVES.get(i.preference or "", "sft"),
    }  # fmt: skip
    if i.method == "qlora":
        args["quant_storage"] = quant_storage(s)
    if s.capacity and s.inp.capacity_gib:
        pass  # the calculator reads the card's capacity from the catalog; the log's is compared below
    args.update(change)
    return args


def fit(s: Setup, **change: Any) -> dict[str, Any] | None:
    """fit_training on the setup with `change` applied (None where it refuses), asked once per diagnosis for
    each distinct set of arguments; callers only read the dict."""
    args = _args(s, **change)
    key = tuple(sorted(args.items()))
    if key not in s.fits:
        try:
            s.fits[key] = dict(fit_training(FitTrainingInput(**args)))  # its fields; only top-level ones are read
        except AdvisorError:
            s.fits[key] = None
    return s.fits[key]


def _trainable(s: Setup) -> float:
    r = fit(s)
    return r["trainable_params_b"] * 1e9 if r else float(s.params.total)


def _after(s: Setup, label: str, **change: Any):
    def run() -> dict[str, Any]:
        r = fit(s, **change)
        if r is None:
            return {"tool": "fit_training", "change": label}
        return {"tool": "fit_training", "change": label, "per_gpu_gb": r["per_gpu_gb"], "usable_gb": r["usable_gb"],
                "fits": r["fits"], "verdict": r["verdict"]}  # fmt: skip

    return run


def allocation_causes(s: Setup) -> list[Candidate]:
    """Each single allocation the setup makes, as a candidate for the failed 'Tried to allocate X'."""
    i, m = s.inp, s.model
    x = i.failed_alloc_gib * GiB if i.failed_alloc_gib else None
    n, known = i.n_gpus, stage(s)
    stages = {known} if known is not None else {2, 3}  # a DeepSpeed config not shown: the log's figure decides
    p = _trainable(s)
    seq = i.seq_len or value("llamafactory", "cutoff_len")
    flags = flag_values(i)
    out: list[Candidate] = []

    def add(cause: str, fig: float, arith: tuple[str, str], flag: str, val: Any, after=None, prior: float = 0.1):
        out.append(Candidate(cause, arith, flag, val, figure=fig, reported=x, prior=prior, after=after))

    if stages & {1, 2} and n > 1:
        fig = 4 * p / n
        flag, val, after = _bigger_stage(s)
        add("zero_stage_buffers", fig, say("fp32_partition", fig=gib(fig), params=count(p), n=n), flag, val, after)
    if 0 in stages:
        flag, val, after = ("zero_optimization.stage", 2, _after(s, "ZeRO-2", zero_stage=2)) if n > 1 else (
            "finetuning_type", "lora", _after(s, "LoRA", method="lora"))  # fmt: skip
        if i.method == "full":
            add("optimizer_states_unsharded", 4 * p, say("adam_state", fig=gib(4 * p), params=count(p)), flag, val,
                after)  # fmt: skip
            add("optimizer_states_unsharded", 2 * p, say("grad_full", fig=gib(2 * p), params=count(p)), flag, val,
                after)  # fmt: skip
    if stages - {0}:
        for name, key in (
            ("reduce_bucket_size", "reduce_bucket_size"),
            ("allgather_bucket_size", "allgather_bucket_size"),
        ):
            if stages == {3} and name == "allgather_bucket_size":
                continue
            elements = _number(flags.get(name)) or _hf_auto(s, name, flags, stages) or value("deepspeed", key)
            fig = elements * 2
            add("zero_stage_buffers", fig,
                say("bucket", fig=gib(fig), name=name, elements=count(elements), bytes=2), name, int(elements // 4))  # fmt: skip
    if 3 in stages:
        layer = s.params.largest_layer
        add("zero_stage_buffers", 2 * layer, say("gathered_layer", fig=gib(2 * layer), params=count(layer)),
            "stage3_max_live_parameters", int(value("deepspeed", "stage3_max_live_parameters") // 10))  # fmt: skip
        groups = _number(flags.get("sub_group_size")) or value("deepspeed", "sub_group_size")
        add("zero_stage_buffers", groups * 4,
            say("bucket", fig=gib(groups * 4), name="sub_group_size (fp32 optimizer step)", elements=count(groups), bytes=4),
            "sub_group_size", int(groups // 10))  # fmt: skip
        for name in ("stage3_prefetch_bucket_size", "stage3_max_live_parameters"):
            elements = _number(flags.get(name)) or _hf_auto(s, name, flags, stages) or value("deepspeed", name)
            add("zero_stage_buffers", elements * 2,
                say("bucket", fig=gib(elements * 2), name=name, elements=count(elements), bytes=2), name,
                int(elements // 10))  # fmt: skip
    mb = i.micro_batch
    lower_mb = ("per_device_train_batch_size", 1, _after(s, "micro-batch 1", micro_batch=1)) if mb > 1 else (
        "enable_liger_kernel", True, None)  # fmt: skip
    for b in (4, 2):
        fig = mb * seq * m.vocab_size * b
        arith = say("logits", fig=gib(fig), mb=mb, seq=f"{seq:,}", vocab=f"{m.vocab_size:,}")
        if b == 2:
            arith = (
                arith[0].replace("fp32", "16-bit").replace("4 B", "2 B"),
                arith[1].replace("fp32", "16 位").replace("4 B", "2 B"),
            )
        add("logits_memory", fig, arith, *lower_mb, prior=0.15)
    ffn = m.moe_ffn_size or m.ffn_size
    fig = mb * seq * ffn * 2
    ckpt = i.grad_checkpointing is False
    act_fix = ("gradient_checkpointing", True, _after(s, "gradient checkpointing", grad_checkpointing=True)) if ckpt else (
        lower_mb if mb > 1 else ("cutoff_len", seq // 2, _after(s, f"cutoff_len {seq // 2}", seq_len=seq // 2)))  # fmt: skip
    add("activations_too_large", fig, say("mlp_activation", fig=gib(fig), mb=mb, seq=f"{seq:,}", ffn=f"{ffn:,}"),
        *act_fix, prior=0.15)  # fmt: skip
    if flags.get("flash_attn") in ("disabled", "eager", "false", "sdpa") or flags.get("attn_implementation") == "eager":
        fig = mb * m.n_heads * seq * seq * 2
        add("activations_too_large", fig,
            say("attention_scores", fig=gib(fig), mb=mb, heads=m.n_heads, seq=f"{seq:,}"), "flash_attn", "fa2")  # fmt: skip
    for b in (4, 2):
        fig = b * s.params.total
        add("load_time_peak", fig, say("whole_weights", fig=gib(fig), bytes=b, params=count(s.params.total)),
            "torch_dtype", "bfloat16", prior=0.3 if i.error_kind == "load_oom" else 0.05)  # fmt: skip
    return out


def _hf_auto(s: Setup, name: str, flags: dict[str, str], stages: set) -> float | None:
    """A bucket written "auto": the Hugging Face Trainer sizes it from the hidden size under ZeRO-3."""
    if flags.get(name) != "auto" or stages != {3} or name not in ("reduce_bucket_size", "stage3_prefetch_bucket_size"):
        return None
    return value("deepspeed", f"hf_auto_{name}") * s.model.hidden_size**2


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "auto") else None
    except ValueError:
        return None


def _bigger_stage(s: Setup):
    z3 = fit(s, zero_stage=3)
    if z3 and z3["verdict"] == "fits":
        return "zero_optimization.stage", 3, _after(s, "ZeRO-3", zero_stage=3)
    return ("zero_optimization.offload_optimizer.device", "cpu",
            _after(s, "ZeRO-3 + optimizer offload", zero_stage=3, offload="optimizer"))  # fmt: skip


def memory_causes(s: Setup) -> tuple[list[Candidate], dict[str, Any]]:
    """Causes from the calculator's totals on the user's setup, and the estimate itself."""
    r = fit(s)
    if r is None:
        return [], {}
    est = {"tool": "fit_training", "fits": r["fits"], "per_gpu_gb": r["per_gpu_gb"], "usable_gb": r["usable_gb"],
           "verdict": r["verdict"], "zero_stage": r["zero_stage"]}  # fmt: skip
    cap = s.capacity or r["capacity_gb"] * 1e9
    b = r["breakdown_gb"]
    i, out = s.inp, []
    frozen = b.get("frozen_models", 0)  # a preference objective's reference (and reward) models, when it has them
    arith = say("training_total_frozen" if frozen else "training_total", need=gib(r["per_gpu_gb"] * 1e9),
                weights=gib(b["weights"] * 1e9), grads=gib(b["gradients"] * 1e9), opt=gib(b["optimizer"] * 1e9),
                act=gib(b["activations"] * 1e9), logits=gib(b.get("logits", 0) * 1e9), cap=gib(cap),
                frozen=gib(frozen * 1e9))  # fmt: skip
    states = b["weights"] + b["gradients"] + b["optimizer"]
    tail = b["activations"] + b.get("logits", 0)
    over = not r["fits"]
    weights_alone = b["weights"] * 1e9 > cap
    zero = stage(s) if stage(s) is not None else r["zero_stage"]
    unsharded = _unsharded(s, zero, b) if over and i.method != "qlora" and (weights_alone or states >= tail) else []
    out += unsharded  # several GPUs that each hold the whole weights (states, not activations, overflow): ZeRO-3
    if weights_alone and i.method == "qlora":  # already 4-bit: sharding the base, or more memory, is what is left
        out.append(_qlora_weights(s, arith))
    elif weights_alone:
        out.append(Candidate("weights_exceed_memory", arith, "finetuning_type", "qlora", prior=0.8,
                             after=_after(s, "QLoRA", method="qlora")))  # fmt: skip
    elif over and i.method != "qlora" and b["weights"] * 1e9 >= WEIGHTS_SHARE * cap and b["weights"] >= tail:
        # (activations and logits larger than the weights are the overrun: a shorter batch is the fix, not 4-bit)
        lora = fit(s, method="lora") if i.method != "lora" else r
        if lora is not None and not lora["fits"]:  # even adapters alone do not fit beside these weights
            w = say("weights_share", weights=gib(b["weights"] * 1e9), cap=gib(cap),
                    share=f"{b['weights'] * 1e9 / cap * 100:.0f}", lora=gib(lora["per_gpu_gb"] * 1e9))  # fmt: skip
            out.append(Candidate("weights_exceed_memory", w, "finetuning_type", "qlora", prior=0.65,
                                 after=_after(s, "QLoRA", method="qlora")))  # fmt: skip
    if over and states >= tail:
        if zero < 2 and i.n_gpus > 1 and i.method == "full":
            flag, val, after = _bigger_stage(s)
            out.append(Candidate("optimizer_states_unsharded", arith, flag, val, prior=0.6, after=after))
        elif i.offload != "none" and zero in (1, 2):  # offloading already: ZeRO-2 still keeps whole weights per GPU
            w = say("zero2_weights", fig=gib(b["weights"] * 1e9), zero=zero)
            flag, val, after = "zero_optimization.stage", 3, _after(s, "ZeRO-3", zero_stage=3)
            out.append(Candidate("zero_stage_buffers", w, flag, val, prior=0.55, after=after))
        else:
            z3 = fit(s, zero_stage=3, offload="optimizer") if i.n_gpus >= 1 else None
            if unsharded:
                pass  # ZeRO-3 alone fits (the unsharded weights above): offloading is not what is missing
            elif z3 and z3["fits"]:
                out.append(Candidate("needs_offload", arith, "zero_optimization.offload_optimizer.device", "cpu",
                                     prior=0.55, after=_after(s, "ZeRO-3 + optimizer offload", zero_stage=3,
                                                              offload="optimizer")))  # fmt: skip
            elif i.method == "full":
                out.append(Candidate("optimizer_states_unsharded", arith, "finetuning_type", "lora", prior=0.5,
                                     after=_after(s, "LoRA", method="lora")))  # fmt: skip
    if over and tail > states:
        cause = "logits_memory" if b.get("logits", 0) > b["activations"] else "activations_too_large"
        if i.grad_checkpointing is False:
            flag, val, after = "gradient_checkpointing", True, _after(s, "checkpointing", grad_checkpointing=True)
        elif i.micro_batch > 1:
            flag, val, after = "per_device_train_batch_size", 1, _after(s, "micro-batch 1", micro_batch=1)
        else:
            seq = i.seq_len or value("llamafactory", "cutoff_len")
            flag, val, after = "cutoff_len", seq // 2, _after(s, f"cutoff_len {seq // 2}", seq_len=seq // 2)
        out.append(Candidate(cause, arith, flag, val, prior=0.6, after=after))
        other, term = (
            ("activations_too_large", b["activations"])
            if cause == "logits_memory"
            else ("logits_memory", b.get("logits", 0))
        )
        if term >= LARGE_TERM * r["per_gpu_gb"]:  # the other per-token term is large too: the same fix shrinks both
            out.append(Candidate(other, arith, flag, val, prior=0.45, after=after))
    for c in out if over else ():  # the setup as given does not fit: each of these is its shortfall, computed
        c.extra["shortfall"] = True
    if r["fits"] and s.oom:
        out += _margin_causes(s, arith, cap, zero, r)
    return out, est


def _unsharded(s: Setup, zero: int, b: dict[str, float]) -> list[Candidate]:
    """Several GPUs below ZeRO-3 (data parallel, ZeRO-1/2) each hold the whole 16-bit weights, so adding GPUs adds
    no room for them: where ZeRO-3 on the same GPUs fits, sharding is the fix, before changing the method or
    moving states to the CPU (both cost more)."""
    i = s.inp
    if i.n_gpus < 2 or zero >= 3 or stage(s) == 3 or (i.method == "full" and zero < 2):
        return []  # (full training below ZeRO-2: the unsharded Adam states are the larger term, said on their own)
    z3 = fit(s, zero_stage=3)
    if not z3 or not z3["fits"]:
        return []
    w = say("unsharded_weights", n=i.n_gpus, fig=gib(b["weights"] * 1e9), zero=zero,
            shard=gib(b["weights"] * 1e9 / i.n_gpus), after=gib(z3["per_gpu_gb"] * 1e9))  # fmt: skip
    return [Candidate("zero_stage_buffers", w, "zero_optimization.stage", 3, prior=0.85,
                      after=_after(s, "ZeRO-3", zero_stage=3), extra={"shortfall": True, "words": "unsharded_weights"})]  # fmt: skip


def _qlora_weights(s: Setup, arith: tuple[str, str]) -> Candidate:
    """A QLoRA run whose 4-bit base alone exceeds each GPU: on several GPUs that do not shard it (data parallel, or
    ZeRO-3 with uint8 storage) every GPU holds all of it, and bf16 storage under ZeRO-3 / FSDP shards it; where it is
    sharded already (or on one GPU), more GPUs or a bigger card."""
    i = s.inp
    storage = _args(s)["quant_storage"]
    sharded = stage(s) == 3 and base_shardable("qlora", "uint8" if storage == "auto" else storage)
    if i.n_gpus > 1 and not sharded:
        whole = say("qlora_base_whole", n=i.n_gpus)
        w = Said((arith[0] + whole[0], arith[1] + whole[1]))
        w.template = arith.template
        return Candidate("weights_exceed_memory", w, "bnb_4bit_quant_storage", "bfloat16", prior=0.8,
                         after=_after(s, "4-bit base in bf16, ZeRO-3", quant_storage="bf16", zero_stage=3))  # fmt: skip
    return Candidate("weights_exceed_memory", arith, "n_gpus", _BIGGER, prior=0.8)


#: 16-bit weights at least this share of the card leave too little for any training beside them when even LoRA
#: does not fit: the weights are the cause, and 4-bit base weights (QLoRA) the fix
WEIGHTS_SHARE = 0.5
#: a term at least this share of the per-GPU estimate is large enough to be why a fitting estimate still OOMs
LARGE_TERM = 0.15
#: full training whose weights, gradients and optimizer states alone take this share of the card leaves no room
#: for the activation peak: where it OOMs although the estimate fits, offloading the optimizer is the fix
STATES_SHARE = 0.75
#: the estimate above this share of the usable memory leaves little headroom: under ZeRO-3 offload is next
THIN_HEADROOM = 0.8


def _margin_causes(s: Setup, arith: tuple[str, str], cap: float, zero: int, r: dict[str, Any]) -> list[Candidate]:
    """The estimate fits but the log shows an OOM: the terms that most often exceed their estimate, each as
    likely as it is large in the estimate (a term of a few percent rarely explains the whole overrun)."""
    i, out = s.inp, []
    b, need = r["breakdown_gb"], r["per_gpu_gb"] or 1.0
    tail = b["activations"] + b.get("logits", 0)
    if i.grad_checkpointing is False:
        fix = ("gradient_checkpointing", True, _after(s, "checkpointing", grad_checkpointing=True))
    elif i.micro_batch > 1:
        fix = ("per_device_train_batch_size", 1, _after(s, "micro-batch 1", micro_batch=1))
    else:
        seq = i.seq_len or value("llamafactory", "cutoff_len")
        fix = ("cutoff_len", seq // 2, _after(s, f"cutoff_len {seq // 2}", seq_len=seq // 2))
    out.append(Candidate("activations_too_large", arith, fix[0], fix[1], after=fix[2],
                         prior=0.35 if tail >= LARGE_TERM * need else 0.2))  # fmt: skip
    states = b["weights"] + b["gradients"] + b["optimizer"]
    if i.method == "full" and i.offload == "none" and states * 1e9 >= STATES_SHARE * cap:
        z3 = fit(s, zero_stage=3, offload="optimizer")  # the states alone fill the card: no spike has room
        if z3 and z3["fits"]:
            w = say("offload", n=i.n_gpus, need=gib(need * 1e9), cap=gib(cap), after=gib(z3["per_gpu_gb"] * 1e9))
            out.append(Candidate("needs_offload", w, "zero_optimization.offload_optimizer.device", "cpu", prior=0.45,
                                 after=_after(s, "ZeRO-3 + optimizer offload", zero_stage=3, offload="optimizer")))  # fmt: skip
    if r["verdict"] == "tight" and tail >= LARGE_TERM * need:  # the estimate itself is at the card's edge, and the
        out[-1].extra["shortfall"] = True  # per-token terms are a large part of it: the OOM's arithmetic
    if zero == 3 and i.offload == "none" and need >= THIN_HEADROOM * r["usable_gb"]:
        z3 = fit(s, zero_stage=3, offload="optimizer")
        if z3 and z3["fits"]:
            w = say("offload", n=i.n_gpus, need=gib(need * 1e9), cap=gib(cap), after=gib(z3["per_gpu_gb"] * 1e9))
            out.append(Candidate("needs_offload", w, "zero_optimization.offload_optimizer.device", "cpu", prior=0.4,
                                 after=_after(s, "ZeRO-3 + optimizer offload", zero_stage=3, offload="optimizer")))  # fmt: skip
    if zero == 3:  # gathered parameters kept live and prefetched: DeepSpeed's defaults (frameworks.yaml)
        flags = flag_values(i)
        live = _number(flags.get("stage3_max_live_parameters")) or value("deepspeed", "stage3_max_live_parameters")
        w = say("bucket", fig=gib(live * 2), name="stage3_max_live_parameters", elements=count(live), bytes=2)
        share = b.get("zero3_buffers", 0) / need
        out.append(Candidate("zero_stage_buffers", w, "stage3_max_live_parameters", int(live // 10),
                             prior=0.33 if share >= 0.05 else 0.2))  # fmt: skip
    if zero in (1, 2):
        elements = value("deepspeed", "reduce_bucket_size")
        bucket = say("bucket", fig=gib(elements * 2), name="reduce_bucket_size", elements=count(elements), bytes=2)
        out.append(Candidate("zero_stage_buffers", bucket, "reduce_bucket_size", int(elements // 10), prior=0.3))
    whole = 2 * s.params.total
    if zero == 3 and whole > cap:
        load = say("whole_weights", fig=gib(whole), bytes=2, params=count(s.params.total))
        out.append(
            Candidate("load_time_peak", load, "low_cpu_mem_usage", True, prior=0.4, extra={"shortfall": True})
        )  # whole weights over one card: the failure's arithmetic
    return out
