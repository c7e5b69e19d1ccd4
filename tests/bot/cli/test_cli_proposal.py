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


def _drawn(png) -> tuple[tuple[int, int], int]:
    """The image's size and how many of its pixels are not the background (the most common colour)."""
    from PIL import Image

    img = Image.open(png).convert("RGB")
    counts = sorted(img.getcolors(maxcolors=1 << 24), reverse=True)
    return img.size, sum(n for n, _ in counts[1:])


def test_the_charts_are_drawn_from_the_calculators_and_linked(tmp_path):
    """A serving proposal: the cost chart (rent vs own of the recommended cards) and the capacity chart (cards vs
    peak load) are PNGs a person can open, not blank, and the Markdown links both with the calculators' figures."""
    args = ["proposal", "--job", "serve", "--model", "Qwen3-32B", "--concurrency", "200", "--lang", "en"]
    result = runner.invoke(app, [*args, "--months", "24", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    plan = tools.call("plan_system", {"job": "serve", "model": "Qwen3-32B", "concurrency": 200})
    best = next(o for o in plan["options"] if o["label"] == plan["best_value"])
    gpu = best["servers"][0]["gpu"]
    tco = tools.call("rent_vs_buy", {"gpu": gpu, "n_gpus": best["n_gpus"], "months": 24})
    text = (tmp_path / "proposal.md").read_text(encoding="utf-8")
    assert "![Cumulative cost, rent vs own](tco.png)" in text and "![Capacity](capacity.png)" in text
    assert f"{best['n_gpus']} × {gpu} (24 h/day over 24 months)" in text
    assert f"owning costs less from month {tco['breakeven_months']:.1f}" in text
    assert f"{best['n_gpus']} cards for a peak of 200" in text
    for name in ("tco.png", "capacity.png"):
        size, drawn = _drawn(tmp_path / name)
        assert size == (960, 576) and drawn > 0.03 * 960 * 576, (name, drawn)


def test_a_finetuning_proposal_charts_hours_against_cards_and_says_why_a_chart_is_missing(tmp_path):
    result = runner.invoke(app, [*_ft_args(), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "proposal.md").read_text(encoding="utf-8")
    assert "## 图表" in text and "![容量](capacity.png)" in text
    plan = tools.call("plan_system", ARGS)
    best = next(o for o in plan["options"] if o["label"] == plan["best_value"])
    assert f"本方案 {best['n_gpus']} 张卡约 {best['hours']:,.1f} 小时" in text
    size, drawn = _drawn(tmp_path / "capacity.png")
    assert size == (960, 576) and drawn > 0.03 * 960 * 576
    if not (tmp_path / "tco.png").exists():  # the card has no rental price on file: the document says so
        assert "未画成本曲线" in text


def _ft_args() -> list[str]:
    return ["proposal", "--job", "finetune", "--model", "Qwen2.5-14B", "--budget-cny", "2000000"]


def test_with_no_option_to_chart_the_proposal_says_so_and_draws_nothing(tmp_path):
    args = ["proposal", "--job", "serve", "--model", "Qwen3-32B", "--concurrency", "1000000000", "--lang", "en"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "No option to chart" in (tmp_path / "proposal.md").read_text(encoding="utf-8")
    assert not list(tmp_path.glob("*.png"))
