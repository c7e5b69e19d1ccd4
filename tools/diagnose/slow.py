"""Slow, not broken: the measured speed beside the roofline (`inference_speed`, `training_time`) and a
communication model, naming the term that dominates.

Decode with tensor parallel does two all-reduces of the hidden state per layer per token (after attention and
after the MLP): 2 × layers × batch × hidden × 2 B. Without peer-to-peer (GeForce cards over PCIe) each goes
through host memory, which halves the bandwidth the link gives. Training all-reduces the 16-bit gradients once
per optimizer step: a ring moves 2 (n − 1) / n of them over the slowest link.
"""

from __future__ import annotations

from tools.diagnose.context import Candidate, Setup, flag_values
from tools.diagnose.facts import Said, say
from tools.diagnose.platform import pct, platform_slow
from tools.errors import AdvisorError
from tools.memory.capacity import GPUS_PER_NODE
from tools.schemas.speed import InferenceSpeedInput, TrainingTimeInput
from tools.speed.comm import ring_allreduce_s, scale_up_gb_s
from tools.speed.inference_speed import inference_speed
from tools.speed.measured import below, verdict
from tools.speed.training_time import training_time

#: communication over this share of the compute time is a term that matters
COMM_SHARE = 0.3
#: the gradient all-reduce over this share of a step's compute dominates it (training overlaps part of it)
TRAIN_COMM_SHARE = 0.5
#: GPU-Util below this while slow points at the input pipeline
LOW_UTIL = 50.0


def _p2p(s: Setup) -> bool:
    if s.inp.p2p is not None:
        return s.inp.p2p
    return s.gpu.segment != "consumer"


def speed_causes(s: Setup) -> list[Candidate]:
    i = s.inp
    if not (s.model and s.gpu) or not (i.measured_tokens_per_s or i.gpu_util_percent is not None):
        return []
    out: list[Candidate] = []
    if i.gpu_util_percent is not None and i.gpu_util_percent < LOW_UTIL and s.workload == "train":
        out.append(Candidate("dataloader_bound", say("gpu_util", util=f"{i.gpu_util_percent:g}"),
                             "dataloader_num_workers", 8, named=True, prior=0.7))  # fmt: skip
    if not i.measured_tokens_per_s:
        return out
    terms: list[Terms] = []
    out += _decode(s, terms) if s.workload == "infer" else _train(s, terms)
    if i.single_gpu_tokens_per_s and i.n_gpus > 1 and i.measured_tokens_per_s <= i.single_gpu_tokens_per_s * 1.1:
        out.append(_slower_multi(s, terms[0] if terms else None))
    return out


def hf_generate(s: Setup) -> bool:
    """Slow generation with plain transformers (`from_pretrained` + `generate`), nothing broken."""
    i = s.inp
    return (s.framework == "transformers" and s.workload == "infer" and not s.oom
            and (i.symptom == "slow" or bool(i.measured_tokens_per_s)))  # fmt: skip


def hf_generate_slow(s: Setup) -> Candidate:
    """What plain transformers generation lacks, said for what the setup has: an MoE's experts in a Python loop,
    a GPTQ/AWQ checkpoint's dequantisation without its fast kernels, layers split over GPUs in turn."""
    i, parts = s.inp, [say("hf_generate")]
    if s.model is not None and s.model.is_moe:
        parts.append(say("hf_generate_moe"))
    if i.precision in ("int4", "int8") and not _bnb(i):
        parts.append(say("hf_generate_quant", bits=4 if i.precision == "int4" else 8))
    if (i.layer_split and (s.gpu is None or i.n_gpus > 1)) or (i.n_gpus > 1 and "device_map" in flag_values(i)):
        parts.append(say("hf_generate_split"))  # (device_map="auto" on one known card splits nothing)
    arith = Said(("".join(p[0] for p in parts), "".join(p[1] for p in parts)))
    arith.template = "hf_generate"
    return Candidate("compute_or_config_slow", arith, "engine",
                     "vLLM or SGLang (fused MoE and GPTQ/AWQ Marlin kernels, continuous batching)", named=True,
                     prior=0.7, extra={"words": "hf_generate_slow"})  # fmt: skip


def hf_generate_causes(s: Setup) -> list[Candidate]:
    """Only where the setup has one of the terms: plain generate() of a dense bf16 model on one card is slow by a
    setting, not by a term this names (and the same code on two cards is not why one is slower)."""
    c = hf_generate_slow(s) if hf_generate(s) else None
    return [c] if c is not None and c.arith[0] != say("hf_generate")[0] else []


def _bnb(i) -> bool:
    flags = flag_values(i)
    return i.method == "qlora" or any(
        str(flags.get(k, "")).lower() in ("true", "1") for k in ("load_in_8bit", "load_in_4bit")
    )


#: the communication and compute times the model gives for one step (training) or one token (decode), the line
#: that shows them, and whether communication dominates
Terms = tuple[float, float, tuple[str, str], bool]


