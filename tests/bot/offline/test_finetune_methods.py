"""Issue 26, fine-tuning for a buyer: a question that names no method ("多少卡微调 X") gets full, LoRA and QLoRA
side by side, each with its own fewest GPUs on the card asked about (and time and rented cost when a token count
is given); a question that names its method keeps its single answer."""

from __future__ import annotations

import re

from asking import calls


def rows(answer: str, header: str) -> list[list[str]]:
    """The table under the heading `header`, as cells per row (header and rule lines left out)."""
    block = answer.split(header, 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def fewest(trace, method: str) -> int:
    """The count the calculators found for one method (the one-GPU probe's `min_gpus`)."""
    probe = next(c for c in calls(trace, "fit_training") if c.input["method"] == method and c.input["n_gpus"] == 1)
    return probe.output["min_gpus"]


def test_sft_of_r1_on_h800_counts_each_method_beside_the_full_run(advisor):
    # dev row gh-llamafactory-6824
    t = advisor.ask("求助：如何对 DeepSeek R1 进行 SFT\n求问需要用多少张H800呢")
    assert t.ungrounded == []
    table = rows(t.answer, "**微调按方法对比**（NVIDIA H800 SXM5 80GB")
    assert [r[0] for r in table] == ["全参", "LoRA", "QLoRA"]
    counts = [int(re.match(r"(\d+) 张", r[1]).group(1)) for r in table]
    assert counts == [fewest(t, "full"), fewest(t, "lora"), fewest(t, "qlora")]
    assert counts[0] == 144 and counts[2] < counts[1] < counts[0]  # 4-bit frozen weights need the fewest cards
    assert table[0][3] == "10,740 GB"  # the unsharded full run: 16 bytes per parameter of 671B, plus activations


def test_a_model_size_with_no_card_counts_methods_on_the_default_80gb_card(advisor):
    # dev row gh-internvl-516
    t = advisor.ask("[Docs] How much training resources are needed for 76B fine-tuning")
    table = rows(t.answer, "**Fine-tuning by method** (NVIDIA A100 SXM4 80GB")
    assert [r[0] for r in table] == ["full", "LoRA", "QLoRA"]
    assert [int(r[1].split()[0]) for r in table] == [fewest(t, m) for m in ("full", "lora", "qlora")]
    assert "does not depend on the card" not in t.answer  # the counts do: the card they are on is named


def test_a_token_count_gives_each_method_its_time_and_rented_cost(advisor):
    # dev row gh-llamatuner-87: no tokens given, the shortlist's 1B default is said and used for every method
    t = advisor.ask("llama2-13B和llama2-70b微调所需要的显卡配置\n您好！请问有推荐的配置吗？")
    assert t.ungrounded == []
    assert "| 方法 | 最少卡数 | 每卡显存 / 可用 | 不切分时总显存 | 1B tokens 用时 | 租用花费 |" in t.answer
    seventy = t.answer.split("Llama-2-70B", 1)[1]  # the 70B's section
    card = re.search(r"\*\*微调按方法对比\*\*（([^，]+)，", seventy).group(1)
    table = rows(seventy, f"**微调按方法对比**（{card}")
    timed = {c.input["method"]: c for c in calls(t, "training_time") if c.input["model"] == "llama-2-70b"}
    lora = next(r for r in table if r[0] == "LoRA")
    assert int(lora[1].split()[0]) == timed["lora"].input["n_gpus"]
    # the LoRA row is the shortlist's own best-value pick: same count, same days and cost
    assert f"{lora[1].split()[0]} 张 {card}，{lora[4]}，约 {lora[5]}" in seventy
    # asked in Chinese: a mainland buyer's shortlist holds cards that can be bought there, and says so once
    assert "中国大陆受限" not in t.answer and t.answer.count("候选只列中国大陆能正常采购的卡") == 1


def test_a_named_method_keeps_its_single_answer(advisor):
    t = advisor.ask("How many A100 40GB GPUs do I need to LoRA fine-tune Llama-2-13B?")
    assert "Fine-tuning by method" not in t.answer
    assert {c.input["method"] for c in calls(t, "fit_training")} == {"lora"}


def test_parallel_degrees_the_user_set_are_the_headline_count(advisor):
    # dev row gh-megatronds-158: the count is TP × PP (times the data-parallel degree), not ZeRO's minimum
    t = advisor.ask(
        "how many gpus do i need\nTo train a model(7B) with megatron-deepspeed, tensor_parallelism=2 "
        "pipeline_parallelism=8  how many GPUS do i need?"
    )
    assert t.ungrounded == [] and t.unused == []  # the 8 is read as the pipeline degree, not left over
    assert "**At least 16 GPUs: tensor parallel 2 × pipeline parallel 8 = 16.**" in t.answer
    assert "2 servers of 8 GPUs" in t.answer
    run = calls(t, "fit_training")[-1]
    assert (run.input["n_gpus"], run.input["tp"], run.input["pp"]) == (16, 2, 8) and run.output["fits"]


def test_a_data_parallel_degree_multiplies_the_count(advisor):
    t = advisor.ask("Llama-2-13B full fine-tune with TP=4, PP=2, DP=4 on H100: how many GPUs do I need?")
    assert "**32 GPUs in all: tensor parallel 4 × pipeline parallel 2 × data parallel 4 = 32**" in t.answer
    assert calls(t, "fit_training")[-1].input["n_gpus"] == 32


def test_a_serving_shortlist_states_the_weights_that_decide_its_count(advisor):
    # dev row gh-lmdeploy-3935: 241B is about 482 GB in BF16, which is why it takes 8 cards of ~96 GB
    t = advisor.ask("请问intern-vl-3.5-241B大概需要什么型号的显卡才能完成图片推理呀")
    assert t.ungrounded == []
    w = next(c for c in calls(t, "model_memory") if "precision" not in c.input).output["weights_by_precision_gb"]
    assert round(w["bf16"]) == 482  # 241B parameters × 2 bytes
    assert f"权重 BF16 约 {w['bf16']:.0f} GB，FP8 约 {w['fp8']:.0f} GB，INT4 约 {w['int4']:.0f} GB" in t.answer


def test_the_card_the_count_is_written_with_is_the_one_answered(advisor):
    # dev row gh-ollama-16339: a 4090 is mentioned first, but the cluster asked about is "8x H100s"
    t = advisor.ask(
        "For a 4090 at full tilt (~350W inference load) I pay a little. For a small cluster (say 8x H100s running a "
        "customer-facing app), what is the monthly power?"
    )
    power = calls(t, "power_draw")[-1]
    assert (power.input["gpu"], power.input["n_gpus"]) == ("h100-sxm5-80gb", 8)
    assert t.answer.startswith("**8 GPUs (NVIDIA H100 SXM5 80GB): about")
