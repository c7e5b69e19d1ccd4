"""Troubles told in words alone, with no log (issue 24, third batch): a run that fails ("跑不起来", "部署出错"),
one that is slow ("非常慢", "慢一倍", "very slow"), a figure asked "is this normal?" — each makes the question a
diagnosis; a forecast ("会不会很慢"), an A-not-A fit question ("跑得动跑不动") and a plain "why" about cards do
not. Also what a log says in other words: host RAM, vLLM's benchmark summaries, and a speed the user wants
rather than one measured."""

import pytest

from bot.offline.understand.paste import read_paste
from bot.offline.understand.paste.setup import diagnose_args
from bot.offline.understand.request.reader import read


def _diagnose_call(trace):
    return next((c for c in trace.tool_calls if c.tool == "diagnose"), None)


@pytest.mark.parametrize(
    "question",
    [
        "目前 8 卡 A800 上 LoRA 微调 Qwen2.5-72B 跑不起来",
        "Qwen2.5-7B 在 4090 上用 vllm 部署出错，报资源不足",
        "Qwen2.5-7B LoRA 微调在一张 A100 上非常慢，正常吗？",
        "Qwen2.5-7B 在 A10 上的推理速度比 3090 慢一倍",
        "Fine-tuning Llama-3-8B on one RTX 3090 takes 88 hours, is this normal?",
        "very slow inference of Qwen2.5-7B on an A100, 3 tokens/s",
    ],
)
def test_a_trouble_told_in_words_is_diagnosed(advisor, question):
    assert "diagnose" in read(question).asks
    trace = advisor.ask(question)
    call = _diagnose_call(trace)
    assert call is not None, [c.tool for c in trace.tool_calls]
    # a cause it earned leads; otherwise the likely causes are listed below the estimate as things to check
    said = ("**原因：", "**Cause:", "可以检查的地方", "Things to check", "最可能出问题的地方", "most likely to break")
    assert any(w in trace.answer for w in said) and trace.ungrounded == []
    assert "Nothing in this paste" not in trace.answer and "这段粘贴里没有读到" not in trace.answer


@pytest.mark.parametrize(
    "question",
    [
        "4090 跑 Qwen2.5-7B 推理会不会很慢？",
        "Qwen2.5-72B 在 4 张 4090 上跑得动跑不动？",
        "为什么 H100 比 A100 快",
        "Qwen2.5-7B 推理要达到 50 token/s 需要什么卡？",
    ],
)
def test_a_forecast_a_fit_question_or_a_why_about_cards_is_no_diagnosis(advisor, question):
    trace = advisor.ask(question)
    assert _diagnose_call(trace) is None, trace.answer[:200]


def test_told_without_a_log_the_answer_says_no_log_was_pasted(advisor):
    zh = advisor.ask("Qwen2.5-7B 全参微调在 8 张 A100 上部署出错，为什么")
    assert "没有贴出报错或日志" in zh.answer and "读到了配置" not in zh.answer


def test_a_slow_training_run_is_not_given_a_serving_engines_flag(advisor):
    trace = advisor.ask("Qwen2.5-7B LoRA 微调在一张 A100 上非常慢，正常吗？")
    call = _diagnose_call(trace)
    first = call.output["causes"][0]
    assert first["cause"] == "compute_or_config_slow" and first["fix"]["flag"] == "per_device_train_batch_size"
    assert "enforce-eager" not in trace.answer and "您描述的情况：速度慢" in trace.answer


def test_a_speed_asked_is_normal_is_a_slow_run_and_memory_on_an_engine_is_its_reservation():
    assert read_paste("LoRA 训练 7B 一共要 260 分钟，这个时间是正常的吗").evidence["symptom"] == "slow"
    assert read_paste("The output 36 t/s, is this a normal generation rate?").evidence["symptom"] == "slow"
    held = read_paste("用 lmdeploy 部署 20b-int4 要 22gb 左右，是否正常，感觉比预期的大很多")
    assert held.evidence["symptom"] == "engine_memory"
    assert read_paste("每张卡只占用了13G内存。这正常吗？").evidence.get("symptom") is None  # no engine named


def test_host_ram_in_other_words():
    for text in (
        "the RAM is not enough to load the checkpoint",
        "CPU memory is insufficient when merging the adapter",
        "8卡A800，400G内存，应该是内存爆掉了",
        "How to build an engine with limited RAM?",
    ):
        assert read_paste(text).evidence.get("error_kind") == "host_oom", text
    assert read_paste("显存爆掉了").evidence["error_kind"] == "oom"  # the GPU's memory, not the host's


