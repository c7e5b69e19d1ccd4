"""`gpu-advisor models add --config` with a 2025-2026 config (gpt-oss's MXFP4 experts and sliding-window layers) as a
user runs it, and `models show` telling what a hybrid's KV cache does beyond its window."""

import json

from typer.testing import CliRunner

from bot.cli import app
from tests.tools.catalog.test_hf_config_hybrid import GPT_OSS_120B
from tools.catalog import user_models

WIDE = {"COLUMNS": "200"}


def test_a_gpt_oss_config_added_is_sized_in_mxfp4(env, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GPT_OSS_120B), encoding="utf-8")
    try:
        added = CliRunner().invoke(app, ["models", "add", "--config", str(config), "--name", "acme/oss-ft"])
        assert added.exit_code == 0, added.output
        fit = CliRunner().invoke(app, ["fit", "infer", "--model", "acme/oss-ft", "--gpu", "H100", "--json"])
        out = json.loads(fit.output)
        assert out["fits"] is True and 61 <= out["breakdown_gb"]["weights"] <= 66
    finally:
        user_models.use_data_dir(None)


def test_models_show_gives_the_window_and_the_linear_state():
    oss = " ".join(CliRunner().invoke(app, ["models", "show", "gpt-oss-120b"], env=WIDE).output.split())
    assert "sliding-window layers │ 18 of 36 (128 tokens)" in oss
    assert "KV cache per token beyond the window (bf16) │ 36,864 B" in oss  # 18 layers × 2 × 8 heads × 64 × 2 B
    nxt = " ".join(CliRunner().invoke(app, ["models", "show", "Qwen3-Next-80B-A3B"], env=WIDE).output.split())
    assert "linear-attention state per sequence (bf16) │ 39,518,208 B" in nxt
