"""The job a question is about comes from its verbs and what it pastes, not from the model's name (issue 23, class
wrong_workload): computing vectors with an embedding model, encoding documents, a pasted embeddings API request
and a model "运行" under DeepSpeed are inference, and a pasted OOM beside them is diagnosed as a serving run, not
as training. The questions are from the dev rows gh-flagembedding-807 and gh-lmdeploy-519 and the fresh rows
gh-xinference-2220 and gh-qwen3-embedding-148 (tests/corpus/real/fresh_s11_model11.yaml); the other phrasings
are ours."""

from __future__ import annotations

import pytest

from bot.offline.understand.dialogue import slots_of
from bot.offline.understand.parse import parse
from bot.offline.understand.paste import read_paste
from bot.offline.understand.paste.setup import diagnose_args
from bot.offline.understand.request.reader import read

_OOM = (
    "CUDA out of memory. Tried to allocate 128.00 GiB (GPU 0; 31.75 GiB total capacity; 9.33 GiB already "
    "allocated; 11.31 GiB free; 9.34 GiB reserved in total by PyTorch)"
)


@pytest.mark.parametrize(
    "text",
    [
        "使用bge-m3计算向量时爆显存",
        "bge-m3 向量化 10 万篇文档需要多少显存",
        "多文本嵌入时显存溢出，模型是 bge-m3",
        "encoding the documents with bge-m3 on an A10 runs out of memory",
        "How much VRAM to compute embeddings with BGE-M3 for 1M passages?",
        '入参{"model":"bge-m3","input":[str1,str2]} 字符串太长就显存溢出',
    ],
)
def test_embedding_verbs_are_inference(text):
    assert slots_of(parse(text)).get("workload") == "infer"


@pytest.mark.parametrize(
    "text", ["用 LoRA 微调 bge-m3 需要多少显存", "fine-tune bge-m3 on my own pairs: how much memory?"]
)
def test_training_an_embedding_model_stays_training(text):
    assert slots_of(parse(text)).get("workload") != "infer"


def test_a_pasted_oom_while_computing_vectors_is_diagnosed_as_inference():
    text = f"使用bge-m3计算向量时爆显存\n错误信息如下所示：\n\n{_OOM}\n\n请问bge-m3的极限token需要多大的GPU显存"
    args, _ = diagnose_args(read_paste(text), read(text))
    assert args["model"] == "bge-m3"
    assert args["workload"] == "infer"


def test_a_model_run_under_deepspeed_is_the_run_the_words_say():
    text = "[Bug] deepspeed 2张V100 32G运行internlm-chat-20B 也会oom吗"
    args, _ = diagnose_args(read_paste(text), read(text))
    assert (args["framework"], args["workload"], args["n_gpus"]) == ("deepspeed", "infer", 2)
    trained = "deepspeed zero3 2张V100 32G 全参微调 internlm-chat-20B 也会oom吗"
    assert diagnose_args(read_paste(trained), read(trained))[0].get("workload") != "infer"


def test_other_models_left_untested_are_no_other_process():
    # gh-xinference-2220: "其他模型未测出" (other models not tried) names no process holding the card's memory
    text = '嵌入模型，input过长造成显存溢出\n1.使用bge-m3模型，其他模型未测出\n2. 入参{"model":"bge-m3","input":[str1,str2]}'
    assert read_paste(text).evidence.get("symptom") != "other_process"
    held = "每张卡上跑了其他模型，每张卡剩余显存都还剩10G左右，对于1B的模型肯定能起来的"  # fresh_dec7: they do hold it
    assert read_paste(held).evidence.get("symptom") == "other_process"