def test_vllm_benchmark_summaries_give_the_output_tokens_per_second():
    serving = "Request throughput (req/s): 3.10\nOutput token throughput (tok/s):  1234.56\nTotal Token throughput (tok/s): 2345.10"
    assert read_paste(serving).evidence["measured_tokens_per_s"] == 1234.56
    offline = "Throughput: 5.13 requests/s, 2000.00 total tokens/s, 1000.50 output tokens/s"
    assert read_paste(offline).evidence["measured_tokens_per_s"] == 1000.5


def test_a_target_speed_is_not_a_measured_one():
    assert "measured_tokens_per_s" not in read_paste("Qwen2.5-7B 推理要达到 5 token/s 需要什么卡").evidence
    assert read_paste("we need at least 30 tok/s but only get 12 tok/s").evidence["measured_tokens_per_s"] == 12


def test_an_oom_with_no_engine_named_is_served_when_the_words_say_serving():
    text = "用 transformers 推理 Qwen2.5-7B，一张 4090，CUDA out of memory"
    args, _ = diagnose_args(read_paste(text), read(text))
    assert args["workload"] == "infer"
    trained = "用 transformers LoRA 微调 Qwen2.5-7B，一张 4090，CUDA out of memory"
    args, _ = diagnose_args(read_paste(trained), read(trained))
    assert args.get("workload", "train") == "train"


def test_other_wordings_of_the_same_evidence():
    assert (
        read_paste("sglang with Qwen2.5-7B OOMs under load when 200 requests come in").evidence["error_kind"] == "oom"
    )
    assert read_paste("it OOMed at step 10").evidence["error_kind"] == "oom"
    assert read_paste("进程直接被系统杀掉了，机器只有 32G 内存").evidence["error_kind"] == "host_oom"
    assert read_paste("RAM usage goes to 100% and then the process dies").evidence["error_kind"] == "host_oom"
    other = read_paste("CUDA out of memory, and nvidia-smi shows another python process using 30GB")
    assert other.evidence["symptom"] == "other_process"
    slower = read_paste("两张 4090 用 tensor-parallel-size 2 跑 Qwen2.5-7B 反而比一张慢")
    assert slower.evidence["symptom"] == "multi_gpu_slower"


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "Segmentation fault (core dumped)",
        "RuntimeError: CUDA error: device-side assert triggered",
    ],
)
def test_a_crash_is_a_version_or_bug_not_a_memory_estimate(advisor, log):
    question = f"vllm serve Qwen2.5-7B on one RTX 4090 fails at startup:\n{log}"
    assert read_paste(question).evidence["error_kind"] == "crash"
    trace = advisor.ask(question)
    call = _diagnose_call(trace)
    assert call.output["causes"][0]["cause"] == "version_or_bug"
    assert "fit_inference" not in [c.tool for c in trace.tool_calls]  # a crash is not a memory question
    assert "a crash (illegal memory access, segfault)" in trace.answer


def test_slower_than_another_setup_is_slow_and_on_several_consumer_cards_the_link_is_suspect(advisor):
    assert read_paste("8 张 4090 训练 Qwen2.5-7B，速度比 2 张 A100 还慢").evidence["symptom"] == "slow"
    assert read_paste("4090 比 A100 更慢吗？").evidence.get("symptom") is None  # a question, not a complaint
    call = _diagnose_call(advisor.ask("8 张 4090 训练 Qwen2.5-7B zero3，速度比 2 张 A100 还慢"))
    assert "p2p_or_interconnect" in [c["cause"] for c in call.output["causes"][:2]]


def test_a_half_precision_kernel_missing_is_a_precision_error():
    text = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half' when running Qwen2.5-7B"
    assert read_paste(text).evidence["error_kind"] == "unsupported_precision"


def test_settings_said_in_a_sentence_are_read_with_their_values():
    assert read_paste("vllm 的 gpu_memory_utilization 设 0.95 后启动 OOM").setup["gpu_memory_utilization"] == 0.95
    assert read_paste("cutoff_len 设成 16384 以后 OOM").setup["seq_len"] == 16384
    assert read_paste("max_model_len set to 32768 and it fails").setup["max_model_len"] == 32768
    assert read_paste("the temperature is set to 0.7").setup == {}  # a key the table does not know is no setting


def test_an_oom_before_anything_runs_is_a_load_time_oom():
    text = "from_pretrained Qwen2.5-72B with device_map auto on 4 A100s, OOM on GPU 0 before anything runs"
    assert read_paste(text).evidence["error_kind"] == "load_oom"
    assert read_paste("Qwen2.5-72B 一加载就爆显存").evidence["error_kind"] == "load_oom"
    assert read_paste("OOM at step 300 of training").evidence["error_kind"] == "oom"
