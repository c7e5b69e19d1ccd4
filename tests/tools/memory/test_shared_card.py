"""Several models on the same cards, each its own engine (issue 23: "A100 80G 同时部署 7B 和 20B 模型", "Qwen3-8B 和
bge-m3 放在一张 4090 上能一起跑吗"): `fit_inference` given the others `alongside` adds `shared`. Each part is exactly what
`fit_inference` gives that model alone, the total is their sum, and the verdict is the sum against the card's usable
memory; the model's own fields stay its own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools

SIZES = ("1.5B", "3B", "7B", "8B", "14B", "20B", "32B", "70B")


def _shared(models: list[str], gpu: str, **extra) -> dict:
    return tools.call("fit_inference", {"model": models[0], "alongside": models[1:], "gpu": gpu, **extra})["shared"]


def test_each_part_is_the_model_alone_and_the_total_is_their_sum():
    out = _shared(["7B", "20B"], "A100 80GB")
    alone = [tools.call("fit_inference", {"model": m, "gpu": "A100 80GB"}) for m in ("7B", "20B")]
    assert [p["per_gpu_gb"] for p in out["parts"]] == [a["per_gpu_gb"] for a in alone]
    assert out["per_gpu_gb"] == pytest.approx(sum(a["per_gpu_gb"] for a in alone), abs=0.01)
    assert out["fits"] and out["usable_gb"] == alone[0]["usable_gb"]
    # the 7B (~16 GB) and the 20B (~42 GB) take under 60 of the A100's 77 usable GB
    assert 55 < out["per_gpu_gb"] < 60 and out["headroom_gb"] > 15


def test_the_models_own_fit_is_unchanged_beside_the_sum():
    alone = tools.call("fit_inference", {"model": "Qwen3-8B", "gpu": "4090"})
    both = tools.call("fit_inference", {"model": "Qwen3-8B", "gpu": "4090", "alongside": ["BGE-M3"]})
    assert {k: v for k, v in both.items() if k != "shared"} == {k: v for k, v in alone.items() if k != "shared"}
    assert alone["shared"] is None and both["shared"]["fits"]


def test_a_chat_model_and_an_embedding_model_share_a_4090_with_capped_engines():
    out = _shared(["Qwen3-8B", "BGE-M3"], "4090")
    assert out["fits"]
    assert out["share_fraction"] <= 0.9  # the two engines' caps leave the card's default margin
    assert all(0 < p["share_fraction"] < 0.9 for p in out["parts"])


def test_two_models_that_each_fit_may_not_fit_together():
    alone = [tools.call("fit_inference", {"model": m, "gpu": "L40S"})["fits"] for m in ("Llama-3.1-8B", "Qwen2.5-14B")]
    assert alone == [True, True]
    out = _shared(["Llama-3.1-8B", "Qwen2.5-14B"], "L40S")
    assert not out["fits"] and out["shortfall_gb"] > 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(SIZES), min_size=2, max_size=4), st.sampled_from(SIZES))
def test_another_model_never_takes_less_and_the_verdict_is_the_sum(models, extra):
    base = _shared(models, "H100", n_gpus=2)
    more = _shared([*models, extra], "H100", n_gpus=2)
    assert more["per_gpu_gb"] > base["per_gpu_gb"]
    for out in (base, more):
        assert out["fits"] == (out["per_gpu_gb"] <= out["usable_gb"])
        assert out["per_gpu_gb"] == pytest.approx(sum(p["per_gpu_gb"] for p in out["parts"]), abs=0.02)
