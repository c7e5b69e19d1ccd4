"""`gpu-advisor ask` and `chat` as a user runs them, and the README's first-run command."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app

README = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("GPU_ADVISOR_LLM_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    return tmp_path


def test_readme_first_run_command_answers_offline(env):
    command = re.search(r'\.venv/bin/gpu-advisor (ask "[^"]+")', README).group(1)
    question = command.removeprefix('ask "').removesuffix('"')
    result = CliRunner().invoke(app, ["ask", question])
    assert result.exit_code == 0, result.output
    assert "放不下" in result.output and "QLoRA" in result.output
    assert "offline" in result.output


def test_ask_json_is_an_answer_trace_and_conversations_continue(env):
    runner = CliRunner()
    first = json.loads(runner.invoke(app, ["ask", "70B 全参训练，单卡 A100 够吗？", "--json"]).output)
    assert {
        "conversation_id",
        "answer",
        "language",
        "mode",
        "tool_calls",
        "citations",
        "numbers",
        "ungrounded",
        "follow_ups",
    } <= set(first)
    assert first["ungrounded"] == [] and first["mode"] == "offline" and first["language"] == "zh"
    second = json.loads(
        runner.invoke(app, ["ask", "那换成H800呢？", "--json", "--conversation", first["conversation_id"]]).output
    )
    fit = [c for c in second["tool_calls"] if c["tool"] == "fit_training"][-1]
    assert fit["input"]["gpu"] == "h800-sxm5-80gb" and fit["input"]["model"] == "70B"


def test_chat_session_answers_and_leaves_on_eof(env):
    result = CliRunner().invoke(app, ["chat"], input="H20 显存多大？\n那 H800 呢？\n")
    assert result.exit_code == 0, result.output
    assert "96 GB" in result.output and "NVIDIA H800" in result.output


def test_empty_question_is_one_clean_line(env):
    result = CliRunner().invoke(app, ["ask", "  "])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_the_collector_paused_for_a_start_runs_again_after_it(env):
    # `ask` and `chat` pause Python's garbage collector while they load and answer: a process that goes on
    # (a test run, an embedding program) must get it back, even when the answer failed
    import gc

    assert gc.isenabled()
    result = CliRunner().invoke(app, ["ask", "H20 显存多大？"])
    assert result.exit_code == 0 and "96 GB" in result.output
    assert gc.isenabled()
    CliRunner().invoke(app, ["ask", "   "])
    assert gc.isenabled()
