"""Monotonic behaviour of the memory calculators (Hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog.lookup import generic_model, gpus
from tools.memory.fit_inference import fit_inference
from tools.memory.fit_training import fit_training
from tools.schemas.memory import FitInferenceInput, FitTrainingInput

GPU_IDS = [g.id for g in gpus()]
methods = st.sampled_from(["full", "lora", "qlora", "freeze"])
seq = st.integers(min_value=64, max_value=32768)
batch = st.integers(min_value=1, max_value=16)
sizes = st.floats(min_value=0.5, max_value=400)


def _train(model=None, **kw):
    base = {"gpu": GPU_IDS[0], "method": "full"} | ({"model": model} if model is not None else {})
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
    assert _train(m, method=method, seq_len=s, micro_batch=b + more) >= _train(
        m, method=method, seq_len=s, micro_batch=b
    )


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
@given(
    size=sizes,
    gpu=st.sampled_from(GPU_IDS),
    b=batch,
    ctx=st.integers(128, 131072),
    more=st.integers(1, 64),
    n=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_inference_memory_grows_with_batch_and_context_and_shrinks_with_gpus(size, gpu, b, ctx, more, n):
    m = generic_model(round(size, 1))

    def need(**kw):
        return fit_inference(FitInferenceInput(model=m, gpu=gpu, **{"n_gpus": n, **kw})).per_gpu_gb

    assert need(batch=b + more, context_len=ctx) >= need(batch=b, context_len=ctx)
    assert need(batch=b, context_len=ctx + more) >= need(batch=b, context_len=ctx)
    assert (
        need(batch=b, context_len=ctx, n_gpus=n * 2) <= need(batch=b, context_len=ctx) + 1.62
    )  # + NCCL buffers at n = 1


CATALOG_MODELS = ["DeepSeek-V3", "Qwen3-235B-A22B", "Mixtral-8x22B", "Llama-3.1-405B", "Qwen2.5-72B", "Llama-2-7B"]


@settings(max_examples=80, deadline=None)
@given(
    model=st.one_of(st.sampled_from(CATALOG_MODELS), sizes.map(lambda x: f"{x:.1f}B")),
    gpu=st.sampled_from(GPU_IDS),
    method=methods,
    s=st.integers(min_value=256, max_value=131072),
    b=batch,
    ckpt=st.sampled_from([None, True, False]),
    flash=st.booleans(),
)
def test_no_count_fits_only_when_the_breakdown_says_so(model, gpu, method, s, b, ckpt, flash):
    """ "No GPU count fits (activations alone exceed one card)" must be true of the breakdown we show.

    When min_gpus is None, the reason given must hold: `activations` means activations + logits alone are over
    the usable memory; `unshardable` means what no count removes is; when a count is given, that count fits.
    """
    inp = FitTrainingInput(
        model=model, gpu=gpu, method=method, seq_len=s, micro_batch=b, grad_checkpointing=ckpt, flash_attention=flash
    )
    out = fit_training(inp)
    if out.min_gpus is None:
        assert out.min_gpus_blocker is not None
        one = out.breakdown_gb  # activations and logits do not depend on the GPU count or ZeRO stage
        if out.min_gpus_blocker == "activations":
            assert one["activations"] + one["logits"] > out.usable_gb - 0.01
        elif out.min_gpus_blocker == "unshardable":
            assert out.unshardable_gb >= out.usable_gb - 0.01
            assert one["activations"] + one["logits"] <= out.usable_gb + 0.01
    else:
        assert out.min_gpus_blocker is None
        at = fit_training(inp.model_copy(update={"n_gpus": out.min_gpus, "zero_stage": out.min_gpus_zero_stage}))
        assert at.fits, (out.min_gpus, at.per_gpu_gb, at.usable_gb)


def test_deepseek_v3_full_training_on_h800_has_a_gpu_count():
    """The false "no count fits" of issue 11: activations are far under 80 GB, so some count must fit."""
    out = fit_training(FitTrainingInput(model="DeepSeek-V3", gpu="H800", method="full", seq_len=4096))
    assert out.breakdown_gb["activations"] < out.usable_gb / 2
    assert out.min_gpus is not None and out.min_gpus_blocker is None


@settings(max_examples=40, deadline=None)
@given(size=sizes, method=methods, s=seq, b=batch)
def test_a_chunked_loss_never_needs_more_than_a_fused_one_nor_that_more_than_an_upcast_one(size, method, s, b):
    """Issue 25, cause 5: logits memory by loss implementation (chunked < fused < every logit upcast to fp32)."""
    m = generic_model(round(size, 1))
    kw = {"method": method, "seq_len": s, "micro_batch": b}
    chunked, fused, upcast = (_train(m, loss_impl=k, **kw) for k in ("chunked", "fused", "fp32_upcast"))
    assert chunked <= fused <= upcast


def test_each_stack_has_its_loss_by_default():
    kw = {"model": "Llama-3.1-8B", "gpu": "H100", "seq_len": 32768}
    assert _train(framework="unsloth", **kw) < _train(framework="hf", **kw) < _train(framework="torchtitan", **kw)
    assert _train(framework="torchtitan", **kw) == _train(loss_impl="fp32_upcast", activation_factor=1.0, **kw)


@settings(max_examples=40, deadline=None)
@given(size=sizes, ctx=st.integers(1, 32768), b=batch)
def test_a_growing_kv_cache_never_needs_less_than_a_paged_one(size, ctx, b):
    """transformers' generate grows its KV cache a token at a time; the allocator holds about twice the live cache
    (issue 25: the Qwen README's batch-32 figure was 30% over our paged estimate)."""
    m = generic_model(round(size, 1))
    args = {"model": m, "gpu": GPU_IDS[0], "context_len": ctx, "batch": b}
    paged = fit_inference(FitInferenceInput(**args))
    grown = fit_inference(FitInferenceInput(engine="hf", **args))
    # the cache itself: an engine's start-up reserve (one prefill chunk, the sampler) is not the cache
    assert grown.breakdown_gb["kv_cache"] >= paged.breakdown_gb["kv_cache"]
    assert grown.kv_cache_gb_per_sequence == paged.kv_cache_gb_per_sequence  # the live cache is the same


@settings(max_examples=40, deadline=None)
@given(size=sizes, method=methods, s=seq, b=batch, gpu=st.sampled_from(GPU_IDS))
def test_a_paged_optimizer_never_needs_more_gpu_memory_and_fits_whenever_the_plain_one_does(size, method, s, b, gpu):
    """Issue 25 (cause 6): paged optimizers spill their states to CPU RAM instead of running out of memory."""
    m = generic_model(round(size, 1))
    kw = {"model": m, "gpu": gpu, "method": method, "seq_len": s, "micro_batch": b}
    plain = fit_training(FitTrainingInput(optimizer="adamw", **kw))
    paged = fit_training(FitTrainingInput(optimizer="paged_adamw", **kw))
    assert paged.per_gpu_gb <= plain.per_gpu_gb + 0.01
    assert paged.fits or not plain.fits


@settings(max_examples=40, deadline=None)
@given(size=sizes, method=st.sampled_from(["full", "freeze"]), s=seq, b=batch, stage=st.sampled_from([1, 2, 3]))
def test_the_hf_trainer_without_zero_keeps_no_master_copy(size, method, s, b, stage):
    """A bf16 model under the Hugging Face Trainer (axolotl, LLaMA-Factory) on one GPU is updated in place: never
    more memory than a stack with an fp32 master copy, and 4 B per trainable parameter less; on several GPUs, where
    a ZeRO optimizer may hold the states (DeepSpeed keeps the master copy), the two are the same."""
    m = generic_model(round(size, 1))
    kw = {"method": method, "seq_len": s, "micro_batch": b, "loss_impl": "fused"}
    hf, auto = (fit_training(FitTrainingInput(model=m.name, gpu="H100", framework=f, **kw)) for f in ("hf", "auto"))
    assert hf.per_gpu_gb <= auto.per_gpu_gb
    if method == "full":
        assert auto.breakdown_gb["optimizer"] - hf.breakdown_gb["optimizer"] > 3.9 * m.params_b
    for zero in ({**kw, "n_gpus": 8, "zero_stage": stage}, {**kw, "n_gpus": 8}):
        hf8, auto8 = (_train(m, framework=f, **zero) for f in ("hf", "auto"))
        assert hf8 == auto8


def test_the_axolotl_full_fine_tune_fits_one_48gb_card():
    """axolotl examples/llama-3: the 8B full fine-tune (fft-8b.yaml: paged 8-bit AdamW, bf16, checkpointing at 8192)
    runs on a single 48 GB GPU; with an fp32 master copy it would need far more."""
    kw = {"model": "Llama-3-8B", "gpu": "A40", "optimizer": "paged_adamw8bit", "seq_len": 8192}
    assert fit_training(FitTrainingInput(framework="hf", grad_checkpointing=True, **kw)).verdict != "does not fit"
    assert fit_training(FitTrainingInput(framework="auto", grad_checkpointing=True, **kw)).verdict == "does not fit"


@settings(max_examples=60, deadline=None)
@given(
    size=st.floats(min_value=1, max_value=80), method=methods, s=seq, b=st.integers(2, 16), n=st.sampled_from([1, 2, 8])
)
def test_a_smaller_micro_batch_offered_fits_and_keeps_the_batch(size, method, s, b, n):
    """A run that does not fit at its micro-batch is offered the largest smaller one that fits on the same cards,
    with the accumulation that keeps the batch per step; it is offered only when it really fits."""
    out = fit_training(
        FitTrainingInput(model=generic_model(round(size, 1)).id, gpu="rtx-4090", method=method, seq_len=s,
                         micro_batch=b, n_gpus=n)
    )  # fmt: skip
    offered = [x for x in out.suggestions if x.change == "micro_batch"]
    if out.fits or not offered:
        return
    m, k = offered[0].settings["micro_batch"], offered[0].settings["grad_accum"]
    assert 1 <= m < b and m * k >= b and offered[0].n_gpus == n
    again = fit_training(
        FitTrainingInput(
            model=generic_model(round(size, 1)).id, gpu="rtx-4090", method=method, seq_len=s, micro_batch=m, n_gpus=n
        )
    )
    assert again.fits  # asked again at that micro-batch, the run fits (at the ZeRO stage it then picks)


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["Llama-3-8B", "Qwen2.5-72B", "Qwen2.5-7B", "Llama-2-7B"]), method=methods, s=seq, b=batch)
def test_the_hf_trainer_holds_the_upcast_logits(model, method, s, b):
    """The Hugging Face Trainer's loss (transformers ForCausalLMLoss) upcasts the whole prediction to fp32: its logits
    are the fp32_upcast figure, never less than a fused loss's, and grow with the tokens of the micro-batch."""

    def logits(**kw):
        inp = {"gpu": GPU_IDS[0], "model": model, "method": method, "seq_len": s, "micro_batch": b} | kw
        return fit_training(FitTrainingInput(**inp)).breakdown_gb["logits"]

    hf = logits(framework="hf")
    assert hf == logits(framework="hf", loss_impl="fp32_upcast")
    assert hf >= logits(framework="hf", loss_impl="fused")
    assert logits(framework="hf", micro_batch=b + 1) >= hf
