"""A reinforcement-learning run asked as resources ("How many resources are required to train deepseek r1 671b
using grpo?", "rlhf 第三阶段……我需要准备多大的卡"): the pools an RL framework runs (OpenRLHF's and veRL's layout),
not a fine-tune's shortlist.

- the training pool: the policy and what trains or sits beside it (PPO: a trained value model, a frozen reference
  and reward model; GRPO: a frozen reference; none with LoRA, whose adapter-off base is the reference), sized by
  `fit_training` with the objective (tools/memory/preference.py);
- the rollout engine that generates the samples: a vLLM replica of the policy holding the weights and the KV cache
  of a rollout batch, sized by `fit_inference` (its own GPUs in the separate-pool layout; time-shared with the
  training pool when colocated, at the cost of swapping weights each step);
- the servers, network, power and bill for both pools together (`plan_cluster`).

Every figure is a tool output: the GPU total is plan_cluster's own count of the GPUs it was asked to house.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.systems import nodes
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, method_label, num
from bot.offline.understand.frames import DEFAULT_GPU
from bot.offline.understand.request.model import Request
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError

#: the objectives that generate their own samples each step (a rollout engine beside the training pool)
RL_OBJECTIVES = ("ppo", "grpo", "rloo", "reinforce++", "dapo", "gspo")
#: the sequences the rollout engine holds at once, and each one's prompt + generation (stated in the answer)
ROLLOUT_BATCH = 64
ROLLOUT_CONTEXT = 4096
#: what asks for the run's resources rather than a check of the user's own cards
_ASKS = frozenset({"min_count", "choose", "config"})
_INTENTS = frozenset({"recommend", "min_gpus", "build_budget", "train_memory", "fit", "weights"})


def applies(intent: str, s: dict[str, Any], request: Request) -> bool:
    """An RL objective, a model, no count of the user's own cards, and a question about what the run needs."""
    if s.get("objective") not in RL_OBJECTIVES or not s.get("model") or request.parsed.n_gpus:
        return False
    if s.get("workload") == "infer":
        return False
    return intent in _INTENTS or bool(_ASKS & set(request.asks))


def _at_need(tool: str, args: dict[str, Any], run: ToolRun) -> dict[str, Any] | None:
    """The fit at the least GPU count that holds it (the calculator's own figures at that count); None: no count
    the calculator considers holds it."""
    first = run(tool, {**args, "n_gpus": 1})
    if first.get("fits"):
        return first
    need = first.get("min_gpus")
    return run(tool, {**args, "n_gpus": int(need)}) if need else None


def rl_plan(s: dict[str, Any], request: Request, run: ToolRun, out: Out) -> None:
    lang = out.lang
    objective = s["objective"]
    gpu = s.get("gpu") or DEFAULT_GPU
    method = s.get("method") or "full"
    model = s["model"]
    name = localize_name(get_model(model).name, lang)
    card = get_gpu(gpu).name
    train = _at_need("fit_training", {"model": model, "gpu": gpu, "method": method, "objective": objective}, run)
    rollout_args = {"model": model, "gpu": gpu, "batch": ROLLOUT_BATCH, "context_len": ROLLOUT_CONTEXT}
    roll = _at_need("fit_inference", rollout_args, run)
    label = method_label(method, lang, objective).strip()
    label = label[:1].upper() + label[1:]  # it opens the answer ("Full GRPO of …")
    if train is None or roll is None:
        out.add(say("rl_no_fit", lang, label=label, model=name, gpu=card))
        return
    trained, rollout = int(train["n_gpus"]), int(roll["n_gpus"])
    cluster = run("plan_cluster", {"gpu": gpu, "n_gpus": trained + rollout})
    servers = say("rl_one_server", lang) if cluster["nodes"] == 1 else say("rl_servers", lang, n=cluster["nodes"])
    out.add(say("rl_head", lang, label=label, model=name, total=cluster["n_gpus"], gpu=card, servers=servers))
    lines = [
        say("rl_table_head", lang),
        say("rl_row_train", lang, n=trained, per=num(train["per_gpu_gb"]), models=say(f"rl_models_{objective}", lang)),
        say(
            "rl_row_rollout",
            lang,
            n=rollout,
            per=num(roll["per_gpu_gb"]),
            batch=ROLLOUT_BATCH,
            context=f"{ROLLOUT_CONTEXT:,}",
        ),
    ]
    out.add("\n".join(lines))
    if objective == "ppo" and (reward := _reward_model(s, request)):
        r = run("model_memory", {"model": reward[1]})
        stood = localize_name(r["model"], lang)
        named = stood if reward[0].lower() == stood.lower() else say("rl_stand_in", lang, named=reward[0], model=stood)
        out.add(say("rl_reward", lang, model=named, gb=num(r["weights_gb"]), policy=name))
    out.add(say("rl_colocated", lang, n=trained, rollout=rollout))
    if method == "full":
        _lora_line(s, model, gpu, objective, lang, run, out)
    if cluster["nodes"] > 1:
        nodes.add_servers(cluster, out)
    out.add(say("rl_assumptions", lang, gpu=card, batch=ROLLOUT_BATCH, context=f"{ROLLOUT_CONTEXT:,}"))


#: a model named as PPO's reward model ("reward model：Qwen1.5-1.8B", "奖励模型用 1.8B")
_REWARD = re.compile(r"(?:reward|奖励|\brm\b)[^\n]{0,24}$", re.I)


def _reward_model(s: dict[str, Any], request: Request) -> tuple[str, str] | None:
    """The other model the question names as the reward model, if any (reward words just before its name): the
    catalog model it stands on (its stand-in when the name is not in the catalog), with the name as written."""
    others = [m for m in request.parsed.models if m != s["model"]]
    for m in request.mentions:
        if m.role == "model" and m.value != s["model"] and others:
            if _REWARD.search(request.text[max(0, m.start - 30) : m.start]):
                return m.text, others[0]
    return None


def _lora_line(s: dict[str, Any], model: str, gpu: str, objective: str, lang: str, run: ToolRun, out: Out) -> None:
    """The same run with LoRA: the adapter-off base is the reference, so the training pool shrinks most."""
    try:
        lora = _at_need("fit_training", {"model": model, "gpu": gpu, "method": "lora", "objective": objective}, run)
    except AdvisorError:
        return
    if lora is not None:
        label = method_label("lora", lang, objective).strip()
        out.add(say("rl_lora", lang, label=label, n=lora["n_gpus"], per=num(lora["per_gpu_gb"])))
