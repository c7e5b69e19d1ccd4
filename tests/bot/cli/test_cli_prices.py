"""`gpu-advisor prices import quotes.csv` as a sales team runs it: the book's prices replace the catalog's in the
calculators and in a chat answer, which names the quote and its date; an old quote is flagged stale in the answer;
a bad CSV is one line naming the row and the column, and leaves the book as it was."""

from __future__ import annotations

import datetime as dt

import pytest
from typer.testing import CliRunner

import tools
from bot.cli import app
from tools.catalog import price_book, user_models

runner = CliRunner()
TODAY = dt.date.today()
FRESH = (TODAY - dt.timedelta(days=3)).isoformat()
OLD = (TODAY - dt.timedelta(days=200)).isoformat()


@pytest.fixture
def book(env, tmp_path):
    csv = tmp_path / "quotes.csv"
    csv.write_text(
        "item,price,currency,date,vendor,validity,kind\n"
        f"H20,98000,CNY,{FRESH},Acme Distribution,30,\n"
        f"hgx-h20-8gpu,1150000,CNY,{FRESH},Acme Distribution,,\n"
        f"A100 80GB,9.5,CNY,{OLD},CloudCo,,rental\n",
        encoding="utf-8",
    )
    yield csv
    user_models.use_data_dir(None)


def test_an_imported_book_overrides_the_catalog_and_answers_name_it(book, env):
    result = runner.invoke(app, ["prices", "import", str(book)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "Loaded 3 prices from quotes.csv" in out and "stale (older than 90 days): rows 4" in out
    assert (env / "data" / "price_book.yaml").exists()  # the deployment's data folder, not the package
    specs = tools.call("gpu_specs", {"gpu": "H20"})
    assert specs["purchase_low_cny"] == specs["purchase_high_cny"] == 98_000
    assert specs["price_source"].startswith(f"price book {FRESH}, Acme Distribution")
    cost = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 1000})
    assert cost["total_cny"] == 9_500 and "⚠ stale" in cost["price_source"]
    # a server quoted whole is one BOM line at the book's price
    plan = tools.call("plan_system", {"job": "serve", "model": "Qwen3-32B", "concurrency": 200})
    h20 = next(o for o in plan["options"] if o["label"] == "hgx-h20-8gpu")
    nodes = h20["servers"][0]["nodes"]
    assert h20["bom"][0]["low_cny"] == 1_150_000 * nodes and "quotes.csv row 3" in h20["bom"][0]["source"]
    # a chat answer names the quote it used and its date, and flags the stale one
    said = runner.invoke(app, ["ask", "H20 现在多少钱？"])
    assert said.exit_code == 0 and f"price book {FRESH}, Acme Distribution" in " ".join(said.output.split())
    rented = runner.invoke(app, ["ask", "租 A100 80GB 跑 1000 卡时要多少钱？"])
    text = " ".join(rented.output.split())
    assert "9,500 元" in text and f"price book {OLD}, CloudCo ⚠ stale" in text
    rvb = " ".join(runner.invoke(app, ["ask", "8 张 A100 80GB 租还是买？每天 24 小时用 3 年"]).output.split())
    assert f"本部署价格表的报价：CloudCo，{OLD}；⚠ 已超过 90 天" in rvb  # the assumptions name the quote, flagged
    rvb_en = " ".join(runner.invoke(app, ["ask", "Rent or buy 8 H20 for 3 years at 24 h a day?"]).output.split())
    assert f"this deployment's price book: Acme Distribution, {FRESH}" in rvb_en
    shown = runner.invoke(app, ["prices", "show", "--json"])
    assert shown.exit_code == 0 and '"stale_rows": [\n    4\n  ]' in shown.output
    assert runner.invoke(app, ["prices", "clear"]).exit_code == 0
    assert tools.call("gpu_specs", {"gpu": "H20"})["purchase_low_cny"] != 98_000  # the catalog's prices again


@pytest.mark.parametrize(
    ("csv", "says"),
    [
        ("item,price,currency,date\nH20,1,CNY,2025-01-01\n", "quotes.csv row 1: no column vendor"),
        (f"item,price,currency,date,vendor\nH20,abc,CNY,{FRESH},x\n", "row 2, column price: “abc” is not a positive"),
        (f"item,price,currency,date,vendor\nH20,1,CNY,{FRESH},x\nGPT-9000,1,CNY,{FRESH},x\n", "row 3, column item"),
        (f"item,price,currency,date,vendor\nH20,1,EUR,{FRESH},x\n", "row 2, column currency: “EUR”: use CNY or USD"),
        ("item,price,currency,date,vendor\nH20,1,CNY,yesterday,x\n", "row 2, column date: “yesterday” is not a date"),
        (f"item,price,currency,date,vendor,validity\nH20,1,CNY,{FRESH},x,soon\n", "row 2, column validity"),
        (f"item,price,currency,date,vendor,kind\nhgx-h20-8gpu,1,CNY,{FRESH},x,rental\n", "row 2, column kind"),
    ],
)
def test_a_bad_csv_is_one_line_naming_the_row_and_column(env, tmp_path, csv, says):
    f = tmp_path / "quotes.csv"
    f.write_text(csv, encoding="utf-8")
    result = runner.invoke(app, ["prices", "import", str(f)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert says in " ".join(result.output.split())
    assert price_book.current() is None  # nothing was stored
    user_models.use_data_dir(None)