def _slower_multi(s: Setup, terms: Terms | None) -> Candidate:
    """Several GPUs measured slower than one: the term that dominates says why (the all-reduce over the link, or
    compute, in which case the GPUs wait on each other for another reason: layers in turn, a single process)."""
    i = s.inp
    ratio = i.measured_tokens_per_s / i.single_gpu_tokens_per_s
    en, zh = say("slower_multi", n=i.n_gpus, measured=f"{i.measured_tokens_per_s:g}",
                 single=f"{i.single_gpu_tokens_per_s:g}", ratio=f"{ratio:.2f}")  # fmt: skip
    infer = s.workload == "infer"
    flag, val = ("--tensor-parallel-size", 1) if infer else ("gradient_accumulation_steps", max(4, i.grad_accum * 4))
    cause = "p2p_or_interconnect" if not _p2p(s) else "communication_bound"
    if terms is not None:
        comm, compute, (t_en, t_zh), dominant = terms
        share = f"{comm / compute * 100:.0f}" if compute else "∞"
        verdict = say("comm_dominates" if dominant else "compute_dominates", share=share)
        en, zh = f"{en}; {t_en}: {verdict[0]}", f"{zh}；{t_zh}：{verdict[1]}"
        if not dominant and infer and s.tp > 1 and s.tp == i.n_gpus and s.model is not None:
            return _allreduce_latency(s, comm)
        if not dominant:
            cause = "compute_or_config_slow"
            flag, val = ("--data-parallel-size", i.n_gpus) if infer else (
                "device_map", "one GPU per process (torchrun / accelerate launch)")  # fmt: skip
    return Candidate(cause, (en, zh), flag, val, named=True, prior=0.8)


def _allreduce_latency(s: Setup, comm_ms: float) -> Candidate:
    """Tensor parallel measured slower than one GPU while the all-reduces' bytes are negligible: the extra time per
    token, spread over the all-reduces TP adds to each token, is the fixed cost of each collective (computed from
    the two measurements, not assumed); one GPU per replica removes it."""
    i = s.inp
    extra_ms = 1000 / i.measured_tokens_per_s - 1000 / i.single_gpu_tokens_per_s
    n_allreduce = 2 * s.model.n_layers
    arith = say("allreduce_latency", n=i.n_gpus, measured=f"{i.measured_tokens_per_s:g}",
                single=f"{i.single_gpu_tokens_per_s:g}", extra=f"{extra_ms:.1f}", n_allreduce=n_allreduce,
                per=f"{extra_ms / n_allreduce * 1000:.0f}", bw_ms=f"{comm_ms:.2f}")  # fmt: skip
    if _fits_one(s):  # one replica per GPU: no all-reduce per token, and the GPUs still all serve
        return Candidate("communication_bound", arith, "--data-parallel-size", i.n_gpus, named=True, prior=0.8)
    return Candidate("communication_bound", arith, "--tensor-parallel-size", s.tp, named=True, prior=0.8)


