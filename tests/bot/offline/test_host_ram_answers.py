"""Host-RAM exhaustion answered in numbers, from real development rows: the host RAM the setup needs against the
RAM the asker stated (used, not set aside), and the change that closes the gap; never a stock data-worker count."""

from __future__ import annotations

import re

from asking import ask, calls, row


def _diagnosed(advisor, caplog, row_id):
    (t,) = ask(advisor, caplog, row(row_id))
    (call,) = calls(t, "diagnose")
    return t, call


def test_zero3_offload_of_a_72b_is_compared_with_the_800g_the_asker_gave(advisor, caplog):
    t, call = _diagnosed(advisor, caplog, "gh-qwen3-804")
    assert call.input["host_ram_gb"] == 800 and call.input["offload"] == "optimizer+params"
    need = float(re.search(r"需要主机内存约 ([\d,]+) GB", t.answer).group(1).replace(",", ""))
    assert need > 800 and "您有 800 GB，不够" in t.answer
    assert "preprocessing_num_workers" not in t.answer and "“800G”" not in t.answer  # not set aside


def test_dpo_full_fine_tuning_counts_the_reference_copy_on_every_rank(advisor, caplog):
    t, call = _diagnosed(advisor, caplog, "gh-llamafactory-798")
    assert call.input["preference"] == "dpo" and call.input["host_ram_gb"] == 400
    assert "参考/奖励模型" in t.answer and "448 GB" in t.answer and "torch_dtype=bfloat16" in t.answer


def test_eight_ranks_each_loading_a_70b_checkpoint_is_the_cause_and_zero_init_the_fix(advisor, caplog):
    t, _ = _diagnosed(advisor, caplog, "gh-collie-98")
    assert "8 个进程 × 68.98B 参数" in t.answer and "您有 512 GB，不够" in t.answer
    assert "zero.Init" in t.answer


def test_building_an_engine_is_sized_against_the_ram_the_asker_has(advisor, caplog):
    t, call = _diagnosed(advisor, caplog, "gh-trtllm-577")
    assert call.input["engine_build"] is True and call.input["host_ram_gb"] == 32
    assert re.search(r"building the engine ≈ 3 × [\d.]+B params × 2 B = \d+ GB", t.answer)
    assert "you have 32 GB, which is less" in t.answer and "preprocessing_num_workers" not in t.answer


def test_zero3_offload_said_in_words_offloads_the_parameters_too(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-ms-swift-3387"))
    (fit,) = [c for c in calls(t, "fit_training") if c.input.get("offload")][:1]
    assert fit.input["offload"] == "optimizer+params"
    ram = float(re.search(r"卸载（offload）需要每台服务器约 ([\d,.]+) GB", t.answer).group(1).replace(",", ""))
    assert ram > 145  # the 72B base's 16-bit weights alone are 145 GB of host RAM


def test_host_ram_and_swap_are_read_as_the_hosts_not_as_a_card():
    from bot.offline.understand.request.reader import read

    def roles(text):
        return {m.text: m.role for m in read(text).mentions}

    assert roles("8卡A800, 400G内存报错")["400G"] == "ram_gb"
    r = roles("GPUS: v100 16G\nRAM: 32G\n")
    assert r["32G"] == "ram_gb" and r["v100 16G"] == "gpu"
    assert read("GPUS: v100 16G\nRAM: 32G\n").parsed.gpus == ["v100-sxm2-16gb"]  # not a second V100 variant
    r = roles("a g5.2xlarge with 32GB of RAM and an extra 16GB of swap")
    assert r["32GB"] == "ram_gb" and r["16GB"] == "swap_gb"
    r = roles("我用一台16GB内存的CPU和一台4GB内存的GPU")
    assert r["16GB"] == "ram_gb" and r["4"] == "gpu_memory_gb"


def test_a_hybrid_question_weighs_vram_plus_the_stated_ram_and_names_the_format_that_fits(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-ktransformers-951"))
    fits = [c for c in calls(t, "fit_inference") if c.input.get("host_ram_gb") == 640]
    assert fits and any(not h["fits"] for h in fits[0].output["hybrid"] if h["format"] == "fp8")
    assert "Q6_K 装得下" in t.answer and "fp8（671 GB）超出显存 + 内存" in t.answer
    (en,) = ask(advisor, caplog, row("gh-ktransformers-188"))
    assert re.search(r"\*\*CPU\+GPU hybrid .*: Q\d_K_M fits\*\*", en.answer) and "tokens/s" in en.answer
    assert "“256G”" not in en.answer  # the RAM is used, not set aside
