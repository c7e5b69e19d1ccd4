"""A precision said of the KV cache is the cache's, not the weights' (issue 23, class misread_precision): "I fit the
7B with vLLM w/ fp8 kv cache" keeps bf16 weights and sizes an fp8 cache; a precision said of the weights beside it
stays theirs. Phrasings are ours, shaped like the development rows, in both languages."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("text", "weights", "cache"),
    [
        ("Barely fit a 7B on 17gb with vllm w/ fp8 kv cache; what would a 72b need?", None, "fp8"),
        ("部署 32B，启动参数 --kv-cache-dtype fp8，要几张 4090", None, "fp8"),
        ("Qwen2.5-72B 用 fp8 权重，KV cache 用 fp8，要几张 H100", "fp8", "fp8"),
        ("int8 kv缓存 跑 14B 能开多少并发", None, "int8"),
        ("fp8 训练 7B 要多久", "fp8", None),
    ],
)
def test_the_caches_precision_is_read_apart_from_the_weights(text, weights, cache):
    p = parse(text)
    assert (p.precision, p.kv_precision) == (weights, cache)


def test_an_fp8_cache_sizes_bf16_weights_and_a_halved_cache(advisor):
    t = advisor.ask("I run a 7B with vLLM w/ fp8 kv cache. What would a 72B need on A100 80GB?")
    fits = [c for c in t.tool_calls if c.tool == "fit_inference" and c.input.get("model") == "72B"]
    asked = [c for c in fits if "precision" not in c.input]  # the job as asked (an int8 lever sets its own)
    assert asked and all(c.input.get("kv_precision") == "fp8" for c in fits)
    assert "bf16, batch 1" in t.answer and "144 GB" in t.answer  # the weights stay bf16
    assert "at least 2 GPUs" in t.answer
