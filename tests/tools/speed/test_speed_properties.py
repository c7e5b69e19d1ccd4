"""Monotonic behaviour of training_time and inference_speed over the catalogs (Hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tools.catalog.lookup import get_model, gpus, models
from tools.schemas.speed import InferenceSpeedInput, TrainingTimeInput
from tools.speed.decode_terms import EAGER_LAYER_HOST_S
from tools.speed.flops import shape
from tools.speed.training_time import inference_speed, training_time

TRAIN_GPUS = sorted(g.name for g in gpus() if g.peak_tflops("bf16"))
INFER_GPUS = sorted(g.name for g in gpus() if g.peak_tflops("bf16") and g.bandwidth_gb_s)
MODELS = sorted(m.name for m in models()) + ["7B", "70B"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REL = 1e-9

model_st = st.sampled_from(MODELS)
method_st = st.sampled_from(["full", "lora", "qlora", "freeze"])


def _train(**kw):
    return training_time(TrainingTimeInput(**kw))


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(TRAIN_GPUS),
    method=method_st,
    exps=st.tuples(st.integers(0, 12), st.integers(0, 12)),
    ckpt=st.booleans(),
)
def test_more_gpus_never_slower_nor_superlinear(model, gpu, method, exps, ckpt):
    small, large = sorted(2**e for e in exps)
    args = {"model": model, "gpu": gpu, "tokens": 10**10, "method": method, "grad_checkpointing": ckpt}
    a, b = _train(n_gpus=small, **args), _train(n_gpus=large, **args)
    assert b.hours <= a.hours * (1 + REL)
    assert b.gpu_hours >= a.gpu_hours * (1 - REL)  # hours(n)·n ≥ hours(1): no super-linear speed-up
    for out in (a, b):
        assert out.hours_low <= out.hours <= out.hours_high
        assert 0 <= out.comm_share < 1 and 0 < out.mfu < 1


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(TRAIN_GPUS),
    method=method_st,
    n=st.sampled_from([1, 8, 64, 1024]),
    tokens=st.tuples(st.integers(10**6, 10**13), st.integers(10**6, 10**13)),
)
def test_more_tokens_never_less_time(model, gpu, method, n, tokens):
    few, many = sorted(tokens)
    args = {"model": model, "gpu": gpu, "n_gpus": n, "method": method}
    assert _train(tokens=many, **args).hours >= _train(tokens=few, **args).hours * (1 - REL)


def _infer(**kw):
    return inference_speed(InferenceSpeedInput(**kw))


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(INFER_GPUS),
    precision=st.sampled_from(["bf16", "int8", "int4"]),
    batches=st.tuples(st.integers(1, 4096), st.integers(1, 4096)),
    ctx=st.integers(1, 131072),
)
def test_decode_per_sequence_never_faster_with_batch(model, gpu, precision, batches, ctx):
    small, large = sorted(batches)
    args = {"model": model, "gpu": gpu, "precision": precision, "context_len": ctx}
    a, b = _infer(batch=small, **args), _infer(batch=large, **args)
    assert b.decode_tokens_per_s <= a.decode_tokens_per_s * (1 + REL)
    assert b.total_tokens_per_s >= a.total_tokens_per_s * (1 - REL)


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(INFER_GPUS),
    batch=st.integers(1, 256),
    ctxs=st.tuples(st.integers(1, 131072), st.integers(1, 131072)),
)
def test_decode_never_faster_with_longer_context(model, gpu, batch, ctxs):
    """A longer context reads more KV per step: while the batch asked for fits at both lengths, neither each
    sequence nor the batch is faster (a capped batch runs fewer sequences at once, each of them faster)."""
    short, long = sorted(ctxs)
    args = {"model": model, "gpu": gpu, "batch": batch}
    a, b = _infer(context_len=short, **args), _infer(context_len=long, **args)
    if a.batch_requested is None and b.batch_requested is None:
        assert b.decode_tokens_per_s <= a.decode_tokens_per_s * (1 + REL)
        assert b.total_tokens_per_s <= a.total_tokens_per_s * (1 + REL)


@SETTINGS
@given(model=model_st, gpu=st.sampled_from(INFER_GPUS), batch=st.integers(1, 4096), ctx=st.integers(1, 131072))
def test_speed_is_for_a_batch_that_fits(model, gpu, batch, ctx):
    """inference_speed never quotes a batch fit_inference says does not fit: it caps at max_batch and says so."""
    out = _infer(model=model, gpu=gpu, batch=batch, context_len=ctx)
    if out.max_batch_that_fits >= 1:
        assert out.batch == min(batch, out.max_batch_that_fits)
        assert (out.batch_requested is not None) is (batch > out.max_batch_that_fits)
        if out.batch_requested is not None:
            assert any(a.key == "batch" and str(out.batch) in a.note for a in out.assumptions)


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(INFER_GPUS),
    batch=st.integers(1, 256),
    effs=st.tuples(st.floats(0.05, 1.0), st.floats(0.05, 1.0)),
)
def test_more_bandwidth_never_slower(model, gpu, batch, effs):
    low, high = sorted(effs)
    args = {"model": model, "gpu": gpu, "batch": batch}
    assert _infer(bandwidth_efficiency=high, **args).decode_tokens_per_s >= _infer(
        bandwidth_efficiency=low, **args
    ).decode_tokens_per_s * (1 - REL)


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(INFER_GPUS),
    prompts=st.tuples(st.integers(1, 65536), st.integers(1, 65536)),
    effs=st.tuples(st.floats(0.05, 1.0), st.floats(0.05, 1.0)),
)
def test_first_token_never_sooner_for_a_longer_prompt_nor_at_a_lower_prefill_share(model, gpu, prompts, effs):
    short, long = sorted(prompts)
    low, high = sorted(effs)
    args = {"model": model, "gpu": gpu, "context_len": 65536}
    assert _infer(prompt_len=long, **args).ttft_s >= _infer(prompt_len=short, **args).ttft_s * (1 - REL)
    slow = _infer(prompt_len=long, prefill_efficiency=low, **args).ttft_s
    assert slow >= _infer(prompt_len=long, prefill_efficiency=high, **args).ttft_s * (1 - REL)


@SETTINGS
@given(
    extra=st.integers(1, 256),
    batch=st.integers(1, 64),
    model=st.sampled_from(["Mixtral-8x7B", "Qwen3-30B-A3B", "DeepSeek-V3"]),
)
@example(extra=150, batch=18, model="DeepSeek-V3")  # the wider model fits only 16: compared at 16 (CI, 2026-12-04)
def test_a_moe_with_more_experts_never_decodes_faster(extra, batch, model):
    """Issue 25, cause 2: each MoE layer pays router and dispatch per step, and its grouped kernels walk every
    expert: more experts (same top-k) never make a step shorter."""
    from unittest import mock

    from tools.catalog import lookup
    from tools.speed import inference_speed as speed

    m = lookup.get_model(model)
    # an id per width: fit_inference memoises the batch that fits by record id
    wider = m.model_copy(update={"n_experts": m.n_experts + extra, "id": f"{m.id}-wider-{extra}"})
    args = InferenceSpeedInput(model=model, gpu="H200", n_gpus=8, batch=batch, context_len=2048)
    with mock.patch.object(speed, "get_model", lambda name: wider):
        wide = speed.inference_speed(args)
    # more expert weights leave less room for the KV cache: where the wider model's batch is cut to what fits,
    # the step is compared at that same batch (a smaller batch is a shorter step on any model)
    ran = min(batch, wide.max_batch_that_fits) if wide.max_batch_that_fits else batch
    base = speed.inference_speed(args.model_copy(update={"batch": ran})).tpot_ms
    assert wide.tpot_ms >= base * (1 - REL)


@SETTINGS
@given(
    model=model_st,
    gpu=st.sampled_from(INFER_GPUS),
    tp=st.sampled_from([1, 2, 4, 8]),
    context=st.integers(64, 65536),
    batches=st.lists(st.integers(1, 100_000), min_size=1, max_size=6),
)
def test_the_planners_step_times_are_inference_speeds_figures(model, gpu, tp, context, batches):
    """plan_serving reads (tpot, TTFT) per batch from `step_times`, which works out what does not depend on the
    batch once per replica shape: at every batch they are exactly the figures inference_speed answers."""
    from tools.errors import AdvisorError
    from tools.speed.inference_speed import step_times

    try:
        base = InferenceSpeedInput(model=model, gpu=gpu, n_gpus=tp, context_len=context, prompt_len=context // 2 + 1)
        steps = step_times(base)
    except AdvisorError:  # heads not divisible by tp, or a card without the figures: no plan on it either
        return
    for b in batches:
        out = inference_speed(base.model_copy(update={"batch": b}))
        assert steps(b) == (out.tpot_ms, out.ttft_s)


@SETTINGS
@given(model=model_st, gpu=st.sampled_from(TRAIN_GPUS), method=method_st, n=st.sampled_from([1, 8, 64, 512]))
def test_the_planners_run_hours_are_training_times_hours(model, gpu, method, n):
    """plan_system's node search reads `run_hours`: the hours training_time answers, to the bit."""
    from tools.errors import AdvisorError
    from tools.speed.training_time import run_hours

    try:
        inp = TrainingTimeInput(model=model, gpu=gpu, n_gpus=n, tokens=10**10, method=method)
        hours = run_hours(inp)
    except AdvisorError:
        return
    assert hours == training_time(inp).hours


