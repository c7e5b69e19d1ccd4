"""tools/memory/preference.py: what DPO, ORPO, KTO, PPO and GRPO add to a training run's memory (the `objective`
input of fit_training): a golden row, the reference rules, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.memory.fit_training import fit_training
from tools.schemas.memory import FitTrainingInput


def _fit(**kw):
    return tools.call("fit_training", {"model": "Qwen-7B", "gpu": "A100", **kw})


def _states(r) -> float:
    b = r["breakdown_gb"]
    return b["weights"] + b["gradients"] + b["optimizer"] + b["frozen_models"]


def test_qwen_7b_full_dpo_holds_policy_states_and_a_reference_139_gb():
    # arithmetic source: the policy's mixed-precision AdamW states, 16 B per parameter (ZeRO paper, arXiv
    # 1910.02054), plus a frozen bf16 reference of the same size, 2 B per parameter (TRL's DPOTrainer ref_model;
    # Kaitchup, "Multi-GPU DPO Training with FSDP", counts the same two terms): 7.72B x 18 B = 139 GB
    r = _fit(method="full", objective="dpo")
    assert _states(r) == pytest.approx(139, rel=0.03)
    assert r["breakdown_gb"]["frozen_models"] == pytest.approx(15.4, rel=0.03)
    assert r["objective"] == "dpo" and not r["fits"]
    said = next(a for a in r["assumptions"] if a["key"] == "objective")
    assert "chosen + rejected" in said["note"] and "frozen reference copy" in said["note"]


def test_lora_needs_no_reference_copy_and_orpo_never_does():
    lora = _fit(method="lora", objective="dpo")
    assert lora["breakdown_gb"]["frozen_models"] == 0
    assert "adapter off is the reference" in next(a for a in lora["assumptions"] if a["key"] == "objective")["note"]
    assert _fit(method="full", objective="orpo")["breakdown_gb"]["frozen_models"] == 0


def test_ppo_adds_a_reward_model_and_trains_a_value_model():
    sft, ppo = _fit(method="full"), _fit(method="full", objective="ppo")
    assert ppo["breakdown_gb"]["frozen_models"] == pytest.approx(2 * 15.44, rel=0.02)  # reference + reward
    assert ppo["breakdown_gb"]["optimizer"] == pytest.approx(2 * sft["breakdown_gb"]["optimizer"], rel=0.01)
    lora = _fit(method="lora", objective="ppo")
    assert lora["breakdown_gb"]["frozen_models"] == pytest.approx(15.44, rel=0.02)  # the reward model only


def test_zero3_shards_the_reference_with_the_policy():
    one = _fit(method="full", objective="dpo")
    eight = _fit(method="full", objective="dpo", n_gpus=8, zero_stage=3)
    two = _fit(method="full", objective="dpo", n_gpus=8, zero_stage=2)
    assert eight["breakdown_gb"]["frozen_models"] == pytest.approx(one["breakdown_gb"]["frozen_models"] / 8, abs=0.01)
    assert two["breakdown_gb"]["frozen_models"] == one["breakdown_gb"]["frozen_models"]


def test_grpo_keeps_a_reference_and_counts_completions_in_the_micro_batch():
    full, lora = _fit(method="full", objective="grpo"), _fit(method="lora", objective="grpo")
    assert full["breakdown_gb"]["frozen_models"] == pytest.approx(15.44, rel=0.02)
    # micro_batch counts completions (TRL's per_device_train_batch_size): with LoRA, GRPO's memory is SFT's
    assert lora["per_gpu_gb"] == _fit(method="lora")["per_gpu_gb"]


def _gb(**kw) -> float:
    return fit_training(FitTrainingInput(gpu="H100", **kw)).per_gpu_gb


models = st.sampled_from(["Qwen2.5-7B", "Llama-3-8B", "Qwen2.5-14B", "Mixtral-8x7B", "7B", "70B"])
objectives = st.sampled_from(["dpo", "orpo", "kto", "ppo", "grpo"])


@settings(max_examples=50, deadline=None)
@given(
    model=models,
    method=st.sampled_from(["full", "lora", "qlora", "freeze"]),
    objective=objectives,
    s=st.sampled_from([512, 2048, 4096]),
    b=st.integers(1, 4),
    n=st.sampled_from([1, 8]),
)
def test_a_preference_objective_never_needs_less_than_sft(model, method, objective, s, b, n):
    # at one ZeRO stage (the stage chosen for what fits would compare different layouts)
    kw = {
        "model": model,
        "method": method,
        "seq_len": s,
        "micro_batch": b,
        "n_gpus": n,
        "zero_stage": 3 if n > 1 else 0,
    }
    assert _gb(objective=objective, **kw) >= _gb(**kw)
    if objective in ("dpo", "orpo"):
        assert _gb(objective="dpo", **kw) >= _gb(objective="orpo", **kw)


@settings(max_examples=40, deadline=None)
@given(
    model=models, method=st.sampled_from(["lora", "qlora"]), s=st.sampled_from([512, 2048, 8192]), b=st.integers(1, 4)
)
def test_lora_dpo_is_sft_lora_with_the_sequences_doubled(model, method, s, b):
    kw = {"model": model, "method": method, "seq_len": s, "grad_checkpointing": True}
    assert _gb(objective="dpo", micro_batch=b, **kw) == _gb(micro_batch=2 * b, **kw)
