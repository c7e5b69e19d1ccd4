"""The reader (`bot/offline/understand/request/`): every span with a name or a figure is a mention with its role,
and the asks are a set in the order asked."""

from __future__ import annotations

import pytest

from bot.offline.understand.request.reader import read


def roles(text: str) -> dict[str, str]:
    return {m.text: m.role for m in read(text).mentions}


@pytest.mark.parametrize(
    ("text", "span", "role", "value"),
    [
        ("3 台 8 卡 A800 全参微调 Qwen2.5-7B 要多久", "3 台 8 卡", "gpus_total", 24),
        ("2x8 H800 部署 DeepSeek-V3", "2x8 H800", "gpus_total", 16),
        ("CPU 64 核、内存 512G、4 张 4090 能跑 Qwen2.5-32B 吗", "64 核", "cpu_cores", 64),
        ("CPU 64 核、内存 512G、4 张 4090 能跑 Qwen2.5-32B 吗", "512G", "ram_gb", 512),
        ("CPU 64 核、内存 512G、4 张 4090 能跑 Qwen2.5-32B 吗", "4 张 4090", "gpus_total", 4),
        ("训练用了 2 万卡时，跑了 36 小时，用了 512 张卡", "2 万卡时", "gpu_hours", 20000),
        ("训练用了 2 万卡时，跑了 36 小时，用了 512 张卡", "36 小时", "wall_clock", 36),
        ("Qwen2.5-7B LoRA，训 5 轮要多久", "5 轮", "epochs", 5),
        ("vllm 0.6.3 serving Qwen2.5-72B on 4x A100", "0.6.3", "version", "0.6.3"),
        ("got 35 tokens/s on one 4090 with Qwen2.5-14B, is that normal?", "35 tokens/s", "throughput_measured", 35),
        ("H100 上 Qwen2.5-7B 的 tokens/s 只有 41.5，正常吗？", "41.5", "throughput_measured", 41.5),
        ("部署 Qwen2.5-7B，需要 tokens/s 达到 30，选什么卡", "30", "speed_target", 30),
        ("per_device_train_batch_size: 4\ncutoff_len: 4096\nmodel: Qwen2.5-7B", "cutoff_len: 4096", "seq_len", 4096),
        ("gradient_accumulation_steps: 8\nlearning_rate: 1.0e-4", "8", "grad_accum", 8),
    ],
)
def test_a_figure_gets_the_role_its_words_give_it(text, span, role, value):
    found = [m for m in read(text).mentions if m.text == span]
    assert found, [(m.text, m.role) for m in read(text).mentions]
    assert found[0].role == role and found[0].value == value


def test_a_log_line_is_evidence_not_a_request():
    r = read("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB (GPU 0; 79.15 GiB total capacity)")
    memory = {m.text: m.role for m in r.mentions}
    # "GPU 0" is a device, not a figure; the card's capacity names the card when none is named
    assert memory == {"2.50 GiB": "log_memory", "79.15 GiB total capacity": "gpu_memory_gb"}
    assert r.parsed.gpu_from_memory == {"memory_gib": 79.15, "gpu": r.parsed.gpus[0]}
    assert "diagnose" in r.asks and "capacity" not in r.cued  # "total capacity" asks nothing


def test_names_are_mentions_with_their_catalog_ids():
    r = read("Which is better for serving Llama-3.1-70B, H100 or A100 80GB?")
    names = {m.text: m.value for m in r.mentions if m.role in ("gpu", "model")}
    assert names["A100 80GB"] == "a100-sxm4-80gb" and names["H100"].startswith("h100")


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("CPU 64 核、4 张 4090，能跑 Qwen2.5-32B 推理吗？速度多少", ["fits", "speed"]),
        ("8卡H800全参微调Llama-2-7B，1B tokens 要多久？多少钱？", ["time", "cost"]),
        ("客服用 Qwen2.5-32B，要几张？H20 还是 4090？", ["min_count", "choose"]),
        ("16 卡 H800，每天 6 小时，用三年，租还是买？", ["rent_vs_buy"]),
    ],
)
def test_every_ask_is_read_in_the_order_asked(text, asks):
    got = read(text).asks
    assert [a for a in got if a in asks] == asks, got


def test_a_framework_is_a_mention():
    assert roles("用 DeepSpeed ZeRO-3 训 Qwen2.5-14B")["DeepSpeed"] == "framework"
