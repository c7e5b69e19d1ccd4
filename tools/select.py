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
from dataclasses import dataclass, field

from tools.catalog import get_model, gpus
from tools.errors import AdvisorError
from tools.gpu_spec import GpuSpec
from tools.memory import GPUS_PER_NODE, capacity_bytes, fit_training, next_count
from tools.prices import PriceQuote, prices_for
from tools.schemas.common import assume
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.schemas.select import DEFAULT_METHOD, DroppedGpu, RecommendInput, RecommendOption, RecommendOutput
from tools.schemas.speed import InferenceSpeedInput, TrainingTimeInput
from tools.serving import fit_inference
from tools.speed import inference_speed, training_time
from tools.units import HOURS_PER_MONTH

BEST_VALUE_TRAIN = "lowest total_cny × hours (元·h): cheap and fast together"
BEST_VALUE_INFER = "lowest total_cny per token/s of batch throughput"


@dataclass
class Candidate:
    """One GPU type at its chosen count, before ranking."""

    gpu: GpuSpec
    n: int
    min_gpus: int
    per_gpu_gb: float
    usable_gb: float
    zero_stage: int | None
    tp: int = 1  # inference: tensor-parallel size inside a node (the rest is pipeline stages)
    hours: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None
    tokens_per_s: float | None = None
    speed_note: tuple[str, str] | None = None
    cost: tuple[float, float, float] | None = None
    quote: PriceQuote | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def gpu_hours(self) -> float | None:
        return None if self.hours is None else self.hours * self.n


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
        self.model = get_model(inp.model)
        #: the largest capacity (bytes) on which one GPU was found too small: smaller cards skip that probe
        self.one_gpu_too_small = 0.0

    def fit(self, gpu: GpuSpec, n: int):
        """fit_training / fit_inference on n GPUs; cached by what the memory calculators read of a card."""
        inp = self.inp
        fp8 = bool(gpu.fp8_tflops) if inp.precision == "fp8" else None
        key = (gpu.memory_gb, gpu.memory_reported_gib, fp8, n)
        hit = self._fits.get(key)
        if hit is None:
            if inp.workload == "infer":
                hit = fit_inference(FitInferenceInput(
                    model=self.model, gpu=gpu.id, n_gpus=n, precision=inp.precision, batch=inp.batch,
                    context_len=inp.context_len))
            else:
                hit = fit_training(FitTrainingInput(
                    model=self.model, gpu=gpu.id, method=self.method, n_gpus=n, seq_len=inp.seq_len,
                    grad_checkpointing=True))
            self._fits[key] = hit
        return hit

    def cap(self, gpu: GpuSpec) -> int:
        """The most GPUs of this type considered: max_gpus, or one 8-GPU machine for consumer/workstation cards."""
        if gpu.segment != "datacenter":
            return min(self.inp.max_gpus, GPUS_PER_NODE)
        return self.inp.max_gpus

    def train_time(self, gpu: GpuSpec, n: int):
        inp = self.inp
        return training_time(TrainingTimeInput(
            model=inp.model, gpu=gpu.id, n_gpus=n, tokens=inp.tokens, method=self.method, seq_len=inp.seq_len,
            grad_checkpointing=True))


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
    too_big = dict(max_gpus=max_gpus, per_gpu_gb=probe.per_gpu_gb, usable_gb=probe.usable_gb, probe_n=probe_n,
                   one_machine=max_gpus < job.inp.max_gpus)
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
    return Candidate(gpu=gpu, n=n0, min_gpus=n0, per_gpu_gb=at.per_gpu_gb, usable_gb=at.usable_gb,
                     zero_stage=getattr(at, "zero_stage", None), tp=getattr(at, "tp", 1))


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
        s = inference_speed(InferenceSpeedInput(
            model=inp.model, gpu=c.gpu.id, n_gpus=c.tp, precision=inp.precision, kv_precision=kv, batch=inp.batch,
            context_len=inp.context_len))
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
        return drop(gpu, "not_in_china", note=gpu.china.note)
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
        return drop(gpu, "over_budget", n_gpus=c.n, hours=c.hours, total=c.cost[0], budget=inp.budget_cny,
                    workload=inp.workload, pricing=inp.pricing)
    return c


