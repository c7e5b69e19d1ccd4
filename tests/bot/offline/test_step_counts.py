"""A step or epoch count the asker saw, asked about, is explained on their own figures: their arithmetic redone
(global batch = micro-batch × accumulation × GPUs, steps = samples × epochs ÷ global batch, from `diagnose`'s
`steps`), their own result confirmed when they wrote one, and the gap named as the setting it equals, or the samples
per step their count implies. No model or card is asked for: the count needs neither. A count said beside a
question of time (a rate, "1 steps per minute … is 16 hours normal?") is that question's figure, not this one."""

from __future__ import annotations

from asking import ask, calls, row

from bot.offline.understand.request.counts import run_counts


def test_the_askers_own_reckoning_is_confirmed_and_the_gap_is_the_gpu_count(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-r1v-122"))
    (d,) = calls(t, "diagnose")
    assert d.output["steps"]["total_steps"] == 287
    assert "287" in t.answer and "286.82" in t.answer and "2,007" in t.answer
    assert "7" in t.answer and ("训练的卡数" in t.answer or "training GPU count" in t.answer)
    assert not calls(t, "fit_inference")  # no serving fit of the model named in passing


def test_a_count_below_the_samples_is_the_batch_it_implies_and_no_model_is_asked(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-msswift-808"))
    assert "29,450" in t.answer and "1,800" in t.answer and "16.36" in t.answer
    assert "梯度累积" in t.answer
    assert "哪个模型" not in t.answer and "用什么卡" not in t.answer


def test_an_epoch_count_off_by_the_accumulation_is_named(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-kohya-trainer-82"))
    assert "1,200 epochs" in t.answer and "gradient accumulation steps (6)" in t.answer
    assert "B200" not in t.answer  # "be 200" is no card


def test_a_count_that_agrees_is_said_to_agree(advisor, caplog):
    text = "我有 10000 条数据，3 个 epoch，micro batch 4，梯度累积 8，2 张卡，为什么只有 468 步？"
    (t,) = ask(advisor, caplog, text)
    assert "64 条样本" in t.answer and "156 步" in t.answer and "一致" in t.answer


def test_a_rate_of_steps_beside_a_question_of_time_is_not_this_answer():
    assert run_counts(row("gh-flymyai-36")) in (None, {"samples": 50, "stated_steps": 3000.0})
    assert run_counts("50 images, 1 steps per minute, 16 hours: is that normal?") is None


def test_a_gpu_hours_sum_is_redone_on_the_askers_figures(advisor, caplog):
    (t,) = ask(advisor, caplog, "8 卡 A800 跑了 24 小时，算下来是 192 卡时，这样算对吗？")
    assert t.answer.startswith("**算得对：**") and "8 张卡 × 24 小时 = 192 卡时" in t.answer
    (t,) = ask(advisor, caplog, "I ran 16 H100 for 3 days, that is 1000 GPU-hours, is my math right?")
    assert "does not add up" in t.answer and "1,152 GPU-hours" in t.answer
