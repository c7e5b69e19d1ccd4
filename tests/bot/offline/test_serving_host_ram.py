"""Host RAM asked beside a serving question ("还有多少内存需求", "如果对内存有要求也请说明一下", "host RAM and
disk"): the answer says the host RAM per server of the setup it sized (its cards, count and precision), the terms
(the checkpoint through the page cache while loading, the swap space while serving) and the loader assumed, with
the checkpoint's disk; the asks gate no longer calls it not computed. Phrasings are our own, zh and en."""

from __future__ import annotations

import re

import pytest
from asking import ask, calls

from bot.offline.say.render import gb
from bot.offline.understand.request.reader import read

NOT_COMPUTED = ("没有算出的部分", "Not computed in this answer")


def _host(t):
    (fit,) = [c for c in calls(t, "fit_inference") if c.input.get("loader")]
    return fit, fit.output["host_ram"]


def _figure(text: str, pattern: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


@pytest.mark.parametrize(
    "question",
    [
        "本地推理deepseek r1需要多少显存空间？还有多少内存需求呢？",
        "主要是需要什么显卡，多大显存？如果对内存有要求也请说明一下",
        "部署 Qwen2.5-72B 要几张卡，显存和内存分别要多大",
        "Hardware guidelines for DeepSeek-R1 full version: GPU memory, host RAM and disk",
        "Serving Llama-3-70B on 4 A100: how much RAM does the server need?",
    ],
)
def test_the_reader_finds_host_ram_asked_beside_serving(question):
    assert "host_ram" in read(question).cued


def test_zh_serving_fit_says_the_host_ram_per_server_of_the_setup_sized(advisor, caplog):
    (t,) = ask(advisor, caplog, "用 vLLM 在 4 张 A100 80GB 上部署 Qwen2.5-72B，显存够吗？还有多少内存需求？")
    fit, h = _host(t)
    assert fit.input["n_gpus"] == 4 and fit.input["gpu"] and h["loader"] == "vllm"
    ram = _figure(t.answer, r"主机内存：每台服务器约 ([\d,.]+) GB")
    assert ram == pytest.approx(h["per_node_gb"], rel=0.01) and ram > 140  # the 72B's bf16 checkpoint, loading
    assert "按 vLLM 加载算" in t.answer and "页缓存" in t.answer and "swap space" in t.answer
    assert f"4 张卡共 {gb(h['terms_gb']['swap_space'])}" in t.answer and "磁盘：权重文件约" in t.answer
    assert not any(w in t.answer for w in NOT_COMPUTED)


def test_zh_model_too_big_for_one_card_is_sized_on_the_fewest_cards_over_servers(advisor, caplog):
    (t,) = ask(advisor, caplog, "本地部署 DeepSeek-R1 推理要多少显存？服务器内存要多大？")
    fit, h = _host(t)
    assert fit.input["n_gpus"] > 8 and h["nodes"] >= 2  # the fewest cards that hold it, over whole servers
    assert f"分在 {h['nodes']} 台服务器上" in t.answer and "每台服务器约" in t.answer
    assert not any(w in t.answer for w in NOT_COMPUTED)


def test_en_weights_question_gets_host_ram_and_disk_on_the_fewest_default_cards(advisor, caplog):
    (t,) = ask(advisor, caplog, "What hardware does Qwen2.5-72B need to serve: GPU memory, host RAM and disk?")
    _, h = _host(t)
    assert re.search(r"Host RAM: about [\d,.]+ GB", t.answer) and "loaded by vLLM" in t.answer
    assert f"Disk: the checkpoint takes about {gb(h['disk_gb'])}" in t.answer
    assert not any(w in t.answer for w in NOT_COMPUTED)


def test_en_transformers_named_is_sized_as_from_pretrained_loads(advisor, caplog):
    (t,) = ask(advisor, caplog, "Serving Llama-3-70B with transformers on 4 A100 80GB: how much host RAM is needed?")
    _, h = _host(t)
    assert h["loader"] == "hf" and "loaded by transformers with device_map" in t.answer
    assert "two without low_cpu_mem_usage" in t.answer


def test_zh_ollama_named_is_the_mapped_gguf_file(advisor, caplog):
    (t,) = ask(advisor, caplog, "用 ollama 在 2 张 4090 上跑 qwen2.5-32b int4，显存和内存分别要多大")
    _, h = _host(t)
    assert h["loader"] == "llamacpp" and "mmap" in t.answer and "按 llama.cpp / Ollama 算" in t.answer
    assert _figure(t.answer, r"主机内存：约 ([\d,.]+) GB") == pytest.approx(h["terms_gb"]["mapped_file"], rel=0.01)


def test_a_serving_question_that_does_not_ask_host_ram_says_none(advisor, caplog):
    (t,) = ask(advisor, caplog, "用 4 张 A100 80GB 部署 Qwen2.5-72B，显存够吗？")
    assert not [c for c in calls(t, "fit_inference") if c.input.get("loader")] and "主机内存" not in t.answer


def test_zh_host_ram_the_asker_has_is_set_against_what_loading_needs(advisor, caplog):
    (t,) = ask(advisor, caplog, "4张A100 80GB，服务器内存256G，部署Qwen2.5-72B推理，显存够吗？还需要多少内存？")
    _, h = _host(t)
    assert h["per_node_gb"] < 256 and "您说的主机内存“256G”不少于上面每台服务器的" in t.answer


def test_en_host_ram_the_asker_has_short_of_what_loading_needs(advisor, caplog):
    (t,) = ask(
        advisor, caplog, "Serving Qwen2.5-72B on 4 A100 80GB with 64 GB of system RAM: how much host RAM is needed?"
    )
    _, h = _host(t)
    assert h["per_node_gb"] > 64 and "The host RAM you give (“64 GB”) is less than" in t.answer
