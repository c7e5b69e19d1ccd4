"""Critic-free RL objectives beyond GRPO (issue 25): RLOO and REINFORCE++ keep a frozen reference for their KL
penalty, DAPO (no KL term) and GSPO (KL coefficient 0 as published) load none; none of them has a value model.
Read from the user's words, sized by fit_training, planned as an RL run's pools."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.understand.parse import parse
from tools.memory.fit_training import fit_training
from tools.schemas.memory import FitTrainingInput


@pytest.mark.parametrize(
    ("text", "objective"),
    [
        ("RLOO 训练 Qwen2.5-7B，一张 H100 放得下吗", "rloo"),
        ("How many GPUs to train Qwen2.5-7B with REINFORCE++?", "reinforce++"),
        ("DAPO on Qwen2.5-32B, how many H100 do I need", "dapo"),
        ("用 GSPO 训练 Qwen3-30B-A3B 要几张卡", "gspo"),
        ("reinforcement learning on Llama-3.1-8B, how much memory", "ppo"),
    ],
)
def test_rl_objective_words_are_read(text, objective):
    assert parse(text).objective == objective


def _frozen(objective: str, method: str = "full") -> float:
    out = fit_training(FitTrainingInput(model="Qwen2.5-7B", gpu="H100 SXM", n_gpus=8, zero_stage=3, method=method,
                                        objective=objective))  # fmt: skip
    return out.breakdown_gb.get("frozen_models", 0.0)


def test_which_objectives_load_a_reference():
    grpo = _frozen("grpo")
    assert grpo > 0
    assert _frozen("rloo") == _frozen("reinforce++") == grpo  # a reference, no value model
    assert _frozen("dapo") == _frozen("gspo") == _frozen("sft") == 0  # no KL term: no reference
    assert _frozen("rloo", "lora") == 0  # the adapter-off base is the reference
    note = next(
        a.note
        for a in fit_training(FitTrainingInput(model="Qwen2.5-7B", gpu="H100 SXM", objective="dapo")).assumptions
        if a.key == "objective"
    )
    assert "no KL term" in note and "no value model" in note


@pytest.mark.parametrize(
    ("question", "objective", "models"),
    [
        ("How many GPUs do I need to train Qwen2.5-7B with DAPO?", "dapo", "no reference model and no value model"),
        ("How many GPUs do I need to train Qwen2.5-7B with RLOO?", "rloo", "the reference model (frozen); no value"),
    ],
)
def test_an_rloo_or_dapo_run_is_planned_as_an_rl_run(advisor, question, objective, models):
    t = advisor.ask(question)
    assert t.ungrounded == [] and t.unused == [], (t.ungrounded, t.unused)
    train = next(c for c in calls(t, "fit_training") if c.output["fits"])
    assert train.input["objective"] == objective
    assert f"Full {objective.upper()} of Qwen2.5-7B" in t.answer and models in t.answer
    assert "rollout (vLLM)" in t.answer and not calls(t, "recommend_gpus")