def _rank(cands: list[Candidate], workload: str) -> tuple[list[Candidate], dict[str, Candidate | None]]:
    priced = sorted((c for c in cands if c.cost), key=lambda c: (c.cost[0], c.hours or 0, c.gpu.id))
    unpriced = sorted((c for c in cands if not c.cost),
                      key=lambda c: (c.hours if c.hours is not None else math.inf, -(c.tokens_per_s or 0), c.gpu.id))
    ranked = priced + unpriced
    if workload == "infer":
        timed = [c for c in ranked if c.tokens_per_s]
        fastest = max(timed, key=lambda c: c.tokens_per_s, default=None)
        value = [c for c in priced if c.tokens_per_s]
        best = min(value, key=lambda c: c.cost[0] / c.tokens_per_s, default=None)
    else:
        fastest = min(ranked, key=lambda c: c.hours, default=None)
        best = min(priced, key=lambda c: c.cost[0] * c.hours, default=None)
    picks = {"cheapest": priced[0] if priced else None, "fastest": fastest, "best_value": best}
    for name, c in picks.items():
        if c is not None:
            c.tags.append(name)
    return ranked, picks


def _option(c: Candidate, rank: int, inp: RecommendInput) -> RecommendOption:
    def r4(x):
        return None if x is None else float(f"{x:.4g}")

    def cny(x):
        return None if x is None else round(x, 2)

    cost = c.cost or (None, None, None)
    why_en, why_zh = option_text(c, inp)
    return RecommendOption(
        rank=rank, gpu=c.gpu.name, gpu_id=c.gpu.id, n_gpus=c.n, fits=True, per_gpu_gb=c.per_gpu_gb,
        usable_gb=c.usable_gb, zero_stage=c.zero_stage, min_gpus=c.min_gpus,
        hours=r4(c.hours), hours_low=r4(c.hours_low), hours_high=r4(c.hours_high), gpu_hours=r4(c.gpu_hours),
        total_cny=cny(cost[0]), low_cny=cny(cost[1]), high_cny=cny(cost[2]),
        price_cny=None if c.quote is None else c.quote.mid_cny, price_source=None if c.quote is None else c.quote.cite(),
        tokens_per_s=r4(c.tokens_per_s), china_available=c.gpu.china.available, why=why_en, why_zh=why_zh,
    )


def _cost_basis(inp: RecommendInput) -> str:
    if inp.pricing == "buy":
        return ("purchase price of the cards (n_gpus × 元 per card, mid of the quote on file; low/high its range); "
                "servers, hosting, power and networking are not included")
    if inp.workload == "infer":
        return "one month (730 h) of rent: n_gpus × 730 h × 元 per card-hour (mid; low/high the quote's range)"
    return ("rent for the run: GPU-hours × 元 per card-hour (mid); low = fast-end hours × low price, "
            "high = slow-end hours × high price")


