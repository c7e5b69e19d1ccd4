"""The LLM path end to end: the real ChatOpenAI and LangChain agent against a scripted
OpenAI-compatible endpoint (`httpx.MockTransport`), through `bot.answer.advisor.Advisor` with a SQLite store.

The scripted model's final answers are written from the tool results it was sent, so a test
fails if the calculators' outputs do not reach the model, and grounding checks the figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import PASSAGE, advisor, results, settings
from scripted_openai import ScriptedOpenAI, last_user, raises, raw, status, text, tool_calls, tool_results

import tools
from bot.answer.llm_turn import FALLBACK_NOTE, FALLBACK_NOTES
from bot.core.planner import Context, PlannerError
from bot.llm.agent import AgentPlanner
from bot.llm.prompts import PromptError, render
from bot.llm.tools import WHEN

FIT = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "method": "full"}
COST = {"gpu": "A100 80GB", "gpu_hours": 100}
QUESTION = "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？跑 100 卡时租卡要多少钱？"


def fit_and_cost_answer(body: dict[str, Any]):
    fit, cost = results(body)
    return text(
        f"放得下：每卡约需 {fit['per_gpu_gb']} GB，可用 {fit['usable_gb']} GB。"
        f"100 卡时的租金约 {cost['total_cny']} 元（{cost['low_cny']}–{cost['high_cny']} 元）。\n\n"
        "FOLLOW-UPS: 用 LoRA 能省多少？ | 训练要多久？"
    )


# ---- 1. two tool calls, streamed -----------------------------------------------------------------
def test_two_tool_calls_streamed_as_deltas_reach_the_calculators(tmp_path):
    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), tool_calls(("run_cost", COST)), fit_and_cost_answer])
    events: list[dict] = []
    trace = advisor(tmp_path, endpoint).ask(QUESTION, emit=events.append)

    assert trace.mode == "llm" and trace.language == "zh"
    assert [c.tool for c in trace.tool_calls] == ["fit_training", "run_cost"]
    # the arguments were assembled from streamed fragments, and the outputs are our calculators'
    assert [c.input for c in trace.tool_calls] == [FIT, COST]
    assert trace.tool_calls[0].output == tools.call("fit_training", FIT)
    assert trace.tool_calls[1].output == tools.call("run_cost", COST)
    assert trace.ungrounded == []
    assert str(trace.tool_calls[0].output["per_gpu_gb"]) in trace.answer
    assert "FOLLOW-UPS" not in trace.answer
    assert trace.follow_ups == ["用 LoRA 能省多少？", "训练要多久？"]
    assert all(body["stream"] is True for body in endpoint.requests)
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["tool_started", "tool_finished"] * 2 and set(kinds[4:]) == {"delta"}  # progress, then text
    assert len(kinds[4:]) >= 2  # sentence by sentence, not the whole answer at once
    assert "".join(e["text"] for e in events if e["type"] == "delta") == trace.answer


def test_model_sees_compact_outputs_and_plain_string_model_argument(tmp_path):
    endpoint = ScriptedOpenAI([tool_calls(("gpu_specs", {"gpu": "H800"})), text("H800 的规格见上。")])
    trace = advisor(tmp_path, endpoint).ask("H800 的规格？")
    tools_sent = {t["function"]["name"]: t["function"] for t in endpoint.requests[0]["tools"]}
    assert {"fit_training", "run_cost", "search_knowledge"} <= tools_sent.keys()
    fit_params = tools_sent["fit_training"]["parameters"]
    assert fit_params["properties"]["model"]["type"] == "string"
    assert "ModelSpec" not in json.dumps(fit_params)
    assert tools_sent["fit_training"]["description"].endswith(WHEN["fit_training"])
    seen = tool_results(endpoint.requests[1])[0]
    assert '"sources"' not in seen and '"memory_gb"' in seen
    assert trace.tool_calls[0].output["sources"]  # the trace keeps the full output


def test_parallel_calls_and_a_cited_passage(tmp_path):
    def answer(body):
        passages = next(json.loads(r) for r in tool_results(body) if '"passages"' in r)["passages"]
        assert passages[0]["ref"] == 1
        return text("H800 的 NVLink 带宽是 400 GB/s [1]。")

    endpoint = ScriptedOpenAI(
        [tool_calls(("search_knowledge", {"query": "H800 NVLink"}), ("gpu_specs", {"gpu": "H800"})), answer]
    )
    trace = advisor(tmp_path, endpoint).ask("H800 的 NVLink 带宽是多少？")
    assert sorted(c.tool for c in trace.tool_calls) == ["gpu_specs", "search_knowledge"]
    assert sorted(c.id for c in trace.tool_calls) == ["call_1", "call_2"]
    assert [c.id for c in trace.citations] == [PASSAGE.id]
    assert trace.ungrounded == [] and "[1]" in trace.answer


# ---- 2. a tool error the model corrects -----------------------------------------------------------
def test_tool_error_goes_back_to_the_model_which_corrects_it(tmp_path):
    def correct(body):
        error = tool_results(body)[-1]
        assert error.startswith("ERROR:") and "A1000" in error and "A100 SXM4 80GB" in error
        return tool_calls(("fit_training", {**FIT, "gpu": "A100 80GB"}))

    def answer(body):
        fit = results(body)[-1]
        return text(f"“A1000”不是已知型号，按 A100 80GB 计算：每卡约需 {fit['per_gpu_gb']} GB，放得下。")

    endpoint = ScriptedOpenAI([tool_calls(("fit_training", {**FIT, "gpu": "A1000"})), correct, answer])
    events: list[dict] = []
    trace = advisor(tmp_path, endpoint).ask("8 张 A1000 全参微调 Qwen2.5-7B 放得下吗？", emit=events.append)
    assert trace.mode == "llm"
    assert [c.input["gpu"] for c in trace.tool_calls] == ["A100 80GB"]
    assert any(e["type"] == "tool_finished" and "A1000" in e.get("error", "") for e in events)
    assert trace.ungrounded == []


def test_invalid_arguments_are_reported_in_the_registry_s_words(tmp_path):
    endpoint = ScriptedOpenAI(
        [tool_calls(("run_cost", {"gpu": "H800", "gpu_hours": -5})), text("Please tell me the GPU-hours.")]
    )
    trace = advisor(tmp_path, endpoint).ask("What does an H800 run cost?")
    assert tool_results(endpoint.requests[1]) == ["ERROR: Invalid gpu_hours: Input should be greater than 0."]
    assert trace.mode == "llm" and trace.tool_calls == []


# ---- 3. an ungrounded number, repaired ------------------------------------------------------------
def test_a_sentence_with_an_ungrounded_number_is_never_sent(tmp_path):
    def invented(body):
        fit = results(body)[-1]
        return text(
            f"放得下：每卡约需 {fit['per_gpu_gb']} GB。训练 1B token 大约只要 37 小时。可用 {fit['usable_gb']} GB。"
        )

    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), invented])
    events: list[dict] = []
    trace = advisor(tmp_path, endpoint).ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？", emit=events.append)
    sent = "".join(e["text"] for e in events if e["type"] == "delta")
    assert sent == trace.answer and "37" not in sent and "每卡约需" in sent and "可用" in sent
    assert trace.mode == "llm" and trace.gate == ["ungrounded"] and trace.ungrounded == []
    assert len(endpoint.requests) == 2  # the grounded sentences went out: no repair round needed


def test_ungrounded_number_in_the_verdict_gets_one_repair_round(tmp_path):
    def invented(body):
        fit = results(body)[-1]
        return text(f"放得下，训练大约只要 37 小时，每卡约需 {fit['per_gpu_gb']} GB。")

    def repaired(body):
        fit = results(body)[-1]
        return text(f"放得下：每卡约需 {fit['per_gpu_gb']} GB。训练时长需要再算一次。")

    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), invented, repaired])
    adv = advisor(tmp_path, endpoint)
    reports: list[str] = []
    original = adv.llm.repair

    def spy(text_, ctx, result, report, emit):
        reports.append(report)
        return original(text_, ctx, result, report, emit)

    adv.llm.repair = spy
    trace = adv.ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？")
    assert len(reports) == 1 and "37 小时" in reports[0]
    assert reports[0] in last_user(endpoint.requests[-1])  # the report reached the endpoint
    assert "37" not in trace.answer and "再算一次" in trace.answer
    assert trace.mode == "llm" and trace.ungrounded == [] and trace.gate == ["ungrounded"]
    assert len(endpoint.requests) == 3


def test_failed_repair_drops_the_sentence(tmp_path):
    def invented(body):
        fit = results(body)[-1]
        return text(f"放得下：每卡约需 {fit['per_gpu_gb']} GB。训练大约只要 37 小时。")

    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), invented, status(500)])
    trace = advisor(tmp_path, endpoint).ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？")
    assert trace.mode == "llm" and "37" not in trace.answer and "GB" in trace.answer
    assert trace.ungrounded == []


# ---- 4. outages fall back ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (raises(httpx.ConnectError), "endpoint"),
        (raises(httpx.ReadTimeout), "timeout"),
        (status(503), "endpoint"),
        (raw(b"data: {not json\n\n"), "endpoint"),
        (text(""), "endpoint"),
    ],
    ids=["refused", "timeout", "503", "malformed", "empty"],
)
def test_outage_falls_back_to_the_offline_planner(tmp_path, reply, kind):
    endpoint = ScriptedOpenAI([reply], then=reply)
    trace = advisor(tmp_path, endpoint, llm_max_retries=1).ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？")
    assert trace.mode == "llm-fallback"
    assert trace.answer.startswith(FALLBACK_NOTES[kind]["zh"])
    assert trace.fallback_reason.startswith(kind + ":")
    assert "fit_training" in [c.tool for c in trace.tool_calls]  # the offline planner did the sizing
    assert trace.ungrounded == []


def test_tool_call_with_broken_json_arguments_goes_back_to_the_model(tmp_path):
    chunk = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "fit_training", "arguments": '{"model": "7B", "gpu": '},
                        }
                    ],
                },
            }
        ],
    }
    endpoint = ScriptedOpenAI(
        [raw(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()), text("Which GPU do you mean?")]
    )
    trace = advisor(tmp_path, endpoint).ask("Will a 7B model fit on one A100 80GB?")
    # LangChain closes the truncated JSON; the registry names what is still missing, and the model hears it
    assert tool_results(endpoint.requests[1]) == ["ERROR: Missing field 'gpu'."]
    assert trace.mode == "llm" and trace.answer.startswith("Which GPU do you mean?")
    # the coverage gate keeps what the question said for the reply (bot/answer/coverage.py)
    assert "Noted: “7B”" in trace.answer and trace.unused == []


def test_retries_once_on_5xx_before_falling_back(tmp_path):
    endpoint = ScriptedOpenAI([status(503), status(503)])
    trace = advisor(tmp_path, endpoint, llm_max_retries=1).ask("Will a 70B model fit on one A100 80GB?")
    assert len(endpoint.requests) == 2 and trace.mode == "llm-fallback"
    assert trace.answer.startswith(FALLBACK_NOTE["en"])


# ---- 5. a conversation resumes after a restart ---------------------------------------------------------
def test_conversation_resumes_after_the_advisor_is_rebuilt(tmp_path):
    first = ScriptedOpenAI(
        [
            tool_calls(("fit_training", FIT)),
            lambda body: text(f"放得下，每卡约需 {results(body)[-1]['per_gpu_gb']} GB。"),
        ]
    )
    trace1 = advisor(tmp_path, first).ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？")
    cid = trace1.conversation_id

    second = ScriptedOpenAI(
        [
            tool_calls(("fit_training", {**FIT, "gpu": "H800"})),
            lambda body: text(f"换成 H800 也放得下，每卡约需 {results(body)[-1]['per_gpu_gb']} GB。"),
        ]
    )
    again = advisor(tmp_path, second)  # a new process: same SQLite file, nothing in memory
    trace2 = again.ask("那换成 H800 呢？", conversation_id=cid)
    messages = second.requests[0]["messages"]
    roles = [(m["role"], m["content"]) for m in messages]
    assert roles[1:] == [
        ("user", "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？"),
        ("assistant", trace1.answer),
        ("user", "那换成 H800 呢？"),
    ]
    assert "model=Qwen2.5-7B" in messages[0]["content"] and "n_gpus=8" in messages[0]["content"]
    assert trace2.mode == "llm"
    assert again.store.last_state(cid)["model"] == "Qwen2.5-7B"


def test_english_question_gets_the_english_prompt(tmp_path):
    endpoint = ScriptedOpenAI([text("I can help with GPU sizing and costs, not with recipes.")])
    trace = advisor(tmp_path, endpoint).ask("What is a good recipe for dumplings?")
    system = endpoint.requests[0]["messages"][0]
    assert system["role"] == "system" and "You are gpu-advisor" in system["content"]
    assert trace.language == "en" and len(trace.follow_ups) == 2  # suggested when the model gave none


# ---- 6. caps ------------------------------------------------------------------------------------------------
def test_a_model_that_never_stops_calling_tools_is_capped(tmp_path):
    endpoint = ScriptedOpenAI([], then=tool_calls(("gpu_specs", {"gpu": "H800"})))
    trace = advisor(tmp_path, endpoint, llm_max_steps=4).ask("H800 和 A100 哪个好？")
    assert trace.mode == "llm-fallback" and trace.answer.startswith(FALLBACK_NOTE["zh"])
    assert 1 <= len(endpoint.requests) <= 4


def test_tool_calls_per_answer_are_capped(tmp_path):
    spam = tool_calls(*[("gpu_specs", {"gpu": "H800"})] * 12)
    endpoint = ScriptedOpenAI([spam, lambda body: text(f"H800 有 {results(body)[0]['memory_gb']} GB 显存。")])
    trace = advisor(tmp_path, endpoint, llm_max_steps=3, llm_context_tokens=32768).ask("H800 的规格？")
    assert len(trace.tool_calls) == 6  # twice the steps
    assert sum(r.startswith("ERROR:") for r in tool_results(endpoint.requests[1])) == 6


# ---- 7. provider quirks -----------------------------------------------------------------------------------
def test_dashscope_qwen3_turns_thinking_off(tmp_path):
    endpoint = ScriptedOpenAI([text("你好，我可以帮你选 GPU。")])
    trace = advisor(
        tmp_path, endpoint, llm_base_url="https://dashscope.aliyuncs.com/compatible-mode/v1", llm_model="qwen3-32b"
    ).ask("你好")
    body = endpoint.requests[0]
    assert body["enable_thinking"] is False and body["model"] == "qwen3-32b"
    assert body["stream_options"] == {"include_usage": True}
    assert trace.mode == "llm"


def test_qwen3_on_vllm_uses_the_chat_template_switch_and_needs_no_key(tmp_path):
    endpoint = ScriptedOpenAI([text("你好。")])
    advisor(
        tmp_path, endpoint, llm_base_url="http://127.0.0.1:8000/v1", llm_model="Qwen/Qwen3-8B", llm_api_key=None
    ).ask("你好")
    body = endpoint.requests[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "enable_thinking" not in body and "stream_options" not in body
    assert endpoint.headers[0]["authorization"] == "Bearer EMPTY"


def test_o_series_never_sends_parallel_tool_calls(tmp_path):
    endpoint = ScriptedOpenAI(
        [
            tool_calls(("gpu_specs", {"gpu": "H800"})),
            lambda body: text(f"H800 有 {results(body)[0]['memory_gb']} GB 显存。"),
        ]
    )
    adv = advisor(tmp_path, endpoint, llm_base_url="https://api.openai.com/v1", llm_model="o4-mini")
    adv.ask("H800 的规格？")
    assert adv.llm.model.disabled_params == {"parallel_tool_calls": None}
    assert len(endpoint.requests) == 2
    assert all("parallel_tool_calls" not in body for body in endpoint.requests)


def test_deepseek_reasoner_runs_in_non_thinking_mode(tmp_path):
    endpoint = ScriptedOpenAI([text("你好。")])
    advisor(tmp_path, endpoint, llm_base_url="https://api.deepseek.com/v1", llm_model="deepseek-reasoner").ask("你好")
    assert endpoint.requests[0]["model"] == "deepseek-chat"


def test_deepseek_r1_elsewhere_is_refused_with_a_clear_reason(tmp_path):
    endpoint = ScriptedOpenAI([text("不会被调用。")])
    adv = advisor(
        tmp_path, endpoint, llm_base_url="http://localhost:11434/v1", llm_model="deepseek-r1:14b", llm_api_key=None
    )
    with pytest.raises(PlannerError, match="deepseek-chat"):
        adv.llm.plan("你好", Context(conversation_id="c"), adv.toolbox.run)
    assert adv.ask("你好").mode == "llm-fallback" and endpoint.requests == []


def test_hosted_endpoint_without_a_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GPU_ADVISOR_LLM_API_KEY", raising=False)
    with pytest.raises(PlannerError, match="GPU_ADVISOR_LLM_API_KEY"):
        AgentPlanner.from_settings(settings(llm_base_url="https://api.deepseek.com/v1", llm_api_key=None))


# ---- prompts --------------------------------------------------------------------------------------------------
def test_prompts_render_and_refuse_missing_or_unknown_variables():
    assert "FOLLOW-UPS:" in render("system_zh", context="（新对话）")
    assert "数字" in render("repair_zh", report="「37 小时」没有来源。")
    with pytest.raises(PromptError, match="needs context"):
        render("system_en")
    with pytest.raises(PromptError, match="no variable"):
        render("repair_en", report="x", extra="y")


def test_streamed_answer_comes_from_the_advisor_after_grounding(tmp_path):
    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), tool_calls(("run_cost", COST)), fit_and_cost_answer])
    events = list(advisor(tmp_path, endpoint).stream(QUESTION))
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["tool_started", "tool_finished"] * 2 and kinds[-1] == "final"
    final = events[-1]["trace"]
    assert "".join(e["text"] for e in events if e["type"] == "delta") == final["answer"]
    assert final["mode"] == "llm" and final["ungrounded"] == []
    assert "放得下" in final["answer"]


@pytest.mark.parametrize(
    ("base_url", "model", "name", "extra_body", "sent"),
    [
        ("https://api.openai.com/v1", "gpt-4o-mini", "openai", None, "gpt-4o-mini"),
        (
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "qwen-plus",
            "dashscope",
            {"enable_thinking": False},
            "qwen-plus",
        ),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwq-plus", "dashscope", None, "qwq-plus"),
        ("https://api.deepseek.com", "deepseek-chat", "deepseek", {"thinking": {"type": "disabled"}}, "deepseek-chat"),
        ("http://localhost:11434/v1", "qwen3:8b", "ollama", None, "qwen3:8b"),
        (
            "http://gpu-box:8000/v1",
            "Qwen/Qwen3-32B",
            "compatible",
            {"chat_template_kwargs": {"enable_thinking": False}},
            "Qwen/Qwen3-32B",
        ),
    ],
)
def test_provider_profiles(base_url, model, name, extra_body, sent):
    from bot.llm.client import provider_for

    p = provider_for(base_url, model)
    assert (p.name, p.extra_body, p.model, p.refusal) == (name, extra_body, sent, None)


# ---- fewer round trips ----------------------------------------------------------------------------------------
def test_confident_passages_are_offered_up_front_saving_the_search_round_trip(tmp_path):
    endpoint = ScriptedOpenAI([text("H800 保留了 H100 的算力，NVLink 带宽降到 400 GB/s [1]。")])
    trace = advisor(tmp_path, endpoint).ask("卡间互联是什么？")
    system = endpoint.requests[0]["messages"][0]["content"]
    assert f"[1] {PASSAGE.title}: {PASSAGE.text}" in system
    assert len(endpoint.requests) == 1 and trace.tool_calls == []  # no search_knowledge round trip
    assert [c.id for c in trace.citations] == [PASSAGE.id]
    assert [n.source_id for n in trace.numbers if n.value == 400] == [PASSAGE.id]


def test_weak_retrieval_is_not_offered_up_front(tmp_path):
    from harness import StubRetriever

    weak = PASSAGE.model_copy(update={"score": 0.01})
    endpoint = ScriptedOpenAI([text("我可以帮你比较 GPU 的互联。")])
    trace = advisor(tmp_path, endpoint, retriever=StubRetriever([weak])).ask("你好，互联是什么意思？")
    assert PASSAGE.text not in endpoint.requests[0]["messages"][0]["content"] and trace.citations == []
