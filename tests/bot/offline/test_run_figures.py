"""Issue 23, classes 1-3: the figures of a fine-tuning run as people write them (a dataset as samples × tokens ×
epochs, "batch 4", "8*80G") are the run that is sized and timed, and a question that asks "will it fit and how
long" gets its fit first. Phrasings written here, in the shape met on the real corpus's development rows."""

import pytest
from asking import ask, calls

from bot.offline.understand.request.reader import read


@pytest.mark.parametrize(
    "q, tokens",
    [
        ("How long to fine-tune Qwen2.5-7B on 8 A100 with 50k samples of ~1k tokens, 3 epochs?", 50_000 * 1024 * 3),
        ("50,000 samples, average 1,000 tokens each, 3 epochs: Qwen2.5-7B LoRA on 4 H100, how long?", 150_000_000),
        ("Llama 3 8B full fine-tune on 8 H800, dataset of 20k examples × 2048 tokens, 2 epochs. How long?", 81_920_000),
        ("10,000 conversations with about 800 tokens per conversation, how long to train Qwen2.5-7B on 2 A100?", 8e6),
        ("Qwen2.5-7B 全参微调，8张A100，5万条数据，每条约1k token，训3轮要多久", 50_000 * 1024 * 3),
    ],
)
def test_a_dataset_given_as_samples_is_the_run_timed(advisor, caplog, q, tokens):
    (t,) = ask(advisor, caplog, q)
    (run,) = calls(t, "training_time")
    assert run.input["tokens"] == pytest.approx(tokens)
    assert "Assuming 1B tokens" not in t.answer and "按1B token估算" not in t.answer  # no default in their place


def test_a_sample_count_in_thousands_is_no_sequence_length():
    roles = {m.text: m.role for m in read("fine-tune on 50k samples of 1k tokens with Qwen2.5-7B").mentions}
    assert "seq_len" not in roles.values() and roles.get("50k samples") == "tokens"


