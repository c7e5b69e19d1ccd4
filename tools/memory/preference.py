"""What a preference or RL objective adds to a training run's memory: sequences per sample and the models beside
the policy.

The rules and their sources are in tools/data/frameworks.yaml (`trl.reference_models`, `trl.preference_memory`):
- sft: the policy alone, one sequence per sample;
- dpo: a frozen reference copy of the policy, and each sample is a chosen and a rejected sequence (two sequences
  through the policy per sample; TRL concatenates them into one forward pass);
- kto: a frozen reference, one (unpaired) completion per sample;
- orpo: no reference (the odds-ratio term needs none), chosen and rejected per sample;
- ppo: a frozen reference and a frozen reward model, and a value model trained beside the policy the same way;
- grpo: a frozen reference; micro_batch counts completions, as TRL's and ms-swift's per_device_train_batch_size
  does (a prompt's group of num_generations completions is spread over the batch; the rollout's KV cache lives in
  the generation engine, vLLM, or is freed before the backward pass: not counted);
- rloo and reinforce++: as grpo (a frozen reference for the KL penalty, no value model: RLOO's baseline is the
  other completions of the prompt, REINFORCE++'s the batch's normalised return);
- dapo and gspo: as grpo without the reference: DAPO removes the KL term, GSPO's published setting sets it to zero
  (`trl.rl_objectives`).
With LoRA or QLoRA the reference is the base with the adapter switched off: no copy is loaded. Reference and reward
models are the policy's size, frozen in its compute dtype (2 bytes per parameter, 4 in fp32), and ZeRO-3 shards
them as it does the policy (TRL prepares them with the policy's stage-3 config; below stage 3 they are whole).
"""

from __future__ import annotations

from typing import NamedTuple

from tools.schemas.common import Assumption, assume

#: the critic-free objectives (no value model): rollouts scored by a rule or reward function, micro_batch counts
#: completions; the rollout's KV cache lives in the generation engine (vLLM), not in the training memory
CRITIC_FREE = ("grpo", "rloo", "reinforce++", "dapo", "gspo")
#: published without a KL penalty: no reference model is loaded
KL_FREE = ("dapo", "gspo")


class Terms(NamedTuple):
    """What the objective multiplies: sequences through the policy per sample, frozen full-size models beside it,
    and models trained like the policy (PPO's value model makes two)."""

    sequences: int
    frozen_models: int
    trained_models: int


def terms(objective: str, method: str) -> Terms:
    """The objective's multipliers for a run of this method."""
    adapters = method in ("lora", "qlora")  # the adapter-off base is the reference
    ref = 0 if adapters else 1
    if objective == "dpo":
        return Terms(2, ref, 1)
    if objective == "kto":
        return Terms(1, ref, 1)
    if objective == "orpo":
        return Terms(2, 0, 1)
    if objective == "ppo":
        return Terms(1, ref + 1, 2)
    if objective in ("grpo", "rloo", "reinforce++"):
        return Terms(1, ref, 1)
    if objective in KL_FREE:
        return Terms(1, 0, 1)
    return Terms(1, 0, 1)


_WHAT = {
    "sft": "supervised fine-tuning: the policy alone",
    "dpo": "DPO: chosen + rejected sequences per sample",
    "kto": "KTO: one completion per sample",
    "orpo": "ORPO: chosen + rejected per sample, no reference model",
    "ppo": "PPO: a reward model, and a value model trained like the policy",
    "grpo": "GRPO: micro_batch counts completions (TRL's per_device_train_batch_size)",
    "rloo": "RLOO: micro_batch counts completions; the baseline is the prompt's other completions, no value model",
    "reinforce++": "REINFORCE++: micro_batch counts completions; the baseline is the batch's normalised return, no "
    "value model",
    "dapo": "DAPO: micro_batch counts completions; no value model and no KL term, so no reference model",
    "gspo": "GSPO: micro_batch counts completions; no value model, KL coefficient 0 as published: no reference model",
}


def assumption(objective: str, method: str, defaulted: bool) -> Assumption:
    """The objective as a stated assumption, with what it adds."""
    t = terms(objective, method)
    words = [_WHAT[objective]]
    if objective in ("grpo", "rloo", "reinforce++"):
        words.append("the reference kept (KL beta > 0)")
    if objective in ("dpo", "kto", "ppo", "grpo", "rloo", "reinforce++"):
        words.append(
            "no reference copy: the base with the adapter off is the reference"
            if method in ("lora", "qlora")
            else "a frozen reference copy of the policy"
        )
    if t.frozen_models:
        words.append(f"{t.frozen_models} frozen model(s) of the policy's size in its compute dtype")
    if objective in CRITIC_FREE:
        words.append("the rollout's KV cache lives in the generation engine (vLLM), not in this memory")
    return assume("objective", objective, "", defaulted, "; ".join(words))
