"""Training memory by stack (issue 25, calc9): eager PyTorch stacks keep more activations than Korthikanti's fused
count (LitGPT's resource table), and torchtune keeps its QLoRA base in NF4 tensors FSDP2 shards, with bf16
embeddings and a chunked loss (torchtune's README table)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.memory.fit_training import fit_training
from tools.schemas.memory import FitTrainingInput
from tools.units import GB, GiB

LITGPT = {"model": "Llama-2-7B", "gpu": "A100 40GB", "method": "lora", "lora_rank": 8, "lora_targets": "attention",
          "adapter_precision": "bf16", "seq_len": 1304, "grad_checkpointing": False, "loss_impl": "chunked"}  # fmt: skip
TORCHTUNE_8B = {"framework": "torchtune", "model": "Llama-3.1-8B", "gpu": "RTX 4090", "method": "qlora",
                "lora_rank": 8, "lora_targets": "all-linear", "adapter_precision": "bf16", "seq_len": 2048,
                "micro_batch": 2, "grad_checkpointing": True}  # fmt: skip


def _peak(**kw) -> float:
    return fit_training(FitTrainingInput(**kw)).allocator_peak_gb


def test_litgpt_lora_memory_and_its_per_sequence_slope():
    """Golden: LitGPT tutorials/resource-tables.md (A100-SXM4-40GB, Llama-2-7B LoRA, longest Alpaca example 1,304
    tokens): 21.30 GB at micro-batch 1, 29.07 GB at 2, i.e. 7.77 GB per sequence."""
    one, two = _peak(micro_batch=1, **LITGPT), _peak(micro_batch=2, **LITGPT)
    assert one == pytest.approx(21.30, rel=0.15)
    assert two - one == pytest.approx(7.77, rel=0.15)
    out = fit_training(FitTrainingInput(micro_batch=1, **LITGPT))
    factor = next(a for a in out.assumptions if a.key == "activation_factor")
    assert factor.value == 1.3 and factor.default and "eager" in factor.note


def test_torchtune_qlora_on_one_4090():
    """Golden: torchtune README, Llama 3.1 8B QLoRA on one RTX 4090 (batch 2, 2,048 tokens): 7.4 GiB."""
    out = fit_training(FitTrainingInput(**TORCHTUNE_8B))
    assert out.allocator_peak_gb * GB / GiB == pytest.approx(7.4, rel=0.15)
    assert out.verdict == "fits"


def test_torchtune_shards_a_405b_qlora_base_over_eight_gpus():
    """Golden: torchtune README, Llama 3.1 405B QLoRA on 8 x A100 (FSDP2): 44.8 GB per GPU; bitsandbytes' uint8
    storage under DeepSpeed ZeRO-3 would leave the whole ~210 GB base on every GPU."""
    kw = {**TORCHTUNE_8B, "model": "Llama-3.1-405B", "gpu": "A100 80GB", "n_gpus": 8, "zero_stage": 3,
          "lora_rank": 16}  # fmt: skip
    out = fit_training(FitTrainingInput(**kw))
    assert out.allocator_peak_gb == pytest.approx(44.8, rel=0.15)
    assert out.verdict == "fits"
    storage = next(a for a in out.assumptions if a.key == "quant_storage")
    assert "torchtune" in storage.note and "FSDP2 shards" in storage.note
    bnb = fit_training(FitTrainingInput(**{**kw, "framework": "hf"}))
    assert bnb.verdict == "does not fit"


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 8), s=st.integers(128, 8192), gc=st.booleans(), method=st.sampled_from(["full", "lora"]))
def test_an_eager_stack_never_holds_fewer_activations_than_a_fused_one(b, s, gc, method):
    kw = {"model": "Llama-3.1-8B", "gpu": "H100", "method": method, "seq_len": s, "micro_batch": b,
          "grad_checkpointing": gc}  # fmt: skip
    eager = fit_training(FitTrainingInput(framework="hf", **kw)).breakdown_gb["activations"]
    fused = fit_training(FitTrainingInput(framework="megatron", **kw)).breakdown_gb["activations"]
    assert eager >= fused
    more = fit_training(FitTrainingInput(framework="hf", **{**kw, "micro_batch": b + 1})).breakdown_gb["activations"]
    assert more >= eager
    asked = fit_training(FitTrainingInput(framework="hf", activation_factor=1.0, **kw)).breakdown_gb["activations"]
    assert asked == pytest.approx(fused, abs=0.002)  # a factor the user gives wins over the stack's
