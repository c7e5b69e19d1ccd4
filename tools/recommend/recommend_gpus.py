"""Recommend GPUs: enumerate GPU type × count, keep what fits, cost and time it, filter, rank.

For every GPU in the catalog (after the China filter):
1. Memory. `fit_training` (ZeRO stage chosen automatically, gradient checkpointing on) or
   `fit_inference` gives `min_gpus` in closed form: the fewest GPUs (1, 2, 4, 8, then whole 8-GPU
   nodes) whose memory holds the job. Those results depend on the card only through its memory, so
   one call per distinct capacity serves every card that shares it (cached within one call only).
   Consumer and workstation cards are considered within one 8-GPU machine.
2. Time. `training_time` at that count. When a deadline is given and missed, the count is doubled
   (×2, ×4, … up to `max_gpus`) to the smallest that meets it. Scaling is never super-linear, so
   hours(n) ≥ hours(n₀)·n₀/n and the search starts at the first count that could possibly meet the
   deadline. Inference: `inference_speed` at the batch given.
3. Cost. Rent: GPU-hours × the default rental quote (mid; the low end pairs the fast-end hours with
   the low price, the high end the slow-end hours with the high price); inference: one month (730 h)
   of rent. Buy: cards × purchase price (the cards only).
4. Filters: China availability, budget (mid cost), deadline (mid hours). Every GPU left out is in
   `dropped` with its reason in English and Chinese.
5. Ranking: options cheapest first (unpriced last, by hours); picks cheapest, fastest and best value
   (lowest cost × hours for training, lowest cost per token/s for inference).
"""

from __future__ import annotations

import math

from tools.catalog.architecture import param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_model, gpus
from tools.catalog.prices import PriceQuote, prices_for
from tools.errors import AdvisorError
from tools.memory.capacity import GPUS_PER_NODE, capacity_bytes, next_count
from tools.memory.fit_inference import engine_budget, fit_inference
from tools.memory.fit_training import training_memory
from tools.memory.train_breakdown import default_checkpointing
from tools.money.run_cost import eur_rate, usd_rate
from tools.recommend.candidates import Candidate, option, rank
from tools.recommend.reasons import BEST_VALUE_INFER, BEST_VALUE_TRAIN, cost_basis, drop, recommend_assumptions, verdict
from tools.schemas.common import ToolInput
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.schemas.recommend import DroppedGpu, RecommendInput, RecommendOutput
from tools.schemas.speed import InferenceSpeedInput, TrainingTimeInput
from tools.speed.inference_speed import inference_speed
from tools.speed.training_time import training_hours
from tools.units import HOURS_PER_MONTH


def valid_counts(n0: int, max_gpus: int) -> list[int]:
    """n₀, 2n₀, 4n₀, … up to max_gpus, and max_gpus itself rounded down to a count people buy."""
    out = []
    n = n0
    while n <= max_gpus:
        out.append(n)
        n *= 2
    top = max_gpus // GPUS_PER_NODE * GPUS_PER_NODE if max_gpus >= GPUS_PER_NODE else 1 << int(math.log2(max_gpus))
    if out and top > out[-1]:
        out.append(top)
    return out