@SETTINGS
@given(
    model=st.sampled_from(["Llama-3.1-8B", "Qwen2.5-14B", "Llama-3.3-70B", "Mixtral-8x7B"]),
    gpu=st.sampled_from(["H100 SXM", "A100 80GB", "H20", "L40S"]),
    batches=st.tuples(st.integers(1, 64), st.integers(1, 64)),
    prompts=st.tuples(st.integers(16, 8000), st.integers(16, 8000)),
    outputs=st.tuples(st.integers(16, 4000), st.integers(16, 4000)),
)
def test_continuous_batching_prefills_only_ever_lengthen_the_token_time(model, gpu, batches, prompts, outputs):
    """Other requests' prefills among the decode steps (output_len given): more of them (a larger batch, a longer
    prompt, a shorter output) never shorten the time per output token, and alone (batch 1) there are none."""
    (b1, b2), (p1, p2), (o1, o2) = sorted(batches), sorted(prompts), sorted(outputs)
    args = {"model": model, "gpu": gpu, "context_len": 4096, "n_gpus": 2 if "70B" in model else 1}
    plain = _infer(batch=b2, prompt_len=p2, **args).tpot_ms
    assert _infer(batch=b2, prompt_len=p2, output_len=o1, **args).tpot_ms >= plain * (1 - REL)
    assert _infer(batch=1, prompt_len=p2, output_len=o1, **args).tpot_ms == _infer(batch=1, **args).tpot_ms
    small = _infer(batch=b1, prompt_len=p1, output_len=o2, **args)
    large = _infer(batch=b2, prompt_len=p2, output_len=o1, **args)
    if small.batch == b1 and large.batch == b2:  # neither capped at the batch that fits
        assert large.tpot_ms >= small.tpot_ms * (1 - REL)


