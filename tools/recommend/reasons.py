"""The words of `recommend_gpus`: why each option, why each GPU was dropped, the verdict and the assumptions.

Every sentence comes in English and Chinese, built only from figures the calculators returned.
"""

from __future__ import annotations

from typing import Any

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.model_spec import ModelSpec
from tools.schemas.common import Assumption, assume
from tools.schemas.recommend import DEFAULT_METHOD, DroppedGpu, RecommendInput
from tools.units import HOURS_PER_MONTH

BEST_VALUE_TRAIN = "lowest total_cny × hours (元·h): cheap and fast together"
BEST_VALUE_INFER = "lowest total_cny per token/s of batch throughput"


def cost_basis(inp: RecommendInput) -> str:
    if inp.pricing == "buy":
        return (
            "purchase price of the cards (n_gpus × 元 per card, mid of the quote on file; low/high its range); "
            "servers, hosting, power and networking are not included"
        )
    if inp.workload == "infer":
        return "one month (730 h) of rent: n_gpus × 730 h × 元 per card-hour (mid; low/high the quote's range)"
    return (
        "rent for the run: GPU-hours × 元 per card-hour (mid); low = fast-end hours × low price, "
        "high = slow-end hours × high price"
    )


def recommend_assumptions(inp: RecommendInput, model: ModelSpec, method: str, checkpointing: bool) -> list[Assumption]:
    given = inp.model_fields_set
    a = []
    if model.generic:
        a.append(assume("model_architecture", value=model.name, note=model.notes or ""))
    a.append(assume("pricing", value=inp.pricing, default="pricing" not in given, note=cost_basis(inp)))
    if inp.workload == "infer":
        a += [
            assume(
                "precision",
                value=inp.precision or (model.native_precision or "bf16"),
                default="precision" not in given,
                note="weight precision"
                if inp.precision
                else "the model's published precision on GPUs that compute in it, else bf16 (as fit_inference)",
            ),
            assume("batch", value=inp.batch, default="batch" not in given, note="concurrent sequences"),
            assume(
                "context_len",
                value=inp.context_len,
                unit="tokens",
                default="context_len" not in given,
                note="tokens per sequence (prompt + output)",
            ),
            assume("hours_per_month", value=HOURS_PER_MONTH, unit="h", note="8,760 h / 12; rent for one month"),
            assume(
                "parallelism",
                value="tp ≤ 8 inside a node, pipeline stages beyond",
                note="one replica on n_gpus; tokens/s is inference_speed at the tensor-parallel size, as pipeline "
                "stages decode one after another for a batch (no micro-batch overlap)",
            ),
        ]
        if inp.deadline_hours is not None:
            a.append(
                assume(
                    "deadline_hours",
                    value=inp.deadline_hours,
                    unit="h",
                    default=False,
                    note="ignored for inference: serving has no end time",
                )
            )
    else:
        a += [
            assume(
                "method",
                value=method,
                default=inp.method is None,
                note=f"default for {inp.workload}: {DEFAULT_METHOD[inp.workload]}",
            ),
            assume(
                "grad_checkpointing",
                value=checkpointing,
                note=(
                    "full activation recomputation, in memory and in time (one extra forward pass): on by "
                    "default for models of 7B and more, as LLaMA-Factory, PEFT and DeepSpeed/FSDP recipes do "
                    "(no tensor parallel is modelled here)"
                )
                if checkpointing
                else "off: a model under 7B keeps every layer's activations",
            ),
            assume("seq_len", value=inp.seq_len, unit="tokens", default="seq_len" not in given),
            assume(
                "training_setup",
                value="bf16 AdamW, micro-batch 1, data parallel + ZeRO",
                note="ZeRO stage: the lowest that fits at each count (fit_training); no tensor or pipeline parallel",
            ),
            assume(
                "mfu",
                value="calibrated default",
                note="training_time's default utilisation per GPU generation "
                "(tools/data/mfu.yaml); hours_low/hours_high are its range",
            ),
            assume(
                "counts",
                value="1, 2, 4, 8, then whole 8-GPU nodes",
                note="the fewest GPUs that hold the job; doubled (up to max_gpus) only to meet a deadline",
            ),
        ]
    a += [
        assume(
            "max_gpus",
            value=inp.max_gpus,
            default="max_gpus" not in given,
            note="consumer and workstation cards (catalog segment) are considered within one 8-GPU machine "
            "only: no NVLink, and they are rented and sold as single machines",
        ),
        assume(
            "ranking",
            value="total_cny ascending",
            note="options cheapest first; options with no price on file come last, fastest first",
        ),
        assume("best_value", value=BEST_VALUE_INFER if inp.workload == "infer" else BEST_VALUE_TRAIN),
    ]
    if inp.budget_cny is not None:
        a.append(
            assume(
                "budget_cny",
                value=inp.budget_cny,
                unit="元",
                default=False,
                note="compared with the middle cost estimate; GPUs with no price on file are dropped",
            )
        )
    if inp.deadline_hours is not None and inp.workload != "infer":
        a.append(
            assume(
                "deadline_hours",
                value=inp.deadline_hours,
                unit="h",
                default=False,
                note="compared with the middle time estimate",
            )
        )
    if inp.china_available:
        a.append(
            assume(
                "china_available",
                value=True,
                default=False,
                note="only GPUs the catalog marks as purchasable in mainland China",
            )
        )
    return a


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
        zh = f"中国大陆无法正常采购：{k['note_zh']}"
    elif reason == "not_domestic":
        en, zh = f"Not a Chinese-made accelerator ({gpu.vendor}).", f"不是国产加速卡（{gpu.vendor}）。"
    elif reason == "no_price":
        what_en, what_zh = ("rental", "租赁") if k["pricing"] == "rent" else ("purchase", "采购")
        en = f"No {what_en} price on file, so it cannot be checked against the budget."
        zh = f"目录中没有{what_zh}价格，无法与预算比较。"
    elif reason == "does_not_fit":
        usable = _n(k["usable_gb"])
        if n is None:
            en = (
                f"Does not fit at any GPU count: even sharded, it needs {_n(k['per_gpu_gb'])} GB per GPU on "
                f"{k['probe_n']:,} GPUs, more than the {usable} GB usable."
            )
            zh = f"任何卡数都放不下：即使切分到 {k['probe_n']:,} 张卡，每卡仍需 {_n(k['per_gpu_gb'])} GB，超过可用的 {usable} GB。"
        elif k["one_machine"]:
            seg_zh = "消费级" if gpu.segment == "consumer" else "工作站级"
            en = (
                f"Does not fit in one {k['max_gpus']}-GPU machine, the most considered for a {gpu.segment} card: "
                f"needs {n:,} GPUs of {usable} GB usable."
            )
            zh = f"一台 {k['max_gpus']} 卡机器放不下（{seg_zh}显卡只按单机考虑）：需要 {n:,} 张（每卡可用 {usable} GB）。"
        else:
            en = f"Does not fit even at max_gpus = {k['max_gpus']:,}: needs {n:,} GPUs of {usable} GB usable."
            zh = f"在最多 {k['max_gpus']:,} 张卡内放不下：需要 {n:,} 张（每卡可用 {usable} GB）。"
    elif reason == "misses_deadline":
        late = hours - k["deadline"]
        en = f"Misses the {_n(k['deadline'])} h deadline by {_n(late)} h even on {n:,} GPUs (≈ {_n(hours)} h)."
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
    return DroppedGpu(
        gpu=gpu.name,
        gpu_id=gpu.id,
        reason=reason,
        reason_en=en,
        reason_zh=zh,
        n_gpus=n,
        hours=hours if reason in ("misses_deadline", "over_budget") else None,
        total_cny=total if reason == "over_budget" else None,
    )


