"""Class 7 of issue 23: a question that needs a model's size but names none is answered on the stated default
(7B), with the same answer for other sizes computed by the same calculator, and one question for the model; a
reply that only names the model (or the card) answers that question again on it. From questions people asked in
public (development rows of tests/corpus/real/; the row id is beside each)."""

from __future__ import annotations

import pytest
from asking import ask, calls, row

from bot.offline.say.render import duration, gb


def test_a_run_time_with_no_model_is_timed_on_the_default_and_on_other_sizes(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-chatglm-finetune-lora-36"))  # "LoRA训练时间大概是多久呢？"
    runs = {c.input["model"]: c for c in calls(t, "training_time")}
    assert set(runs) == {"7B", "14B", "72B"} and {c.input["method"] for c in runs.values()} == {"lora"}
    assert "按7B 模型" in t.answer and "哪个模型" in t.answer  # the default said, and one question, not only a question
    line = next(b for b in t.answer.split("\n\n") if b.startswith("**换个规模**"))
    for size, c in runs.items():  # each size with its own calculator's hours, the default's too
        assert f"{size} 约 {duration(c.output['hours'], 'zh')}" in line
    assert runs["72B"].output["hours"] > runs["14B"].output["hours"] > runs["7B"].output["hours"]


def test_serving_memory_with_no_model_gives_each_size_its_memory_and_count(advisor, caplog):
    (t,) = ask(
        advisor, caplog, row("gh-minicpmv-69")
    )  # "本地部署要多大的显存？ 在消费级的电脑上要多大的显存才能部署？"
    fits = {c.input["model"]: c.output for c in calls(t, "fit_inference") if c.input["model"] in ("7B", "14B", "72B")}
    assert set(fits) == {"7B", "14B", "72B"}
    for size, out in fits.items():
        assert f"{size} 每卡约 {gb(out['per_gpu_gb'])}" in t.answer
    assert not fits["72B"]["fits"] and f"至少 {fits['72B']['min_gpus']} 张" in t.answer  # 72B needs more than one


def test_an_english_question_with_no_model_is_answered_in_english_on_the_default(advisor, caplog):
    # "…what hardware is necessary?": the sizing request is answered on the default, then the one question
    (t,) = ask(advisor, caplog, "How many GPUs do I need to fine-tune a model with LoRA?")
    assert "(Assuming a 7B model" in t.answer and "Which model is it?" in t.answer
    assert {c.input["model"] for c in calls(t, "fit_training")} >= {"7B", "14B", "72B"}


@pytest.mark.parametrize(
    ("reply", "model", "gpu"), [("Qwen2.5-32B", "qwen2.5-32b", "rtx-4090"), ("用 H20", "7B", "h20")]
)
def test_a_reply_that_only_names_answers_the_question_again_on_it(advisor, caplog, reply, model, gpu):
    first, again = ask(advisor, caplog, "微调需要几张 4090？", reply)
    assert first.tool_calls and "哪个模型" in first.answer
    fits = calls(again, "fit_training")
    assert fits and {(c.input["model"], c.input["gpu"]) for c in fits[:1]} == {(model, gpu)}
    assert "训练" in again.answer and "放得下" in again.answer  # in the conversation's language, the same question


def test_a_bare_keyword_is_still_asked_back(advisor, caplog):
    (t,) = ask(advisor, caplog, "显存")  # nothing asked in words: one question, nothing computed on a guess
    assert "哪个模型" in t.answer and not [c for c in t.tool_calls if c.tool != "search_knowledge"]


# --- class 6: a name the catalog lacks is said, and computed on the size its name gives -----------------------


def test_a_moe_name_is_computed_on_the_catalogs_moe_not_a_dense_model_of_its_size(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-qwen3-552"))  # "Qwen2-57B-A14B-Instruct-GPTQ-Int4模型生成tokens很慢"
    speeds = calls(t, "inference_speed")
    # the catalog's Qwen2-57B-A14B (not a dense 57B: decode reads the 14B active), no longer a generic MoE
    assert speeds and speeds[0].input["model"] == "qwen2-57b-a14b"
    assert "不在目录里" not in t.answer and "Qwen2-57B-A14B" in t.answer


@pytest.mark.parametrize(
    ("row_id", "typed", "size"),
    [
        ("gh-open-llama-71", "OpenLLaMA-65B", "65B"),  # "Any plan for OpenLLaMA-65B？ … how many H100/H800 GPUs"
        ("gh-internvl-386", "InternVL2-26B", "26B"),  # "InternVL2-26B / 40B AWQ 4bit至少需要多少VRAM？"
    ],
)
def test_an_unknown_name_with_a_size_is_said_and_computed_on_that_size(advisor, caplog, row_id, typed, size):
    (t,) = ask(advisor, caplog, row(row_id))
    assert typed in t.answer and ("不在目录里" in t.answer or "is not in the catalog" in t.answer)
    assert size in {c.input.get("model") for c in t.tool_calls}


def test_the_second_size_after_an_unknown_name_is_a_second_model():
    from bot.offline.understand.parse import parse

    p = parse(row("gh-internvl-386"))  # "InternVL2-26B / 40B": two models, the second not swallowed into the name
    assert sorted(p.models) == ["26B", "40B"] and p.stand_ins == {"InternVL2-26B": "26B"}


@pytest.mark.parametrize("text", ["用 LoRA-7B 微调要几张卡", "python convert.py --save /path/config_671B.json"])
def test_a_method_or_a_file_written_against_a_size_is_no_model_name(text):
    from bot.offline.understand.parse import parse

    assert parse(text).unknown_models == []


def test_the_default_for_a_named_model_of_unknown_size_is_given_beside_other_sizes(advisor, caplog):
    # gh-vllmascend-11793 (its first line): "按默认" never makes "GLM-5.2" a 7B model without a word
    text = "[Usage]: 咨询 GLM-5.2-w8a8 支持 200K 上下文所需硬件配置，以及 A3/A2 文档描述是否有误"
    first, default, sized = ask(advisor, caplog, text, "按默认", "355B")
    assert "它有多大？" in first.answer and not [c for c in first.tool_calls if c.tool != "search_knowledge"]
    assert "这不是“GLM-5.2”本身的结构" in default.answer and "**换个规模**" in default.answer
    assert "“GLM-5.2”有多大？" in default.answer  # asked again, for its size
    assert {c.input["model"] for c in sized.tool_calls if "model" in c.input} == {"355B"}  # then on its own size


@pytest.mark.parametrize(
    ("text", "only"),
    [
        ("Qwen2.5-32B", True),
        ("用 H20 呢？", True),
        ("32B please", True),
        ("Qwen2.5-32B 能跑吗", False),
        ("8 张 H20", False),
    ],
)
def test_a_reply_of_names_alone_is_told_from_a_question(text, only):
    from bot.offline.understand.decide import names_only
    from bot.offline.understand.parse import parse

    assert names_only(parse(text)) is only  # a figure or a question word makes it a question of its own


@pytest.mark.parametrize(
    ("first", "reply", "model"),
    [
        ("Qwen2.5-7B 用 4090 能微调吗", "32B 呢", "qwen2.5-32b"),  # the family's own 32B, not a generic 32B
        ("Llama-3.1-8B 推理多快", "70B 呢", "llama-3.1-70b"),
        ("Qwen3-30B-A3B 部署要几张 4090", "235B 呢", "235B"),  # no Qwen3-235B-A3B: the size as said, not a guess
    ],
)
def test_a_bare_size_after_a_named_model_is_that_models_sibling_when_the_catalog_has_it(
    advisor, caplog, first, reply, model
):
    _, again = ask(advisor, caplog, first, reply)
    assert model in {c.input.get("model") for c in again.tool_calls}


# development rows of tests/corpus/systems/requests.yaml: a card named, no model, "can it run inference?"
A10_PREDICT = (
    "您好,目前的模型A10,24G显存可以支持预测功能吗?\n很感兴趣,想看看模型效果,但是不知购买A10这样一个相对有些老GPU能否支持该模型预测吗?"
    "目前暂时不考虑训练的问题"
)  # gh-cornucopia-18
FLOOR_ASKED = "推理硬件要求\n模型做推理最低显卡配置要求是什么？ 也是A100 40G以上吗？"  # gh-emollm-30


def test_can_this_card_run_it_with_no_model_is_answered_on_the_default_for_inference(advisor, caplog):
    (t,) = ask(advisor, caplog, A10_PREDICT)  # training was set aside: the job is inference ("预测")
    fits = [c for c in calls(t, "fit_inference") if c.input["model"] == "7B" and c.input["gpu"] == "a10"]
    assert fits and not calls(t, "fit_training")
    assert "按7B 模型" in t.answer and "放得下" in t.answer and "哪个模型" in t.answer


def test_a_card_named_as_the_floor_in_question_gets_the_least_memory_by_precision(advisor, caplog):
    (t,) = ask(advisor, caplog, FLOOR_ASKED)
    assert "按精度的最低显存" in t.answer  # the floor by precision, not only the fit on the A100 40GB asked about
    assert "bf16：权重约 14 GB，1 张 NVIDIA GeForce RTX 4090 放得下" in t.answer
