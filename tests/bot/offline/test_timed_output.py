"""A speed the user timed without saying it (issue 23: the asker's own figures used; issue 24: a measured speed is
the evidence): an output cap and how long the reply took give tokens per second, an upper bound the answer names,
set against the estimate for the setup. Device lists (NPU_VISIBLE_DEVICES=4,5,6,7) are which devices, not figures."""

from __future__ import annotations

import re

import pytest

from bot.offline.understand.paste import read_paste
from bot.offline.understand.request.reader import read

_ASCEND = (
    "vllm-ascend 部署成功后，使用4张910B。\n"
    "NPU_VISIBLE_DEVICES=4,5,6,7 vllm serve --tensor-parallel-size 4 deepseek-ai/DeepSeek-R1-Distill-Qwen-32B\n"
    'curl http://localhost:8000/v1/completions -d \'{"prompt": "描述一下北京的秋天", "max_tokens": 512}\'\n'
    "将近3分钟才返回结果。"
)


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        (_ASCEND, 2.84),
        ("generating 200 tokens takes 40 seconds with llama.cpp on my 3090", 5.0),
        ("max_new_tokens=1024，耗时 64 秒，Qwen2.5-7B 在 4090 上", 16.0),
    ],
)
def test_an_output_and_the_time_it_took_give_a_measured_speed(text, rate):
    ev = read_paste(text).evidence
    assert ev["measured_tokens_per_s"] == pytest.approx(rate, rel=0.01)


def test_no_time_no_speed():
    assert "measured_tokens_per_s" not in read_paste('{"max_tokens": 512} 返回很慢').evidence


def test_the_answer_says_the_rate_it_worked_out_and_calls_it_slow(advisor):
    t = advisor.ask(_ASCEND)
    head = t.answer.split("\n\n")[0]
    assert "约 2.84 token/s" in head and "上限" in head and "3分钟" in head
    assert "59.7" in t.answer  # the estimate it is set against
    assert "4,5,6,7" not in t.answer  # the device list is not a figure left unexplained


def test_a_device_list_is_not_a_figure():
    r = read("CUDA_VISIBLE_DEVICES=4,5,6,7 vllm serve Qwen/Qwen2.5-32B --tensor-parallel-size 4 太慢")
    assert not [m for m in r.mentions if m.text == "4,5,6,7"]


def test_what_came_back_counts_before_the_cap(advisor):
    """ "max_new_tokens=512 … 模型返回大约有60个汉字。推理用了两分钟多": 60 characters in 120 s, not 512 tokens."""
    text = (
        "model.generate(model_inputs.input_ids, max_new_tokens=512)\n"
        "上面的代码中prompt有300个汉字，模型返回大约有60个汉字。推理用了两分钟多。Qwen2-57B-A14B-Instruct-GPTQ-Int4 很慢"
    )
    assert read_paste(text).evidence["measured_tokens_per_s"] == pytest.approx(0.5)
    t = advisor.ask(text)
    assert "约 0.5 token/s" in t.answer and "1 个汉字约 1 个 token" in t.answer
    assert "日志直接指明" not in t.answer  # the user measured it; no log said it


@pytest.mark.parametrize(
    "command",
    [
        "./main -m ./models/7B/ggml-model-q4_0.bin -n 128",
        "CUDA_VISIBLE_DEVICES=7 ./build/bin/main -m ./models/llama-7b/q4.gguf -n 128",
    ],
)
def test_a_llama_cpp_command_without_ngl_leads_with_the_layers_on_the_cpu(advisor, command):
    """No -ngl: every layer on the CPU, the usual reason a CUDA build of llama.cpp is slow; the fix is typed as
    llama.cpp reads it (a space, not '=')."""
    t = advisor.ask(f"My 3090 with llama.cpp is much slower than pytorch, only 11 tokens/s:\n{command}\nwhy?")
    head = t.answer.split("---")[0]
    assert "no -ngl" in head and "`-ngl 99`" in head