class _Job:
    """Everything one `recommend_gpus` call shares between GPUs: the input and per-capacity memory fits."""

    def __init__(self, inp: RecommendInput):
        self.inp = inp
        self.method = inp.resolved_method
        self._fits: dict[tuple, object] = {}
        #: calculator inputs validated once per call; each GPU and count is a copy with those two fields changed
        self._templates: dict[str, ToolInput] = {}
        self.model = get_model(inp.model)
        #: one checkpointing setting for memory and time: fit_training's default (on at 7B and more, QLoRA always)
        self.checkpointing = default_checkpointing(self.method, param_count(self.model).total)
        #: the largest capacity (bytes) on which one GPU was found too small: smaller cards skip that probe
        self.one_gpu_too_small = 0.0

    def fit(self, gpu: GpuSpec, n: int):
        """fit_training's figures (training_memory) / fit_inference on n GPUs; cached by what the memory
        calculators read of a card."""
        inp = self.inp
        # FP8 support changes the answer for fp8 weights, and for the default precision (FP8-native models)
        fp8 = bool(gpu.fp8_tflops) if inp.precision in ("fp8", None) else None
        # what the memory calculators read of a card: its capacity, and for serving the engine's start-up budget
        budget = engine_budget(gpu) if inp.workload == "infer" else None
        key = (capacity_bytes(gpu), fp8, n, budget)
        hit = self._fits.get(key)
        if hit is None:
            if inp.workload == "infer":
                hit = fit_inference(
                    self._input(
                        "fit_inference",
                        gpu,
                        n,
                        lambda: FitInferenceInput(
                            model=self.model,
                            gpu=gpu.id,
                            n_gpus=n,
                            precision=inp.precision,
                            batch=inp.batch,
                            context_len=inp.context_len,
                        ),
                    )
                )
            else:
                hit = training_memory(
                    self._input(
                        "fit_training",
                        gpu,
                        n,
                        lambda: FitTrainingInput(
                            model=self.model,
                            gpu=gpu.id,
                            method=self.method,
                            n_gpus=n,
                            seq_len=inp.seq_len,
                            grad_checkpointing=self.checkpointing,
                        ),
                    )
                )
            self._fits[key] = hit
        return hit

    def _input(self, kind: str, gpu: GpuSpec, n: int, build):
        """`build()` validated the first time; later GPUs and counts copy it with `gpu` and `n_gpus` replaced.

        Every other field is the same for the whole call, and the two that change are a catalog id and a count
        from the ladder (at most max_gpus, within every calculator's limit), so the copies need no re-validation.
        """
        template = self._templates.get(kind)
        if template is None:
            template = self._templates[kind] = build()
            return template
        return template.model_copy(update={"gpu": gpu.id, "n_gpus": n})

    def cap(self, gpu: GpuSpec) -> int:
        """The most GPUs of this type considered: max_gpus, or one 8-GPU machine for consumer/workstation cards."""
        if gpu.segment != "datacenter":
            return min(self.inp.max_gpus, GPUS_PER_NODE)
        return self.inp.max_gpus

    def train_time(self, gpu: GpuSpec, n: int):
        inp = self.inp
        return training_hours(
            self._input(
                "training_time",
                gpu,
                n,
                lambda: TrainingTimeInput(
                    model=inp.model,
                    gpu=gpu.id,
                    n_gpus=n,
                    tokens=inp.tokens,
                    method=self.method,
                    seq_len=inp.seq_len,
                    grad_checkpointing=self.checkpointing,
                ),
            )
        )


def _quote(gpu: GpuSpec, pricing: str) -> PriceQuote | None:
    table = prices_for(gpu)
    return table.default("rental" if pricing == "rent" else "purchase") if table else None


def _memory(job: _Job, gpu: GpuSpec) -> Candidate | DroppedGpu:
    """The smallest count whose memory holds the job, with the fit at that count.

    `min_gpus` does not depend on the count a fit is asked for, so the probe runs on one GPU unless a
    card at least as large was already too small; then it runs at the most GPUs considered, where a
    fitting result skips the calculator's what-would-fit suggestions.
    """
    max_gpus = job.cap(gpu)
    capacity = capacity_bytes(gpu)
    probe_n = max_gpus if capacity <= job.one_gpu_too_small else 1
    probe = job.fit(gpu, probe_n)
    if probe_n == 1 and not probe.fits:
        job.one_gpu_too_small = max(job.one_gpu_too_small, capacity)
    n0 = 1 if probe_n == 1 and probe.fits else probe.min_gpus
    too_big = dict(
        max_gpus=max_gpus,
        per_gpu_gb=probe.per_gpu_gb,
        usable_gb=probe.usable_gb,
        probe_n=probe_n,
        one_machine=max_gpus < job.inp.max_gpus,
    )
    if n0 is None or n0 > max_gpus:
        return drop(gpu, "does_not_fit", n_gpus=n0, **too_big)
    at = probe if n0 == probe_n else job.fit(gpu, n0)
    for _ in range(3):  # the closed form and the fit at that count agree; guard the edge anyway
        if at.fits:
            break
        n0 = next_count(n0)
        if n0 > max_gpus:
            return drop(gpu, "does_not_fit", n_gpus=n0, **too_big)
        at = job.fit(gpu, n0)
    return Candidate(
        gpu=gpu,
        n=n0,
        min_gpus=n0,
        per_gpu_gb=at.per_gpu_gb,
        usable_gb=at.usable_gb,
        zero_stage=getattr(at, "zero_stage", None),
        tp=getattr(at, "tp", 1),
    )


