"""GPU memory to serve a model: weights by precision, KV cache, workspace; min GPUs, max batch and context.

Conventions shared with training (`tools.memory.capacity`): usable memory is a fraction of what the driver
reports; a CUDA context per process; NCCL buffers once several GPUs talk. 4-bit formats keep the
embeddings and the output head in 16-bit; int4 adds group-128 scales (AWQ/GPTQ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tools.catalog.architecture import ParamCount, expert_format_delta, kv_layout, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu, get_model
from tools.catalog.model_spec import ModelSpec
from tools.errors import Unsupported
from tools.memory.capacity import (
    GPUS_PER_NODE,
    MAX_COUNT,
    NCCL_BUFFERS_BYTES,
    capacity_assumption,
    capacity_bytes,
    round_count,
    shared_card,
    usable_gib,
)
from tools.memory.hybrid import default_host_bandwidth, hybrid_rows
from tools.memory.layout_notes import expert_format_note, layout_assumptions
from tools.memory.search import largest as _largest
from tools.memory.search import root as _root
from tools.memory.serving_host import host_ram_fields
from tools.memory.verdict import convention_assumption, judge
from tools.schemas.common import assume
from tools.schemas.memory import FitInferenceInput, FitInferenceOutput
from tools.units import BYTES_PER_PARAM, GB, INT4_GROUP_BYTES, NF4_BYTES

PREFILL_CHUNK_TOKENS = 8192  # tokens per scheduler step (vLLM chunked prefill budget)
#: an engine's start-up profile (vLLM V1 `vllm serve`, vllm/engine/arg_utils.py batch defaults): the scheduler's
#: token budget (max_num_batched_tokens) and its sequences (max_num_seqs, the dummy sampling pass, whose fp32 logits
#: over the whole vocabulary are gathered on every tensor-parallel rank). Cards of 70 GiB or more other than the
#: A100 get 8,192 tokens and 1,024 sequences; the others 2,048 and 256.
ENGINE_BUDGET_LARGE, ENGINE_BUDGET_SMALL = (8192, 1024), (2048, 256)
LARGE_CARD_BYTES = 70 * 2**30
#: live 16-bit tensors per token at the peak of one layer's forward (the MLP): three hidden-size tensors (residual,
#: normed input, output) and three ffn-size ones (gate and up outputs, their product). Under tensor parallelism the
#: ffn-size ones are split over the ranks and the hidden-size ones are not: every rank holds the whole residual
#: stream. Golden: vLLM issue 10517's profile (Llama-3.1-8B, RTX 3090, 20,000 profiled tokens: peak 17.06 GiB less
#: 14.99 GiB of weights = 2.07 GiB of activations).
HIDDEN_COPIES = FFN_COPIES = 3
#: reserved / live bytes of a KV cache that grows a token at a time (transformers' DynamicCache concatenates each
#: step): every step asks the caching allocator for a block one token larger than the one it frees, so the freed
#: blocks are not reused and about twice the live cache stays reserved. Engines preallocate a paged cache (1).
GROWING_KV_RESERVE = 2.0
#: FitInferenceInput's defaults, read from the schema so the two calculators cannot drift apart
DEFAULT_USABLE_FRACTION = FitInferenceInput.model_fields["usable_fraction"].default
DEFAULT_CONTEXT_GB = FitInferenceInput.model_fields["cuda_context_gb"].default


def _weight_bytes(model: ModelSpec, p: ParamCount, precision: str) -> float:
    """Weights at a precision; 4-bit formats keep embeddings and the head in 16-bit; routed experts published in
    their own format (gpt-oss's MXFP4) stay in it at the published precision (`expert_format_delta`)."""
    return _uniform_weight_bytes(p, precision) + expert_format_delta(model, p, precision)


def _uniform_weight_bytes(p: ParamCount, precision: str) -> float:
    if precision == "nf4":
        return (p.total - p.embedding) * NF4_BYTES + p.embedding * 2.0
    if precision == "int4":
        return (p.total - p.embedding) * INT4_GROUP_BYTES + p.embedding * 2.0
    if precision == "int8":
        return (p.total - p.embedding) * 1.0 + p.embedding * 2.0
    return p.total * BYTES_PER_PARAM[precision]


def _split(model: ModelSpec, n: int) -> tuple[int, int]:
    """Tensor × pipeline split for n GPUs: the largest tp ≤ 8 dividing both n and the heads."""
    tp = 1
    for t in range(1, min(n, GPUS_PER_NODE) + 1):
        if n % t == 0 and model.n_heads % t == 0:
            tp = t
    return tp, n // tp


@dataclass(frozen=True)
class _Serving:
    """Per-GPU bytes to serve one replica, as cheap arithmetic in (GPUs, batch, context)."""

    model: ModelSpec
    weights: float  # all weights, bytes
    kv_tok: float  # KV bytes per token of the full-attention layers (every token of the context)
    act_rep: float  # live activation bytes per token of one layer that every tensor-parallel rank holds whole
    act_split: float  # ... and those split over the ranks
    logit_seq: float  # fp32 logits bytes per sequence (one position)
    context: float
    #: an engine (vLLM, SGLang, ...) reserves its start-up profile whatever the request: one scheduler budget of
    #: activations and the sampler's logits for its sequences (`engine_budget`); transformers' generate holds what
    #: the request puts through (the prompt, the batch)
    engine: bool = True
    profile_tokens: int = ENGINE_BUDGET_SMALL[0]
    sampler_seqs: int = ENGINE_BUDGET_SMALL[1]
    kv_win: float = 0.0  # KV bytes per token of the windowed layers, up to `window` tokens
    window: int = 0
    kv_state: float = 0.0  # linear-attention state bytes per sequence, whatever the context

    def kv_seq(self, ctx: int) -> float:
        """KV-cache bytes of one sequence of `ctx` tokens, all layers."""
        return self.kv_tok * ctx + self.kv_win * min(ctx, self.window) + self.kv_state

    def _act_logit(self, n: int) -> tuple[float, float]:
        """Activation bytes per prefill token and logits bytes per sampled sequence on one of n GPUs."""
        tp = _split(self.model, n)[0]
        return self.act_rep + self.act_split / tp, self.logit_seq / (1 if self.engine else tp)

    def reserve(self, n: int) -> float:
        """An engine's start-up reserve on one of n GPUs: one prefill chunk of activations + the sampler's logits."""
        act, logit = self._act_logit(n)
        return act * self.profile_tokens + logit * self.sampler_seqs

    def parts(self, n: int, batch: int, ctx: int) -> dict[str, float]:
        act, logit = self._act_logit(n)
        chunk = PREFILL_CHUNK_TOKENS
        return {
            "weights": self.weights / n,
            "kv_cache": self.kv_seq(ctx) * batch / n,
            "activations": act * (self.profile_tokens if self.engine else min(batch * ctx, chunk)),
            "logits": logit * (self.sampler_seqs if self.engine else min(batch, chunk)),
            "cuda_context": self.context,
            "comm_buffers": NCCL_BUFFERS_BYTES if n > 1 else 0.0,
        }

    def need(self, n: int, batch: int, ctx: int) -> float:
        return sum(self.parts(n, batch, ctx).values())

    def need_on(self, n: int):
        """need(batch, ctx) on n GPUs as a closure with the constants folded (for the searches)."""
        fixed = self.weights / n + self.context + (NCCL_BUFFERS_BYTES if n > 1 else 0.0)
        seq = self.kv_seq
        if self.engine:
            fixed += self.reserve(n)
            return lambda b, s: fixed + seq(s) * b / n
        act, logit = self._act_logit(n)
        chunk = PREFILL_CHUNK_TOKENS
        return lambda b, s: fixed + seq(s) * b / n + act * min(b * s, chunk) + logit * min(b, chunk)

    def max_batch(self, n: int, ctx: int, usable: float, cap: int = 1 << 20) -> int:
        """The most sequences of `ctx` tokens that fit on n GPUs (0: not even one)."""
        need = self.need_on(n)
        kv, chunk = self.kv_seq(ctx) / n, PREFILL_CHUNK_TOKENS
        act, logit = self._act_logit(n)
        if self.engine:  # need(b) is linear: the reserve is fixed
            lines: tuple[tuple[float, float], ...] = ((0.0, kv),)
        else:  # need(b) is a sum of min(linear, constant) terms: concave, so b* is the largest root over its lines
            lines = (
                (0.0, kv + act * ctx + logit),
                (logit * chunk, kv + act * ctx),
                (act * chunk, kv + logit),
                (act * chunk + logit * chunk, kv),
            )
        return _largest(lambda b: need(b, ctx) <= usable, cap, _root(lines, usable - need(0, ctx)))

    def max_context(self, n: int, batch: int, usable: float, cap: int = 1 << 24) -> int:
        """The longest context at which `batch` sequences fit on n GPUs (0: not even one token)."""
        need = self.need_on(n)
        kv = (self.kv_tok + self.kv_win) / n * batch  # the slope below the window (a guess)
        act = self._act_logit(n)[0]
        lines = ((0.0, kv),) if self.engine else ((0.0, kv + act * batch), (act * PREFILL_CHUNK_TOKENS, kv))
        return _largest(lambda s: need(batch, s) <= usable, cap, _root(lines, usable - need(batch, 0)))

    def min_gpus(self, batch: int, ctx: int, usable: float) -> int | None:
        """1, 2, 4, 8, then whole nodes: per GPU = fixed + (weights + KV) / n beyond one node."""
        for n in (1, 2, 4, 8):
            if self.need(n, batch, ctx) <= usable:
                return n
        parts = self.parts(GPUS_PER_NODE, batch, ctx)  # tp is settled at 8 GPUs per node
        shard = (parts["weights"] + parts["kv_cache"]) * GPUS_PER_NODE
        fixed = sum(parts.values()) - parts["weights"] - parts["kv_cache"]
        if fixed >= usable:
            return None
        n = round_count(math.ceil(shard / (usable - fixed)))
        return n if n <= MAX_COUNT else None


def engine_budget(gpu: GpuSpec) -> tuple[int, int]:
    """(profiled tokens, sampled sequences) of an engine's start-up pass on this card (vLLM's batch defaults)."""
    hit = _BUDGET.get(gpu.id)
    if hit is None:
        large = capacity_bytes(gpu) >= LARGE_CARD_BYTES and "a100" not in gpu.name.lower()
        hit = _BUDGET[gpu.id] = ENGINE_BUDGET_LARGE if large else ENGINE_BUDGET_SMALL
    return hit


_BUDGET: dict[str, tuple[int, int]] = {}


def _serving(
    model: ModelSpec, precision: str, kv_bytes: float, context_gb: float, gpu: GpuSpec, engine: bool = True
) -> _Serving:
    f = (model.moe_ffn_size or model.ffn_size) * ((model.experts_per_token or 1) if model.is_moe else 1)
    kv = kv_layout(model)
    tokens, seqs = engine_budget(gpu)
    return _Serving(
        model=model,
        weights=_weight_bytes(model, param_count(model), precision),
        kv_tok=kv.full * kv_bytes,
        kv_win=kv.windowed * kv_bytes,
        window=kv.window,
        kv_state=kv.state * kv_bytes,
        act_rep=HIDDEN_COPIES * model.hidden_size * 2.0,  # 16-bit
        act_split=FFN_COPIES * f * 2.0,
        logit_seq=model.vocab_size * 4.0,
        context=context_gb * GB,
        engine=engine,
        profile_tokens=tokens,
        sampler_seqs=seqs,
    )


def max_batch_that_fits(
    model: ModelSpec, gpu: GpuSpec, precision: str, kv_precision: str, n_gpus: int, context_len: int
) -> int:
    """fit_inference's max_batch with its defaults (usable fraction 0.9, 1 GB CUDA context): the most sequences
    of `context_len` tokens that fit on `n_gpus` (0: not one). inference_speed caps its batch at this (memoised by
    record id: recommend_gpus asks it for every card and count it tries; hashing whole records costs more)."""
    key = (model.id, model.n_layers, gpu.id, precision, kv_precision, n_gpus, context_len)
    hit = _MAX_BATCH.get(key)
    if hit is None:
        if len(_MAX_BATCH) > 8192:
            _MAX_BATCH.clear()
        serving = _serving(model, precision, BYTES_PER_PARAM[kv_precision], DEFAULT_CONTEXT_GB, gpu)
        hit = _MAX_BATCH[key] = serving.max_batch(n_gpus, context_len, capacity_bytes(gpu) * DEFAULT_USABLE_FRACTION)
    return hit


_MAX_BATCH: dict[tuple, int] = {}


def min_gpus_that_fit(model: ModelSpec, gpu: GpuSpec, precision: str, context_len: int) -> int | None:
    """fit_inference's min_gpus for one sequence of `context_len` tokens with its defaults (None: not on any count;
    memoised per shape like `max_batch_that_fits`: a serving plan asks it per card and precision)."""
    _check_fp8(gpu, precision)
    key = (model.id, model.n_layers, gpu.id, precision, context_len)
    if key not in _MIN_GPUS:
        if len(_MIN_GPUS) > 8192:
            _MIN_GPUS.clear()
        serving = _serving(model, precision, BYTES_PER_PARAM[default_kv_precision(precision)], DEFAULT_CONTEXT_GB, gpu)
        _MIN_GPUS[key] = serving.min_gpus(1, context_len, capacity_bytes(gpu) * DEFAULT_USABLE_FRACTION)
    return _MIN_GPUS[key]


_MIN_GPUS: dict[tuple, int | None] = {}


def _check_fp8(gpu: GpuSpec, precision: str) -> None:
    if precision == "fp8" and not gpu.fp8_tflops:
        raise Unsupported(
            f"{gpu.name} has no FP8 support; choose bf16, int8 or int4.",
            f"{gpu.name} 不支持 FP8，请改用 bf16、int8 或 int4。",
            field="precision",
        )


def default_weight_precision(model: ModelSpec, gpu: GpuSpec) -> str:
    """The model's published precision where the GPU computes in it (FP8 needs FP8 tensor cores), else bf16."""
    if model.native_precision == "fp8" and gpu.fp8_tflops:
        return "fp8"
    return model.native_precision if model.native_precision in ("bf16", "fp16") else "bf16"


def default_kv_precision(precision: str) -> str:
    """The KV cache's precision when none is given: fp16 beside fp16 weights, else bf16."""
    return "fp16" if precision == "fp16" else "bf16"


def fit_inference(inp: FitInferenceInput) -> FitInferenceOutput:
    """Per-GPU memory to serve a model: weights, KV cache, activations; min GPUs and max batch."""
    model = get_model(inp.model)
    gpu = get_gpu(inp.gpu)
    precision = inp.precision or default_weight_precision(model, gpu)
    _check_fp8(gpu, precision)
    kv_prec = inp.kv_precision or default_kv_precision(precision)
    reserve = GROWING_KV_RESERVE if inp.engine == "hf" else 1.0
    engine = inp.engine != "hf"
    serving = _serving(model, precision, BYTES_PER_PARAM[kv_prec] * reserve, inp.cuda_context_gb, gpu, engine)
    ctx = inp.context_len or min(model.max_context, 4096)
    kv_tok = serving.kv_seq(ctx) / ctx  # bytes per token at this context (windowed layers hold at most their window)
    n = inp.n_gpus
    capacity = capacity_bytes(gpu)
    usable = capacity * inp.usable_fraction
    parts = serving.parts(n, inp.batch, ctx)
    per_gpu = sum(parts.values())
    tp, pp = _split(model, n)
    min_n = serving.min_gpus(inp.batch, ctx, usable)
    max_batch = serving.max_batch(n, ctx, usable)
    max_ctx = serving.max_context(n, inp.batch, usable)
    assumptions = [
        assume(
            "precision",
            value=precision,
            default=inp.precision is None,
            note=expert_format_note(model, precision, "weight precision")
            or "weight precision" + (" (the model is published in FP8)" if model.native_precision == "fp8" else ""),
        ),
        assume("kv_precision", value=kv_prec, default=inp.kv_precision is None, note="KV-cache precision"),
        *layout_assumptions(model, BYTES_PER_PARAM[kv_prec]),
        assume(
            "context_len",
            value=ctx,
            unit="tokens",
            default=inp.context_len is None,
            note="tokens per sequence (prompt + output)",
        ),
        assume("batch", value=inp.batch, default="batch" not in inp.model_fields_set, note="concurrent sequences"),
        assume(
            "parallelism",
            value=f"tp={tp} pp={pp}",
            default=True,
            note="largest tensor-parallel size ≤ 8 that divides the heads",
        ),
        assume(
            "usable_fraction",
            value=inp.usable_fraction,
            default="usable_fraction" not in inp.model_fields_set,
            note="vLLM's gpu_memory_utilization default",
        ),
        convention_assumption(inp.usable_fraction, serving=True),
        capacity_assumption(gpu),
        assume(
            "prefill_chunk_tokens",
            value=serving.profile_tokens if engine else PREFILL_CHUNK_TOKENS,
            unit="tokens",
            note=f"the engine's scheduler budget on this card (max_num_batched_tokens), profiled at start-up whatever "
            f"the request, with the sampler's logits for {serving.sampler_seqs} sequences (max_num_seqs); every "
            "tensor-parallel rank holds the whole hidden-size activations"
            if engine
            else "activation workspace sized for one chunked-prefill step",
        ),
    ]
    if model.generic:
        assumptions.insert(0, assume("model_architecture", value=model.name, note=model.notes or ""))
    if inp.engine == "hf":
        assumptions.append(
            assume(
                "engine",
                value="hf",
                default=False,
                note=f"transformers generate: the KV cache grows a token at a time and the allocator holds about "
                f"{GROWING_KV_RESERVE:g}x the live cache (counted in kv_cache)",
            )
        )
    if precision in ("int4", "nf4", "int8"):
        assumptions.append(
            assume(
                "quantization",
                value=precision,
                note="embeddings and output head stay 16-bit; int4 adds group-128 scales (≈0.25 bit/param)",
            )
        )
    hybrid, host_bw = [], None
    if inp.host_ram_gb:  # a CPU+GPU hybrid run: the weights at each format against VRAM + host RAM
        host_bw, said = (
            (inp.host_bandwidth_gb_s * GB, "as given")
            if inp.host_bandwidth_gb_s
            else default_host_bandwidth(inp.host_ram_gb, gpu.segment == "consumer")
        )
        room = n * (usable - (per_gpu - parts["weights"]))  # VRAM left for weights beside the KV cache and context
        hybrid = hybrid_rows(model, precision, gpu_room=room, ram=inp.host_ram_gb * GB,
                             gpu_bandwidth=gpu.bandwidth_gb_s * GB if gpu.bandwidth_gb_s else None, host_bandwidth=host_bw)  # fmt: skip
        assumptions.append(assume("host_bandwidth", value=round(host_bw / GB, 1), unit="GB/s",
                                  default=inp.host_bandwidth_gb_s is None,
                                  note=f"host memory bandwidth ({said}); decode figures are upper bounds"))  # fmt: skip
    out = FitInferenceOutput.trusted(
        hybrid=hybrid,
        host_ram=host_ram_fields(serving.weights, n, inp.loader, GPUS_PER_NODE) if inp.loader else None,
        host_bandwidth_gb_s=round(host_bw / GB, 1) if host_bw else None,
        model=model.name,
        gpu=gpu.name,
        n_gpus=n,
        tp=tp,
        pp=pp,
        fits=per_gpu <= usable,
        per_gpu_gb=round(per_gpu / GB, 2),
        capacity_gb=round(capacity / GB, 2),
        usable_gb=round(usable / GB, 2),
        usable_gib=usable_gib(gpu, usable),
        shortfall_gb=round(max(0.0, per_gpu - usable) / GB, 2),
        headroom_gb=round((usable - per_gpu) / GB, 2),
        breakdown_gb={k: round(v / GB, 3) for k, v in parts.items()},
        kv_cache_bytes_per_token=kv_tok / reserve,
        kv_cache_gb_per_sequence=round(kv_tok / reserve * ctx / GB, 3),
        context_len=ctx,
        batch=inp.batch,
        min_gpus=min_n,
        max_batch=max_batch,
        max_context=max_ctx,
        assumptions=assumptions,
        **judge(parts, usable),
    )
    others = [(m, fit_inference(inp.model_copy(update={"model": m, "alongside": None}))) for m in inp.alongside or ()]
    return out.model_copy(update={"shared": shared_card([(inp.model, out), *others])}) if others else out
