"""Monotonic behaviour of the memory calculators (Hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog import generic_model, gpus
from tools.memory import fit_training
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.serving import fit_inference

GPU_IDS = [g.id for g in gpus()]
methods = st.sampled_from(["full", "lora", "qlora", "freeze"])
seq = st.integers(min_value=64, max_value=32768)
batch = st.integers(min_value=1, max_value=16)
sizes = st.floats(min_value=0.5, max_value=400)


def _train(model, **kw):
    base = {"model": model, "gpu": GPU_IDS[0], "method": "full"}
    return fit_training(FitTrainingInput(**{**base, **kw})).per_gpu_gb


@settings(max_examples=60, deadline=None)
@given(size=sizes, extra_layers=st.integers(1, 40), method=methods, s=seq, b=batch, ckpt=st.booleans())
def test_more_parameters_never_need_less_memory(size, extra_layers, method, s, b, ckpt):
    small = generic_model(round(size, 1))
    big = small.model_copy(update={"n_layers": small.n_layers + extra_layers, "id": small.id + "-deeper"})
    kw = {"method": method, "seq_len": s, "micro_batch": b, "grad_checkpointing": ckpt}
    assert _train(big, **kw) >= _train(small, **kw)


@settings(max_examples=60, deadline=None)
@given(size=sizes, method=methods, s=seq, extra=st.integers(1, 8192), b=batch, ckpt=st.booleans(), flash=st.booleans())
def test_longer_sequences_never_need_less(size, method, s, extra, b, ckpt, flash):
    m = generic_model(round(size, 1))
    kw = {"method": method, "micro_batch": b, "grad_checkpointing": ckpt, "flash_attention": flash}
    assert _train(m, seq_len=s + extra, **kw) >= _train(m, seq_len=s, **kw)


@settings(max_examples=60, deadline=None)
@given(size=sizes, method=methods, s=seq, b=batch, more=st.integers(1, 16))
def test_larger_micro_batch_never_needs_less(size, method, s, b, more):
    m = generic_model(round(size, 1))
    assert _train(m, method=method, seq_len=s, micro_batch=b + more) >= _train(m, method=method, seq_len=s, micro_batch=b)


@settings(max_examples=60, deadline=None)
@given(size=sizes, method=methods, n=st.sampled_from([2, 4, 8, 16, 64]), k=st.sampled_from([2, 4, 8]), s=seq)
def test_more_gpus_under_zero3_never_need_more(size, method, n, k, s):
    m = generic_model(round(size, 1))
    kw = {"method": method, "zero_stage": 3, "seq_len": s}
    assert _train(m, n_gpus=n * k, **kw) <= _train(m, n_gpus=n, **kw)


@settings(max_examples=60, deadline=None)
@given(size=sizes, method=methods, s=seq, b=batch, flash=st.booleans())
def test_checkpointing_never_needs_more(size, method, s, b, flash):
    m = generic_model(round(size, 1))
    kw = {"method": method, "seq_len": s, "micro_batch": b, "flash_attention": flash}
    assert _train(m, grad_checkpointing=True, **kw) <= _train(m, grad_checkpointing=False, **kw)


@settings(max_examples=60, deadline=None)
@given(size=sizes, gpu=st.sampled_from(GPU_IDS), b=batch, ctx=st.integers(128, 131072), more=st.integers(1, 64),
       n=st.sampled_from([1, 2, 4, 8, 16]))
def test_inference_memory_grows_with_batch_and_context_and_shrinks_with_gpus(size, gpu, b, ctx, more, n):
    m = generic_model(round(size, 1))

    def need(**kw):
        return fit_inference(FitInferenceInput(model=m, gpu=gpu, **{"n_gpus": n, **kw})).per_gpu_gb

    assert need(batch=b + more, context_len=ctx) >= need(batch=b, context_len=ctx)
    assert need(batch=b, context_len=ctx + more) >= need(batch=b, context_len=ctx)
    assert need(batch=b, context_len=ctx, n_gpus=n * 2) <= need(batch=b, context_len=ctx) + 1.62  # + NCCL buffers at n = 1