def _cost_words(workload: str, pricing: str) -> tuple[str, str]:
    if pricing == "buy":
        return "buying the cards", "购卡费用"
    if workload == "infer":
        return "one month of rent", "一个月租金"
    return "renting for the run", "训练租金"


_TAGS = {"cheapest": ("cheapest", "最便宜"), "fastest": ("fastest", "最快"), "best_value": ("best value", "性价比最高")}


def option_text(c: Any, inp: RecommendInput) -> tuple[str, str]:
    """Why this option: memory, time or throughput, cost, and the picks it won (`c`: a tools.recommend.recommend_gpus.Candidate)."""
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
            when_en = (
                f", ≈ {_n(o.hours)} h"
                if o.hours is not None
                else (f", ≈ {_n(o.tokens_per_s)} tokens/s" if o.tokens_per_s is not None else "")
            )
            when_zh = (
                f"，约 {_n(o.hours)} 小时"
                if o.hours is not None
                else (f"，约 {_n(o.tokens_per_s)} tokens/s" if o.tokens_per_s is not None else "")
            )
            parts_en.append(f"{en_word}: {o.n_gpus}× {o.gpu}{cost_en}{when_en}")
            parts_zh.append(f"{zh_word}：{o.n_gpus} 张 {o.gpu}{cost_zh}{when_zh}")
        return (
            f"{n_options} option(s) pass; " + "; ".join(parts_en) + ".",
            f"共 {n_options} 个方案符合条件；" + "；".join(parts_zh) + "。",
        )
    counts: dict[str, int] = {}
    for d in dropped:
        counts[d.reason] = counts.get(d.reason, 0) + 1
    names = {
        "over_budget": ("over budget", "超出预算"),
        "misses_deadline": ("miss the deadline", "赶不上期限"),
        "does_not_fit": ("do not fit", "显存放不下"),
        "not_in_china": ("not available in China", "中国大陆无法采购"),
        "not_domestic": ("not Chinese-made", "非国产"),
        "no_price": ("no price on file", "没有价格"),
        "unsupported": ("not supported", "不支持"),
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