def _assumptions(inp: RecommendInput, job: _Job) -> list[dict]:
    model = job.model
    given = inp.model_fields_set
    a = []
    if model.generic:
        a.append(assume("model_architecture", value=model.name, note=model.notes or ""))
    a.append(assume("pricing", value=inp.pricing, default="pricing" not in given, note=_cost_basis(inp)))
    if inp.workload == "infer":
        a += [
            assume("precision", value=inp.precision, default="precision" not in given, note="weight precision"),
            assume("batch", value=inp.batch, default="batch" not in given, note="concurrent sequences"),
            assume("context_len", value=inp.context_len, unit="tokens", default="context_len" not in given,
                   note="tokens per sequence (prompt + output)"),
            assume("hours_per_month", value=HOURS_PER_MONTH, unit="h", note="8,760 h / 12; rent for one month"),
            assume("parallelism", value="tp ≤ 8 inside a node, pipeline stages beyond",
                   note="one replica on n_gpus; tokens/s is inference_speed at the tensor-parallel size, as pipeline "
                   "stages decode one after another for a batch (no micro-batch overlap)"),
        ]
        if inp.deadline_hours is not None:
            a.append(assume("deadline_hours", value=inp.deadline_hours, unit="h", default=False,
                            note="ignored for inference: serving has no end time"))
    else:
        a += [
            assume("method", value=job.method, default=inp.method is None,
                   note=f"default for {inp.workload}: {DEFAULT_METHOD[inp.workload]}"),
            assume("grad_checkpointing", value=True, note="full activation recomputation, in memory and in time "
                   "(one extra forward pass)"),
            assume("seq_len", value=inp.seq_len, unit="tokens", default="seq_len" not in given),
            assume("training_setup", value="bf16 AdamW, micro-batch 1, data parallel + ZeRO",
                   note="ZeRO stage: the lowest that fits at each count (fit_training); no tensor or pipeline parallel"),
            assume("mfu", value="calibrated default", note="training_time's default utilisation per GPU generation "
                   "(tools/data/mfu.yaml); hours_low/hours_high are its range"),
            assume("counts", value="1, 2, 4, 8, then whole 8-GPU nodes",
                   note="the fewest GPUs that hold the job; doubled (up to max_gpus) only to meet a deadline"),
        ]
    a += [
        assume("max_gpus", value=inp.max_gpus, default="max_gpus" not in given,
               note="consumer and workstation cards (catalog segment) are considered within one 8-GPU machine "
               "only: no NVLink, and they are rented and sold as single machines"),
        assume("ranking", value="total_cny ascending",
               note="options cheapest first; options with no price on file come last, fastest first"),
        assume("best_value", value=BEST_VALUE_INFER if inp.workload == "infer" else BEST_VALUE_TRAIN),
    ]
    if inp.budget_cny is not None:
        a.append(assume("budget_cny", value=inp.budget_cny, unit="元", default=False,
                        note="compared with the middle cost estimate; GPUs with no price on file are dropped"))
    if inp.deadline_hours is not None and inp.workload != "infer":
        a.append(assume("deadline_hours", value=inp.deadline_hours, unit="h", default=False,
                        note="compared with the middle time estimate"))
    if inp.china_available:
        a.append(assume("china_available", value=True, default=False,
                        note="only GPUs the catalog marks as purchasable in mainland China"))
    return a


def recommend_gpus(inp: RecommendInput) -> RecommendOutput:
    """Which GPUs, and how many, for a training, fine-tuning or inference job: ranked options and why others were dropped.

    Enumerates every catalog GPU at the fewest cards that hold the job (more only to meet a deadline),
    times it with training_time / inference_speed, costs it at rental or purchase prices, filters by budget,
    deadline and China availability, and picks the cheapest, the fastest and the best value.
    """
    job = _Job(inp)  # resolves the model: an unknown name fails here, before any work
    model = job.model
    cands: list[Candidate] = []
    dropped: list[DroppedGpu] = []
    for gpu in gpus():
        out = _evaluate(job, gpu)
        (dropped if isinstance(out, DroppedGpu) else cands).append(out)
    ranked, picks = _rank(cands, inp.workload)
    options = {id(c): _option(c, i, inp) for i, c in enumerate(ranked, start=1)}
    shown = [options[id(c)] for c in ranked[: inp.top_k]]
    chosen = {k: None if c is None else options[id(c)] for k, c in picks.items()}
    en, zh = verdict(inp, chosen, dropped, len(ranked))
    return RecommendOutput(
        model=model.name, workload=inp.workload, method=job.method,
        tokens=None if inp.workload == "infer" else inp.tokens, pricing=inp.pricing, cost_basis=_cost_basis(inp),
        budget_cny=inp.budget_cny, deadline_hours=inp.deadline_hours, china_available=inp.china_available,
        options=shown, more_options=len(ranked) - len(shown), **chosen,
        best_value_metric=BEST_VALUE_INFER if inp.workload == "infer" else BEST_VALUE_TRAIN,
        dropped=dropped, verdict_en=en, verdict_zh=zh, assumptions=_assumptions(inp, job),
    )


# --- words ------------------------------------------------------------------------------------------


