"""`gpu-advisor models add --config config.json` as a user runs it: stored in the data folder, then sized by
`fit` and named in a chat answer; a bad config or a shipped name gets one clear line, never a stack trace."""

import json

import pytest
from typer.testing import CliRunner

from bot.cli import app
from tests.tools.catalog.test_hf_config import QWEN3_30B_A3B
from tools.catalog import user_models


@pytest.fixture
def added(env, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN3_30B_A3B), encoding="utf-8")
    result = CliRunner().invoke(app, ["models", "add", "--config", str(config), "--name", "acme/Shenzhen-MoE-30B"])
    yield result
    user_models.use_data_dir(None)


def test_add_says_the_sizes_and_where_it_is_stored(added, env):
    assert added.exit_code == 0, added.output
    out = " ".join(added.output.split())
    assert "Added acme/Shenzhen-MoE-30B" in out and "30.532B parameters" in out and "3.353B active" in out
    assert (env / "data" / "models.yaml").exists()


def test_fit_and_ask_know_the_added_model(added):
    fit = CliRunner().invoke(app, ["fit", "infer", "--model", "Shenzhen-MoE-30B", "--gpu", "H100", "--json"])
    assert fit.exit_code == 0, fit.output
    assert json.loads(fit.output)["fits"] is True
    ask = CliRunner().invoke(app, ["ask", "acme/Shenzhen-MoE-30B 用一张 H100 推理够吗？"])
    assert ask.exit_code == 0 and "acme/Shenzhen-MoE-30B" in ask.output and "放得下" in ask.output


def test_bad_json_and_a_shipped_name_are_refused_in_a_line(env, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{bad", encoding="utf-8")
    result = CliRunner().invoke(app, ["models", "add", "--config", str(bad), "--name", "x"])
    assert result.exit_code == 2 and "is not JSON (line 1" in result.output and "Traceback" not in result.output
    good = tmp_path / "config.json"
    good.write_text(json.dumps(QWEN3_30B_A3B), encoding="utf-8")
    result = CliRunner().invoke(app, ["models", "add", "--config", str(good), "--name", "Qwen3-30B-A3B"])
    assert result.exit_code == 2 and "shipped model" in " ".join(result.output.split())
    user_models.use_data_dir(None)
