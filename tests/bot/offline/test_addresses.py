"""A link the user pastes (issue 23): its digits are no figures of the question, and the repository or model it
points at is the model meant. Texts are the development row gh-baichuan2-36 of the real corpus and questions of
the same kind."""

from bot.offline.understand.parse import parse
from bot.offline.understand.request.reader import read
from tests.support.asking import ask, row


def test_the_model_a_model_page_link_points_at_is_the_model_sized():
    p = parse("https://huggingface.co/Qwen/Qwen2.5-72B-Instruct 这个用 vLLM 部署要几张 A100？")
    assert p.models == ["qwen2.5-72b"]
    p = parse("按 https://modelscope.cn/models/ZhipuAI/glm-4-9b-chat 的说明，4090 能跑吗")
    assert p.models == ["glm-4-9b"]


def test_a_model_named_in_the_text_wins_over_the_link():
    p = parse("看了 https://github.com/QwenLM/Qwen2.5 ，我想跑 Qwen2.5-7B，要什么卡")
    assert p.models == ["qwen2.5-7b"]


def test_an_address_elsewhere_names_nothing_and_its_digits_are_not_figures():
    r = read("参考 https://blog.example.com/2024/05/a100-vs-h100?id=8080 ，A100 跑 Qwen2.5-7B 推理够吗")
    assert r.parsed.gpus == ["a100-sxm4-80gb"]
    assert not [m for m in r.mentions if m.text in ("2024", "05", "8080")]


def test_a_percent_encoded_anchor_is_not_read_as_figures_and_the_repository_names_the_family(advisor, caplog):
    text = row("gh-baichuan2-36")
    assert not [m for m in read(text).mentions if m.text.endswith("%")]  # "%E9%87%8F…" is no 87%
    (t,) = ask(advisor, caplog, text)
    assert "推断是 Baichuan2-13B" in t.answer  # the family from the link, the size from "fp16只用26"
    assert t.answer.count("没写规模") == 1  # the diagnosis and the estimate below it say the assumption once
    assert "87%" not in t.answer


def test_links_to_several_models_say_none_of_them_ran():
    p = parse(
        "- https://huggingface.co/Qwen/Qwen2.5-7B-Instruct: uses 20GB\n"
        "- https://huggingface.co/Qwen/Qwen2.5-72B-Instruct: cannot run on 2 A100 40G"
    )
    assert p.models == [] and p.unknown_models == []
