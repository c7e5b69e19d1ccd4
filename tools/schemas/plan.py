"""Inputs and outputs of the planning tools: `plan_serving` (traffic -> replicas) and `plan_system` (job + budget
-> machines and a bill of materials). Field names: DESIGN.md's tool table."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.schemas.common import ToolInput, ToolOutput
from tools.schemas.speed import Tokens

WeightPrecision = Literal["bf16", "fp16", "fp8", "int8", "int4"]

#: the cards a planner compares when the user names none: the serving cards the price catalog covers
DEFAULT_SERVING_GPUS = ("H20", "RTX 4090", "L20", "A100 80GB", "H800", "Ascend 910B")


#: the requests in flight a serving plan assumes when the request gives no traffic (stated in the output)
DEFAULT_CONCURRENCY = 1


def no_traffic(inp: ToolInput) -> None:
    """No concurrency, QPS or daily users given: plan for one request in flight, and say so (validators only)."""
    if all(getattr(inp, k) is None for k in ("concurrency", "qps", "daily_users")):
        inp.note(
            "concurrency",
            DEFAULT_CONCURRENCY,
            "requests",
            "no traffic given: planned for one request in flight; give concurrency, qps or daily_users",
        )
        inp.resolve(concurrency=DEFAULT_CONCURRENCY)


class PlanServingInput(ToolInput):
    """How many GPUs to serve a model to this much traffic at these latency targets, on which card?"""

    model: str = Field(description="Model name or size, e.g. 'Qwen3-32B', 'Qwen2.5-72B', '70B'.")
    gpus: list[str] = Field(
        min_length=1,
        max_length=12,
        description="Candidate GPUs to compare, e.g. ['H20', 'RTX 4090'] (a planner without a preference may use "
        "H20, RTX 4090, L20, A100 80GB, H800, Ascend 910B).",
    )
    concurrency: int | None = Field(
        None, ge=1, le=1_000_000_000, description="Requests in flight at the peak (高峰并发)."
    )
    qps: float | None = Field(None, gt=0, le=1e9, description="Requests per second at the peak.")
    daily_users: int | None = Field(None, ge=1, le=100_000_000_000, description="Daily active users (日活).")
    requests_per_user: float = Field(10, gt=0, le=10_000, description="Requests per user per day.")
    peak_factor: float = Field(
        3, ge=1, le=100, description="Peak-hour rate over the day's average rate (daily_users only)."
    )
    prompt_tokens: int = Field(1000, ge=1, le=1_000_000, description="Prompt tokens per request (with history).")
    output_tokens: int = Field(300, ge=1, le=100_000, description="Generated tokens per request.")
    context_tokens: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Tokens of context each request holds in the KV cache (a chat's window, its earlier turns kept "
        "by prefix caching), when more than prompt + output: the KV memory and each decode step's reads are sized "
        "for it, while each request prefills only prompt_tokens.",
    )
    ttft_s: float = Field(2.0, gt=0, le=600, description="Target time to first token at the peak, seconds.")
    tokens_per_s_per_user: float = Field(
        20, gt=0, le=10_000, description="Target decode speed each user sees, tokens/s."
    )
    precision: WeightPrecision | None = Field(
        None, description="Weight precision for every candidate; omitted: the default and, as a variant, int4 (AWQ)."
    )
    quantized_variants: bool = Field(
        True, description="Also plan each card with int4 (AWQ/GPTQ) weights when no precision is given."
    )
    headroom: float = Field(
        0.2, ge=0, le=4, description="Spare capacity above the peak, as a share (0.2: replicas busy ≤ 83%)."
    )
    hours_per_day: float = Field(24, gt=0, le=24, description="Hours a day owned cards are busy (owned cost).")
    china_purchasable: bool | None = Field(
        None, description="True: the pick is a card that can be bought in mainland China (the others are still shown)."
    )
    max_gpus: int = Field(100_000, ge=1, le=1_000_000, description="The most GPUs a plan may use.")

    @model_validator(mode="after")
    def _traffic(self) -> PlanServingInput:
        no_traffic(self)
        return self


class TokenCost(BaseModel):
    model_config = ConfigDict(frozen=True)

    rent: float | None  # 元 per million output tokens at the rental price (None: no price on file)
    own: float | None  # 元 per million output tokens on owned cards (depreciation + running)


class ServingCandidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpu: str
    precision: str
    meets_targets: bool
    gpus_per_replica: int | None  # None: the weights do not fit on one node of this card
    batch_per_replica: int  # sequences each replica runs at the peak
    max_batch_per_replica: int  # the most the KV memory holds
    replicas_for_memory: int
    replicas_for_throughput: int
    replicas: int  # the larger need, times (1 + headroom), rounded up
    n_gpus: int
    limited_by: Literal["memory", "throughput", "latency", "capacity"]
    ttft_s: float | None  # at the peak, with prefill queueing
    tokens_per_s_per_user: float | None  # at the peak
    output_tokens_per_s_per_replica: float | None
    prefill_share: float | None  # share of a replica's time spent on prefill at the peak
    cny_per_million_tokens: TokenCost
    export_restricted: bool  # not purchasable in mainland China (catalog)
    unmet: list[str]  # the targets this card cannot meet ("ttft_s", "tokens_per_s_per_user", "max_gpus", "fit")
    note: str = ""  # why it cannot be met and the nearest that can


class PlanServingOutput(ToolOutput):
    model: str
    concurrency: float  # requests in flight at the peak used for the plan
    qps: float  # peak requests per second (from Little's law where concurrency was given)
    traffic_source: Literal["concurrency", "qps", "daily_users"]
    prompt_tokens: int
    context_tokens: int | None = None
    output_tokens: int
    ttft_s: float  # the target
    tokens_per_s_per_user: float  # the target
    headroom: float
    candidates: list[ServingCandidate]
    pick: str | None  # "GPU precision" of the chosen candidate
    pick_reason: str
    unmet: list[str]  # targets no candidate meets
    nearest: str  # when unmet: the nearest that can be met

    @classmethod
    def _nested(cls):
        return {"candidates": ServingCandidate}


# ---- Input and output of `plan_system`: a job and a budget or deadline -> machines, network, power, a BOM.

Job = Literal["serve", "finetune", "train"]


class PlanSystemInput(ToolInput):
    """Which machines to buy for a training run, a fine-tuning lab or a serving target, within a budget or a
    deadline: servers, network, power and racks, and a bill of materials with dated price ranges."""

    job: Job = Field(description="serve (a serving target), finetune (a fine-tuning run) or train (pretraining).")
    model: str = Field(description="Model name or size, e.g. 'Qwen2.5-14B', 'Qwen2.5-72B', '70B'.")
    method: Literal["full", "lora", "qlora"] | None = Field(
        None, description="finetune/train: full, lora or qlora; omitted: lora for finetune, full for train."
    )
    tokens: Tokens = Field(
        1_000_000_000, description="finetune/train: training tokens, e.g. '1B', '10亿' (dataset × epochs)."
    )
    concurrency: int | None = Field(None, ge=1, le=1_000_000_000, description="serve: requests in flight at the peak.")
    qps: float | None = Field(None, gt=0, le=1e9, description="serve: peak requests per second.")
    daily_users: int | None = Field(None, ge=1, le=100_000_000_000, description="serve: daily active users.")
    prompt_tokens: int = Field(1000, ge=1, le=1_000_000, description="serve: prompt tokens per request.")
    output_tokens: int = Field(300, ge=1, le=100_000, description="serve: generated tokens per request.")
    context_tokens: int | None = Field(
        None, ge=1, le=1_000_000, description="serve: context each request holds in the KV cache (plan_serving's)."
    )
    ttft_s: float = Field(2.0, gt=0, le=600, description="serve: target time to first token, seconds.")
    tokens_per_s_per_user: float = Field(20, gt=0, le=10_000, description="serve: target tokens/s per user.")
    budget_cny: float | None = Field(None, gt=0, description="Budget for the machines, 元 (purchase).")
    deadline_hours: float | None = Field(None, gt=0, description="finetune/train: wall-clock hours to finish within.")
    china_purchasable: bool = Field(
        True,
        description="Only platforms whose cards can be bought in mainland China (named platforms are kept, flagged).",
    )
    domestic: bool = Field(False, description="国产化: only Chinese-made accelerators (Huawei Ascend …).")
    platforms: list[str] | None = Field(
        None,
        max_length=12,
        description="Platform ids or GPU names to consider (e.g. 'H20', 'atlas-800t-a2'); omitted: all.",
    )
    rack_kw: float = Field(15, gt=0, le=200, description="Power one rack may draw, kW (H-class rooms: 10–20).")
    max_nodes: int = Field(64, ge=1, le=1024, description="The most servers an option may use.")

    @model_validator(mode="after")
    def _serving_traffic(self) -> PlanSystemInput:
        if self.job == "serve":
            no_traffic(self)
        return self


class ServerLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    platform: str
    name: str
    gpu: str
    gpus_per_node: int
    nodes: int


class BomLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: str
    qty: int
    low_cny: float | None
    high_cny: float | None
    source: str


class Network(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    ports: int
    gbps: float
    switches: int
    tiers: int


class SystemOption(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str  # the platform id
    servers: list[ServerLine]
    n_gpus: int
    network: Network | None  # None: one node
    power_kw: float  # maximum input of the servers
    racks: int
    servers_per_rack: int
    bom: list[BomLine]
    total_low_cny: float | None  # None: no public price for part of the BOM
    total_high_cny: float | None
    meets: bool  # fits the job and meets the budget/deadline/targets
    unmet: list[str]  # "budget", "deadline", "fit", "targets", "max_nodes", "rack_power"
    hours: float | None  # finetune/train: wall-clock hours of the job on this option
    capacity: dict | None  # serve: what it serves (concurrency, precision, ttft_s, tokens_per_s_per_user, 元/M tokens)
    export_restricted: bool
    note: str = ""


class PlanSystemOutput(ToolOutput):
    job: Job
    model: str
    options: list[SystemOption]
    cheapest: str | None
    fastest: str | None
    best_value: str | None
    coincide: list[str]  # e.g. ["cheapest=fastest"]: the same option wins both, and why it is so
    nearest: str  # when no option meets the ask: the nearest that does
    skipped: list[str]  # platforms left out and why ("hgx-h100-8gpu: not purchasable in mainland China")

    @classmethod
    def _nested(cls):
        return {"options": SystemOption}


class PlanClusterInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpu: str = Field(..., description="GPU name, e.g. 'H800'.")
    n_gpus: int = Field(..., ge=1, le=100_000, description="GPUs the job needs.")
    rack_kw: float = Field(15, gt=0, le=200, description="kW per rack.")
    #: the host side of each server (CPU cores, system RAM, disk), sized for this job when given
    host_workload: Literal["train", "infer"] | None = Field(
        None, description="Size each server's CPU cores, system RAM and disk for this job (training or serving)."
    )
    model: str | None = Field(None, description="The job's model, for the disk its checkpoints take.")
    method: Literal["full", "lora", "qlora", "freeze"] = Field(
        "full", description="Training method (host_workload train)."
    )
    precision: str = Field("bf16", description="The weights' precision when serving (their file on disk).")
    host_need_gb: float | None = Field(
        None, gt=0, le=1e6, description="Host RAM per server a calculator already computed (offload, loading)."
    )


class HostSide(BaseModel):
    """One server's host side (tools/plan/host.py): CPU cores and system RAM by the sizing rules (tco.yaml `host`),
    the RAM a calculator computed where larger, and the disk of the job's checkpoints."""

    model_config = ConfigDict(frozen=True)

    workload: Literal["train", "infer"]
    gpus_per_node: int
    cores_per_gpu_low: float
    cores_per_gpu_high: float
    cores_low: int
    cores_high: int
    vram_gb: float  # the server's GPU memory, all cards
    ram_multiple_low: float
    ram_multiple_high: float
    ram_low_gb: float  # rounded up to a 64 GB step, at least the floor and the computed need
    ram_high_gb: float
    ram_floor_gb: float  # the least RAM the rules put in any server
    ram_need_gb: float | None  # what a calculator computed per server, when given
    checkpoint_gb: float | None  # one checkpoint (training: weights + optimizer states; serving: the weights file)
    checkpoint_note: str | None
    reference: str  # a published server's cores and RAM, to set the rules against
    reference_zh: str


