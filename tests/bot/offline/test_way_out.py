"""A "does not fit" on the asker's own hardware ends with the ways that make it fit ON THAT HARDWARE first, each with
its figure, in one order shared by serving and training (bot/offline/compose/sizes/wayout.py): all their cards, a
quantised format, a shorter context / smaller batch, offload with the host RAM it needs, LoRA/QLoRA; only then more
cards or a bigger card (issue 23, part_missing / weak_fix: "never says the way out", "omits the ZeRO-3 CPU-offload
route", "missing the consumer route (low-bit GGUF with CPU/GPU hybrid)"; dev rows gh-lmdeploy-2049,
gh-deepseekv3-241, gh-ms-swift-1402, gh-qwenvl-105)."""

from __future__ import annotations

import re

from bot.offline.compose.sizes import wayout


def _todo(answer: str) -> list[str]:
    m = re.search(r"\*\*(?:怎么办：|What to do:)\*\*\n((?:- .*\n?)+)", answer)
    assert m, answer
    return [line for line in m.group(1).splitlines() if line.startswith("- ")]


def test_training_offload_comes_before_adapters_and_more_cards(advisor):
    """Full FT of a 7B on their one 80 GB A100: the optimizer offload (with the host RAM it needs) is said before
    LoRA/QLoRA, and a second card comes last (fresh row gh-pandallm-25's maintainer answer)."""
    t = advisor.ask("单卡A100 80G 全参训练7B模型OOM，batch_size 1，sequence_length 512，有什么解决方案")
    todo = _todo(t.answer.split("按您的配置")[-1])
    where = {k: next(i for i, line in enumerate(todo) if w in line) for k, w in
             (("offload", "ZeRO-Offload"), ("lora", "LoRA"), ("more", "张卡并使用 ZeRO-3"))}  # fmt: skip
    assert where["offload"] < where["lora"] < where["more"], todo
    assert re.search(r"需要每台服务器约 [\d,]+ GB 内存", todo[where["offload"] + 1])  # the RAM it moves states to
    assert not any("显存更大的卡" in line for line in todo)  # a bigger card only when nothing else is


def test_serving_consumer_route_with_its_split_when_no_format_fits_the_cards(advisor):
    """AWQ 72B on 2 RTX 4090 is short: the CPU+GPU hybrid split (GGUF, what sits on the GPUs and in RAM) is said
    before 'at least 4 cards'; figures are fit_inference's hybrid rows."""
    t = advisor.ask("用 2 张 4090 部署 Qwen2-72B-Instruct-AWQ，lmdeploy --tp 2 放不下，怎么办")
    todo = _todo(t.answer)
    hybrid = next(i for i, line in enumerate(todo) if "CPU+GPU 混合" in line)
    more = next(i for i, line in enumerate(todo) if "至少需要" in line)
    assert hybrid < more
    rows = [c.output["hybrid"] for c in t.tool_calls if c.tool == "fit_inference" and c.output.get("hybrid")]
    row = next(r for r in rows[-1] if r["format"] == wayout.HYBRID_FORMAT)
    assert f"内存里约 {row['ram_gb']:g} GB" in todo[hybrid]


def test_training_offload_past_the_stated_ram_comes_after_lora(advisor):
    """2x RTX 4090 with 128G of RAM for a 14B full FT (dev row gh-qwen-846): ZeRO-3 offload needs more RAM than that,
    so LoRA/QLoRA lead and the offload line says the RAM is short."""
    t = advisor.ask("想全参微调 Qwen-14B，配置是 RTX 4090 24G *2，内存 128G，够吗？")
    todo = _todo(t.answer)
    lora = next(i for i, line in enumerate(todo) if "LoRA" in line)
    off = next(i for i, line in enumerate(todo) if "Offload" in line)
    assert lora < off and any("不够放卸载的部分" in line for line in todo[off:]), todo


def test_serving_all_their_cards_first(advisor):
    """Four NPUs with a full copy per process: tensor parallel over all four of theirs leads the list."""
    t = advisor.ask(
        "NPU 910B上多卡推理参数总是堆积到第一块显卡造成显存不够。\n你好，我在npu的4卡上部署qwen2-72b-instruct模型的时候，"
        "出现现存溢出。\n```\nASCEND_RT_VISIBLE_DEVICES=0,1,2,3 NPROC_PER_NODE=4 swift deploy --model_type "
        "qwen2-72b-instruct --model_id_or_path ../qwen/Qwen2-72B-Instruct/ --host 0.0.0.0 --port 65422\n```"
    )  # dev row gh-ms-swift-1402: a full copy per process, on one card each
    todo = _todo(t.answer)
    assert "用上您全部的 4 张" in todo[0], todo


def test_serving_fewer_cards_quantised_before_the_full_count(advisor):
    """70B on V100 32GB: the count in int4 (2 cards) is said before the fp16 count (8)."""
    t = advisor.ask("Can Llama-3.3-70B run on one V100 32GB?")
    todo = _todo(t.answer)
    fewer = next(i for i, line in enumerate(todo) if line.startswith("- Fewer cards quantized: in int4"))
    more = next(i for i, line in enumerate(todo) if line.startswith("- You need at least"))
    assert fewer < more


def test_pick_training_order_and_one_offload():
    sug = [{"change": c} for c in ("lora", "qlora", "adamw8bit", "offload_optimizer", "offload_params", "more_gpus",
                                   "bigger_gpu", "micro_batch")]  # fmt: skip
    got = [x["change"] for x in wayout.pick_training(sug)]
    assert got == ["adamw8bit", "micro_batch", "offload_optimizer", "lora", "qlora", "more_gpus"]
    # a LoRA run's QLoRA is its quantised base: before offload
    got = [x["change"] for x in wayout.pick_training([{"change": "offload_params"}, {"change": "qlora"}], "lora")]
    assert got == ["qlora", "offload_params"]
    assert [x["change"] for x in wayout.pick_training([{"change": "bigger_gpu"}])] == ["bigger_gpu"]
    # an offload that needs more host RAM than the user has comes after the adapters
    got = wayout.pick_training([{"change": "offload_params"}, {"change": "lora"}], short={"offload_params"})
    assert [x["change"] for x in got] == ["lora", "offload_params"]


def test_fp8_first_on_a_card_with_fp8():
    assert wayout.lower_precisions("bf16", True) == ("fp8", "int8", "int4")
    assert wayout.lower_precisions("bf16", False) == ("int8", "int4")
    assert wayout.lower_precisions("int8", True) == ("int4",)
