"""`gpu-advisor proposal`: the dated Markdown proposal and the XLSX bill of materials, opened as a person would:
the workbook read back with openpyxl, its rows the BOM plan_system priced."""

from __future__ import annotations

import datetime as dt

from openpyxl import load_workbook
from typer.testing import CliRunner

import tools
from bot.cli import app

runner = CliRunner()
ARGS = {"job": "finetune", "model": "Qwen2.5-14B", "budget_cny": 2_000_000}


def test_the_proposal_and_its_workbook_hold_the_plan(tmp_path):
    result = runner.invoke(
        app,
        ["proposal", "--job", "finetune", "--model", "Qwen2.5-14B", "--budget-cny", "2000000", "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    plan = tools.call("plan_system", ARGS)
    best = next(o for o in plan["options"] if o["label"] == plan["best_value"])
    text = (tmp_path / "proposal.md").read_text(encoding="utf-8")
    today = dt.date.today()
    assert text.startswith("# 算力方案建议书") and today.isoformat() in text
    assert (today + dt.timedelta(days=30)).isoformat() in text  # the validity date
    assert f"## 推荐：{best['label']}" in text and "## 物料清单" in text and "## 未列入的平台" in text
    for o in plan["options"]:
        assert f"| {o['label']} |" in text
    wb = load_workbook(tmp_path / "bom.xlsx")
    rows = list(wb["BOM"].iter_rows(values_only=True))
    assert rows[0] == ("item", "qty", "low_cny", "high_cny", "source")
    assert [(r[0], r[1], r[2], r[3]) for r in rows[1:]] == [
        (b["item"], b["qty"], b["low_cny"], b["high_cny"]) for b in best["bom"]
    ]
    assert all(r[4] and "http" in r[4] for r in rows[1:])  # every line names its source
    options = list(wb["Options"].iter_rows(values_only=True))
    assert [r[0] for r in options[1:]] == [o["label"] for o in plan["options"]]


def test_a_proposal_in_english_and_a_bad_input_is_one_clear_line(tmp_path):
    ok = runner.invoke(
        app,
        [
            "proposal",
            "--job",
            "finetune",
            "--model",
            "Qwen2.5-7B",
            "--domestic",
            "--lang",
            "en",
            "--out",
            str(tmp_path),
        ],
    )
    assert ok.exit_code == 0, ok.output
    text = (tmp_path / "proposal.md").read_text(encoding="utf-8")
    assert text.startswith("# Compute proposal") and "Domestic accelerators only" in text and "atlas-800t-a2" in text
    bad = runner.invoke(app, ["proposal", "--job", "finetune", "--model", "GPT-7", "--out", str(tmp_path / "x")])
    assert bad.exit_code != 0 and "Traceback" not in bad.output and "GPT-7" in bad.output
    assert not (tmp_path / "x").exists()
