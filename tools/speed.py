"""Training time and inference speed.

Training (`training_time`). Model FLOPs per token, with N the parameters that take part in a matmul
(every transformer layer plus the output head; the input-embedding lookup is not a matmul and is not
counted; tied embeddings count once as the head; MoE: the active path only):
    full        6·N + 6·L·s·(d_qk + d_v)               (PaLM appendix B: 6N + 12·L·H·s for d_qk = d_v = H)
    lora/qlora  4·N + 6·L·s·(d_qk + d_v) + 6·N_adapter  (frozen weights get no weight gradient)
    freeze      2·N + 2·N_head + 4·k·N_layer + 2·L·s·(d_qk + d_v) + 4·k·s·(d_qk + d_v)   (k trainable top layers)
where d_qk, d_v are the summed query-key and value widths of all heads (a·head_dim; MLA: a·(nope + rope), a·v)
and s the sequence length (no causal discount, as PaLM and nanoGPT `estimate_mfu` count it).
Full recomputation adds one forward pass to the hardware FLOPs (HFU) but not to the model FLOPs (MFU).
Time per step = compute (hardware FLOPs at peak × the calibrated utilisation of `tools.mfu`) plus the
exposed communication of `tools.comm`; MFU is reported end to end, communication included.

Inference (`inference_speed`). A decode step reads every weight on the active path once per GPU plus the
KV cache of the batch; it takes max(bytes / achieved bandwidth, FLOPs / achieved compute) plus a fixed
per-step overhead and, with tensor parallelism, two all-reduces per layer. Prefill is compute-bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tools.architecture import ParamCount, check_parallel, kv_bytes_per_token, mlp_params, param_count
from tools.catalog import get_gpu, get_model
from tools.comm import get_fabric, ring_allreduce_s, scale_up_gb_s, step_comm
from tools.errors import Unsupported
from tools.gpu_spec import GpuSpec
from tools.memory import default_checkpointing
from tools.mfu import default_utilisation, rules, width_factor
from tools.model_spec import ModelSpec
from tools.schemas.common import assume
from tools.schemas.speed import InferenceSpeedInput, InferenceSpeedOutput, TrainingTimeInput, TrainingTimeOutput
from tools.serving import default_weight_precision
from tools.units import BYTES_PER_PARAM, GB, TFLOPS

# --- model arithmetic --------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    n_matmul: float  # N: parameters in matmuls on the active path (layers + head)
    n_head: float
    n_layer: float  # average active matmul parameters of one transformer layer
    n_sync: float  # parameters whose gradients are all-reduced across data-parallel replicas (full training)
    qk_dim: int
    v_dim: int
    layers: int
    hidden: int


def shape(m: ModelSpec) -> Shape:
    p: ParamCount = param_count(m)
    head = m.vocab_size * m.hidden_size
    n_matmul = p.active - (p.embedding - head)  # drop the input lookup (0 when tied)
    experts = 0.0
    if m.is_moe:
        expert = mlp_params(m.hidden_size, m.moe_ffn_size or m.ffn_size, m.mlp)
        experts = p.n_moe_layers * (m.n_experts or 0) * expert
    if m.attention == "MLA":
        qk = m.n_heads * ((m.qk_nope_head_dim or m.head_dim) + (m.qk_rope_head_dim or 64))
        v = m.n_heads * (m.v_head_dim or m.head_dim)
    else:
        qk = v = m.n_heads * m.head_dim
    return Shape(
        n_matmul=float(n_matmul),
        n_head=float(head),
        n_layer=float((n_matmul - head) / m.n_layers),
        n_sync=float(p.total - experts),
        qk_dim=qk,
        v_dim=v,
        layers=m.n_layers,
        hidden=m.hidden_size,
    )


def lora_params(m: ModelSpec, rank: int, targets: str) -> float:
    """Adapter parameters, r·(d_in + d_out) per adapted linear layer (attention q, k, v, o; MLP matrices)."""
    h, a, k, d = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    attn = rank * (2 * (h + a * d) + 2 * (h + k * d))
    if targets == "attention":
        return float(m.n_layers * attn)
    f = m.moe_ffn_size or m.ffn_size
    mats = 3 if m.mlp == "swiglu" else 2
    experts = (m.experts_per_token or 1) + (m.n_shared_experts or 0) if m.is_moe else 1  # active experts only
    return float(m.n_layers * (attn + mats * rank * (h + f) * experts))


def training_flops_per_token(
    m: ModelSpec, method: str, seq_len: int, *, recompute: bool, lora_rank: int = 16,
    lora_targets: str = "all-linear", trainable_layers: int = 2,
) -> tuple[float, float, float]:
    """(model FLOPs, hardware FLOPs, forward FLOPs) per training token."""
    s = shape(m)
    attn_fwd = 2 * s.layers * seq_len * (s.qk_dim + s.v_dim)  # QKᵀ and A·V, 2 FLOPs per MAC
    fwd = 2 * s.n_matmul + attn_fwd
    if method == "full":
        model = 3 * fwd
        extra = fwd
    elif method in ("lora", "qlora"):
        n_adapter = lora_params(m, lora_rank, lora_targets)
        model = 4 * s.n_matmul + 3 * attn_fwd + 6 * n_adapter
        fwd += 2 * n_adapter
        extra = fwd
    else:  # freeze: backward stops below the k-th layer from the top
        k = min(trainable_layers, s.layers)
        attn_layer = attn_fwd / s.layers
        model = fwd + 2 * s.n_head + 4 * k * s.n_layer + 2 * k * attn_layer
        extra = k * (2 * s.n_layer + attn_layer)
    return model, model + (extra if recompute else 0.0), fwd


def _peak(gpu: GpuSpec, precision: str, field: str = "precision") -> float:
    value = gpu.peak_tflops(precision)
    if value is None:
        raise Unsupported(
            f"{gpu.name} has no published dense {precision} tensor rate; choose another precision.",
            f"{gpu.name} 没有公开的 {precision} 稠密算力；请换一种精度。",
            field=field,
        )
    return value * TFLOPS


# --- training time -------------------------------------------------------------------------------

#: a full-parameter run over this many tokens is read as pretraining (checkpointing off unless asked)
PRETRAINING_TOKENS = 50e9

QLORA_NOTE = "QLoRA: 4-bit weights are dequantised before every matmul"


def training_time(inp: TrainingTimeInput) -> TrainingTimeOutput:
    """Wall-clock hours, GPU-hours and MFU of a training or fine-tuning run, with a low–high range.

    Model FLOPs ≈ 6·N·D plus attention (PaLM), LoRA ≈ 4·N·D; utilisation calibrated per GPU generation
    from published runs (tools/data/mfu.yaml); communication (gradient all-reduce, tensor parallel)
    over NVLink/PCIe and the inter-node fabric added on top.
    """
    m, gpu = get_model(inp.model), get_gpu(inp.gpu)
    check_parallel(m, inp.tp, inp.pp)
    recompute = _checkpointing(inp, m)
    fabric = get_fabric(inp.nodes_fabric)
    peak = _peak(gpu, inp.precision)
    s = shape(m)
    model_fpt, hw_fpt, fwd_fpt = training_flops_per_token(
        m, inp.method, inp.seq_len, recompute=recompute, lora_rank=inp.lora_rank,
        lora_targets=inp.lora_targets, trainable_layers=inp.trainable_layers,
    )
    n, tp, pp = inp.n_gpus, inp.tp, inp.pp
    dp = n // (tp * pp)
    min_batch = dp * inp.seq_len
    global_batch = max(inp.global_batch_tokens, min_batch)
    steps = inp.tokens / global_batch

    if inp.method == "full":
        trainable = s.n_sync
    elif inp.method in ("lora", "qlora"):
        trainable = lora_params(m, inp.lora_rank, inp.lora_targets)
    else:
        trainable = min(inp.trainable_layers, s.layers) * s.n_layer
    grad_bytes = trainable / (tp * pp) * (4.0 if inp.precision in ("fp32", "tf32") else 2.0)
    tp_ars = (6 if recompute else 4) if inp.method != "freeze" else 2

    def step(u: float) -> tuple[float, float, float]:
        """(step seconds, exposed comm seconds, compute seconds) per GPU at utilisation u."""
        t_c = hw_fpt * global_batch / (n * peak * u)
        comm = step_comm(
            gpu=gpu, fabric=fabric, n_gpus=n, gpus_per_node=inp.gpus_per_node, tp=tp, pp=pp,
            grad_bytes_per_gpu=grad_bytes, tokens_per_replica=global_batch / dp, hidden=s.hidden,
            layers=s.layers, tp_allreduces_per_layer=tp_ars, backward_s=t_c * (1 - fwd_fpt / hw_fpt),
            overlap=inp.comm_overlap,
        )
        return t_c + comm.exposed_s, comm.exposed_s, t_c

    util = default_utilisation(gpu, inp.precision, inp.method)
    narrow = width_factor(s.hidden, tp)
    if narrow < 1.0:  # narrow tensor-parallel shards keep the tensor cores less busy (tools/data/mfu.yaml)
        util = replace(util, value=util.value * narrow, low=util.low * narrow, high=util.high * narrow)
    flops_step_gpu = model_fpt * global_batch / n
    if inp.mfu is None:
        t_step, exposed, _ = step(util.value)
        t_fast, _, _ = step(util.high)
        t_slow, _, _ = step(util.low)
    else:  # a given MFU is end to end: it already includes communication
        t_step = t_fast = t_slow = flops_step_gpu / (peak * inp.mfu)
        u_equiv = inp.mfu * hw_fpt / model_fpt
        _, exposed, _ = step(u_equiv)
    mfu = flops_step_gpu / (peak * t_step)
    hours = steps * t_step / 3600
    hours_low, hours_high = steps * t_fast / 3600, steps * t_slow / 3600

    total = model_fpt * inp.tokens
    out = TrainingTimeOutput.trusted(
        model=m.name, gpu=gpu.name, n_gpus=n, tokens=inp.tokens, method=inp.method, precision=inp.precision,
        flops_per_token=model_fpt, total_flops=total,
        hours=hours, days=hours / 24, gpu_hours=hours * n,
        hours_low=hours_low, hours_high=hours_high, gpu_hours_low=hours_low * n, gpu_hours_high=hours_high * n,
        mfu=mfu, mfu_low=flops_step_gpu / (peak * t_slow), mfu_high=flops_step_gpu / (peak * t_fast),
        hfu=mfu * hw_fpt / model_fpt,
        tokens_per_s=inp.tokens / (hours * 3600), tokens_per_s_per_gpu=inp.tokens / (hours * 3600) / n,
        comm_share=min(1.0, exposed / t_step), peak_tflops=peak / TFLOPS,
        assumptions=_training_assumptions(inp, m, gpu, util, s, global_batch, fabric, peak, recompute),
    )
    return out


def _checkpointing(inp: TrainingTimeInput, m: ModelSpec) -> bool:
    """The user's setting, else fit_training's default; a full run over 50B tokens is read as pretraining (off)."""
    if inp.grad_checkpointing is not None:
        return inp.grad_checkpointing
    if inp.method == "full" and inp.tokens > PRETRAINING_TOKENS:
        return False
    return default_checkpointing(inp.method, param_count(m).total)


def _training_assumptions(inp, m, gpu, util, s, global_batch, fabric, peak, recompute) -> list[dict]:
    given = inp.model_fields_set
    up, up_note = scale_up_gb_s(gpu)
    a = [
        assume(key="flops_convention", value="6N+attention" if inp.method == "full" else f"{inp.method} FLOPs",
                   note=f"N = {s.n_matmul / 1e9:.2f}B matmul parameters on the active path (layers + output head; "
                   "input embedding lookup excluded); attention 6·L·s·(d_qk+d_v) per token (PaLM appendix B)."),
        assume(key="peak_tflops", value=round(peak / TFLOPS, 1), unit="TFLOPS",
                   note=f"{gpu.name} dense {inp.precision} tensor peak from the GPU catalog."),
    ]
    if inp.mfu is None:
        r = rules()
        a.append(assume(
            key="utilisation", value=round(util.value, 3), note=(
                f"compute-phase utilisation = {util.generation.id} base {util.generation.base} × {inp.precision} "
                f"{util.precision.value} × {inp.method} {util.method.value}; range {util.low:.2f}–{util.high:.2f}. "
                f"{util.generation.note} Calibrated on published runs (tools/data/mfu.yaml, "
                f"{r.free_parameters} free parameters); communication is added separately.")))
        narrow = width_factor(s.hidden, inp.tp)
        if narrow < 1.0:
            a.append(assume(key="gemm_width_factor", value=round(narrow, 3),
                            note=f"hidden {s.hidden} / tp {inp.tp} = {s.hidden // inp.tp} columns per GPU: "
                            + rules().width_note))
        if inp.method == "qlora":
            a.append(assume(key="qlora_overhead", value=round(1 / util.method.value, 2), unit="×",
                                note=util.method.note))
    else:
        a.append(assume(key="mfu", value=inp.mfu, default=False,
                            note="given by the user; treated as end-to-end MFU (communication included)."))
    a += [
        assume(key="global_batch_tokens", value=global_batch, unit="tokens",
                   default="global_batch_tokens" not in given,
                   note="tokens per optimizer step (at least one sequence per data-parallel replica)."),
        assume(key="seq_len", value=inp.seq_len, unit="tokens", default="seq_len" not in given, note=""),
        assume(key="grad_checkpointing", value=recompute, default=inp.grad_checkpointing is None,
                   note="full recompute adds one forward pass to the time: HFU counts it, MFU does not."
                   + (" Default: on for full/LoRA/QLoRA of models of 7B and more (as fit_training), off for "
                      "pretraining (a full run over 50B tokens) and for smaller models." if inp.grad_checkpointing is None
                      else "")),
        assume(key="scale_up_bus_gb_s", value=round(up, 1), unit="GB/s", note=up_note),
        assume(key="comm_overlap", value=inp.comm_overlap, default="comm_overlap" not in given,
                   note="share of the gradient all-reduce hidden behind backward; tensor-parallel collectives "
                   "are not overlapped; pipeline bubbles and expert all-to-all are not modelled."),
    ]
    if inp.n_gpus > inp.gpus_per_node:
        a.append(assume(key="nodes_fabric", value=fabric.id, default="nodes_fabric" not in given,
                            note=f"{fabric.name}: {fabric.node_gb_s():.0f} GB/s per node achieved "
                            f"({fabric.source_title})."))
    if m.generic:
        a.insert(0, assume(key="model_architecture", value=m.name, note=m.notes or ""))
    if m.is_moe:
        a.append(assume(key="moe", value=f"{m.active_b:g}B active of {m.params_b:g}B",
                            note="FLOPs count the active experts only; expert gradients are sharded by expert "
                            "parallelism and not all-reduced across data-parallel replicas."))
    return a


# --- inference speed -------------------------------------------------------------------------------

#: achieved share of spec memory bandwidth in decode, by weight format, for PyTorch-native kernels (gpt-fast's
#: int8/int4 tinygemm dequantise on the fly and reach less). Set from gpt-fast on A100-80GB (README benchmark table).
BANDWIDTH_EFFICIENCY = {"fp32": 0.75, "bf16": 0.75, "fp16": 0.75, "fp8": 0.6, "int8": 0.6, "int4": 0.45, "nf4": 0.45}
#: Marlin (IST-DASLab; vLLM's AWQ/GPTQ int4/int8 kernels): "close to ideal (4x) speedups" over FP16 at small
#: batch, i.e. it streams quantised weights at the 16-bit kernels' achieved share of bandwidth
MARLIN_EFFICIENCY = {"int8": 0.75, "int4": 0.75}
MARLIN_FAMILIES = ("ampere", "ada", "hopper", "blackwell")
#: fixed time per decode step beyond weight/KV reads (kernel launches, norms, sampling), seconds
STEP_OVERHEAD_S = 1.2e-3
#: latency of one small all-reduce inside a node (NCCL, NVLink), seconds
ALLREDUCE_LATENCY_S = 15e-6
#: a weight-only quantised format leaves embeddings and the LM head in 16-bit
QUANT_BYTES = {"int8": 1.0, "fp8": 1.0, "int4": 0.5 + 0.25 / 8, "nf4": 0.5 + 0.127 / 8}


def _decode_weight_bytes(m: ModelSpec, s: Shape, precision: str, batch: int) -> tuple[float, float]:
    """(bytes of weights read per decode step, matmul parameters used per token).

    MoE: each token uses its top-k experts; a batch of b tokens touches E·(1 − (1 − k/E)^b) distinct
    experts per MoE layer (uniform routing), and every touched expert is read once.
    """
    p = param_count(m)
    body = s.n_matmul - s.n_head
    if m.is_moe:
        e, k = m.n_experts or 1, m.experts_per_token or 1
        expert = mlp_params(m.hidden_size, m.moe_ffn_size or m.ffn_size, m.mlp)
        touched = e * (1 - (1 - k / e) ** batch)
        body += p.n_moe_layers * (touched - k) * expert
    if precision in QUANT_BYTES:
        return body * QUANT_BYTES[precision] + s.n_head * 2.0, s.n_matmul
    return (body + s.n_head) * BYTES_PER_PARAM[precision], s.n_matmul


def _kernel(asked: str, precision: str, gpu: GpuSpec) -> str:
    """The int4/int8 kernel family in use: as asked, else Marlin where vLLM runs it (NVIDIA Ampere and newer)."""
    if precision not in MARLIN_EFFICIENCY:
        return "none" if precision != "nf4" else "torch"
    if asked != "auto":
        return asked
    return "marlin" if gpu.vendor == "nvidia" and gpu.family.lower() in MARLIN_FAMILIES else "torch"


def inference_speed(inp: InferenceSpeedInput) -> InferenceSpeedOutput:
    """Decode tokens/s per sequence and in total, prefill tokens/s and time to first token.

    Decode is memory-bound at small batch (weights + KV read per step at an achieved share of the
    spec bandwidth) and compute-bound at large batch (2·N_active FLOPs per token); prefill is compute-bound.
    """
    m, gpu = get_model(inp.model), get_gpu(inp.gpu)
    tp = inp.n_gpus
    check_parallel(m, tp, 1)
    if not gpu.bandwidth_gb_s:
        raise Unsupported(f"{gpu.name} has no published memory bandwidth.", f"{gpu.name} 没有公开的显存带宽。",
                           field="gpu")
    precision = inp.precision or default_weight_precision(m, gpu)  # the same default as fit_inference
    compute_precision = "bf16" if precision in ("int8", "int4", "nf4", "fp32") else precision
    peak = _peak(gpu, compute_precision)
    s = shape(m)
    kernel = _kernel(inp.kernel, precision, gpu)
    eff = inp.bandwidth_efficiency or (MARLIN_EFFICIENCY[precision] if kernel == "marlin" else
                                       BANDWIDTH_EFFICIENCY[precision])
    bw = gpu.bandwidth_gb_s * GB * eff
    prompt = inp.prompt_len or inp.context_len
    b, ctx = inp.batch, inp.context_len

    w_bytes, n_active = _decode_weight_bytes(m, s, precision, b)
    kv = kv_bytes_per_token(m, BYTES_PER_PARAM[inp.kv_precision]) * b * ctx
    step_bytes = (w_bytes + kv) / tp
    t_mem = step_bytes / bw
    attn_flops = 2 * s.layers * ctx * (s.qk_dim + s.v_dim)  # per token: QKᵀ and A·V over the context
    t_flops = b * (2 * n_active + attn_flops) / tp / (peak * inp.compute_efficiency)
    up, _ = scale_up_gb_s(gpu)
    t_tp = 0.0
    if tp > 1:  # two all-reduces of b × hidden activations per layer
        t_tp = 2 * s.layers * (ALLREDUCE_LATENCY_S + ring_allreduce_s(b * s.hidden * 2, tp, up))
    t_step = max(t_mem, t_flops) + STEP_OVERHEAD_S + t_tp
    bound = "memory" if t_mem >= t_flops else "compute"

    prefill_flops = 2 * n_active + 2 * s.layers * (prompt / 2) * (s.qk_dim + s.v_dim)  # causal: half the context
    prefill_tps = peak * inp.compute_efficiency * tp / prefill_flops
    t_prefill_tp = 2 * s.layers * (ALLREDUCE_LATENCY_S + ring_allreduce_s(prompt * s.hidden * 2, tp, up)) if tp > 1 else 0
    ttft = prompt / prefill_tps + t_prefill_tp + t_step

    given = inp.model_fields_set
    assumptions = [
        assume(key="bandwidth_efficiency", value=eff, default="bandwidth_efficiency" not in given,
                   note=f"achieved share of {gpu.bandwidth_gb_s:g} GB/s; the defaults (16-bit 0.75, 8-bit 0.6, 4-bit 0.45) with "
                   "the per-step overhead reproduce gpt-fast's A100-80GB table (Llama-2-7B bf16 at 330 W: 104.9 tokens/s)."),
        assume(key="kernel", value=kernel, default=inp.kernel == "auto",
               note="weight-only quantised kernel family: marlin = vLLM's AWQ/GPTQ Marlin kernels (near-ideal 4-bit "
               "weight streaming, IST-DASLab/marlin README), torch = gpt-fast/tinygemm (calibrated on gpt-fast's "
               "table); 16-bit and fp8 weights do not use it."),
        assume(key="step_overhead_ms", value=STEP_OVERHEAD_S * 1e3, unit="ms",
                   note="fixed cost per decode step (launches, norms, sampling), fitted to the gpt-fast table."),
        assume(key="compute_efficiency", value=inp.compute_efficiency, default="compute_efficiency" not in given,
                   note=f"share of the dense {compute_precision} peak reached by prefill and large-batch decode."),
        assume(key="prompt_len", value=prompt, unit="tokens", default=inp.prompt_len is None,
                   note="prompt for time to first token; defaults to context_len."),
        assume(key="precision", value=precision, default=inp.precision is None, note="weight precision"),
        assume(key="kv_precision", value=inp.kv_precision, default="kv_precision" not in given,
                   note=f"{kv_bytes_per_token(m, BYTES_PER_PARAM[inp.kv_precision]) / 1e3:.1f} kB per token."),
        assume(key="weights_read", value="active path" if m.is_moe else "all weights",
                   note="input embedding lookup reads one row; 4/8-bit formats keep the LM head in 16-bit"
                   + ("; MoE: experts touched by the batch under uniform routing." if m.is_moe else ".")),
    ]
    if tp > 1:
        assumptions.append(assume(key="tensor_parallel", value=tp,
                                      note=f"weights and KV split {tp} ways; two all-reduces per layer per step "
                                      f"({ALLREDUCE_LATENCY_S * 1e6:.0f} µs latency each + bytes at the NVLink/PCIe rate)."))
    if m.generic:
        assumptions.insert(0, assume(key="model_architecture", value=m.name, note=m.notes or ""))
    return InferenceSpeedOutput(
        model=m.name, gpu=gpu.name, n_gpus=tp, precision=precision, batch=b, context_len=ctx, prompt_len=prompt,
        decode_tokens_per_s=1 / t_step, total_tokens_per_s=b / t_step, tpot_ms=t_step * 1e3,
        prefill_tokens_per_s=prefill_tps, ttft_s=ttft, bound=bound,
        bytes_per_step_gb=step_bytes / GB, achieved_bandwidth_gb_s=bw / GB, assumptions=assumptions,
    )
