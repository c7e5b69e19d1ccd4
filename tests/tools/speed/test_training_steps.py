"""training_steps: optimizer steps = ⌈samples ÷ (micro-batch × GPUs)⌉ ÷ accumulation per epoch × epochs, and a
count the user saw set against it (the setting the gap equals). Figures from public threads: R1-V #122 (8,031
samples, batch 1, accumulation 4, 7 GPUs: the asker's own 8031 / 28 ≈ 287, the log's 2007), kohya-trainer #82
(200 epochs × accumulation 6 = the 1200 the script printed), ChatGLM2-6B #219 (10 × 16 = 160 per step)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import tools
from tools.schemas.speed import TrainingStepsInput
from tools.speed.steps import training_steps


def _call(args: dict) -> dict:
    return training_steps(TrainingStepsInput(**args)).model_dump()


def test_diagnose_returns_the_steps_of_a_run_given_its_samples():
    o = tools.call("diagnose", {"samples": 8031, "grad_accum": 4, "n_gpus": 7, "stated_steps": 2007})["steps"]
    assert (o["total_steps"], o["stated"], o["factor"], o["agrees"]) == (287, 2007, "n_gpus", False)
    assert tools.call("diagnose", {"model": "7B", "gpu": "4090"})["steps"] == {}


def test_the_askers_own_reckoning_is_redone_and_the_logs_gap_is_the_gpu_count():
    o = _call({"samples": 8031, "micro_batch": 1, "grad_accum": 4, "n_gpus": 7, "stated_steps": 2007})
    assert (o["global_batch"], o["steps_per_epoch"], o["total_steps"]) == (28, 287, 287)
    assert o["agrees"] is False
    assert [f["name"] for f in o["factors"]] == ["n_gpus"]


def test_an_epoch_count_off_by_the_accumulation_is_named():
    o = _call({"samples": 18, "epochs": 200, "grad_accum": 6, "stated_epochs": 1200})
    assert o["ratio"] == 6
    assert [f["name"] for f in o["factors"]] == ["grad_accum"]


def test_a_count_below_the_samples_implies_a_batch_left_unsaid_and_the_defaults_are_stated():
    o = _call({"samples": 29450, "micro_batch": 1, "stated_steps": 1800})
    assert o["total_steps"] == 29450
    assert round(o["implied_global_batch"]) == 16  # 29450 / 1800: an accumulation (or GPUs) of about 16 unsaid
    assumed = {a["key"] for a in o["assumptions"]}
    assert {"grad_accum", "n_gpus", "epochs"} <= assumed and "micro_batch" not in assumed


def test_a_count_that_agrees_is_said_to():
    o = _call({"samples": 20000, "micro_batch": 10, "grad_accum": 16, "epochs": 24, "stated_steps": 3000})
    assert o["steps_per_epoch"] == 125 and o["total_steps"] == 3000 and o["agrees"] is True


@given(
    samples=st.integers(1, 10**7),
    mb=st.integers(1, 64),
    ga=st.integers(1, 64),
    gpus=st.integers(1, 512),
    epochs=st.integers(1, 10),
)
def test_more_gpus_or_accumulation_never_means_more_steps(samples, mb, ga, gpus, epochs):
    base = {"samples": samples, "micro_batch": mb, "grad_accum": ga, "n_gpus": gpus, "epochs": epochs}
    o = _call(base)
    assert o["total_steps"] >= 1
    assert _call({**base, "n_gpus": gpus * 2})["total_steps"] <= o["total_steps"]
    assert _call({**base, "grad_accum": ga * 2})["total_steps"] <= o["total_steps"]