@SETTINGS
@given(model=model_st, gpu=st.sampled_from(INFER_GPUS), batch=st.integers(1, 512), ctx=st.integers(1, 32768))
def test_eager_decode_is_never_faster_than_captured_graphs(model, gpu, batch, ctx):
    """Eager PyTorch (no CUDA graphs) adds the host's launch time as a floor on every step, never a saving."""
    args = {"model": model, "gpu": gpu, "batch": batch, "context_len": ctx}
    graphs, eager = _infer(**args), _infer(eager=True, **args)
    assert eager.tpot_ms >= graphs.tpot_ms * (1 - REL)
    assert eager.tpot_ms >= shape(get_model(model)).layers * EAGER_LAYER_HOST_S * 1e3 * (1 - REL)
    assert any(a.key == "eager" for a in eager.assumptions) and not any(a.key == "eager" for a in graphs.assumptions)


@SETTINGS
@given(gpu=st.sampled_from(INFER_GPUS), batch=st.integers(1, 64))
def test_eager_decode_of_a_deeper_model_is_never_faster(gpu, batch):
    """Same family, more layers: Qwen2.5-0.5B (24) < 1.5B (28) < 3B (36) < 14B (48) < 32B (64) under eager decode."""
    chain = ["Qwen2.5-0.5B", "Qwen2.5-1.5B", "Qwen2.5-3B", "Qwen2.5-14B", "Qwen2.5-32B"]
    times = [_infer(model=m, gpu=gpu, batch=batch, context_len=1024, eager=True).tpot_ms for m in chain]
    assert all(a <= b * (1 + REL) for a, b in zip(times, times[1:])), times


@SETTINGS
@given(
    gpu=st.sampled_from(TRAIN_GPUS),
    precision=st.sampled_from(["bf16", "fp8"]),
    method=st.sampled_from(["full", "lora", "qlora", "freeze"]),
)
def test_a_stack_base_factor_only_lifts_its_own_generation(gpu, precision, method):
    """Megatron-Core's own Hopper base (mfu.yaml framework_base): on Hopper its BF16 utilisation is above the generic
    base, its band holds the value, and on every other generation its BF16 utilisation is the generic one."""
    from tools.catalog.lookup import get_gpu
    from tools.catalog.mfu import default_utilisation, generation_of

    card = get_gpu(gpu)
    if precision == "fp8" and not card.peak_tflops("fp8"):
        return
    mega, auto = default_utilisation(card, precision, method, "megatron"), default_utilisation(card, precision, method)
    assert mega.low <= mega.value <= mega.high
    if precision == "bf16":
        if generation_of(card).id == "hopper":
            assert mega.value > auto.value
        else:
            assert mega.value == auto.value
