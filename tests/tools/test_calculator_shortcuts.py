"""The shortcuts the calculators take for speed must say exactly what the long way says.

- recommend_gpus reads `training_memory` / `training_hours` instead of building fit_training / training_time
  answers for every card and count;
- fit_inference finds the largest batch and context by galloping out from a closed-form guess;
- assumption records are shared between answers, one per distinct content.
"""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog.lookup import generic_model, gpus
from tools.memory.fit_inference import _largest, fit_inference
from tools.memory.fit_training import fit_training, training_memory
from tools.schemas.common import assume
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.schemas.speed import TrainingTimeInput
from tools.speed.training_time import training_hours, training_time

GPU_IDS = [g.id for g in gpus()]
CATALOG = ["DeepSeek-V3", "Qwen3-235B-A22B", "Mixtral-8x22B", "Llama-3.1-405B", "Qwen2.5-72B", "Llama-2-7B"]
models = st.one_of(st.sampled_from(CATALOG), st.floats(0.5, 400).map(lambda x: f"{x:.1f}B"))


@settings(max_examples=80, deadline=None)
@given(
    model=models,
    gpu=st.sampled_from(GPU_IDS),
    method=st.sampled_from(["full", "lora", "qlora", "freeze"]),
    n=st.sampled_from([1, 2, 8, 64, 512]),
    s=st.integers(256, 65536),
    ckpt=st.sampled_from([None, True, False]),
    offload=st.sampled_from(["none", "optimizer", "optimizer+params"]),
)
def test_training_memory_is_fit_trainings_figures(model, gpu, method, n, s, ckpt, offload):
    inp = FitTrainingInput(
        model=model, gpu=gpu, method=method, n_gpus=n, seq_len=s, grad_checkpointing=ckpt, offload=offload
    )
    full, short = fit_training(inp), training_memory(inp)
    assert (short.fits, short.per_gpu_gb, short.usable_gb, short.min_gpus, short.zero_stage) == (
        full.fits,
        full.per_gpu_gb,
        full.usable_gb,
        full.min_gpus,
        full.zero_stage,
    )


@settings(max_examples=80, deadline=None)
@given(
    model=models,
    gpu=st.sampled_from([g.id for g in gpus() if g.bf16_tflops]),
    method=st.sampled_from(["full", "lora", "qlora", "freeze"]),
    n=st.sampled_from([1, 8, 64, 1024]),
    tokens=st.integers(10**6, 10**13),
    mfu=st.sampled_from([None, 0.3]),
)
def test_training_hours_are_training_times_figures(model, gpu, method, n, tokens, mfu):
    inp = TrainingTimeInput(model=model, gpu=gpu, method=method, n_gpus=n, tokens=tokens, mfu=mfu)
    full, short = training_time(inp), training_hours(inp)
    assert (
        short.n_gpus,
        short.hours,
        short.hours_low,
        short.hours_high,
        short.tokens_per_s,
        short.gpu_hours,
        short.mfu,
    ) == (full.n_gpus, full.hours, full.hours_low, full.hours_high, full.tokens_per_s, full.gpu_hours, full.mfu)


@settings(max_examples=300, deadline=None)
@given(
    boundary=st.integers(0, 5000),
    cap=st.integers(1, 5000),
    guess=st.one_of(st.floats(-10, 1e6, allow_nan=False), st.just(math.inf), st.just(math.nan)),
)
def test_the_search_finds_the_boundary_whatever_the_guess(boundary, cap, guess):
    calls = []

    def ok(x):
        calls.append(x)
        return x <= boundary

    assert _largest(ok, cap, guess) == min(boundary, cap)
    assert all(1 <= x <= cap for x in calls)


@settings(max_examples=40, deadline=None)
@given(
    size=st.floats(0.5, 200),
    gpu=st.sampled_from(GPU_IDS),
    n=st.sampled_from([1, 2, 4, 8]),
    b=st.integers(1, 256),
    ctx=st.integers(128, 131072),
)
def test_max_batch_and_context_are_the_largest_that_fit(size, gpu, n, b, ctx):
    m = generic_model(round(size, 1))
    out = fit_inference(FitInferenceInput(model=m, gpu=gpu, n_gpus=n, batch=b, context_len=ctx))

    def fits(batch, context):
        return fit_inference(FitInferenceInput(model=m, gpu=gpu, n_gpus=n, batch=batch, context_len=context)).fits

    if 0 < out.max_batch <= 1_000_000:
        assert fits(out.max_batch, ctx)
    if out.max_batch < 1_000_000:  # the largest batch the input takes (the search stops at 2**20)
        assert not fits(out.max_batch + 1, ctx)
    if 0 < out.max_context <= 10_000_000:
        assert fits(b, out.max_context)
    if out.max_context < 10_000_000:  # the longest context the input takes (the search stops at 2**24)
        assert not fits(b, out.max_context + 1)


def test_shared_assumptions_keep_one_true_and_one_point_zero_apart():
    """1, 1.0 and True hash alike; the cached records must still carry the value's own type."""
    values = [assume("x", v).value for v in (1, 1.0, True, 1, True, 1.0)]
    assert [type(v) for v in values] == [int, float, bool, int, bool, float]
    assert assume("x", 2, note="n") is assume("x", 2, note="n")
