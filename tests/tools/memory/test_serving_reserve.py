"""An engine's start-up reserve (vLLM, SGLang): one scheduler budget of activations whatever the request (by card, as
vLLM's batch defaults set it), the sampler's logits, and a residual stream that tensor parallelism does not split
(issue 25, calc9; the 8 x RTX 4090 Qwen2-72B thread, QwenLM/Qwen3 issue 686)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog.lookup import get_gpu, get_model
from tools.memory.fit_inference import _serving, engine_budget, fit_inference
from tools.schemas.memory import FitInferenceInput
from tools.units import GB, GiB

MODELS = ["Llama-3.1-8B", "Qwen2.5-72B", "Llama-3.1-70B", "Qwen3-30B-A3B", "Mixtral-8x7B", "Qwen2.5-7B"]


def test_the_profile_peak_is_vllms_own_figure():
    """Golden: vLLM issue 10517 (Llama-3.1-8B on an RTX 3090, 20,000 profiled tokens): peak 17.06 GiB less 14.99 GiB
    of weights = 2.07 GiB of activations."""
    s = _serving(get_model("Llama-3.1-8B"), "bf16", 2.0, 1.0, get_gpu("RTX 3090"))
    per_token = s._act_logit(1)[0]
    assert per_token * 20000 / GiB == pytest.approx(2.07, rel=0.05)


def test_eight_24gb_cards_reserve_vllm_serves_small_card_budget():
    """What the asker sees (Qwen2-72B on 8 x RTX 4090, Qwen3 issue 686): `vllm serve` on a card under 70 GiB profiles
    2,048 tokens and samples 256 sequences (vllm/engine/arg_utils.py), the whole residual stream on every rank: 0.15 GB
    of activations and 0.16 GB of logits per card; the longest single sequence stays near 51K tokens."""
    out = fit_inference(FitInferenceInput(model="Qwen2.5-72B", gpu="RTX 4090", n_gpus=8, precision="bf16"))
    assert out.fits
    assert out.breakdown_gb["activations"] == pytest.approx(0.146, abs=0.01)
    assert out.breakdown_gb["logits"] == pytest.approx(0.156, abs=0.01)
    assert 45_000 < out.max_context < 54_000
    budget = next(a for a in out.assumptions if a.key == "prefill_chunk_tokens")
    assert budget.value == 2048 and "whatever the request" in budget.note and "256 sequences" in budget.note


def test_a_large_card_profiles_the_larger_budget_but_an_a100_does_not():
    assert engine_budget(get_gpu("H100")) == (8192, 1024)
    assert engine_budget(get_gpu("H200")) == (8192, 1024)
    assert engine_budget(get_gpu("A100 80GB")) == (2048, 256)  # vLLM's own exception (PR 17885)
    assert engine_budget(get_gpu("RTX 4090")) == (2048, 256)
    big = fit_inference(FitInferenceInput(model="Qwen2.5-72B", gpu="H100", n_gpus=2, precision="bf16"))
    small = fit_inference(FitInferenceInput(model="Qwen2.5-72B", gpu="A100 80GB", n_gpus=2, precision="bf16"))
    assert big.breakdown_gb["activations"] > 3 * small.breakdown_gb["activations"]


def test_transformers_generate_holds_only_what_the_request_puts_through():
    short = fit_inference(FitInferenceInput(engine="hf", model="Llama-3.1-8B", gpu="A100 80GB", context_len=256))
    engine = fit_inference(FitInferenceInput(model="Llama-3.1-8B", gpu="A100 80GB", context_len=256))
    assert short.breakdown_gb["activations"] < engine.breakdown_gb["activations"]
    note = next(a for a in short.assumptions if a.key == "prefill_chunk_tokens").note
    assert "whatever the request" not in note


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(MODELS), n=st.sampled_from([1, 2, 4, 8]), b=st.integers(1, 64), ctx=st.integers(1, 32768))
def test_the_reserve_is_fixed_at_start_up_and_never_split_below_the_residual_stream(name, n, b, ctx):
    m = get_model(name)
    one = fit_inference(FitInferenceInput(model=name, gpu="H200", n_gpus=n, batch=1, context_len=1))
    out = fit_inference(FitInferenceInput(model=name, gpu="H200", n_gpus=n, batch=b, context_len=ctx))
    assert out.breakdown_gb["activations"] == one.breakdown_gb["activations"]  # whatever the request
    assert out.breakdown_gb["logits"] == one.breakdown_gb["logits"]
    residual = 3 * m.hidden_size * 2.0 * engine_budget(get_gpu("H200"))[0] / GB
    assert out.breakdown_gb["activations"] >= residual - 0.001


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(MODELS), b=st.integers(1, 32))
def test_more_tensor_parallel_ranks_never_hold_more_activations_or_less_context(name, b):
    acts, ctxs = [], []
    for n in (1, 2, 4, 8):
        out = fit_inference(FitInferenceInput(model=name, gpu="H200", n_gpus=n, batch=b))
        acts.append(out.breakdown_gb["activations"])
        ctxs.append(out.max_context)
    assert acts == sorted(acts, reverse=True)
    assert ctxs == sorted(ctxs)