def test_a_command_that_offloads_is_not_told_to():
    assert "gpu_layers_unset" not in read_paste("./main -m ./models/7B/ggml-model-q4_0.bin -n 128 -ngl 35").setup
    assert read_paste("python /srv/main.py --model x").framework != "llama.cpp"


def test_an_engine_estimate_says_the_length_it_was_made_at(advisor):
    """The diagnosis's serving estimate is at the engine's max_model_len (the model's full length when none is set),
    the estimate below it at the question's context: the opening says which, so the two figures never contradict."""
    t = advisor.ask(
        "7b-awq模型在A10上使用VLLM镜像部署，显存总是oom。\n请问我部署qwen2VL-7b-awq模型，使用VLLM镜像，总是会报超过显存的问题。\n"
        "我使用的是A10的24Gb的卡。"
    )
    head = t.answer.split("---")[0]
    m = re.search(r"按引擎的 max_model_len ([\d,]+)（未设置，取模型的最大长度）", head)
    assert m, head
    assert int(m.group(1).replace(",", "")) > 4096  # the model's full length, not the 4,096 of the estimate below


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("Pygmalion-13b-4bit: my token generation at around 0.7s/token, which feels extremely slow", 1.429),
        ("When I load the 33B model it's too slow to generate a token. And per token is about 2.9s", 0.345),
        ("推理速度这么慢？8*V100 32G，一个step就需要10s+，max_new_token=512", 0.1),
    ],
)
def test_a_time_per_token_is_the_decode_speed(text, rate):
    assert read_paste(text).evidence["measured_tokens_per_s"] == rate


def test_a_training_step_time_is_no_decode_speed():
    assert "measured_tokens_per_s" not in read_paste("训练时一个step需要10s，8卡 A100 微调 Qwen2.5-7B").evidence


def test_text_generation_webui_layers_and_width_are_read():
    # oobabooga/textgen issue 2216: 26 layers on the GPU, GPTQ 4-bit weights
    setup = read_paste("python server.py --chat --auto-devices --pre_layer 26 --groupsize 128 --wbits 4").setup
    assert setup.get("layers_on_gpu") == 26 and setup.get("precision") == "int4"


def test_a_slow_run_asked_in_the_vllm_ascend_repository_is_vllm_on_ascend(advisor):
    # vllm-ascend issue 770: 8 x 910B3, Qwen3-30B-A3B at 6 token/s; the place, not the words, names the engine
    t = advisor.ask("[Usage]: v0.8.4rc2 推理速度太慢\n8卡 910B3 推理 Qwen3-30B-A3B模型\n平均 6 token/s 不应该这么慢啊",
                    source="vllm-project/vllm-ascend")  # fmt: skip
    head = t.answer.split("---")[0]
    assert "vllm-ascend" in head and "图模式" in head and "0.9.1" in head
    assert "vllm-project/vllm-ascend/issues/171" in head


def test_the_vllm_ascend_release_is_read():
    assert read_paste("export IMAGE=quay.io/ascend/vllm-ascend:v0.18.0\n").flags["vllm_ascend_version"] == "0.18.0"
    assert read_paste("pip install vllm-ascend==0.7.3 后推理很慢").flags["vllm_ascend_version"] == "0.7.3"


def test_two_cards_with_a_speed_each_diagnose_the_slow_one(advisor):
    # vllm-ascend issue 111: the 3090's 300 token/s is the reference, the 910B's 20-30 the complaint
    t = advisor.ask("Inference speed is slow\n在测试 Qwen/Qwen2.5-0.5B-Instruct 时发现，3090能达到 300 token/s，"
                    "910B 单卡维持在20 ～ 30 token/s，似乎慢了不少", source="vllm-project/vllm-ascend")  # fmt: skip
    head = t.answer.split("---")[0]
    assert "30 token/s" in head and "300 token/s" not in head
    assert "Ascend 910B" in head and "vllm-ascend" in head
    diagnose = next(c for c in t.tool_calls if c.tool == "diagnose")
    assert diagnose.input["gpu"] == "ascend-910b" and diagnose.input["measured_tokens_per_s"] == 30
