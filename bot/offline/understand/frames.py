"""The offline planner's intents as data: one frame per intent.

A frame says which tools answer the intent, which slots it cannot answer without (`needs`: the
planner asks for these, and only these), which it fills with a stated default when the user left
them out (`defaults`: "按 A100 80GB 估算；换卡请说"), and which composer writes the answer.
Every other slot is optional: a composer uses it when given and never asks for it.

    >>> FRAMES["weights"].needs, FRAMES["weights"].defaults
    (('model',), {})
    >>> FRAMES["time"].defaults["tokens"]
    1000000000
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.catalog.lookup import get_model
from tools.errors import AdvisorError

DEFAULT_GPU = "a100-sxm4-80gb"
FP8_GPU = "h100-sxm5-80gb"  # FP8 needs FP8 tensor cores: the precision comparison defaults to a Hopper card

#: how a default is said in an answer ("按 A100 80GB 估算")
DEFAULT_LABEL: dict[str, dict[Any, dict[str, str]]] = {
    "gpu": {DEFAULT_GPU: {"zh": "A100 80GB", "en": "A100 80GB"}, FP8_GPU: {"zh": "H100 SXM", "en": "H100 SXM"}},
    "model": {"7B": {"zh": "7B 模型", "en": "a 7B model"}},
    "tokens": {1_000_000_000: {"zh": "1B token", "en": "1B tokens"}},
    "n_gpus": {1: {"zh": "单卡", "en": "one GPU"}, 8: {"zh": "8 卡", "en": "8 GPUs"}},
    "method": {"full": {"zh": "全参训练", "en": "full training"}},
    "workload": {"infer": {"zh": "推理部署", "en": "serving (inference)"}},
    "context_len": {4096: {"zh": "4K 上下文", "en": "a 4K context"}},
}


@dataclass(frozen=True)
class Frame:
    intent: str
    tools: tuple[str, ...]
    compose: str  # "module:function" under bot.offline.compose
    needs: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    #: how the answer is asked for when a needed slot is missing: the slot's prompt key in the templates
    ask: dict[str, str] = field(default_factory=dict)


def _f(intent: str, tools: tuple[str, ...], compose: str, needs: tuple[str, ...] = (), **defaults: Any) -> Frame:
    return Frame(intent, tools, compose, needs, defaults)


FRAMES: dict[str, Frame] = {
    f.intent: f
    for f in (
        # sizes of a model: no GPU needed
        _f("weights", ("model_memory",), "memory:weights", ("model",)),
        _f("kv_cache", ("model_memory",), "memory:kv_cache", ("model",)),
        _f("zero_states", ("model_memory",), "memory:zero_states", ("model",), n_gpus=8),
        _f("train_memory", ("model_memory",), "memory:train_memory", ("model",)),
        # memory on a GPU, time, speed
        _f("fit", ("fit_training", "fit_inference"), "train:fit", ("model",), gpu=DEFAULT_GPU),
        _f("min_gpus", ("fit_training", "fit_inference"), "train:min_gpus", ("model",), gpu=DEFAULT_GPU),
        _f(
            "time",
            ("training_time", "fit_training", "run_cost"),
            "train:time",
            ("model",),
            gpu=DEFAULT_GPU,
            n_gpus=8,
            tokens=1_000_000_000,
        ),
        _f(
            "precision_speedup",
            ("precision_speedup",),
            "network:precision_speedup",
            (),
            model="7B",
            gpu=FP8_GPU,
            n_gpus=8,
            tokens=1_000_000_000,
        ),
        _f("speed", ("fit_inference", "inference_speed"), "serving:speed", ("model",), gpu=DEFAULT_GPU),
        _f(
            "serving_capacity",
            ("fit_inference", "inference_speed"),
            "serving:capacity",
            ("model",),
            gpu=DEFAULT_GPU,
            context_len=4096,
        ),
        _f("recommend_serving", ("recommend_gpus",), "serving:recommend_serving", ("model",)),
        # money and power
        _f("cost", ("run_cost",), "money:cost", (), gpu=DEFAULT_GPU),
        _f("price", ("gpu_specs",), "money:price", ("gpu",)),
        _f("rent_vs_buy", ("rent_vs_buy",), "money:rent_vs_buy", (), gpu=DEFAULT_GPU, n_gpus=8),
        _f(
            "build_budget", ("recommend_gpus",), "money:build_budget", ("budget_cny",), model="7B", tokens=1_000_000_000
        ),
        _f("power", ("power_draw",), "money:power", (), gpu=DEFAULT_GPU, n_gpus=8),
        # choosing cards
        _f("specs", ("gpu_specs",), "info:specs", ("gpu",)),
        _f("availability", ("gpu_specs", "compare_gpus"), "info:availability", ("gpu",)),
        _f("compare", ("compare_gpus",), "info:compare", ("gpu",)),
        _f("domestic", ("compare_gpus",), "info:domestic", (), gpu=DEFAULT_GPU),
        _f("recommend", ("recommend_gpus",), "info:recommend", (), model="7B", tokens=1_000_000_000),
        # words
        _f("knowledge", ("search_knowledge",), "info:knowledge"),
        _f("out_of_scope", (), "info:out_of_scope"),
        _f("greeting", (), "info:greeting"),
    )
}

#: a reply that accepts the default the planner offered ("按默认")
ACCEPT_DEFAULT = (
    r"^\s*(?:按默认|默认|就按默认(?:的)?|按默认的?来|可以|好的?|行|ok|okay|yes|sure|default|defaults|go ahead|"
    r"use the defaults?|fine)[。.!！]*\s*$"
)
#: what a question asks for when a needed slot is missing, and the value "按默认" then takes
ASK_DEFAULTS: dict[str, Any] = {"model": "7B", "gpu": DEFAULT_GPU}


#: what makes a fit question one about training; without any of them "能跑吗/够吗" is about serving the model
TRAINING_SIGNS = (
    "workload",
    "method",
    "objective",
    "zero_stage",
    "grad_checkpointing",
    "tokens",
    "seq_len",
    "micro_batch",
    "offload",
)

#: intents about serving: a length the user gives is the context; the others train: it is the sequence length
SERVING = frozenset({"kv_cache", "speed", "serving_capacity", "recommend_serving"})
TRAINING = frozenset({"zero_states", "train_memory", "time", "precision_speedup"})


def frame(intent: str) -> Frame:
    return FRAMES.get(intent) or FRAMES["knowledge"]


def needed(intent: str) -> set[str]:
    """Every slot the intent's answer can depend on being asked for (for the 'never asks for more' test)."""
    return set(frame(intent).needs)


#: the template of the question back for each slot the answer cannot do without
ASK_KEY = {
    "model": "ask_model",
    "gpu": "ask_gpu",
    "tokens": "ask_tokens",
    "gpu_hours": "ask_hours",
    "budget_cny": "ask_budget",
}
#: the sizes the question for an unknown model's size gives as examples ("13B"; "总参 47B、激活 13B")
SIZE_EXAMPLE = {"dense_params_b": 13, "moe_total_params_b": 47, "moe_active_params_b": 13}
#: the example a question for a slot gives ("例如 80 万"), with its value
ASK_EXAMPLES = {"budget_cny": {"value": 800_000, "zh": "80 万", "en": "800,000 CNY"}}


def fp8_native(slots: dict[str, Any]) -> bool:
    """A model published in FP8 (DeepSeek-V3/R1) served at its own precision needs a card with FP8."""
    if slots.get("precision") or not slots.get("model"):
        return False
    try:
        return get_model(slots["model"]).native_precision == "fp8"
    except AdvisorError:
        return False