class PlanClusterOutput(ToolOutput):
    gpu: str
    n_gpus: int
    platform: str | None  # the card's server platform id; None: none in the catalog (8 per server assumed)
    platform_name: str | None
    platform_name_zh: str | None
    gpus_per_node: int
    nodes: int
    network: Network | None  # None: one node, or no platform to size the fabric from
    nic_kind: str | None
    switch_ports: int  # ports per fabric switch the count of switches assumes
    node_kw: float | None  # maximum input of one server
    power_kw: float | None
    racks: int | None
    servers_per_rack: int | None
    bom: list[BomLine]
    total_low_cny: float | None  # None: no public price for part of the BOM
    total_high_cny: float | None
    host: HostSide | None = None  # with host_workload: each server's CPU cores, system RAM and disk

    @classmethod
    def _nested(cls):
        return {"bom": BomLine}


# ---- `fit_inference` with `alongside`: several models on the same GPUs, each its own engine.


class TogetherPart(BaseModel):
    """One model's own need on each card: what `fit_inference` gives it alone (weights, KV cache, activations, its
    process's CUDA context), and the share of the card its engine must be allowed (`gpu_memory_utilization`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    name: str
    per_gpu_gb: float
    weights_gb: float
    kv_cache_gb: float
    share_fraction: float


class SharedCard(BaseModel):
    """The models' needs summed on each card against what the engines together may take; the shares summed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parts: list[TogetherPart]
    per_gpu_gb: float
    usable_gb: float
    fits: bool
    headroom_gb: float
    shortfall_gb: float
    share_fraction: float