@pytest.mark.parametrize(
    "q",
    [
        "Fine-tune Llama 3.1 8B with LoRA on 2x RTX 4090, seq len 4096, batch 4. Will it fit?",
        "Qwen2.5-7B LoRA 微调，2张4090，序列长度4096，batch size 4，放得下吗？",
    ],
)
def test_batch_in_a_fine_tuning_question_is_the_batch_per_gpu(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    fit = calls(t, "fit_training")[0]
    assert fit.input["micro_batch"] == 4
    # it does not fit at 4 per GPU; the first remedy keeps the batch with accumulation, on the user's own cards
    assert not fit.output["fits"]
    first = fit.output["suggestions"][0]
    assert first["change"] == "micro_batch" and first["n_gpus"] == 2
    assert "gradient_accumulation_steps=" in t.answer
    assert "16 GPUs (NVIDIA GeForce RTX 4090) take 2 servers" not in t.answer  # no servers to buy for it


def test_a_global_batch_is_not_read_as_the_batch_per_gpu():
    roles = {m.text: m.role for m in read("Full fine-tune Qwen2.5-7B on 8 A100, global batch 512, seq 4096").mentions}
    assert "micro_batch" not in roles.values()


@pytest.mark.parametrize(
    "q, first_tool, lead",
    [
        (
            "Fine-tune Llama 3.1 8B with LoRA on 2x RTX 4090. Will it fit and how long for 50k samples of 1k tokens?",
            "fit_training",
            "fit",
        ),
        ("Qwen2.5-7B 全参 8张A100，1B token 多久能训完？显存够吗？", "training_time", "约"),
        ("Qwen2.5-7B 全参 8张A100 放得下吗？训 1B token 要多久？", "fit_training", "放得下"),
    ],
)
def test_the_answer_leads_with_the_first_thing_asked(advisor, caplog, q, first_tool, lead):
    (t,) = ask(advisor, caplog, q)
    tools = [c.tool for c in t.tool_calls if c.tool in ("fit_training", "training_time")]
    assert tools[0] == first_tool and {"fit_training", "training_time"} <= set(tools)
    headline = next(line for line in t.answer.splitlines() if line.startswith("**"))
    assert lead in headline


def test_a_card_given_only_as_80g_is_the_usual_80_gb_card():
    r = read("DeepSeek-V2 SFT 需要多少资源？8*80G够用吗")
    assert r.parsed.gpus and r.parsed.gpus[0] == "a100-sxm4-80gb"


@pytest.mark.parametrize(
    "q, seq",
    [
        (
            "我们有 2 台 8 卡 4090，全参微调 Qwen2.5-14B，数据 20 万条，平均 800 token，3 个 epoch，能跑吗？要几天？",
            1024,
        ),
        ("Fine-tune Qwen2.5-7B with LoRA on one A100: 30k samples of 1.5k tokens, 2 epochs. Fits? How long?", 2048),
    ],
)
def test_the_sequence_holds_the_samples_the_user_described(advisor, caplog, q, seq):
    (t,) = ask(advisor, caplog, q)
    sized = {c.input.get("seq_len") for c in t.tool_calls if c.tool in ("fit_training", "training_time")}
    assert sized == {seq}  # the fit and the time are of the same run
    assert f"{seq:,}" in t.answer.split("\n")[0]


def test_a_sequence_length_the_user_gives_wins_over_the_samples():
    r = read("Qwen2.5-7B LoRA, cutoff_len 4096, 50k samples of about 800 tokens, 3 epochs, how long on 2 A100?")
    assert r.parsed.seq_len == 4096


@pytest.mark.parametrize(
    "q",
    [
        "客户想用 Qwen2.5-72B 做客服，高峰并发 50，用 H20 要几台？一年电费多少？",
        "We serve Llama-3.1-70B to 100 concurrent users on H100: how many servers, and what is the yearly electricity bill?",
    ],
)
def test_the_electricity_bill_asked_beside_a_plan_is_of_the_machines_planned(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    plan = calls(t, "plan_system")
    (power,) = calls(t, "power_draw")
    chosen = [o for o in plan[-1].output["options"] if o["meets"] and o["total_low_cny"] is not None]
    assert power.input["n_gpus"] in {o["n_gpus"] for o in chosen}
    assert ("元/年" in t.answer) or ("CNY a year" in t.answer)


@pytest.mark.parametrize(
    "q, tool, key",
    [
        ("Is it cheaper to rent 8 H100 at 2.5 USD/hour or buy a server? We'd use it 10 hours a day for 2 years.",
         "rent_vs_buy", "rent_usd_per_hour"),
        ("Full fine-tune of Qwen2.5-7B on 8 H100 for 2B tokens, rented at $2.2 per GPU-hour: how long and how much?",
         "run_cost", "price_usd_per_hour"),
    ],
)  # fmt: skip
def test_a_dollar_price_the_user_gives_is_their_price(advisor, caplog, q, tool, key):
    (t,) = ask(advisor, caplog, q)
    (c,) = calls(t, tool)
    assert c.input[key] in (2.5, 2.2)
    assert "USD per GPU-hour is taken as" in t.answer and "not needed" not in t.answer


def test_a_card_priced_as_its_silicon_twin_is_said(advisor, caplog):
    (t,) = ask(advisor, caplog, "我们有 16 张 A800，每天只用 6 小时，用三年，租还是买划算？")
    (c,) = calls(t, "rent_vs_buy")
    assert c.output["cheaper"] in ("rent", "buy")
    assert "按同一芯片的 NVIDIA A100 SXM4 80GB 的报价计" in t.answer


@pytest.mark.parametrize("q", ["Qwen2.5-14B on a single RTX 4090, speed?", "Llama-3-8B on a single A100: tokens/s?"])
def test_a_single_card_is_a_count_of_one(q):
    assert read(q).parsed.n_gpus == 1


@pytest.mark.parametrize(
    "q, said",
    [
        ("用 4 张 L20 跑 Qwen2.5-72B-Instruct-AWQ，32k 上下文，能支持多少并发？首字延迟多少？", "首 token"),
        ("How many concurrent users can 2 A100 80GB serve with Llama-3.1-70B AWQ at 8k context, and the TTFT?",
         "First token"),
    ],
)  # fmt: skip
def test_a_first_token_wait_asked_beside_a_capacity_is_given(advisor, caplog, q, said):
    (t,) = ask(advisor, caplog, q)
    speeds = calls(t, "inference_speed")
    assert speeds and said in t.answer
    assert f"{speeds[0].output['ttft_s']:,.2f}" in t.answer


@pytest.mark.parametrize(
    "q, n",
    [
        ("we have 4 nodes that each have 8 A40, can we full fine-tune Llama-3-70B?", 32),
        ("3 台服务器，每台 8 张 A800，训 Qwen2.5-72B 要多久", 24),
        ("2 servers, each with 8 GPUs (H100): how long for Llama-3-70B on 1B tokens?", 16),
    ],
)
def test_nodes_then_what_each_holds_is_the_product(q, n):
    assert read(q).parsed.n_gpus == n


def test_a_cost_at_the_users_price_is_one_figure_said_as_theirs(advisor, caplog):
    (t,) = ask(advisor, caplog, "A100 租 100 卡时，每卡时 12 元，多少钱")
    assert "您给的 12.00 元/卡时" in t.answer and "user" not in t.answer and "区间" not in t.answer


def test_a_price_said_for_one_card_is_not_carried_to_another(advisor, caplog):
    first, second = ask(
        advisor, caplog, "Rent H100 for 200 GPU-hours at $1.8 per hour, total?", "A800 租 100 卡时多少钱"
    )
    assert calls(first, "run_cost")[0].input["price_usd_per_hour"] == 1.8
    (c,) = calls(second, "run_cost")
    assert "price_usd_per_hour" not in c.input and "price_cny_per_hour" not in c.input


@pytest.mark.parametrize(
    "q, n, said",
    [
        ("买 8 张 H20 多少钱", 8, "只算卡约"),
        ("How much do 16 H100 cost to buy?", 16, "for the cards alone"),
        ("采购 16 张 910B 要多少钱", 16, "整机"),
    ],
)
def test_buying_a_count_of_cards_gets_the_bill_for_that_many(advisor, caplog, q, n, said):
    (t,) = ask(advisor, caplog, q)
    (c,) = calls(t, "plan_cluster")
    assert c.input["n_gpus"] == n and said in t.answer
    cards = next(b for b in c.output["bom"] if b["item"].startswith("GPU cards"))
    assert cards["qty"] == n
    assert "没有算出" not in t.answer and "not computed" not in t.answer


def test_a_count_below_a_full_server_is_never_priced_as_more_cards(advisor, caplog):
    (t,) = ask(advisor, caplog, "采购 4 张 910B 要多少钱")
    assert "买 4 张" not in t.answer  # never the price of the server's 8 cards as the price of 4
    assert "按满配 8 张卡计" in t.answer  # the full server's bill, said to be one


@pytest.mark.parametrize("q", ["0.000001B 的模型要几张卡", "0.000001BQwen2 能跑吗", "a 500000B model on H100?"])
def test_a_size_no_model_has_is_never_a_model(q):
    p = read(q).parsed
    assert not any(m.endswith("B") and m[:-1].replace(".", "").isdigit() for m in p.models), p.models


@pytest.mark.parametrize("q", ["buy 16 H100, how much?", "We want to buy 8 A800, what does that cost?"])
def test_buying_alone_is_priced_not_weighed_against_renting(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    assert not calls(t, "rent_vs_buy") and calls(t, "plan_cluster")