def _time_train(job: _Job, c: Candidate) -> Candidate | DroppedGpu:
    """Hours at the memory-minimum count; with a deadline, the smallest count on the ladder that meets it."""
    t = job.train_time(c.gpu, c.n)
    deadline = job.inp.deadline_hours
    if deadline is not None and t.hours > deadline:
        ladder = valid_counts(c.n, job.cap(c.gpu))[1:]
        need = c.n * t.hours / deadline  # lower bound: never faster than linear scaling
        start = next((i for i, n in enumerate(ladder) if n >= need), max(0, len(ladder) - 1))
        met = None
        for n in ladder[start:]:
            t = job.train_time(c.gpu, n)
            if t.hours <= deadline:
                met = n
                break
        if met is None:
            return drop(c.gpu, "misses_deadline", n_gpus=t.n_gpus, hours=t.hours, deadline=deadline)
        at = job.fit(c.gpu, met)
        c.n, c.per_gpu_gb, c.zero_stage = met, at.per_gpu_gb, at.zero_stage
    c.hours, c.hours_low, c.hours_high = t.hours, t.hours_low, t.hours_high
    c.tokens_per_s = t.tokens_per_s
    return c


def _speed_infer(job: _Job, c: Candidate) -> Candidate:
    """Batch decode tokens/s of one replica: tensor parallel inside a node, pipeline stages beyond.

    For one batch the pipeline stages run one after another, so a replica of tp × pp GPUs decodes as fast
    as a tp-way split reading every weight (no micro-batch overlap is assumed).
    """
    inp = job.inp
    kv = "fp16" if inp.precision == "fp16" else "bf16"
    try:
        s = inference_speed(
            job._input(
                "inference_speed",
                c.gpu,
                c.tp,
                lambda: InferenceSpeedInput(
                    model=inp.model,
                    gpu=c.gpu.id,
                    n_gpus=c.tp,
                    precision=inp.precision,
                    kv_precision=kv,
                    batch=inp.batch,
                    context_len=inp.context_len,
                ),
            )
        )
        c.tokens_per_s = s.total_tokens_per_s
    except AdvisorError as err:
        c.speed_note = (err.en, err.zh)
    return c


def _cost(job: _Job, c: Candidate) -> None:
    q = c.quote
    if q is None:
        return
    if job.inp.pricing == "buy":
        c.cost = (c.n * q.mid_cny, c.n * q.low_cny, c.n * q.high_cny)
    elif job.inp.workload == "infer":
        h = c.n * HOURS_PER_MONTH
        c.cost = (h * q.mid_cny, h * q.low_cny, h * q.high_cny)
    else:
        c.cost = (c.n * c.hours * q.mid_cny, c.n * c.hours_low * q.low_cny, c.n * c.hours_high * q.high_cny)


