"""Two models on one card (issue 23: the user asks whether model A and model B fit together): the answer opens with
the verdict on their summed memory and each engine's share, then each model's own fit. Questions from fresh public
threads (InternLM/lmdeploy #2314, xorbitsai/inference #2298) and our own phrasings of the same kind."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("text", "head", "tool_fits"),
    [
        ("nvidia A100 80G同时部署7B和20B模型，显存够吗", "同时部署在 1 张 NVIDIA A100 SXM4 80GB 上放得下", True),
        ("Qwen3-8B 和 bge-m3 放在一张 4090 上能一起跑吗", "同时部署在 1 张 NVIDIA GeForce RTX 4090 上放得下", True),
        (
            "Can I run Llama-3.1-8B and Qwen2.5-14B together on one L40S?",
            "do not fit together on 1 × NVIDIA L40S",
            False,
        ),
    ],
)
def test_the_summed_fit_opens_the_answer(advisor, text, head, tool_fits):
    t = advisor.ask(text)
    lead = next(b for b in t.answer.split("\n\n") if not b.startswith(("（", "(")))  # after a stated default
    assert head in lead
    (shared,) = [c.output["shared"] for c in t.tool_calls if c.tool == "fit_inference" and c.output.get("shared")]
    assert shared["fits"] is tool_fits
    assert not t.ungrounded  # the sum is the tool's, not the composer's
    if tool_fits:
        assert "--gpu-memory-utilization" in t.answer


def test_models_asked_one_after_another_get_no_sum(advisor):
    t = advisor.ask("Qwen3-8B 和 Qwen3-14B 分别要多少显存？一张 4090 够吗")
    assert not [c for c in t.tool_calls if c.tool == "fit_inference" and c.output.get("shared")]
