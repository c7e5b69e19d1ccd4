"""Issue 23, class 3: a question that asks two figures of one training run gets both. "How many GPUs and how long"
gets the days at each count (the run's work is fixed), and "the longest sequence I can train" gets the length the
cards hold. Questions of the kinds met on the real corpus's development rows, and fresh ones from public issues."""

import pytest
from asking import ask, calls

from bot.offline.compose.sizes import longest, tradeoff
from bot.offline.understand.request.reader import read


def _rows(answer: str) -> list[tuple[int, str]]:
    """The (count, GPU-hours) rows of the counts-and-days table."""
    out = []
    for line in answer.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            out.append((int(cells[0]), cells[2]))
    return out


@pytest.mark.parametrize(
    "q",
    [
        "请教一下你们预训练用了1.1T tokens，花了多少GPU和时间",  # gh-minicpm-190's kind
        "How many RTX 4090 GPUs and how long to fine-tune Llama-3-8B on 2B tokens?",
    ],
)
def test_a_count_and_a_time_asked_get_the_days_at_each_count(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    timed = {c.input["n_gpus"]: c.output for c in calls(t, "training_time") if c.input["model"] == _model(t)}
    rows = _rows(t.answer)
    assert len(rows) >= 2
    counts = [n for n, _ in rows]
    assert counts == [counts[0] * 2**i for i in range(len(counts))]  # doubling from the first
    for n, gpu_hours in rows:
        assert gpu_hours == f"{timed[n]['gpu_hours']:,.0f}"  # every figure is training_time's, at that count
    assert timed[counts[-1]]["hours"] < timed[counts[0]]["hours"] / 8  # more cards, fewer days


def _model(t) -> str:
    return calls(t, "training_time")[0].input["model"]


def test_one_figure_asked_gets_no_table(advisor, caplog):
    (t,) = ask(advisor, caplog, "在 8 张 A100 上全参训练 Qwen2.5-7B，10B token 要多久？")
    assert calls(t, "training_time") and not _rows(t.answer)


def test_how_many_cards_with_the_card_named_between_is_a_count():
    assert "min_count" in read("How many RTX 4090 GPUs do I need to fine-tune Llama-3-8B?").asks
    assert "min_count" not in read("How many RTX 4090 GPU-hours did it take?").cued


def test_the_counts_double_and_stay_in_range():
    assert tradeoff.counts(8) == [8, 16, 32, 64, 128]
    assert max(tradeoff.counts(8192)) <= tradeoff.MOST


@pytest.mark.parametrize(
    "q",
    [
        "DeepSeek-V3 Lora微调所需卡数和最大训练长度",  # gh-ms-swift-3043's kind
        "Qwen2.5-7B LoRA 微调，单张 A100 80G 最大训练长度能到多少？",
        "What is the maximum sequence length I can train Llama-3-8B with LoRA on one RTX 4090?",
    ],
)
def test_the_longest_sequence_asked_is_the_longest_that_fits(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    fits = [c for c in calls(t, "fit_training") if c.input.get("seq_len")]
    said = fits[-1]  # the length said is one call of its own, after the probes
    assert said.output["fits"] and f"{said.input['seq_len']:,}" in t.answer
    longer = [c for c in fits if c.input["seq_len"] > said.input["seq_len"] and c.input["model"] == said.input["model"]]
    assert longer and not any(c.output["fits"] for c in longer)  # one step longer does not fit
    assert any(c.input["seq_len"] == said.input["seq_len"] + longest.STEP for c in longer)


def test_a_length_given_is_not_a_length_asked():
    assert not longest.asked("LLaMA3-8B-Instruct+lora微调，单张A800（80GB显存）能否8192长度的token微调")
    assert longest.asked("max_length 最多能设多少？")


def test_a_knowledge_part_asked_in_a_models_repository_gets_its_note(advisor):
    # gh-chatglm-finetune-lora-33's kind: the repository's "ChatGLM" is computed as ChatGLM-6B, and the question
    # asked in words (why ZeRO-2 first, does ZeRO-3 cost accuracy) still gets the note's answer
    t = advisor.ask(
        "请问为什么推荐先用 ZeRO-2，是因为 ZeRO-3 牺牲了参数的计算精度吗？这会导致模型的训练效果变差吗？",
        source="lich99/ChatGLM-finetune-LoRA",
    )
    assert any(c.tool == "search_knowledge" for c in t.tool_calls)
    assert "等价" in t.answer and "ZeRO-2" in t.answer


@pytest.mark.parametrize(
    "q, belief",
    [
        (
            "I read that qlora must load all model parameters on a single GPU. Is this the right understanding?",
            "qlora must load all model parameters on a single GPU",
        ),
        ("It doesn't make sense to fine-tune a model that has been quantized to int4, right?", "quantized to int4"),
        ("QLoRA 只能把整个模型放在一张卡上，对吗？", "QLoRA 只能把整个模型放在一张卡上"),
        (  # a constraint believed, asked as a question (InternLM/xtuner#497's kind)
            "So if I QLoRA finetune a 72B model, I must use a single GPU with larger memory? Can I stack 8 GPUs?",
            "I must use a single GPU with larger memory",
        ),
    ],
)
def test_a_belief_asked_to_be_checked_is_a_part(q, belief):
    from bot.offline.understand.request.asks import belief_clauses, worded_clauses

    (found,) = belief_clauses(q)
    assert belief in found and found in worded_clauses(q)


def test_a_belief_about_qlora_is_answered_by_its_note(advisor, caplog):
    # gh-qwen3-780's kind: the two beliefs checked beside the fit each get the note's sentence, cited
    (t,) = ask(
        advisor,
        caplog,
        "Can Qwen2.5-72B be fine-tuned with QLoRA on 8 RTX 3090? I read that qlora must load all model parameters "
        "on a single GPU, so 24G is not possible. Is this the right understanding?\n"
        "Another question: it doesn't make sense to fine-tune a model that has been quantized to int4, right?",
    )
    assert "does not have to load all the model's parameters on a single GPU" in t.answer
    assert "PEFT trains LoRA adapters on top" in t.answer
    assert any(c.doc_id == "qlora-multi-gpu-en" for c in t.citations)


def test_a_constraint_the_user_states_is_no_belief_to_check():
    from bot.offline.understand.request.asks import belief_clauses

    assert belief_clauses("目前我只有一张24G的4090，只能用QLoRA微调，请问微调后能跑得动吗？") == []


def test_whether_a_change_keeps_the_accuracy_is_a_knowledge_part():
    from bot.offline.understand.request.asks import knowledge_clauses

    assert knowledge_clauses("Should I increase the batch size 8x? Does this guarantee similar accuracy?")
    assert knowledge_clauses("8 卡 DDP 把 batch 调大 8 倍，精度会一样吗？")


def test_ddp_batch_and_accuracy_asked_get_the_note(advisor):
    # forum-pytorch-113545's kind: the batch is per GPU, compare epoch time, and how to keep the accuracy
    t = advisor.ask(
        "DDP on 8 GPUs is 2x slower than single GPU for my small model. I used the same batch size. "
        "Should I increase batch size for 8 GPUs DDP 8x times? Does this guarantee similar accuracy?"
    )
    assert any(c.doc_id == "ddp-batch-size-en" for c in t.citations)
    assert "epoch" in t.answer and "global batch" in t.answer
