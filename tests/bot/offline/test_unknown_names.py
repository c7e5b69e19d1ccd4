"""A model or GPU name the catalog lacks is said, never silently replaced; with a size in its name or beside it
the answer is computed on a stand-in it names (issue 23). Question texts are development rows of the real corpus
(tests/corpus/real/*.yaml, held_out(id) False), quoted verbatim."""

import pytest

from bot.offline.understand.parse import parse
from tests.corpus import real
from tools.catalog.stand_in import read_name, resolve, stand_in


def _models(trace):
    return {c.input.get("model") for c in trace.tool_calls if isinstance(c.input, dict)} - {None}


def test_the_rows_quoted_here_are_development_rows():
    ids = {"gh-axolotl-1690", "gh-llamafactory-1766", "gh-lmdeploy-585", "gh-mgm-75", "gh-ms-swift-495", "gh-paddle-73439",
           "gh-qwen3-552", "gh-qwen3vl-340", "gh-vllmascend-11793"}  # fmt: skip
    assert not [i for i in ids if real.held_out(i)]


# gh-llamafactory-1766
QWEN72B = "在多卡8张推理qwen72b的时候，输入一个长文本，会发现0卡的显存突然飙升，其他卡不动。"
# gh-lmdeploy-585
LLAMA70B = "llama 系列的最低部署要求是什么啊？llama70b在V100上能部署吗？"
# gh-mgm-75
GEMINI = "为啥我6张4090 24G,微调Mini-Gemini-8x7B会显存不够QAQ\n是zero2的原因吗"


def test_a_glued_size_is_read_and_the_familys_nearest_size_stands_in():
    # "qwen72b" is the catalog's Qwen-72B now (the 1st generation, model.chat's API): a name, not a stand-in
    p = parse(QWEN72B)
    assert p.unknown_models == [] and p.models == ["qwen-72b"]
    assert parse(LLAMA70B).stand_ins == {"llama70b": "llama-3.3-70b"}


def test_the_answer_says_the_name_is_not_in_the_catalog_and_computes_on_the_stand_in(advisor):
    trace = advisor.ask(LLAMA70B)
    assert "“llama70b”不在目录里" in trace.answer and "Llama-3.3-70B" in trace.answer
    assert "llama-3.3-70b" in _models(trace)
    assert "未知的模型" not in trace.answer


def test_an_expert_layout_stands_in_by_the_catalogs_model_of_that_layout(advisor):
    trace = advisor.ask(GEMINI)
    # the whole name the user wrote, though "微调" is glued before it
    assert "“Mini-Gemini-8x7B”不在目录里" in trace.answer and "8x7B 专家结构的 Mixtral-8x7B" in trace.answer
    assert [c.tool for c in trace.tool_calls if c.tool == "fit_training"]
    assert "mixtral-8x7b" in _models(trace)


def test_a_moe_name_with_a_quantisation_tail_is_the_catalogs_moe():
    # gh-qwen3-552: never Qwen2.5-7B (same digits once the dots go), never the GPU "A14B", never a dense 57B; the
    # catalog has Qwen2-57B-A14B now, and "-Instruct-GPTQ-Int4" is its flavour and format, not another model
    p = parse("Qwen2-57B-A14B-Instruct-GPTQ-Int4模型生成tokens很慢")
    assert p.unknown_gpus == [] and "qwen2.5-7b" not in p.models
    assert p.stand_ins == {} and p.models == ["qwen2-57b-a14b"]


def test_a_name_with_no_size_gets_one_question_and_a_default_is_said(advisor):
    # gh-vllmascend-11793 (its first line)
    text = "[Usage]: 咨询 GLM-5.2-w8a8 支持 200K 上下文所需硬件配置，以及 A3/A2 文档描述是否有误"
    first = advisor.ask(text)
    assert "“GLM-5.2”不在目录里" in first.answer and "它有多大？" in first.answer
    assert "MoE 给总参和激活参数量" in first.answer  # the question says what to give, with no figure of its own
    reply = advisor.ask("按默认", first.conversation_id)
    assert "这不是“GLM-5.2”本身的结构" in reply.answer


def test_a_size_given_after_the_question_picks_the_familys_model():
    # gh-ms-swift-495 reads "Qwen1.8B" as Qwen 1.8B (the family's nearest: Qwen1.5-1.8B, the shape of Qwen-1.8B)
    p = parse("内存基本用不到，感觉就吃显存，Qwen1.8B单机训练差不多10.53it/s")
    assert p.stand_ins == {"Qwen1.8B": "qwen1.5-1.8b"}


def test_a_reply_with_the_size_is_computed_on_the_familys_model_of_that_size(advisor):
    # our text: in gh-baichuan2-36 "Baichuan2" stands only in a URL, which names nothing
    first = advisor.ask("Baichuan2 推理要几张 A100")
    assert "“Baichuan2”不在目录里" in first.answer and not _models(first)
    reply = advisor.ask("13B", first.conversation_id)
    assert "baichuan2-13b" in _models(reply) and "Baichuan2-13B" in reply.answer


def test_a_trailing_gpu_word_is_no_part_of_the_cards_name():
    # gh-paddle-73439
    p = parse("同样的代码，同样的被抽取文档，英伟达3090GPU，30秒内抽取完毕，而昇腾910B抽取居然要花费6分钟。")
    assert p.unknown_gpus == [] and p.gpus == ["rtx-3090", "ascend-910b"]


