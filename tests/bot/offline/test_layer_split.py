"""A model split by layers over several GPUs in one process (device_map='auto', load_model_on_gpus) whose memory
climbs on one card until it runs out while the others keep room (issue 24): the split sized nothing for what grows
with the input, so the cause leads with the logits and KV per 1,000 tokens, and the fix is what the arithmetic
allows: one process per GPU, a max_memory cap per card, or an engine's tensor parallel. Texts are development rows
of the real corpus."""

from bot.offline.understand.paste import read_paste
from tests.support.asking import ask, row
from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def test_one_card_climbing_while_the_others_stay_is_read_with_the_cards_it_names():
    ev = read_paste(row("gh-llamafactory-1766")).evidence  # "0卡的显存突然飙升，其他卡不动"
    assert ev["symptom"] == "uneven_growth"
    ev = read_paste(row("gh-qwen-927")).evidence  # "0卡 … 2g多，1卡 … 继续往上加爆掉了"
    assert ev["symptom"] == "uneven_growth" and ev["cards_indexed"] == 2
    assert read_paste(row("gh-chatglm6b-1081")).evidence["layer_split"]  # load_model_on_gpus is a layer split
    # one card's memory growing with no other card said is no split; "8卡" is a count, not card 8
    assert read_paste("训练时一张卡显存一直在涨，最后 OOM").evidence.get("symptom") != "uneven_growth"
    assert "cards_indexed" not in read_paste("8卡A800，其中一张卡显存一直在涨，其他卡不动").evidence


def test_the_fix_is_what_the_arithmetic_allows():
    def fix(model, gpu, n):
        out = diagnose(DiagnoseInput(model=model, gpu=gpu, n_gpus=n, workload="infer", symptom="uneven_growth"))
        first = out.causes[0]
        assert first.cause == "layer_split_headroom" and first.leads
        return first.fix

    assert fix("qwen2.5-7b", "A100 80GB", 2).flag == "replicas"  # 14 GiB: whole on each card
    capped = fix("qwen2.5-72b", "A800", 8)  # 135 GiB over 8: 19 GiB each, 61 GiB of room per card
    assert capped.flag == "max_memory" and capped.value.count("'19GiB'") == 8
    assert fix("llama-3.1-70b", "A100 80GB", 2).flag == "vllm serve --tensor-parallel-size"  # no room at even shares


def test_an_engine_or_a_training_run_is_not_a_layer_split():
    engine = diagnose(DiagnoseInput(model="qwen2.5-7b", gpu="A10", framework="vllm", n_gpus=2, symptom="uneven_growth"))
    assert all(c.cause != "layer_split_headroom" for c in engine.causes)
    train = diagnose(DiagnoseInput(model="qwen2.5-7b", gpu="A10", n_gpus=2, workload="train", error_kind="oom",
                                   layer_split=True))  # fmt: skip
    assert all(c.cause != "layer_split_headroom" for c in train.causes)


def test_the_answer_leads_with_the_split_and_its_figures(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-llamafactory-1766"))
    head = t.answer.split("---")[0]
    assert "模型按层切到 8 张卡" in head and "0.57 GiB" in head  # 152,064 × 4 B per 1,000 prompt tokens
    assert "max_memory" in head and "vllm" in head.lower()
    assert "超过了每张卡" not in head  # it loaded: the weights are not why
    (t,) = ask(advisor, caplog, row("gh-chatglm6b-1081"))
    head = t.answer.split("---")[0]
    assert (
        head.startswith("**原因：模型按层切到 2 张卡")
        and "每卡起一个进程" in head
        and "replicas=one process per GPU" in head
    )


def test_a_pasted_path_names_the_catalog_model_and_a_generic_one_is_said(advisor, caplog):
    from bot.offline.understand.paste.setup import model_id

    assert model_id("/home/ma-user/pyc/code/ChatGLM3-main/chatglm3-6b") == "chatglm3-6b"  # the path's last part
    assert model_id("facebook/opt-33b") == "generic-33b"  # the catalog lacks it: a generic model of its size
    (t,) = ask(advisor, caplog, row("gh-accelerate-608"))
    assert t.answer.startswith("'opt-33b' from your command or config is not in the catalog")