def _decode(s: Setup, terms: list[Terms]) -> list[Candidate]:
    i, m = s.inp, s.model
    tp = s.tp
    batch = i.max_num_seqs if i.max_num_seqs and i.max_num_seqs <= 64 else 1
    try:
        r = inference_speed(InferenceSpeedInput(model=m.id, gpu=s.gpu.id, n_gpus=min(tp, 64),
                                                precision=i.precision, batch=batch))  # fmt: skip
    except AdvisorError:
        return []
    expected = r.total_tokens_per_s
    ratio = i.measured_tokens_per_s / expected if expected else 1.0
    slow = below(i.measured_tokens_per_s, expected)
    _verdict(s, expected, r.bound)
    out = []
    if tp > GPUS_PER_NODE:
        nodes = -(-tp // GPUS_PER_NODE)
        arith = say("inter_node_tp", tp=tp, nodes=nodes, per_node=GPUS_PER_NODE, n_allreduce=2 * m.n_layers,
                    bytes=f"{m.hidden_size * batch * 2 / 1024:g}", measured=f"{i.measured_tokens_per_s:g}",
                    expected=f"{expected:.1f}")  # fmt: skip
        out.append(Candidate("communication_bound", arith, "tensor × pipeline parallel",
                             f"tp {GPUS_PER_NODE}, pp {nodes}", prior=0.75 if slow else 0.3,
                             extra={"cost": "pipeline_nodes"}))  # fmt: skip
    elif tp > 1:
        per_token = 2 * m.n_layers * batch * m.hidden_size * 2.0
        bus, _ = scale_up_gb_s(s.gpu)
        bw = bus / 2 if not _p2p(s) else bus
        comm = ring_allreduce_s(per_token, tp, bw) * 1000
        compute = (r.tpot_ms or 0) if hasattr(r, "tpot_ms") else 1000 / expected
        arith = say("decode_p2p", allreduce=f"{comm:.2f}", bytes=f"{m.hidden_size * batch * 2 / 1024:g}",
                    n_allreduce=2 * m.n_layers, bw=f"{bw:g}", compute=f"{compute:.2f}",
                    measured=f"{i.measured_tokens_per_s:g}", expected=f"{expected:.1f}")  # fmt: skip
        terms.append((comm, compute, arith, comm > COMM_SHARE * compute))
        if not _p2p(s):
            dominant = comm > COMM_SHARE * compute
            out.append(Candidate("p2p_or_interconnect", arith, "--tensor-parallel-size", 1 if _fits_one(s) else tp,
                                 prior=0.65 if slow and dominant else 0.15,
                                 extra={"cost": "single_gpu"} if _fits_one(s) else {}))  # fmt: skip
        elif comm > compute:
            out.append(Candidate("communication_bound", arith, "--tensor-parallel-size", max(1, tp // 2), prior=0.5))
    shown = platform_slow(s, expected, r.bound, i.precision) if slow else None
    if shown is not None:  # the setup shows known engine/platform causes: they, ranked by their share, lead, but
        said, flag, val, variant = shown  # after a comparison the user measured (several GPUs against one)
        prior = 0.75 if i.single_gpu_tokens_per_s else 0.9
        out.append(Candidate("compute_or_config_slow", said, flag, val, named=True, prior=prior,
                             extra={"variant": variant}))  # fmt: skip
    arith = say("slow_measured", measured=f"{i.measured_tokens_per_s:g}", ratio=pct(ratio * 100),
                expected=f"{expected:.1f}", bound=r.bound)  # fmt: skip
    extra = {}
    if tp > 1 and not _p2p(s) and _fits_one(s):
        flag, val, extra = "--tensor-parallel-size", 1, {"cost": "single_gpu"}  # no all-reduce through host memory
    elif s.framework == "sglang":
        flag, val = "--disable-cuda-graph", False  # CUDA graphs on: eager decode is launch-bound
    else:
        flag, val = "--enforce-eager", False
    out.append(Candidate("compute_or_config_slow", arith, flag, val, prior=0.6 if slow else 0.1,
                         named=i.enforce_eager and slow, extra=extra))  # fmt: skip
    return out


def _verdict(s: Setup, expected: float, bound: str) -> None:
    """The measured speed against the estimate, decided once (tools/speed/measured.py) and kept with the setup:
    the diagnosis's output carries it, and a speed cause leads only when the speed is below the band."""
    m = s.inp.measured_tokens_per_s
    s.speed.update({"measured_tokens_per_s": m, "expected_tokens_per_s": round(expected, 1),
                    "ratio_pct": round(m / expected * 100) if expected else None, "verdict": verdict(m, expected),
                    "bound": bound})  # fmt: skip


def _fits_one(s: Setup) -> bool:
    from tools.diagnose.serve import weights_bytes

    return s.capacity is not None and weights_bytes(s) < 0.8 * s.capacity


def _train(s: Setup, terms: list[Terms]) -> list[Candidate]:
    i, m = s.inp, s.model
    seq = i.seq_len or 2048
    try:
        r = training_time(TrainingTimeInput(model=m.id, gpu=s.gpu.id, n_gpus=i.n_gpus, tokens=10**9,
                                            method=i.method, seq_len=seq))  # fmt: skip
    except AdvisorError:
        return []
    expected = r.tokens_per_s
    ratio = i.measured_tokens_per_s / expected if expected else 1.0
    slow = below(i.measured_tokens_per_s, expected)
    _verdict(s, expected, "compute")
    out = []
    if i.n_gpus > 1 and i.method == "full":  # adapters' gradients are too small to matter
        grad = 2.0 * s.params.total
        bus, _ = scale_up_gb_s(s.gpu)
        bw = bus / 2 if not _p2p(s) else bus
        comm = ring_allreduce_s(grad, i.n_gpus, bw)
        step_tokens = seq * i.micro_batch * i.grad_accum * i.n_gpus
        compute = step_tokens / expected
        arith = say("train_comm", comm=f"{comm:.2f}", grad=f"{grad / 1e9:.1f}", n=i.n_gpus, bw=f"{bw:g}",
                    compute=f"{compute:.2f}")  # fmt: skip
        terms.append((comm, compute, arith, comm > TRAIN_COMM_SHARE * compute))
        if comm > TRAIN_COMM_SHARE * compute:
            cause = "p2p_or_interconnect" if not _p2p(s) else "communication_bound"
            out.append(Candidate(cause, arith, "gradient_accumulation_steps", max(4, i.grad_accum * 4),
                                 prior=0.7 if slow else 0.3))  # fmt: skip
    arith = say("slow_measured", measured=f"{i.measured_tokens_per_s:g}", ratio=pct(ratio * 100),
                expected=f"{expected:.0f}", bound="compute")  # fmt: skip
    flag, val = ("zero_optimization.offload_optimizer.device", "none") if i.offload != "none" else (
        "per_device_train_batch_size", i.micro_batch * 2)  # fmt: skip
    out.append(Candidate("compute_or_config_slow", arith, flag, val, prior=0.55 if slow else 0.1))
    return out
