"""An RL run asked as resources (issue 26, "wrong workload"): GRPO/PPO/RLHF is planned as the pools an RL framework
runs, training (policy + reference, PPO's value and reward models) and the rollout engine, with the servers for
both, not as a fine-tuning shortlist; a check of the user's own cards stays a fit."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.say.render import num


def _clean(t):
    assert t.ungrounded == [] and t.unused == [], (t.ungrounded, t.unused)
    return t


def _pools(t):
    train = next(c for c in calls(t, "fit_training") if c.input["method"] == c.output["method"] and c.output["fits"])
    roll = next(c for c in calls(t, "fit_inference") if c.output["fits"])
    cluster = calls(t, "plan_cluster")[0]
    return train, roll, cluster


@pytest.mark.parametrize(
    ("question", "head", "objective"),
    [
        ("How many GPUs do I need to train Qwen2.5-7B with GRPO?", "**Full GRPO of Qwen2.5-7B: ", "grpo"),
        ("用 PPO 做 RLHF，训练 Qwen2.5-14B 需要准备几张卡？", "**全参 PPO 训练 Qwen2.5-14B：共 ", "ppo"),
        ("强化学习训练 Llama-3.1-8B 大概需要多少资源", "**全参 PPO 训练 Llama-3.1-8B：共 ", "ppo"),
    ],
)
def test_an_rl_run_is_its_training_pool_and_rollout_engine_on_servers(advisor, question, head, objective):
    t = _clean(advisor.ask(question))
    train, roll, cluster = _pools(t)
    assert train.input["objective"] == objective and "batch" in roll.input  # the rollout engine's own fit
    total = train.output["n_gpus"] + roll.output["n_gpus"]
    assert cluster.input["n_gpus"] == total == cluster.output["n_gpus"]
    assert t.answer.startswith(head) and f"{total} " in t.answer.split("\n")[0]
    assert ("rollout (vLLM)" in t.answer) or ("采样（rollout，vLLM）" in t.answer)
    assert "1B" not in t.answer.split("\n")[0]  # no fine-tune's token default before it
    assert not calls(t, "recommend_gpus")  # not a fine-tuning shortlist


def test_ppo_counts_the_value_and_reward_models_and_names_a_smaller_reward_model(advisor):
    t = _clean(advisor.ask("actor 用 Qwen2.5-7B，reward model 用 Qwen2.5-1.5B，做 RLHF 第三阶段需要多大的卡"))
    assert "价值模型（训练）、参考模型和奖励模型（冻结）" in t.answer
    memo = next(c for c in calls(t, "model_memory") if c.input["model"] == "qwen2.5-1.5b")
    assert f"奖励模型 Qwen2.5-1.5B的 bf16 权重约 {num(memo.output['weights_gb'])} GB" in t.answer


def test_a_671b_grpo_run_takes_servers_and_a_fabric_and_lora_shrinks_the_training_pool(advisor):
    t = _clean(advisor.ask("How many resources are required to train deepseek r1 671b using grpo?"))
    train, _, cluster = _pools(t)
    assert cluster.output["nodes"] > 1 and "**Across servers:**" in t.answer and "InfiniBand" in t.answer
    lora = [c for c in calls(t, "fit_training") if c.input["method"] == "lora" and c.output["fits"]]
    assert lora and lora[-1].output["n_gpus"] < train.output["n_gpus"]
    assert f"the training pool needs {lora[-1].output['n_gpus']} GPUs" in t.answer


def test_grpo_on_the_users_own_cards_stays_a_check_of_those_cards(advisor):
    t = advisor.ask("GRPO 训练 Qwen2.5-7B，8 张 A100 80GB 够吗？")
    assert not calls(t, "plan_cluster") or "采样（rollout" not in t.answer
    assert any(c.input.get("n_gpus") == 8 for c in calls(t, "fit_training"))
