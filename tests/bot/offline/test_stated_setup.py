"""The asker's own setup is what is computed (issue 23, the class judged "set aside as not needed"): a card said
only by its memory ("目前40G显存跑不起来"), whose vendor the words name; a 1M context said as max_model_len;
a size glued into a build's name that repeats the model's own. Texts are development rows of the real corpus
(gh-glm4-149, gh-xinference-1115, gh-vllmascend-11793) and questions of the same kind."""

from bot.offline.understand.parse import parse
from tests.support.asking import ask, row


def test_a_card_said_by_its_memory_is_a_card_with_that_memory():
    p = parse("想部署一下glm4-9b-1m模型，目前40G显存跑不起来，需要多少显存才能跑支持max_model_len为1M的大模型？")
    assert p.gpus == ["a100-pcie-40gb"] and p.models == ["glm-4-9b"]
    assert p.context_len == 1024 * 1024  # "1M" is a length; the "-1m" of the name is no 0.001B model
    assert parse("48GB显存load internlm-chat-20b-pytorch-20b 失败").gpus and parse("48GB显存 跑 Qwen2.5-7B").gpus


def test_memory_that_is_needed_or_used_is_not_the_card():
    assert parse("跑 Qwen2.5-7B 要 16G 显存吗").gpus == []
    assert parse("推理用了 20G 显存，正常吗 qwen2.5-7b").gpus == []
    p = parse("我15G显存跑 Qwen2.5-7B 不行")  # no card has 15 GB: memory in use, not a card to ask about
    assert p.gpus == [] and p.unknown_gpus == []


def test_the_vendor_the_words_name_picks_the_card_of_that_memory():
    assert parse("2 台 Atlas 800 A3 服务器，每个 chip 64 GB 显存，部署 GLM-4.5").gpus == ["ascend-910b"]


def test_a_size_repeated_inside_a_build_name_is_the_same_model():
    assert parse("48GB显存load internlm-chat-20b-pytorch-20b 失败").models == ["internlm-20b"]
    assert parse("Qwen2.5-7B vs 14B 哪个好").models == ["qwen2.5-7b", "14B"]


def test_a_context_the_card_cannot_hold_leads_with_the_pool_arithmetic_and_the_length_that_starts(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-glm4-149"))
    lead = t.answer.split("\n\n")[0]
    assert "max_model_len 1,048,576 > 池子能放的" in lead  # the cause, from the setup's own arithmetic
    assert "--max-model-len=" in t.answer and "NVIDIA A100 PCIe 40GB" in t.answer
    assert "0.001B" not in t.answer


def test_a_distilled_name_the_catalog_lacks_is_the_distilled_model_and_a_desktop_host_is_read_as_one(advisor, caplog):
    p = parse(row("gh-ktransformers-210"))
    assert p.models == ["deepseek-r1-distill-qwen-32b"] and p.gpus == ["rtx-3060-12gb"]
    assert parse("qwen-32B 要几张卡").models != ["deepseek-r1-distill-qwen-32b"]  # no distil word, no distilled model
    (t,) = ask(advisor, caplog, row("gh-ktransformers-210"))
    assert "89.6 GB/s" in t.answer and "Q4_K_M" in t.answer  # 64 GB of RAM: a desktop's two channels


def test_a_count_glued_before_a_card_is_that_many_cards():
    for text, gpu, n in (("8A100 训练 7B 要多久", "a100-sxm4-80gb", 8), ("用2H100跑 Qwen2.5-72B 推理够吗", "h100-sxm5-80gb", 2),
                         ("4L40 能跑 72B 吗", "l40", 4)):  # fmt: skip
        p = parse(text)
        assert (p.gpus, p.n_gpus) == ([gpu], n), text
    assert parse("训练跑了1h20min，正常吗").gpus == []  # an hour and twenty minutes, not an H20
