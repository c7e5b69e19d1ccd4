"""Training time (`training_time`): wall-clock hours, GPU-hours and MFU of a run, with a low–high range.

Model FLOPs per token are those of `tools.speed.flops`. Time per step = compute (hardware FLOPs at peak × the
calibrated utilisation of `tools.catalog.mfu`) plus the exposed communication of `tools.speed.comm`; MFU is reported end
to end, communication included. Inference speed is in `tools.speed.inference_speed` (re-exported here).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import NamedTuple

from tools.catalog.architecture import check_parallel, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu, get_model
from tools.catalog.mfu import Utilisation, default_utilisation, generation_of, rules, stack_base, width_factor
from tools.catalog.model_spec import ModelSpec
from tools.memo import per_record
from tools.memory.train_breakdown import default_checkpointing
from tools.schemas.common import Assumption, assume
from tools.schemas.speed import TrainingTimeInput, TrainingTimeOutput
from tools.speed import measured
from tools.speed.comm import (
    Fabric,
    Zero3Comm,
    comm_times,
    exposed_dp_s,
    exposed_zero3_s,
    get_fabric,
    scale_up_assumption,
    zero3_assumption,
    zero3_plan,
)
from tools.speed.flops import Shape, lora_params, peak_flops, shape, training_flops_per_token
from tools.speed.inference_speed import inference_speed
from tools.units import TFLOPS

__all__ = ["TrainingHours", "inference_speed", "training_hours", "training_time"]

# --- training time -------------------------------------------------------------------------------

#: a full-parameter run over this many tokens is read as pretraining (checkpointing off unless asked)
PRETRAINING_TOKENS = 50e9

QLORA_NOTE = "QLoRA: 4-bit weights are dequantised before every matmul"


class TrainingHours(NamedTuple):
    """`training_time`'s figures without its answer (assumptions, MFU fields): what `recommend_gpus` reads for
    every card and count it tries."""

    n_gpus: int
    hours: float
    hours_low: float
    hours_high: float
    tokens_per_s: float
    gpu_hours: float
    mfu: float


def training_hours(inp: TrainingTimeInput) -> TrainingHours:
    """The hours of `training_time` for the same input, without building its answer."""
    t = _timing(inp)
    return TrainingHours(
        inp.n_gpus,
        t.hours,
        t.hours_low,
        t.hours_high,
        inp.tokens / (t.hours * 3600),
        t.hours * inp.n_gpus,
        t.flops_step_gpu / (t.peak * t.t_step),
    )


class _Timing(NamedTuple):
    m: ModelSpec
    gpu: GpuSpec
    fabric: Fabric
    shape: Shape
    util: Utilisation
    recompute: bool
    peak: float
    model_fpt: float
    hw_fpt: float
    global_batch: int
    flops_step_gpu: float
    t_step: float
    t_fast: float
    t_slow: float
    exposed: float
    zero3: Zero3Comm | None
    micro_steps: int
    hours: float
    hours_low: float
    hours_high: float


def training_time(inp: TrainingTimeInput) -> TrainingTimeOutput:
    """Wall-clock hours, GPU-hours and MFU of a training or fine-tuning run, with a low–high range.

    Model FLOPs ≈ 6·N·D plus attention (PaLM), LoRA ≈ 4·N·D; utilisation calibrated per GPU generation
    from published runs (tools/data/mfu.yaml); communication (gradient all-reduce, tensor parallel)
    over NVLink/PCIe and the inter-node fabric added on top.
    """
    t = _timing(inp)
    m, gpu, peak, model_fpt, hw_fpt, n = t.m, t.gpu, t.peak, t.model_fpt, t.hw_fpt, inp.n_gpus
    flops_step_gpu, t_step, t_fast, t_slow = t.flops_step_gpu, t.t_step, t.t_fast, t.t_slow
    hours, hours_low, hours_high = t.hours, t.hours_low, t.hours_high
    mfu = flops_step_gpu / (peak * t_step)
    total = model_fpt * inp.tokens
    tokens_s = inp.tokens / (hours * 3600)
    judged = (  # the user's measured speed on this run, in tokens/s, with its MFU and verdict
        measured.training(
            inp.measured, inp.measured_unit, expected_tokens_per_s=tokens_s, step_tokens=t.global_batch,
            seq_len=inp.seq_len, n_gpus=n, flops_per_token=model_fpt, peak_flops=peak,
        )
        if inp.measured is not None and inp.measured_unit is not None
        else {}
    )  # fmt: skip
    return TrainingTimeOutput.trusted(
        model=m.name,
        gpu=gpu.name,
        n_gpus=n,
        tokens=inp.tokens,
        method=inp.method,
        precision=inp.precision,
        flops_per_token=model_fpt,
        total_flops=total,
        hours=hours,
        days=hours / 24,
        gpu_hours=hours * n,
        hours_low=hours_low,
        hours_high=hours_high,
        gpu_hours_low=hours_low * n,
        gpu_hours_high=hours_high * n,
        mfu=mfu,
        mfu_low=flops_step_gpu / (peak * t_slow),
        mfu_high=flops_step_gpu / (peak * t_fast),
        hfu=mfu * hw_fpt / model_fpt,
        tokens_per_s=tokens_s,
        tokens_per_s_per_gpu=tokens_s / n,
        step_tokens=t.global_batch,
        seconds_per_step=t.global_batch / tokens_s,
        **judged,
        comm_share=min(1.0, t.exposed / t_step),
        peak_tflops=peak / TFLOPS,
        assumptions=_training_assumptions(inp, m, gpu, t.util, t.shape, t.global_batch, t.fabric, peak, t.recompute)
        + (
            [zero3_assumption(t.zero3, t.micro_steps, inp.shard_within_node, "zero_stage" not in inp.model_fields_set)]
            if t.zero3
            else []
        ),
    )


def run_hours(inp: TrainingTimeInput) -> float:
    """The run's wall-clock hours exactly as `training_time` reports them, without building its output (for
    planners that search a node count and read only the hours)."""
    return _timing(inp).hours


def _timing(inp: TrainingTimeInput) -> _Timing:
    """Step time at the calibrated utilisation and its low–high band, and the run's hours."""
    m, gpu = get_model(inp.model), get_gpu(inp.gpu)
    check_parallel(m, inp.tp, inp.pp)
    recompute = _checkpointing(inp, m)
    fabric = get_fabric(inp.nodes_fabric)
    peak = peak_flops(gpu, inp.precision)
    s = shape(m)
    model_fpt, hw_fpt, fwd_fpt = training_flops_per_token(
        m,
        inp.method,
        inp.seq_len,
        recompute=recompute,
        lora_rank=inp.lora_rank,
        lora_targets=inp.lora_targets,
        trainable_layers=inp.trainable_layers,
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

    # communication does not depend on the utilisation, only how much of it backward compute hides does
    t_dp, t_tp, _, _ = comm_times(
        gpu=gpu,
        fabric=fabric,
        n_gpus=n,
        gpus_per_node=inp.gpus_per_node,
        tp=tp,
        pp=pp,
        grad_bytes_per_gpu=grad_bytes,
        tokens_per_replica=global_batch / dp,
        hidden=s.hidden,
        layers=s.layers,
        tp_allreduces_per_layer=tp_ars,
    )
    # ZeRO-3 / FSDP: gathers on every micro-step replace the all-reduce (HSDP keeps one across the nodes)
    z3, micro_steps = zero3_plan(inp, gpu, fabric, s.n_sync, grad_bytes, global_batch / dp)
    t_dp = z3.replica_s if z3 else t_dp

    def step(u: float) -> tuple[float, float, float]:
        """(step seconds, exposed comm seconds, compute seconds) per GPU at utilisation u (as `step_comm`)."""
        t_c = hw_fpt * global_batch / (n * peak * u)
        exposed = exposed_dp_s(t_dp, t_c * (1 - fwd_fpt / hw_fpt), inp.comm_overlap) + t_tp
        if z3 is not None:
            exposed += micro_steps * exposed_zero3_s(z3.micro_s, t_c / micro_steps, s.layers / pp)
        return t_c + exposed, exposed, t_c

    util = default_utilisation(gpu, inp.precision, inp.method, inp.framework)
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
    hours = steps * t_step / 3600
    hours_low, hours_high = steps * t_fast / 3600, steps * t_slow / 3600
    return _Timing(
        m,
        gpu,
        fabric,
        s,
        util,
        recompute,
        peak,
        model_fpt,
        hw_fpt,
        global_batch,
        flops_step_gpu,
        t_step,
        t_fast,
        t_slow,
        exposed,
        z3,
        micro_steps,
        hours,
        hours_low,
        hours_high,
    )


def _checkpointing(inp: TrainingTimeInput, m: ModelSpec) -> bool:
    """The user's setting, else fit_training's default; a full run over 50B tokens is read as pretraining (off)."""
    if inp.grad_checkpointing is not None:
        return inp.grad_checkpointing
    if inp.method == "full" and inp.tokens > PRETRAINING_TOKENS:
        return False
    if inp.framework in rules().framework_no_recompute:
        return False
    return default_checkpointing(inp.method, param_count(m).total)


def _training_assumptions(inp, m, gpu, util, s, global_batch, fabric, peak, recompute) -> list[Assumption]:
    """The stated assumptions; each record is built once per distinct content (the notes are long f-strings)."""
    given = inp.model_fields_set
    a = [_flops_assumption(inp.method, s.n_matmul), _peak_assumption(gpu.name, inp.precision, peak)]
    if inp.mfu is None:
        a.append(_utilisation_assumption(util, inp.precision, inp.method))
        narrow = width_factor(s.hidden, inp.tp)
        if narrow < 1.0:
            a.append(_width_assumption(s.hidden, inp.tp, narrow))
        if inp.method == "qlora":
            a.append(assume("qlora_overhead", round(1 / util.method.value, 2), "×", True, util.method.note))
    else:
        a.append(
            assume("mfu", inp.mfu, "", False, "given by the user; treated as end-to-end MFU (communication included).")
        )
    a += [
        assume(
            "global_batch_tokens",
            global_batch,
            "tokens",
            "global_batch_tokens" not in given,
            "tokens per optimizer step (at least one sequence per data-parallel replica).",
        ),
        assume("seq_len", inp.seq_len, "tokens", "seq_len" not in given, ""),
        assume(
            "grad_checkpointing",
            recompute,
            "",
            inp.grad_checkpointing is None,
            _RECOMPUTE_DEFAULT_NOTE if inp.grad_checkpointing is None else _RECOMPUTE_NOTE,
        ),
        scale_up_assumption(gpu, min(inp.n_gpus, inp.gpus_per_node)),
        assume("comm_overlap", inp.comm_overlap, "", "comm_overlap" not in given, _OVERLAP_NOTE),
    ]
    if inp.framework != "auto":
        stack = (rules().framework_fp8 or {}).get(inp.framework)
        own = stack_base(inp.framework, generation_of(gpu).id)
        a.append(
            assume(
                "framework",
                inp.framework,
                "",
                False,
                (f"Base factor {own.value:g}: {own.note} " if own else "")
                + (f"FP8 factor {stack.value:g}: {stack.note}" if stack and inp.precision == "fp8" else "")
                + (" No full recompute by default." if inp.framework in rules().framework_no_recompute else ""),
            )
        )
    if inp.n_gpus > inp.gpus_per_node:
        a.append(_fabric_assumption(fabric, "nodes_fabric" not in given))
    if m.generic:
        a.insert(0, assume("model_architecture", m.name, "", True, m.notes or ""))
    if m.is_moe:
        a.append(_moe_assumption(m))
    return a


_RECOMPUTE_NOTE = "full recompute adds one forward pass to the time: HFU counts it, MFU does not."
_RECOMPUTE_DEFAULT_NOTE = _RECOMPUTE_NOTE + (
    " Default: on for full/LoRA/QLoRA of models of 7B and more (as fit_training), off for "
    "pretraining (a full run over 50B tokens), for smaller models and on Megatron and torchtitan (their defaults)."
)
_OVERLAP_NOTE = (
    "share of the gradient all-reduce hidden behind backward; tensor-parallel collectives "
    "are not overlapped; pipeline bubbles and expert all-to-all are not modelled."
)


@functools.lru_cache(maxsize=1024)
def _flops_assumption(method: str, n_matmul: float) -> Assumption:
    return assume(
        key="flops_convention",
        value="6N+attention" if method == "full" else f"{method} FLOPs",
        note=f"N = {n_matmul / 1e9:.2f}B matmul parameters on the active path (layers + output head; "
        "input embedding lookup excluded); attention 6·L·s·(d_qk+d_v) per token (PaLM appendix B).",
    )


@functools.lru_cache(maxsize=1024)
def _peak_assumption(gpu_name: str, precision: str, peak: float) -> Assumption:
    return assume(
        key="peak_tflops",
        value=round(peak / TFLOPS, 1),
        unit="TFLOPS",
        note=f"{gpu_name} dense {precision} tensor peak from the GPU catalog.",
    )


@functools.lru_cache(maxsize=1024)
def _utilisation_assumption(util: Utilisation, precision: str, method: str) -> Assumption:
    return assume(
        key="utilisation",
        value=round(util.value, 3),
        note=(
            f"compute-phase utilisation = {util.generation.id} base {util.generation.base} × {precision} "
            f"{util.precision.value} × {method} {util.method.value}; range {util.low:.2f}–{util.high:.2f}. "
            f"{util.generation.note} Calibrated on published runs (tools/data/mfu.yaml, "
            f"{rules().free_parameters} free parameters); communication is added separately."
        ),
    )


@functools.lru_cache(maxsize=1024)
def _width_assumption(hidden: int, tp: int, narrow: float) -> Assumption:
    return assume(
        key="gemm_width_factor",
        value=round(narrow, 3),
        note=f"hidden {hidden} / tp {tp} = {hidden // tp} columns per GPU: " + rules().width_note,
    )


@functools.lru_cache(maxsize=256)
def _fabric_assumption(fabric: Fabric, default: bool) -> Assumption:
    return assume(
        key="nodes_fabric",
        value=fabric.id,
        default=default,
        note=f"{fabric.name}: {fabric.node_gb_s():.0f} GB/s per node achieved ({fabric.source_title}).",
    )


@per_record
def _moe_assumption(m: ModelSpec) -> Assumption:
    return assume(
        key="moe",
        value=f"{m.active_b:g}B active of {m.params_b:g}B",
        note="FLOPs count the active experts only; expert gradients are sharded by expert "
        "parallelism and not all-reduced across data-parallel replicas.",
    )
