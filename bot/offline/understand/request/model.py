"""The request model (DESIGN.md, "One question, all of it"): every span of the message that carries a name
or a figure (`Mention`, with its role), and everything the user asks (`asks`, in the order asked)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.offline.understand.question import ParsedQuestion

Ask = Literal[
    "fits", "min_count", "time", "cost", "speed", "capacity", "compare", "choose", "rent_vs_buy", "diagnose",
    "availability", "price", "power", "knowledge", "config", "host_ram",
]  # fmt: skip
ASKS: tuple[str, ...] = Ask.__args__

#: what a mention is; names first, then figures. `other`: a figure the reader could not place (said so)
ROLES = (
    "model", "gpu", "framework", "method", "objective", "precision", "kv_precision", "gpus_total", "nodes", "cpu_cores", "ram_gb", "swap_gb",
    "gpu_memory_gb", "model_size", "tokens", "samples", "epochs", "seq_len", "context_len", "prompt_len",
    "output_len", "batch", "micro_batch", "grad_accum", "concurrency", "qps", "daily_users", "hours_per_day",
    "months", "deadline", "budget", "price_user", "electricity_tariff", "tariff_foreign", "pue", "servers_per_rack", "power_kw",
    "occupancy", "utilisation", "gpu_hours", "wall_clock", "zero_stage", "offload", "tp_size", "pp_size",
    "checkpointing", "log_memory", "throughput_measured", "version", "hyperparameter", "claim", "network",
    "ttft_target", "speed_target", "excluded", "other",
)  # fmt: skip


class Mention(BaseModel):
    """A span of the message with a name or a figure, and the role it plays in the question."""

    model_config = ConfigDict(extra="forbid")
    text: str  # as the user wrote it (NFKC-normalised)
    role: str
    value: float | str | None = None
    start: int
    end: int


class Request(BaseModel):
    """One message, read: its mentions and its asks. `parsed` is the slot view the planner's frames use."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    text: str
    language: Literal["zh", "en"]
    mentions: list[Mention] = Field(default_factory=list)
    asks: list[Ask] = Field(default_factory=list)
    #: the asks the message's words place by themselves (the classifier's guesses left out): the planner answers
    #: these beside the settled intent, which may differ from the classifier's (a follow-up edit, a reply)
    cued: list[Ask] = Field(default_factory=list)
    parsed: ParsedQuestion
