"""Inference speed (`inference_speed`): decode tokens/s, prefill tokens/s and time to first token.

A decode step reads every weight on the active path once per GPU plus the KV cache of the batch; it takes
max(bytes / achieved bandwidth, FLOPs / achieved compute) plus a fixed per-step overhead and, with tensor
parallelism, two all-reduces per layer. Prefill is compute-bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

from tools.catalog.architecture import check_parallel, kv_bytes_per_sequence, kv_bytes_per_token, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu, get_model
from tools.catalog.model_spec import ModelSpec
from tools.errors import Unsupported
from tools.memory.capacity import capacity_bytes
from tools.memory.fit_inference import DEFAULT_USABLE_FRACTION, default_weight_precision, max_batch_that_fits
from tools.schemas.common import Assumption, assume
from tools.schemas.speed import InferenceSpeedInput, InferenceSpeedOutput
from tools.speed.comm import ring_allreduce_s, scale_up_gb_s
from tools.speed.decode_terms import (
    ALLREDUCE_LATENCY_S,
    BANDWIDTH_EFFICIENCY,
    EAGER_LAYER_HOST_S,
    MARLIN_EFFICIENCY,
    MLA_LAYER_S,
    MOE_LAYER_S,
    PER_HEAD_KV_REREAD,
    PREFILL_EFFICIENCY,
    STEP_OVERHEAD_S,
    decode_weight_bytes,
    kernel_family,
    moe_step_s,
)
from tools.speed.flops import Shape, peak_flops, shape
from tools.units import BYTES_PER_PARAM, GB


class _Fixed(NamedTuple):
    """What one inference_speed input gives before its batch: the same for every batch a planner tries."""

    m: ModelSpec
    gpu: GpuSpec
    s: Shape
    tp: int
    precision: str
    compute_precision: str
    kernel: str
    eff: float
    bw: float
    prompt: int
    ctx: int
    fits: int
    kv_per_sequence: float
    flops_per_token: float  # 2·N_active + attention over the context, per decoded token
    compute_s: float  # peak × compute efficiency
    up: float
    t_moe: float
    prefill_tps: float
    prefill_eff: float
    prefill_s: float  # prompt / prefill rate + the prefill's tensor-parallel all-reduces
    dense_bytes: float | None  # a dense model's weight bytes per step (None for MoE: they grow with the batch)
    output_len: int | None  # continuous batching: other requests' prefills counted in the time per token
    t_host: float  # eager decode: the host's launch time per step (0 with captured graphs)


class _Speed(NamedTuple):
    """The figures of one inference_speed call, before its output and assumptions are built: the input's fixed
    figures and what its batch makes of them."""

    fixed: _Fixed
    b: int  # the batch decoded at once (capped at what fits)
    step_bytes: float
    t_step: float
    bound: str
    ttft: float


def step_times(inp: InferenceSpeedInput) -> Callable[[int], tuple[float, float]]:
    """batch -> (tpot_ms, ttft_s) exactly as `inference_speed` reports them for `inp` at that batch, without
    building its output: for planners that search a replica's batch and read only these two figures (what does
    not depend on the batch is worked out once)."""
    fixed = _fixed(inp)

    def at(batch: int) -> tuple[float, float]:
        sp = _at(fixed, batch)
        return sp.t_step * 1e3, sp.ttft

    return at


def _speed(inp: InferenceSpeedInput) -> _Speed:
    return _at(_fixed(inp), inp.batch)


def _fixed(inp: InferenceSpeedInput) -> _Fixed:
    m, gpu = get_model(inp.model), get_gpu(inp.gpu)
    tp = inp.n_gpus
    check_parallel(m, tp, 1)
    if not gpu.bandwidth_gb_s:
        raise Unsupported(
            f"{gpu.name} has no published memory bandwidth.", f"{gpu.name} 没有公开的显存带宽。", field="gpu"
        )
    precision = inp.precision or default_weight_precision(m, gpu)  # the same default as fit_inference
    compute_precision = "bf16" if precision in ("int8", "int4", "nf4", "fp32") else precision
    peak = peak_flops(gpu, compute_precision)
    s = shape(m)
    kernel = kernel_family(inp.kernel, precision, gpu)
    eff = inp.bandwidth_efficiency or (
        (MARLIN_EFFICIENCY[precision] if kernel == "marlin" else BANDWIDTH_EFFICIENCY[precision])
        * (gpu.decode_bandwidth_factor or 1.0)
    )
    bw = gpu.bandwidth_gb_s * GB * eff
    prompt = inp.prompt_len or inp.context_len
    ctx = inp.context_len
    kv_prec = inp.kv_precision
    fits = max_batch_that_fits(m, gpu, precision, kv_prec, tp, ctx)
    kv_seq = kv_bytes_per_sequence(m, ctx, BYTES_PER_PARAM[inp.kv_precision])  # windowed layers read their window
    if inp.attention_kernel == "per-head" and m.attention in ("GQA", "MQA"):
        kv_seq *= 1 + (m.n_heads / m.n_kv_heads - 1) * PER_HEAD_KV_REREAD
    attn_flops = 2 * s.layers * ctx * (s.qk_dim + s.v_dim)  # per token: QKᵀ and A·V over the context
    up, _ = scale_up_gb_s(gpu)
    t_moe = moe_step_s(m)
    n_active = s.n_matmul  # the matmul parameters a token uses (decode_weight_bytes)
    prefill_flops = 2 * n_active + 2 * s.layers * (prompt / 2) * (s.qk_dim + s.v_dim)  # causal: half the context
    given = inp.model_fields_set
    if inp.prefill_efficiency is not None:
        prefill_eff = inp.prefill_efficiency
    elif "compute_efficiency" in given:
        prefill_eff = inp.compute_efficiency
    else:
        prefill_eff = PREFILL_EFFICIENCY["fp8" if compute_precision == "fp8" else "16-bit"]
    prefill_tps = peak * prefill_eff * tp / prefill_flops
    t_prefill_tp = (
        2 * s.layers * (ALLREDUCE_LATENCY_S + ring_allreduce_s(prompt * s.hidden * 2, tp, up)) if tp > 1 else 0
    )
    dense = None if m.is_moe else decode_weight_bytes(m, s, precision, 1)[0]
    return _Fixed(m, gpu, s, tp, precision, compute_precision, kernel, eff, bw, prompt, ctx, fits, kv_seq,
                  2 * n_active + attn_flops, peak * inp.compute_efficiency, up, t_moe, prefill_tps, prefill_eff,
                  prompt / prefill_tps + t_prefill_tp, dense, inp.output_len,
                  s.layers * EAGER_LAYER_HOST_S if inp.eager else 0.0)  # fmt: skip


def _at(f: _Fixed, batch: int) -> _Speed:
    """The decode step and first token at `batch` sequences."""
    m, s, tp, precision, bw, fits, up, dense = f.m, f.s, f.tp, f.precision, f.bw, f.fits, f.up, f.dense_bytes
    # a batch that does not fit in memory is never decoded at once: the engine runs the batch that fits
    b = min(batch, fits) if fits >= 1 else batch
    w_bytes = dense if dense is not None else decode_weight_bytes(m, s, precision, b)[0]
    kv = f.kv_per_sequence * b
    step_bytes = (w_bytes + kv) / tp
    t_mem = step_bytes / bw
    t_flops = b * f.flops_per_token / tp / f.compute_s
    t_tp = 0.0
    if tp > 1:  # two all-reduces of b × hidden activations per layer
        t_tp = 2 * s.layers * (ALLREDUCE_LATENCY_S + ring_allreduce_s(b * s.hidden * 2, tp, up))
    # eager decode: the GPU's work for the step overlaps the host launching it; the longer of the two sets the pace
    t_step = max(max(t_mem, t_flops) + STEP_OVERHEAD_S + t_tp + f.t_moe, f.t_host)
    bound = "memory" if t_mem >= t_flops else "compute"
    ttft = f.prefill_s + t_step
    if f.output_len and b > 1:
        # continuous batching: in the output_len steps of one request, each of the b - 1 others is replaced once, and
        # its prompt's prefill runs between (or chunked into) the decode steps every running request waits on
        t_step += (b - 1) * f.prefill_s / f.output_len
    return _Speed(f, b, step_bytes, t_step, bound, ttft)


@functools.lru_cache(maxsize=8192, typed=True)  # typed, as `assume`: 1, 1.0 and True stay different values
def _stated(
    bw_gb_s: float, eff: float, bw_default: bool, kernel: str, kernel_default: bool, ce: float, ce_default: bool,
    compute_precision: str, prefill_eff: float, pe_default: bool, prompt: int, prompt_default: bool, precision: str,
    precision_default: bool, kv_precision: str, kv_default: bool, kv_bytes: float, moe: bool,
) -> tuple[Assumption, ...]:  # fmt: skip
    """The assumptions every inference_speed answer states, once per distinct content (the notes are formatted
    from these values alone)."""
    return (
        assume(
            key="bandwidth_efficiency",
            value=eff,
            default=bw_default,
            note=f"achieved share of {bw_gb_s:g} GB/s; the defaults (16-bit 0.75, 8-bit 0.6, 4-bit 0.45) with "
            "the per-step overhead reproduce gpt-fast's A100-80GB table (Llama-2-7B bf16 at 330 W: 104.9 tokens/s).",
        ),
        assume(
            key="kernel",
            value=kernel,
            default=kernel_default,
            note="weight-only quantised kernel family: marlin = vLLM's AWQ/GPTQ Marlin kernels (near-ideal 4-bit "
            "weight streaming, IST-DASLab/marlin README), torch = gpt-fast/tinygemm (calibrated on gpt-fast's "
            "table); 16-bit and fp8 weights do not use it.",
        ),
        assume(
            key="step_overhead_ms",
            value=STEP_OVERHEAD_S * 1e3,
            unit="ms",
            note="fixed cost per decode step (launches, norms, sampling), fitted to the gpt-fast table.",
        ),
        assume(
            key="compute_efficiency",
            value=ce,
            default=ce_default,
            note=f"share of the dense {compute_precision} peak reached by large-batch decode.",
        ),
        assume(
            key="prefill_efficiency",
            value=prefill_eff,
            default=pe_default,
            note=f"share of the dense {compute_precision} peak reached by prefill (large GEMMs over the prompt); "
            f"the defaults (16-bit {PREFILL_EFFICIENCY['16-bit']:g}, fp8 {PREFILL_EFFICIENCY['fp8']:g} of the FP8 "
            "peak) are set on TensorRT-LLM and NIM first-token latencies.",
        ),
        assume(
            key="prompt_len",
            value=prompt,
            unit="tokens",
            default=prompt_default,
            note="prompt for time to first token; defaults to context_len.",
        ),
        assume(key="precision", value=precision, default=precision_default, note="weight precision"),
        assume(key="kv_precision", value=kv_precision, default=kv_default, note=f"{kv_bytes / 1e3:.1f} kB per token."),
        assume(
            key="weights_read",
            value="active path" if moe else "all weights",
            note="input embedding lookup reads one row; 4/8-bit formats keep the LM head in 16-bit"
            + ("; MoE: experts touched by the batch under uniform routing." if moe else "."),
        ),
    )


def inference_speed(inp: InferenceSpeedInput) -> InferenceSpeedOutput:
    """Decode tokens/s per sequence and in total, prefill tokens/s and time to first token.

    Decode is memory-bound at small batch (weights + KV read per step at an achieved share of the
    spec bandwidth) and compute-bound at large batch (2·N_active FLOPs per token); prefill is compute-bound.
    """
    f, b, step_bytes, t_step, bound, ttft = _speed(inp)
    m, gpu, tp, precision, compute_precision, kernel, eff, bw = f.m, f.gpu, f.tp, f.precision, f.compute_precision, \
        f.kernel, f.eff, f.bw  # fmt: skip
    prompt, ctx, fits, t_moe, prefill_tps, prefill_eff = f.prompt, f.ctx, f.fits, f.t_moe, f.prefill_tps, f.prefill_eff
    given = inp.model_fields_set
    assumptions = list(
        _stated(gpu.bandwidth_gb_s, eff, "bandwidth_efficiency" not in given, kernel, inp.kernel == "auto",
                inp.compute_efficiency, "compute_efficiency" not in given, compute_precision, prefill_eff,
                inp.prefill_efficiency is None, prompt, inp.prompt_len is None, precision, inp.precision is None,
                inp.kv_precision, "kv_precision" not in given, kv_bytes_per_token(m, BYTES_PER_PARAM[inp.kv_precision]),
                m.is_moe)
    )  # fmt: skip
    if t_moe:
        parts = []
        if m.is_moe:
            parts.append(
                f"{param_count(m).n_moe_layers} MoE layers × {MOE_LAYER_S * 1e6:.0f} µs (router, dispatch, experts)"
            )
        if m.attention == "MLA":
            parts.append(f"{m.n_layers} MLA layers × {MLA_LAYER_S * 1e6:.0f} µs (latent projections and attention)")
        assumptions.append(
            assume(
                key="moe_step_ms",
                value=round(t_moe * 1e3, 2),
                unit="ms",
                note="; ".join(parts) + " per decode step, set on published DeepSeek, Qwen3 MoE and Mixtral decode "
                "speeds.",
            )
        )
    if b < inp.batch:
        assumptions.append(
            assume(
                key="batch",
                value=b,
                default=False,
                note=f"capped at the {b} sequences of {ctx} tokens that fit in memory (fit_inference, "
                f"{DEFAULT_USABLE_FRACTION:.0%} of {capacity_bytes(gpu) / GB:.1f} GB per GPU); the {inp.batch} asked "
                "for would queue, not decode together.",
            )
        )
    elif fits == 0:
        assumptions.append(
            assume(
                key="memory",
                value="does not fit",
                default=False,
                note=f"{m.name} at {precision} with {ctx}-token context does not fit on {tp} × {gpu.name} "
                "(fit_inference); the speed is what it would reach with enough memory.",
            )
        )
    if tp > 1:
        assumptions.append(
            assume(
                key="tensor_parallel",
                value=tp,
                note=f"weights and KV split {tp} ways; two all-reduces per layer per step "
                f"({ALLREDUCE_LATENCY_S * 1e6:.0f} µs latency each + bytes at the NVLink/PCIe rate).",
            )
        )
    if inp.attention_kernel == "per-head" and m.attention in ("GQA", "MQA"):
        group = m.n_heads // m.n_kv_heads
        assumptions.append(
            assume(
                key="attention_kernel",
                value="per-head",
                default=False,
                note=f"each of the {group} query heads of a group loads its KV head again; with "
                f"{PER_HEAD_KV_REREAD:.0%} of those loads reaching HBM the KV read per step is "
                f"{1 + (group - 1) * PER_HEAD_KV_REREAD:g}x that of a grouped kernel.",
            )
        )
    if inp.eager:
        assumptions.append(
            assume(
                key="eager",
                value=True,
                default=False,
                note=f"eager PyTorch decode (no CUDA graphs): the host launches {f.s.layers} layers × "
                f"{EAGER_LAYER_HOST_S * 1e3:g} ms of kernels per step, and the step lasts the longer of that and the "
                "GPU's work (set on LitGPT's plain generate timings, A100).",
            )
        )
    if inp.output_len and b > 1:
        assumptions.append(
            assume(
                key="output_len",
                value=inp.output_len,
                unit="tokens",
                note=f"continuous batching: the other {b - 1} requests' {prompt}-token prefills, one each per "
                f"{inp.output_len} output tokens, run among the decode steps and are counted in the time per token.",
            )
        )
    if m.generic:
        assumptions.insert(0, assume(key="model_architecture", value=m.name, note=m.notes or ""))
    return InferenceSpeedOutput(
        model=m.name,
        gpu=gpu.name,
        n_gpus=tp,
        precision=precision,
        batch=b,
        context_len=ctx,
        prompt_len=prompt,
        decode_tokens_per_s=1 / t_step,
        total_tokens_per_s=b / t_step,
        tpot_ms=t_step * 1e3,
        prefill_tokens_per_s=prefill_tps,
        ttft_s=ttft,
        bound=bound,
        bytes_per_step_gb=step_bytes / GB,
        achieved_bandwidth_gb_s=bw / GB,
        batch_requested=inp.batch if b < inp.batch else None,
        max_batch_that_fits=fits,
        assumptions=assumptions,
    )