def _n(x: float) -> str:
    """A figure for prose: three significant digits, thousands separated."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{float(f'{x:.3g}'):g}"


def _cny(x: float) -> str:
    return f"{x:,.0f}"


def drop(gpu: GpuSpec, reason: str, **k) -> DroppedGpu:
    """A dropped GPU with its reason in English and Chinese."""
    n, hours, total = k.get("n_gpus"), k.get("hours"), k.get("total")
    if reason == "not_in_china":
        en = f"Not available in mainland China: {k['note']}"
        zh = "中国大陆无法正常采购（受美国出口管制，需要许可证）。"
    elif reason == "no_price":
        what_en, what_zh = ("rental", "租赁") if k["pricing"] == "rent" else ("purchase", "采购")
        en = f"No {what_en} price on file, so it cannot be checked against the budget."
        zh = f"目录中没有{what_zh}价格，无法与预算比较。"
    elif reason == "does_not_fit":
        usable = _n(k["usable_gb"])
        if n is None:
            en = (f"Does not fit at any GPU count: even sharded, it needs {_n(k['per_gpu_gb'])} GB per GPU on "
                  f"{k['probe_n']:,} GPUs, more than the {usable} GB usable.")
            zh = f"任何卡数都放不下：即使切分到 {k['probe_n']:,} 张卡，每卡仍需 {_n(k['per_gpu_gb'])} GB，超过可用的 {usable} GB。"
        elif k["one_machine"]:
            seg_zh = "消费级" if gpu.segment == "consumer" else "工作站级"
            en = (f"Does not fit in one {k['max_gpus']}-GPU machine, the most considered for a {gpu.segment} card: "
                  f"needs {n:,} GPUs of {usable} GB usable.")
            zh = f"一台 {k['max_gpus']} 卡机器放不下（{seg_zh}显卡只按单机考虑）：需要 {n:,} 张（每卡可用 {usable} GB）。"
        else:
            en = f"Does not fit even at max_gpus = {k['max_gpus']:,}: needs {n:,} GPUs of {usable} GB usable."
            zh = f"在最多 {k['max_gpus']:,} 张卡内放不下：需要 {n:,} 张（每卡可用 {usable} GB）。"
    elif reason == "misses_deadline":
        late = hours - k["deadline"]
        en = (f"Misses the {_n(k['deadline'])} h deadline by {_n(late)} h even on {n:,} GPUs "
              f"(≈ {_n(hours)} h).")
        zh = f"即使用 {n:,} 张卡也要约 {_n(hours)} 小时，超出 {_n(k['deadline'])} 小时的期限 {_n(late)} 小时。"
        hours = float(f"{hours:.4g}")
    elif reason == "over_budget":
        over = total - k["budget"]
        what_en, what_zh = _cost_words(k["workload"], k["pricing"])
        en = f"Over budget by {_cny(over)} 元: {what_en} on {n:,} GPUs is ≈ {_cny(total)} 元."
        zh = f"超出预算 {_cny(over)} 元：{n:,} 张卡的{what_zh}约 {_cny(total)} 元。"
        total = round(total, 2)
        hours = None if hours is None else float(f"{hours:.4g}")
    else:  # unsupported: a calculator refused this card (no FP8, no published bandwidth, ...)
        en, zh = k["en"], k["zh"]
    return DroppedGpu(gpu=gpu.name, gpu_id=gpu.id, reason=reason, reason_en=en, reason_zh=zh, n_gpus=n,
                      hours=hours if reason in ("misses_deadline", "over_budget") else None,
                      total_cny=total if reason == "over_budget" else None)


def _cost_words(workload: str, pricing: str) -> tuple[str, str]:
    if pricing == "buy":
        return "buying the cards", "购卡费用"
    if workload == "infer":
        return "one month of rent", "一个月租金"
    return "renting for the run", "训练租金"


_TAGS = {"cheapest": ("cheapest", "最便宜"), "fastest": ("fastest", "最快"), "best_value": ("best value", "性价比最高")}


def option_text(c: Candidate, inp: RecommendInput) -> tuple[str, str]:
    """Why this option: memory, time or throughput, cost, and the picks it won."""
    g = c.gpu.name
    zero = f", ZeRO-{c.zero_stage}" if c.zero_stage is not None else ""
    en = [f"{c.n}× {g}: {_n(c.per_gpu_gb)} of {_n(c.usable_gb)} GB usable per GPU{zero}"]
    zh = [f"{c.n} 张 {g}：每卡需 {_n(c.per_gpu_gb)} GB（可用 {_n(c.usable_gb)} GB{zero}）"]
    if c.n > c.min_gpus:
        en.append(f"{c.n} GPUs to meet the {_n(inp.deadline_hours)} h deadline (memory needs {c.min_gpus})")
        zh.append(f"为赶上 {_n(inp.deadline_hours)} 小时期限用 {c.n} 张（显存只需 {c.min_gpus} 张）")
    if c.hours is not None:
        en.append(f"≈ {_n(c.hours)} h ({_n(c.hours_low)}–{_n(c.hours_high)})")
        zh.append(f"约 {_n(c.hours)} 小时（{_n(c.hours_low)}–{_n(c.hours_high)}）")
    if inp.workload == "infer":
        if c.tokens_per_s is not None:
            en.append(f"≈ {_n(c.tokens_per_s)} tokens/s at batch {inp.batch}")
            zh.append(f"批大小 {inp.batch} 时约 {_n(c.tokens_per_s)} tokens/s")
        elif c.speed_note:
            en.append(f"speed not estimated: {c.speed_note[0].rstrip('.')}")
            zh.append(f"未估算速度：{c.speed_note[1].rstrip('。')}")
    if c.cost is not None and c.quote is not None:
        what_en, what_zh = _cost_words(inp.workload, inp.pricing)
        unit_en, unit_zh = ("元/card-hour", "元/卡时") if inp.pricing == "rent" else ("元/card", "元/卡")
        spread = c.cost[1] != c.cost[2]
        rng_en = f" ({_cny(c.cost[1])}–{_cny(c.cost[2])})" if spread else ""
        rng_zh = f"（{_cny(c.cost[1])}–{_cny(c.cost[2])}）" if spread else ""
        en.append(f"{what_en} ≈ {_cny(c.cost[0])} 元{rng_en} at {_n(c.quote.mid_cny)} {unit_en}")
        zh.append(f"{what_zh}约 {_cny(c.cost[0])} 元{rng_zh}，按 {_n(c.quote.mid_cny)} {unit_zh}")
    else:
        en.append("no price on file")
        zh.append("目录中没有价格")
    if c.tags:
        en.append(" and ".join(_TAGS[t][0] for t in c.tags))
        zh.append("、".join(_TAGS[t][1] for t in c.tags))
    return "; ".join(en) + ".", "；".join(zh) + "。"


def verdict(inp: RecommendInput, picks: dict, dropped: list[DroppedGpu], n_options: int) -> tuple[str, str]:
    """One sentence in each language: the picks, or why nothing passed."""
    if n_options:
        parts_en, parts_zh = [], []
        for key, (en_word, zh_word) in _TAGS.items():
            o = picks.get(key)
            if o is None:
                continue
            cost_en = f", ≈ {_cny(o.total_cny)} 元" if o.total_cny is not None else ", no price on file"
            cost_zh = f"，约 {_cny(o.total_cny)} 元" if o.total_cny is not None else "，无价格"
            when_en = f", ≈ {_n(o.hours)} h" if o.hours is not None else (
                f", ≈ {_n(o.tokens_per_s)} tokens/s" if o.tokens_per_s is not None else "")
            when_zh = f"，约 {_n(o.hours)} 小时" if o.hours is not None else (
                f"，约 {_n(o.tokens_per_s)} tokens/s" if o.tokens_per_s is not None else "")
            parts_en.append(f"{en_word}: {o.n_gpus}× {o.gpu}{cost_en}{when_en}")
            parts_zh.append(f"{zh_word}：{o.n_gpus} 张 {o.gpu}{cost_zh}{when_zh}")
        return (f"{n_options} option(s) pass; " + "; ".join(parts_en) + ".",
                f"共 {n_options} 个方案符合条件；" + "；".join(parts_zh) + "。")
    counts: dict[str, int] = {}
    for d in dropped:
        counts[d.reason] = counts.get(d.reason, 0) + 1
    names = {
        "over_budget": ("over budget", "超出预算"), "misses_deadline": ("miss the deadline", "赶不上期限"),
        "does_not_fit": ("do not fit", "显存放不下"), "not_in_china": ("not available in China", "中国大陆无法采购"),
        "no_price": ("no price on file", "没有价格"), "unsupported": ("not supported", "不支持"),
    }
    en = ", ".join(f"{v} {names[k][0]}" for k, v in counts.items())
    zh = "，".join(f"{v} 款{names[k][1]}" for k, v in counts.items())
    over = [d for d in dropped if d.reason == "over_budget"]
    tip_en = tip_zh = ""
    if over:
        best = min(over, key=lambda d: d.total_cny)
        tip_en = f" The cheapest would be {best.n_gpus}× {best.gpu} at ≈ {_cny(best.total_cny)} 元."
        tip_zh = f"最便宜的是 {best.n_gpus} 张 {best.gpu}，约 {_cny(best.total_cny)} 元。"
    return (f"No GPU passes every filter: {en}.{tip_en}", f"没有符合全部条件的 GPU：{zh}。{tip_zh}")