def test_no_name_is_read_inside_an_address():
    # gh-qwen3vl-340
    p = parse(
        '<img width="818" alt="image" src="https://github.com/user-attachments/assets/eba8985c-fe1b-48b3-b705-874639fa7acd">'
    )
    assert p.unknown_gpus == []


@pytest.mark.parametrize(
    ("typed", "catalog_id"),
    [("llama2_70b", "llama-2-70b"), ("internlm2_5-7b", "internlm2.5-7b"), ("qwen2.5_7b", "qwen2.5-7b")],
)
def test_a_catalog_name_spelt_with_other_separators_is_that_entry(typed, catalog_id):
    assert resolve(read_name(typed)).id == catalog_id
    assert parse(f"{typed} 推理要几张 A100").models == [catalog_id]


def test_read_name_and_stand_in():
    assert read_name("qwen1_5").version == "1.5" and read_name("qwen1_5").size_b is None
    assert stand_in(read_name("qwen1_5")) is None  # no size: nothing stands in
    assert stand_in(read_name("Baichuan2"), size_b=13).id == "baichuan2-13b"
    assert stand_in(read_name("FooLM-300B")) is None  # no family model near: a generic shape of that size


def test_a_later_version_of_a_one_size_line_is_computed_on_that_line_and_said(advisor):
    from tools.catalog.stand_in import same_line

    # DeepSeek-V3.1 and V3.2 are catalogued now (issue 25): a version after them is still computed on the line
    assert same_line("DeepSeek-V3.5").id.startswith("deepseek-v3") and same_line("GLM-5.2") is None
    text = next(r["text"] for r in real.rows() if r["id"] == "gh-vllm-30832")  # a DeepSeek-V3.2 serving question
    trace = advisor.ask(text)
    assert "'DeepSeek-V3.2' is not in the catalog" not in trace.answer
    assert {c.input.get("model") for c in trace.tool_calls if c.tool == "inference_speed"} == {"deepseek-v3.2"}


# gh-deepseekr1-460 (a development row), the line with Ollama's name:size tag
R1_TAG = "For DeepSeek-R1:671b, what is the maximum context length and throughput that a single GPU can support?"


@pytest.mark.parametrize(
    "text", [R1_TAG, "ollama run llama-3.1-70b:70b 在 4 张 4090 上能跑吗", "DeepSeek-V3 671B 要几张 H20"]
)
def test_a_size_tag_on_a_catalog_name_is_that_models_size_not_a_second_model(text):
    p = parse(text)
    assert len(p.models) == 1 and not any(m.endswith("B") for m in p.models), p.models


def test_a_size_beside_another_model_is_still_a_model_of_its_own():
    assert len(parse("Qwen2.5-72B 和 7B 比，推理快多少").models) == 2


# gh-ktransformers-951 and gh-chatglm3-218 (development rows of tests/corpus/systems/requests.yaml), verbatim parts
R1_AGAIN = "deepseek-r1 671B 满血版配置\n我现在有内存640GB，显卡一张L40，显存48GB，能否把非量化版本的满血版671B deepseek跑起来呢？"
GLM_SHORT = (
    "请问两张NVIDIA3060显卡（12G）运行ChatGLM3最大能支持多少个用户同时使用，怎么调整优化。另外GLM3能在vLLM上运行了吗"
)


def test_the_named_models_size_said_again_is_that_model_not_a_generic_one_beside_it(advisor):
    assert parse(R1_AGAIN).models == ["deepseek-r1"]
    t = advisor.ask(R1_AGAIN)
    assert _models(t) == {"deepseek-r1"}  # no second, generic dense 671B section
    assert "通用稠密" not in t.answer and "“671B”" not in t.answer  # and the size is not listed as unused


def test_a_name_written_short_is_the_model_named_in_full_beside_it(advisor):
    p = parse(GLM_SHORT)
    assert p.models == ["chatglm3-6b"] and p.unknown_models == []
    assert "未知的模型" not in advisor.ask(GLM_SHORT).answer


def test_an_unknown_name_that_is_no_tail_of_the_named_one_is_still_said():
    p = parse("Llama-3-70B 和 Llama-9-70B 哪个快")
    assert p.unknown_models  # another model the catalog lacks, not the named one written short


def test_a_later_version_of_a_one_size_line_is_sized_on_that_line_without_a_crash():
    # found by the advisor fuzz test: a name the catalog lacks, with no size, on a one-size line raised a TypeError
    p = parse("DeepSeek-V3.9 要多少显存")
    assert p.models == ["deepseek-v3"] and p.stand_ins == {"DeepSeek-V3.9": "deepseek-v3"}


def test_a_family_and_version_said_bare_beside_its_sized_model_is_that_model():
    # gh-axolotl-1690: "Add FSDP support to Qwen2-72B model … However, Qwen2 doesn't have support for FSDP"
    p = parse(next(r["text"] for r in real.rows() if r["id"] == "gh-axolotl-1690"))
    assert "qwen2-72b" in p.models and p.unknown_models == []
    # another version is another model: "Qwen2" beside Qwen2.5-7B is still a name we lack
    assert parse("Qwen2.5-7B 和 Qwen2 哪个好").unknown_models == ["Qwen2"]
    assert parse("Baichuan2-13B 部署，Baichuan2 需要几张卡").unknown_models == []
    assert parse("Qwen2-72B 和 Qwen2-VL 哪个好").unknown_models == ["Qwen2-VL"]  # a vision model is another line
