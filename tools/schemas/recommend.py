"""Inputs and outputs of `recommend_gpus` (field names: see DESIGN.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tools.errors import InvalidInput
from tools.schemas.common import ToolInput, ToolOutput, when
from tools.schemas.speed import Tokens, parse_token_count

Workload = Literal["train", "finetune", "infer"]
Method = Literal["full", "lora", "qlora", "freeze"]
Pricing = Literal["rent", "buy"]
WeightPrecision = Literal["bf16", "fp16", "fp8", "int8", "int4", "nf4"]

#: the method used when none is given, per workload
DEFAULT_METHOD = {"train": "full", "finetune": "lora"}


class RecommendInput(ToolInput):
    """Which GPUs (and how many) for a training, fine-tuning or inference job, under a budget and a deadline?"""

    model: str = Field(description="Model name or size, e.g. 'Qwen2.5-7B', 'Llama-3-70B', '70B', '700亿参数'.")
    workload: Workload = Field(description="train (pretraining from scratch), finetune, or infer (serving).")
    method: Method | None = Field(
        None, description="full, lora, qlora or freeze; omitted: full for train, lora for finetune (ignored for infer)."
    )
    tokens: Tokens | None = Field(
        None, description="Training tokens for train/finetune: an integer or '1B', '2T', '500M', '10亿', '2万亿'."
    )
    seq_len: int = Field(4096, ge=1, le=1_000_000, description="Tokens per training sequence.")
    budget_cny: float | None = Field(
        None,
        gt=0,
        description="Budget in 元: the run's rental cost (train/finetune), one month of rent (infer), or the "
        "cards' purchase price (pricing=buy). Omitted: no budget filter.",
    )
    budget_usd: float | None = Field(
        None, gt=0, description="The budget in US dollars instead of budget_cny: converted at fx_cny_per_usd."
    )
    fx_cny_per_usd: float | None = Field(None, gt=0, le=100, description="元 per US dollar; omitted: the TCO default.")
    budget_eur: float | None = Field(
        None, gt=0, description="The budget in euros instead of budget_cny: converted at fx_cny_per_eur."
    )
    fx_cny_per_eur: float | None = Field(None, gt=0, le=100, description="元 per euro; omitted: the dated default.")
    deadline_hours: float | None = Field(
        None, gt=0, description="Wall-clock hours the run must finish within (train/finetune). Omitted: no deadline."
    )
    china_available: bool | None = Field(
        None, description="True: only GPUs that can be bought in mainland China (export rules)."
    )
    domestic: bool | None = Field(
        None, description="Only Chinese-made accelerators (国产: Huawei, Hygon, Cambricon…) when true."
    )
    pricing: Pricing = Field("rent", description="rent (元 per card-hour) or buy (元 per card, cards only).")
    batch: int = Field(1, ge=1, le=100_000, description="infer: concurrent sequences.")
    context_len: int = Field(4096, ge=1, le=1_000_000, description="infer: tokens per sequence (prompt + output).")
    precision: WeightPrecision | None = Field(
        None,
        description="infer: weight precision (bf16, fp16, fp8, int8, int4, nf4); omitted: the model's published "
        "precision where the GPU computes in it (FP8 for DeepSeek-V3/R1 on FP8 cards), else bf16 (fit_inference's "
        "default).",
    )
    max_gpus: int = Field(1024, ge=1, le=100_000, description="Largest GPU count to consider.")
    top_k: int = Field(5, ge=1, le=100, description="How many ranked options to return.")

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value):
        if value is None:
            return None
        try:
            return parse_token_count(value)
        except ValueError as err:
            raise InvalidInput(
                f"Invalid tokens: {err}.",
                f"训练 token 数无效：请写成大于 0 的数，如 '1B'、'10亿' 或 1000000000（{value!r}）。",
                field="tokens",
            ) from None

    @field_validator("budget_cny", mode="before")
    @classmethod
    def _budget(cls, value):
        if isinstance(value, int | float) and not isinstance(value, bool) and not value > 0:
            raise InvalidInput(
                f"budget_cny must be more than 0 元 (got {value:g}).",
                f"预算 budget_cny 必须大于 0 元（收到 {value:g}）。",
                field="budget_cny",
            )
        return value

    @model_validator(mode="after")
    def _one_budget(self):
        if sum(b is not None for b in (self.budget_cny, self.budget_usd, self.budget_eur)) > 1:
            raise InvalidInput(
                "Give the budget once: in 元 (budget_cny), in US dollars (budget_usd) or in euros (budget_eur).",
                "预算请只给一种：人民币（budget_cny）、美元（budget_usd）或欧元（budget_eur）。",
                field="budget_usd",
            )
        return self

    @field_validator("deadline_hours", mode="before")
    @classmethod
    def _deadline(cls, value):
        if isinstance(value, int | float) and not isinstance(value, bool) and not value > 0:
            raise InvalidInput(
                f"deadline_hours must be more than 0 hours (got {value:g}).",
                f"期限 deadline_hours 必须大于 0 小时（收到 {value:g}）。",
                field="deadline_hours",
            )
        return value

    @classmethod
    def schema_rules(cls) -> dict[str, Any]:
        return {
            "workload": when(
                "workload",
                ["train", "finetune"],
                {"required": ["tokens"], "properties": {"tokens": {"not": {"type": "null"}}}},
            ),
            # one budget: a dollar budget leaves budget_cny out (or null)
            "budget_usd": {
                "if": {"properties": {"budget_usd": {"type": "number"}}, "required": ["budget_usd"]},
                "then": {"properties": {"budget_cny": {"type": "null"}}},
            },
            # a euro budget leaves the other two out (or null)
            "budget_eur": {
                "if": {"properties": {"budget_eur": {"type": "number"}}, "required": ["budget_eur"]},
                "then": {"properties": {"budget_cny": {"type": "null"}, "budget_usd": {"type": "null"}}},
            },
        }

    @model_validator(mode="after")
    def _tokens_for_training(self) -> RecommendInput:
        if self.workload != "infer" and self.tokens is None:
            what_en = "pretraining" if self.workload == "train" else "fine-tuning"
            what_zh = "预训练" if self.workload == "train" else "微调"
            raise InvalidInput(
                f"How many tokens will the {what_en} run see? Give tokens, e.g. '1B' or '10亿'.",
                f"请告诉我{what_zh}要训练多少 token（tokens），例如 '1B' 或 '10亿'。",
                field="tokens",
            )
        return self

    @property
    def resolved_method(self) -> str | None:
        if self.workload == "infer":
            return None
        return self.method or DEFAULT_METHOD[self.workload]


class RecommendOption(BaseModel):
    """One GPU type at one count that fits and passes every filter."""

    model_config = ConfigDict(frozen=True)

    rank: int
    gpu: str
    gpu_id: str
    n_gpus: int
    fits: bool
    per_gpu_gb: float = Field(description="Memory needed per GPU at this count, GB.")
    usable_gb: float = Field(description="Usable memory per GPU (capacity × usable fraction), GB.")
    zero_stage: int | None = Field(description="DeepSpeed ZeRO stage used (training); None for inference.")
    min_gpus: int = Field(description="Fewest GPUs of this type whose memory holds the job.")
    hours: float | None = Field(description="Wall-clock hours of the run (train/finetune).")
    hours_low: float | None
    hours_high: float | None
    gpu_hours: float | None
    total_cny: float | None = Field(description="Middle cost estimate (see cost_basis); None: no price on file.")
    low_cny: float | None
    high_cny: float | None
    price_cny: float | None = Field(description="Unit price used: 元 per card-hour (rent) or 元 per card (buy).")
    price_source: str | None
    tokens_per_s: float | None = Field(
        description="infer: decode tokens/s over the whole batch; train/finetune: training tokens/s."
    )
    china_available: bool
    why: str
    why_zh: str


class DroppedGpu(BaseModel):
    """A GPU type left out, and why."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    gpu_id: str
    reason: Literal[
        "not_in_china", "not_domestic", "does_not_fit", "no_price", "over_budget", "misses_deadline", "unsupported"
    ]
    reason_en: str
    reason_zh: str
    n_gpus: int | None = None
    hours: float | None = None
    total_cny: float | None = None


class RecommendOutput(ToolOutput):
    model: str
    workload: Workload
    method: Method | None
    tokens: int | None
    pricing: Pricing
    cost_basis: str = Field(description="What total_cny means for this workload and pricing.")
    budget_cny: float | None
    budget_usd: float | None = None  # the budget as given, when in US dollars (budget_cny is its conversion)
    budget_eur: float | None = None  # the budget as given, when in euros (budget_cny is its conversion)
    deadline_hours: float | None
    china_available: bool | None
    domestic: bool | None = None
    options: list[RecommendOption] = Field(description="The top_k options, cheapest first (unpriced last).")
    more_options: int = Field(description="Further options that passed every filter but are beyond top_k.")
    cheapest: RecommendOption | None
    fastest: RecommendOption | None
    best_value: RecommendOption | None
    best_value_metric: str
    dropped: list[DroppedGpu]
    verdict_en: str
    verdict_zh: str
