"""A training speed the user measured, converted into the estimate's unit and judged (tools/speed/measured.py via
training_time's `measured`): a step of micro-batch × accumulation × GPUs × sequence tokens, samples of one
sequence, TFLOPS per GPU as model FLOPs; the verdict in the band every speed verdict uses."""

from __future__ import annotations

import pytest

from tools.schemas.speed import TrainingTimeInput
from tools.speed.measured import training_tokens_per_s
from tools.speed.training_time import training_time


def _run(**kw):
    base = {"model": "Qwen-7B", "gpu": "A100 80GB", "tokens": 10**9, "method": "lora", "seq_len": 512}
    return training_time(TrainingTimeInput(**(base | kw)))


def test_a_step_time_is_tokens_per_step_over_seconds():
    assert training_tokens_per_s(48.0, "s_per_step", step_tokens=8192, seq_len=512, n_gpus=1, flops_per_token=1) == (
        pytest.approx(8192 / 48)
    )
    assert training_tokens_per_s(2.0, "steps_per_s", step_tokens=100, seq_len=1, n_gpus=1, flops_per_token=1) == 200
    assert training_tokens_per_s(0.5, "samples_per_s", step_tokens=1, seq_len=2048, n_gpus=8, flops_per_token=1) == 1024
    assert training_tokens_per_s(
        100, "tokens_per_s_per_gpu", step_tokens=1, seq_len=1, n_gpus=8, flops_per_token=1
    ) == (800)
    # TFLOPS per GPU are model FLOPs: 20 TFLOPS on 8 GPUs at 1e12 FLOPs a token is 160 tokens/s
    assert training_tokens_per_s(20, "tflops_per_gpu", step_tokens=1, seq_len=1, n_gpus=8, flops_per_token=1e12) == (
        pytest.approx(160)
    )


def test_48_seconds_a_step_of_8k_tokens_on_an_a100_is_very_slow():
    o = _run(global_batch_tokens=8192, micro_batch=2, measured=48.47, measured_unit="s_per_step")
    assert o.measured_verdict == "very_slow"
    assert o.measured_tokens_per_s == pytest.approx(8192 / 48.47)
    assert o.measured_mfu < 0.05 < o.mfu
    assert o.step_tokens == 8192 and o.seconds_per_step == pytest.approx(8192 / o.tokens_per_s)
    # the tokens a step would need to hold for 48.47 s to be the estimate's pace
    assert o.normal_tokens == round(o.tokens_per_s * 48.47)


def test_the_estimates_own_pace_is_normal_and_a_faster_one_is_said():
    est = _run(global_batch_tokens=8192)
    same = _run(global_batch_tokens=8192, measured=est.seconds_per_step, measured_unit="s_per_step")
    assert same.measured_verdict == "normal" and same.measured_mfu == pytest.approx(est.mfu, rel=1e-6)
    fast = _run(global_batch_tokens=8192, measured=est.seconds_per_step / 2, measured_unit="s_per_step")
    assert fast.measured_verdict == "faster"


def test_tflops_per_gpu_give_their_mfu_directly():
    o = training_time(
        TrainingTimeInput(model="Llama-3-70B", gpu="A100 80GB", n_gpus=8, tokens=10**9, measured=20,
                          measured_unit="tflops_per_gpu")
    )  # fmt: skip
    assert o.measured_mfu == pytest.approx(20 / 312, rel=1e-3)
    assert o.measured_verdict == "very_slow"


def test_a_figure_needs_its_unit():
    # half a measurement is not judged, and the answer says why (a schema-valid request is still answered)
    inp = TrainingTimeInput(model="Qwen-7B", gpu="A100", tokens=10**9, measured=3.0)
    assert inp.measured is None and [n.key for n in inp.notes] == ["measured_ignored"]
    assert "measured_unit" in inp.notes[0].note
