"""Requests served one after another (issue 24, the serving-behaviour class): slow answers under a concurrent
load on a server that does not batch (a demo api.py, an app's queue, generate() per request) are diagnosed as
such, with a continuous-batching server as the fix; on a batching engine the same words are only a thing to
check (it batches when it is served as a server). Texts are development rows of the real corpus."""

from bot.offline.understand.paste import read_paste
from tests.support.asking import ask, row
from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def test_words_of_a_queue_under_load_are_read_as_requests_served_one_at_a_time():
    said = "用 ChatGLM2-6B 自带的 api.py 部署，10 线程并发压测，推理速度比较慢"  # 并发 + 慢 on a demo script
    assert read_paste(said).evidence["symptom"] == "serial"
    assert read_paste(row("gh-h2ogpt-898")).evidence["symptom"] == "serial"  # "one user's request gets queued"
    assert (
        read_paste("The second user receives a response in 15 seconds, the first in 8.").evidence["symptom"] == "serial"
    )
    # a load with no trouble is a sizing question; a forecast is no trouble
    assert read_paste("并发 100 跑 Qwen2.5-7B 要几张卡").evidence.get("symptom") != "serial"
    assert read_paste("10 个并发会不会很慢").evidence.get("symptom") != "serial"


def test_the_cause_leads_on_a_non_batching_server_and_is_only_checked_on_an_engine():
    plain = diagnose(DiagnoseInput(model="chatglm-6b", gpu="A100", workload="infer", symptom="serial"))
    assert plain.causes[0].cause == "requests_not_batched" and plain.causes[0].leads
    engine = diagnose(DiagnoseInput(model="qwen2.5-7b", gpu="A10", framework="vllm", symptom="serial"))
    ours = next(c for c in engine.causes if c.cause == "requests_not_batched")
    assert not ours.leads and ours.fix.value == "engine_server"


def test_the_answer_names_the_queue_and_the_server_that_batches(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-h2ogpt-898"))
    lead = t.answer.split("\n\n")
    assert any("requests served one after another" in p for p in lead[:3])
    assert "continuous-batching server" in t.answer and "vllm serve" in t.answer
    (t,) = ask(
        advisor, caplog, "用 ChatGLM2-6B 自带的 api.py 部署在 A100 上，10 线程并发压测，推理速度比较慢，为什么？"
    )
    assert "请求一个接一个地处理" in t.answer and "连续批处理的推理服务" in t.answer


def test_memory_seen_in_use_on_a_reserving_engine_is_its_reservation(advisor, caplog):
    # dev gh-llamafactory-4870: "每张都会各占20g" under vLLM is the engine's up-front share, not the model's need
    p = read_paste(row("gh-llamafactory-4870"))
    assert p.framework == "vllm" and p.evidence["symptom"] == "engine_memory"
    (t,) = ask(advisor, caplog, row("gh-llamafactory-4870"))
    lead = t.answer.split("\n\n")[0]  # the cause first: Qwen2-7B-Instruct is the catalog's Qwen2-7B, no note
    assert lead.startswith("**原因") and "Qwen2-7B" in t.answer and "不在目录里" not in t.answer
    assert "0.9 × 23.99 GiB = 21.59 GiB" in lead and "多出来的显存变成 KV 池" in lead
    assert "并发也就少了" in t.answer  # what lowering the share costs, not what raising it does
    assert read_paste("vllm 部署 Qwen2.5-7B，占用了 20G 显存，报错 CUDA out of memory").evidence["error_kind"] == "oom"
