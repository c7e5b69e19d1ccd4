"""The host side of the machine asked beside its GPUs (issue 26, development rows of tests/corpus/systems/): "GPU and
CPU", "显卡，CPU和内存", "CPU and GPU configurations" get each server's CPU cores, system RAM and disk for the setup
the answer sized, or the rules per GPU when the answer asks for the model first. Every figure is a tool output."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from asking import calls

SYSTEMS = Path(__file__).resolve().parents[2] / "corpus" / "systems"


@functools.cache
def request(row_id: str) -> str:
    rows = yaml.safe_load((SYSTEMS / "requests.yaml").read_text(encoding="utf-8"))
    return next(r["text"] for r in rows if r["id"] == row_id)


def clean(trace):
    assert trace.ungrounded == [] and trace.unused == [], (trace.ungrounded, trace.unused)
    return trace


def test_gpu_and_cpu_for_70b_sft_gets_each_servers_cores_ram_and_checkpoint_disk(advisor):
    t = clean(advisor.ask(request("gh-llamacookbook-96")))  # "hardware requirement (GPU and CPU) … 70B SFT"
    a = t.answer
    assert "**Host side (per server, 8 × NVIDIA A100 SXM4 80GB, training):** CPU about 96–192 cores" in a
    assert "system RAM about 1,920 GB–2,560 GB (3–4× the server's 640 GB of GPU memory" in a
    assert "each checkpoint takes about 980 GB" in a
    assert "To work this out I need to know" not in a  # it sized the job on a card: no question back for one
    host = [c for c in calls(t, "plan_cluster") if c.output.get("host")]
    assert host and host[-1].input["host_workload"] == "train"


def test_cpu_and_gpu_configurations_for_serving_size_the_serving_host(advisor):
    t = clean(advisor.ask(request("gh-ollama-2393")))  # "Optimal CPU and GPU Configurations for LLaMA 2(70B)"
    # the machine the answer recommends (8 RTX 4090, its headline pick), not a reference fit beside it
    assert "**Host side (per server, 8 × NVIDIA GeForce RTX 4090, serving):** CPU about 64–96 cores" in t.answer
    assert "system RAM about 384 GB (2× the server's 192 GB of GPU memory)" in t.answer  # a PC: no server floor
    assert "the weights file takes about 138 GB" in t.answer  # Llama-2-70B's 69B parameters at bf16


def test_cpu_and_ram_asked_with_no_model_get_the_rules_per_gpu_in_chinese(advisor):
    t = clean(advisor.ask(request("gh-deepseekv2-77")))  # "显卡，CPU和内存在考虑性价比的条件下怎么选"
    a = t.answer
    assert "哪个模型或多大参数量" in a  # the model is still asked back
    assert "**CPU 与内存怎么配（每装一张卡）：** 训练/微调每卡 12–24 个 CPU 核、系统内存为显存总量的 3–4 倍" in a
    assert "推理服务每卡 8–12 核" in a and "整机内存至少 128 GB" in a


def test_no_host_words_no_host_block(advisor):
    t = clean(advisor.ask("70B 模型全参训练，单卡 A100 80GB 够吗？"))
    assert "Host side" not in t.answer and "主机配置" not in t.answer
