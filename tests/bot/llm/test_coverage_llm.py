"""The coverage gate on the LLM's answers: what the model left out of its tool calls and its answer is stated in
the user's words before the answer ships, exactly as for the offline planner (bot/answer/coverage.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import advisor, results
from scripted_openai import ScriptedOpenAI, text, tool_calls

QUESTION = "我们的机器 CPU 64 核、内存 512G，4 张 RTX 4090 能部署 Qwen2.5-32B 吗？"
SERVE = {"model": "Qwen2.5-32B", "gpu": "RTX 4090", "n_gpus": 4}


def test_the_models_answer_states_what_it_did_not_use(tmp_path):
    answer = lambda body: text("放得下：4 张卡每卡约需 {per_gpu_gb} GB。".format(**results(body)[-1]))  # noqa: E731
    endpoint = ScriptedOpenAI([tool_calls(("fit_inference", SERVE)), answer])
    trace = advisor(tmp_path, endpoint).ask(QUESTION)
    assert trace.mode == "llm", trace.fallback_reason
    uses = {m.text: m for m in trace.mentions}
    assert uses["4 张 RTX 4090"].use == "input" and uses["Qwen2.5-32B"].fed.startswith("fit_inference.")
    assert uses["64 核"].use == "explained" and uses["512G"].use == "explained"
    assert "“64 核”" in trace.answer and trace.unused == [] and trace.ungrounded == []
