"""What the parser returns: the question's intent and slots (`ParsedQuestion`), and the intents it knows."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Intent = Literal[
    "fit", "min_gpus", "time", "cost", "price", "rent_vs_buy", "build_budget", "compare", "domestic", "recommend",
    "recommend_serving", "speed", "serving_capacity", "specs", "availability", "power", "precision_speedup", "weights", "kv_cache",
    "zero_states", "train_memory", "knowledge", "out_of_scope", "greeting",
]  # fmt: skip
INTENTS: tuple[str, ...] = Intent.__args__


class UserFigure(BaseModel):
    """A number the user states as a fact ("H100 是 25 万一张对吧"): to check, never to repeat as fact."""

    model_config = ConfigDict(extra="forbid")
    text: str
    value: float
    unit: str  # "CNY", "USD", "GB", "TFLOPS", "GB/s", "W"
    kind: Literal["price", "price_per_month", "memory", "compute", "bandwidth", "power"]


class ParsedQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    language: Literal["zh", "en"]
    #: intents[0], or, when no cue was found (intents == []), a guess from the slots
    intent: Intent
    #: every intent whose cues scored, strongest first
    intents: list[Intent] = Field(default_factory=list)
    #: the intent model's probability for `intent` (1.0 for a rule: a bare greeting)
    confidence: float = 0.0
    models: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)
    unknown_gpus: list[str] = Field(default_factory=list)
    unknown_models: list[str] = Field(default_factory=list)
    #: cards (catalog ids, else as typed) and vendors the question rules out ("不用 H100", "not NVIDIA")
    excluded_gpus: list[str] = Field(default_factory=list)
    excluded_vendors: list[str] = Field(default_factory=list)
    #: unknown model name -> what it is computed on: the family's nearest catalog model, or a size ("72B")
    stand_ins: dict[str, str] = Field(default_factory=dict)
    #: why a name without a size stands on its model: "default" (the size its family is known for) or the figure
    #: of the question that implies the size ("fp16 26G": 13B of fp16 weights)
    stand_in_basis: dict[str, str] = Field(default_factory=dict)
    #: the question names no model; `models` holds the model of the place it was asked in, this repository
    #: (`request.source`): said in the answer
    model_source: str | None = None
    #: no card named, only its memory ("一张48G的显卡", a log's "total capacity"): the catalog card used for it
    gpu_from_memory: dict[str, float | str | None] | None = None
    n_gpus: int | None = None  # total across nodes
    n_nodes: int | None = None
    #: "4台H100": the GPUs taken per server of a board-only card (understand/cards/servers.py), said in the answer
    gpus_from_nodes: dict[str, int | str] | None = None
    method: Literal["full", "lora", "qlora", "freeze"] | None = None
    objective: Literal["dpo", "orpo", "kto", "ppo", "grpo", "rloo", "reinforce++", "dapo", "gspo"] | None = None
    sharding: Literal["fsdp", "deepspeed"] | None = None  # the sharding stack the question names
    workload: Literal["pretrain", "finetune", "infer", "train"] | None = None
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"] | None = None
    precision_from: str | None = None  # a runtime's default build ("ollama"), not a precision the user named
    mixed_precision: bool = False
    kv_precision: Literal["fp8", "int8", "fp16", "bf16"] | None = None  # the KV cache's, said of it
    zero_stage: int | None = None
    offload: bool | Literal["optimizer", "param"] | None = None
    seq_len: int | None = None
    context_len: int | None = None
    micro_batch: int | None = None
    batch: int | None = None
    concurrency: int | None = None
    tokens: float | None = None
    #: the parts when tokens were given as samples × tokens per sample × epochs
    tokens_from: dict[str, float] | None = None
    budget_cny: float | None = None  # set only when the budget is in CNY (no exchange rate here)
    budget_amount: float | None = None
    budget_currency: Literal["CNY", "USD", "EUR"] | None = None
    price_cny_per_hour: float | None = None  # per GPU-hour, CNY only
    price_per_hour: float | None = None
    price_currency: Literal["CNY", "USD"] | None = None
    purchase_price_cny: float | None = None  # per card, when the user gives one as an input
    hours: float | None = None  # wall-clock run time the user gives ("跑 1000 小时")
    gpu_hours: float | None = None  # "5000 卡时", "5000 GPU-hours"
    hours_per_day: float | None = None
    electricity_cny_per_kwh: float | None = None  # the user's electricity price, 元/kWh
    pue: float | None = None
    servers_per_rack: int | None = None
    rack_limit_kw: float | None = None
    months: float | None = None
    deadline_hours: float | None = None
    deadline_days: float | None = None
    china_only: bool = False  # only what can be bought in China (国内能买到, 国产)
    domestic_only: bool = False  # Chinese-made accelerators only (国产, 信创)
    grad_checkpointing: bool | None = None
    currency: Literal["CNY", "USD"] | None = None  # the currency the user asks the answer in
    follow_up: bool = False
    injection: bool = False
    user_figures: list[UserFigure] = Field(default_factory=list)
    #: slot -> [low, high] where the user gave a range ("8到16卡"); the slot holds the high end
    ranges: dict[str, list[float]] = Field(default_factory=dict)
    #: slots whose value the user marked as approximate (约, 左右, about)
    approximate: list[str] = Field(default_factory=list)
    #: spans that cannot be right ("0卡", "-5B")
    invalid: list[str] = Field(default_factory=list)
    #: slot -> raw spans matched, for debugging
    mentions: dict[str, list[str]] = Field(default_factory=dict)
    #: (slot, start, end) of each recognised span, on the NFKC-normalised text (`request.reader.normalised`)
    spans: list[tuple[str, int, int]] = Field(default_factory=list)


# --- language and intent ------------------------------------------------------------------------