def _evaluate(job: _Job, gpu: GpuSpec) -> Candidate | DroppedGpu:
    inp = job.inp
    if inp.china_available and not gpu.china.available:
        return drop(gpu, "not_in_china", note=gpu.china.note, note_zh=gpu.china.note_zh)
    if inp.domestic and not gpu.domestic:
        return drop(gpu, "not_domestic")
    quote = _quote(gpu, inp.pricing)
    if quote is None and inp.budget_cny is not None:
        return drop(gpu, "no_price", pricing=inp.pricing)
    try:
        c = _memory(job, gpu)
        if isinstance(c, DroppedGpu):
            return c
        c.quote = quote
        if inp.workload == "infer":
            c = _speed_infer(job, c)
        else:
            c = _time_train(job, c)
            if isinstance(c, DroppedGpu):
                return c
    except AdvisorError as err:
        return drop(gpu, "unsupported", en=err.en, zh=err.zh)
    _cost(job, c)
    if inp.budget_cny is not None and c.cost is not None and c.cost[0] > inp.budget_cny:
        return drop(
            gpu,
            "over_budget",
            n_gpus=c.n,
            hours=c.hours,
            total=c.cost[0],
            budget=inp.budget_cny,
            workload=inp.workload,
            pricing=inp.pricing,
        )
    return c


def recommend_gpus(inp: RecommendInput) -> RecommendOutput:
    """Which GPUs, and how many, for a training, fine-tuning or inference job: ranked options and why others were dropped.

    Enumerates every catalog GPU at the fewest cards that hold the job (more only to meet a deadline),
    times it with training_time / inference_speed, costs it at rental or purchase prices, filters by budget,
    deadline and China availability, and picks the cheapest, the fastest and the best value.
    """
    fx_assumption = None
    if inp.budget_usd is not None:  # a dollar budget is compared in 元, at the rate it states
        fx, fx_assumption = usd_rate(inp.fx_cny_per_usd)
        inp = inp.model_copy(update={"budget_cny": round(inp.budget_usd * fx, 2)})
    elif inp.budget_eur is not None:  # a euro budget likewise, at the dated euro rate
        fx, fx_assumption = eur_rate(inp.fx_cny_per_eur)
        inp = inp.model_copy(update={"budget_cny": round(inp.budget_eur * fx, 2)})
    job = _Job(inp)  # resolves the model: an unknown name fails here, before any work
    model = job.model
    cands: list[Candidate] = []
    dropped: list[DroppedGpu] = []
    for gpu in gpus():
        out = _evaluate(job, gpu)
        (dropped if isinstance(out, DroppedGpu) else cands).append(out)
    ranked, picks = rank(cands, inp.workload)
    # options are built only for what the answer shows: the top_k and the picks (their rank is their place)
    rank_of = {id(c): i for i, c in enumerate(ranked, start=1)}
    options = {
        id(c): option(c, rank_of[id(c)], inp)
        for c in [*ranked[: inp.top_k], *(c for c in picks.values() if c is not None)]
    }
    shown = [options[id(c)] for c in ranked[: inp.top_k]]
    chosen = {k: None if c is None else options[id(c)] for k, c in picks.items()}
    en, zh = verdict(inp, chosen, dropped, len(ranked))
    return RecommendOutput(
        model=model.name,
        workload=inp.workload,
        method=job.method,
        tokens=None if inp.workload == "infer" else inp.tokens,
        pricing=inp.pricing,
        cost_basis=cost_basis(inp),
        budget_cny=inp.budget_cny,
        budget_usd=inp.budget_usd,
        budget_eur=inp.budget_eur,
        deadline_hours=inp.deadline_hours,
        china_available=inp.china_available,
        domestic=inp.domestic,
        options=shown,
        more_options=len(ranked) - len(shown),
        **chosen,
        best_value_metric=BEST_VALUE_INFER if inp.workload == "infer" else BEST_VALUE_TRAIN,
        dropped=dropped,
        verdict_en=en,
        verdict_zh=zh,
        assumptions=[
            *recommend_assumptions(inp, job.model, job.method, job.checkpointing),
            *([fx_assumption] if fx_assumption else []),
        ],
    )
