"""The model the asker means is the model sized (issue 23, class missed_model): a family named without a size is
the size it is known for, said as an assumption; a weight figure at a precision picks the size it implies; a size
glued before the family ("72Bqwen") and a name made of two families ("Qwen-Deepsee-32B") are read; embedding
models get a small-model answer. Row texts are development rows of the real corpus, quoted by id."""

from bot.offline.understand.parse import parse
from tests.support.asking import ask, calls, row


def _models(trace):
    return {c.input.get("model") for c in trace.tool_calls if isinstance(c.input, dict)} - {None}


def test_a_family_without_a_size_is_sized_as_its_known_size_and_the_answer_says_so(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-mistralinference-34"))
    assert "mistral-7b" in _models(t)
    assert "'Mistral' with no size is taken as Mistral-7B" in t.answer
    (t,) = ask(advisor, caplog, "ChatGLM 做 LoRA 微调要多少显存？")
    assert "chatglm-6b" in _models(t) and "“ChatGLM”没写规模，这里按它通常指的 ChatGLM-6B 估算" in t.answer


def test_a_family_of_several_sizes_is_not_guessed():
    assert parse("Qwen 做客服要什么卡").models == []
    p = parse("Baichuan2 微调要多少显存")
    assert p.models == [] and p.unknown_models == ["Baichuan2"]


def test_a_weight_figure_at_a_precision_picks_the_size_it_implies(advisor, caplog):
    (t,) = ask(advisor, caplog, "Baichuan2 不是写的 fp16 只用26G 吗，为什么我 v100-32G batch size 1 都 oom")
    assert "baichuan2-13b" in _models(t) and "baichuan2-7b" not in _models(t)
    assert "推断是 Baichuan2-13B" in t.answer and "fp16 只用26G" in t.answer


def test_a_size_glued_before_the_family_is_read():
    p = parse(row("gh-qwen-708"))
    # "72Bqwen" is "qwen 72b": the catalog's 1st-generation Qwen-72B (a name, no stand-in)
    assert p.unknown_models == [] and p.models == ["qwen-72b"]


def test_a_name_made_of_two_families_is_the_model_named_for_both_not_a_model_with_the_same_digits(advisor, caplog):
    p = parse(row("gh-vllm-16444"))
    assert p.stand_ins == {"Qwen-Deepsee-32B": "deepseek-r1-distill-qwen-32b"}
    assert "deepseek-v3.2" not in p.models
    assert parse("qwen deepseek 哪个好").models == []  # two families side by side are two names, not one


def test_sibling_names_resolve_to_the_sibling_asked_for():
    assert parse(row("gh-ms-swift-1048")).models == ["deepseek-v2"]  # DeepSeek-v2-Chat is the 236B, not V2-Lite
    assert parse(row("gh-deepseekv2-21")).models == ["deepseek-v2", "deepseek-llm-67b"]
    assert "internlm2-1.8b" in parse(row("gh-internvl-317")).models  # not InternLM2.5-7B


def test_a_vision_model_is_sized_with_its_vision_tower(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-msswift-1225"))
    fit = calls(t, "fit_training")[0]
    assert fit.input["model"] == "glm-4v-9b"
    assert fit.output["breakdown_gb"]["weights"] > 25  # GLM-4-9B alone is 19 GB of bf16 weights


def test_an_embedding_model_gets_a_small_model_answer(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-flagembedding-489"))
    assert "BGE-M3 is a small model" in t.answer and "NVIDIA T4 16GB" in t.answer and "a CPU runs it" in t.answer
    (t,) = ask(advisor, caplog, row("gh-flagembedding-196"))
    assert "BGE-base-zh-v1.5 是小模型" in t.answer


def test_a_misspelling_keeps_its_first_letter():
    """'/data-1/mydeepseek-2' (a folder in gh-ktransformers-446's command) is no DeepSeek-V2."""
    assert "deepseek-v2" not in parse(row("gh-ktransformers-446")).models
    assert parse("lamma-3-8b lora 微调").models == ["llama-3-8b"]
