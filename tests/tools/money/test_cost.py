"""run_cost and rent_vs_buy: golden figures, the knowledge note's figures, errors, data invariants, CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import tools
from bot.cli import app
from tools.catalog.lookup import get_gpu
from tools.catalog.prices import price_table, tco_params
from tools.errors import InvalidInput, UnknownGpu
from tools.units import HOURS_PER_MONTH

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = yaml.safe_load((ROOT / "tests/golden/cost.yaml").read_text(encoding="utf-8"))
NOTE = ROOT / GOLDEN["rent_vs_buy_note"]


def _note_cases() -> list[dict]:
    text = NOTE.read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# tco-breakeven cases.*?)```", text, re.S)
    assert block, "the note lost its yaml block of cases"
    return yaml.safe_load(block.group(1))["cases"]


# --- golden -----------------------------------------------------------------------------


@pytest.mark.parametrize("row", GOLDEN["run_cost"], ids=lambda r: r["id"])
def test_run_cost_golden(row):
    out = tools.call("run_cost", row["args"])
    for key, want in row["expect"].items():
        assert out[key] == pytest.approx(want, rel=row["rel_tol"]), key


@pytest.mark.parametrize("case", _note_cases(), ids=lambda c: f"{c['args']['gpu']}-{c['args']['hours_per_day']}h")
def test_note_figures(case):
    """The figures written in knowledge/docs/tco-breakeven.md are what the calculator gives."""
    out = tools.call("rent_vs_buy", case["args"])
    for key, want in case["expect"].items():
        if isinstance(want, str):
            assert out[key] == want, key
        else:
            assert out[key] == pytest.approx(want, abs=0.01), key


def test_note_front_matter():
    text = NOTE.read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["id"] == "tco-breakeven" and meta["lang"] == "zh"
    assert set(meta["topics"]) == {"cost", "rent-vs-buy", "tco", "correction"}
    assert str(meta["as_of"]) == "2026-11-29"
    assert all(s["url"].startswith("http") for s in meta["sources"])


# --- run_cost ---------------------------------------------------------------------------


def test_run_cost_hours_times_gpus_equals_gpu_hours():
    a = tools.call("run_cost", {"gpu": "A100 80GB", "hours": 100, "n_gpus": 8})
    b = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 800})
    assert a["total_cny"] == b["total_cny"] == 16000
    assert a["assumptions"][-1]["key"] == "gpu_hours" and a["assumptions"][-1]["default"] is False


def test_run_cost_user_price_collapses_the_range():
    out = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 10, "price_cny_per_hour": 6})
    assert out["total_cny"] == out["low_cny"] == out["high_cny"] == 60
    assert out["price_source"] == "user"


def test_run_cost_default_states_price_and_alternatives():
    out = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 1})
    keys = [a["key"] for a in out["assumptions"]]
    assert keys[0] == "price_cny_per_hour" and out["assumptions"][0]["default"] is True
    assert any(k.startswith("rental_price_alternative_") for k in keys)
    assert "idctop.com" in out["price_source"]


def test_run_cost_usd():
    out = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 710, "currency": "USD", "fx_cny_per_usd": 7.1})
    assert out["total_usd"] == pytest.approx(2000)
    default = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 710, "currency": "USD"})
    assert default["fx_cny_per_usd"] == tco_params()["fx_cny_per_usd"].default
    assert any(a["key"] == "fx_cny_per_usd" and a["default"] for a in default["assumptions"])
    assert tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 1})["total_usd"] is None


@pytest.mark.parametrize(
    "args, gpu_hours, stated",
    [
        ({"gpu": "A100 80GB"}, 1, {"hours": 1, "n_gpus": 1}),  # the price of one card-hour
        ({"gpu": "A100 80GB", "hours": 2}, 2, {"n_gpus": 1}),
        ({"gpu": "A100 80GB", "n_gpus": 8}, 8, {"hours": 1}),  # eight cards for an hour
        ({"gpu": "A100 80GB", "gpu_hours": 10, "hours": 2}, 10, {}),  # hours alone do not change the total
        ({"gpu": "A100 80GB", "gpu_hours": 10, "hours": 2, "n_gpus": 3}, 10, {"gpu_hours": 10}),
    ],
)
def test_run_cost_states_what_it_assumes_about_the_hours(args, gpu_hours, stated):
    out = tools.call("run_cost", args)
    assert out["gpu_hours"] == gpu_hours and out["total_cny"] == pytest.approx(gpu_hours * out["price_cny_per_hour"])
    notes = {a["key"]: a for a in out["assumptions"] if a["key"] in ("hours", "n_gpus") or "was not used" in a["note"]}
    assert {k: a["value"] for k, a in notes.items()} == stated
    if "gpu_hours" in stated:  # given both ways and they disagree: the total wins, and the answer says so
        assert "2 × 3 = 6 was not used" in notes["gpu_hours"]["note"]


def test_run_cost_rejects_nonsense():
    with pytest.raises(InvalidInput) as err:
        tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": -5})
    assert err.value.field == "gpu_hours"
    with pytest.raises(InvalidInput):
        tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 5, "price": 3})  # typo'd field
    with pytest.raises(UnknownGpu):
        tools.call("run_cost", {"gpu": "B9000", "gpu_hours": 5})


def test_gpu_without_price_asks_for_price_cny_per_hour(monkeypatch):
    import tools.money.run_cost as run_cost

    monkeypatch.setattr(run_cost, "prices_for", lambda gpu: None)  # rent_vs_buy looks prices up through run_cost
    with pytest.raises(InvalidInput) as err:
        tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 5})
    assert err.value.field == "price_cny_per_hour"
    assert "price_cny_per_hour" in err.value.message("en") and "price_cny_per_hour" in err.value.message("zh")
    assert tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 5, "price_cny_per_hour": 2})["total_cny"] == 10
    with pytest.raises(InvalidInput) as err:
        tools.call("rent_vs_buy", {"gpu": "A100 80GB", "rent_cny_per_hour": 10})
    assert err.value.field == "purchase_cny"


# --- rent_vs_buy ------------------------------------------------------------------------

BASE = {"gpu": "A100 80GB", "n_gpus": 8, "hours_per_day": 24, "months": 36}


def test_rent_vs_buy_totals_follow_the_formula():
    r = tools.call("rent_vs_buy", BASE)
    assert r["rent_monthly_cny"] == pytest.approx(8 * r["rent_cny_per_hour"] * HOURS_PER_MONTH)
    assert r["rent_total_cny"] == pytest.approx(36 * r["rent_monthly_cny"], abs=1)
    assert r["own_total_cny"] == pytest.approx(r["own_upfront_cny"] + 36 * r["own_monthly_cny"], abs=1)
    be = r["own_upfront_cny"] / (r["rent_monthly_cny"] - r["own_monthly_cny"])
    assert r["breakeven_months"] == pytest.approx(be, abs=0.01)
    assert r["cumulative"][0] == {"month": 0, "rent_cny": 0.0, "own_cny": r["own_upfront_cny"]}
    assert len(r["cumulative"]) == 37
    assert r["saving_cny"] == pytest.approx(abs(r["rent_total_cny"] - r["own_total_cny"]), abs=0.01)


def test_flip_thresholds_really_flip():
    r = tools.call("rent_vs_buy", BASE)
    assert r["cheaper"] == "buy"
    flips = {f["parameter"]: f for f in r["flip"]}
    at_price = tools.call("rent_vs_buy", {**BASE, "rent_cny_per_hour": flips["rent_cny_per_hour"]["threshold"]})
    assert at_price["rent_total_cny"] == pytest.approx(at_price["own_total_cny"], rel=1e-3)
    below = tools.call("rent_vs_buy", {**BASE, "rent_cny_per_hour": flips["rent_cny_per_hour"]["threshold"] * 0.9})
    assert below["cheaper"] == "rent"
    h = flips["hours_per_day"]["threshold"]
    assert r["breakeven_hours_per_day"] == h and r["breakeven_utilisation"] == pytest.approx(h / 24, abs=1e-3)
    assert tools.call("rent_vs_buy", {**BASE, "hours_per_day": h * 0.9})["cheaper"] == "rent"
    m = flips["months"]["threshold"]
    assert tools.call("rent_vs_buy", {**BASE, "months": math.floor(m)})["cheaper"] == "rent"
    assert (
        tools.call("rent_vs_buy", {**BASE, "purchase_cny": flips["purchase_cny"]["threshold"] * 1.05})["cheaper"]
        == "rent"
    )
    assert "低于" in flips["rent_cny_per_hour"]["zh"] and "below" in flips["rent_cny_per_hour"]["en"]


def test_never_breaks_even_when_rent_is_below_running_cost():
    r = tools.call("rent_vs_buy", {**BASE, "rent_cny_per_hour": 0.5})
    assert r["breakeven_months"] is None and r["cheaper"] == "rent"
    assert r["breakeven_hours_per_day"] is None and r["breakeven_utilisation"] is None


def test_residual_lowers_own_total_not_breakeven():
    r0 = tools.call("rent_vs_buy", BASE)
    r1 = tools.call("rent_vs_buy", {**BASE, "residual_value_pct": 20})
    assert r1["own_residual_cny"] == pytest.approx(0.2 * r0["own_upfront_cny"])
    assert r1["own_total_cny"] == pytest.approx(r0["own_total_cny"] - r1["own_residual_cny"], abs=0.1)
    assert r1["breakeven_months"] == r0["breakeven_months"]


def test_every_default_is_stated_with_unit_and_source():
    r = tools.call("rent_vs_buy", BASE)
    by_key = {a["key"]: a for a in r["assumptions"]}
    for key in (
        "purchase_cny",
        "rent_cny_per_hour",
        "node_kw_per_gpu",
        "pue",
        "electricity_cny_per_kwh",
        "hosting_cny_per_kw_month",
        "load_factor",
        "host_share_cny_per_gpu",
        "maintenance_pct_per_year",
        "cost_of_capital_pct_per_year",
        "residual_value_pct",
        "depreciation_years",
        "hours_per_month",
    ):
        assert by_key[key]["default"] is True and by_key[key]["note"], key
    assert by_key["node_kw_per_gpu"]["value"] == pytest.approx(6.5 / 8)
    assert by_key["pue"]["value"] == 1.3
    given = tools.call("rent_vs_buy", {**BASE, "pue": 1.5})
    assert {a["key"]: a for a in given["assumptions"]}["pue"] == {
        "key": "pue",
        "value": 1.5,
        "unit": "",
        "default": False,
        "note": "",
    }


def test_rent_vs_buy_rejects_impossible_inputs():
    for bad in ({"hours_per_day": 25}, {"months": 0}, {"n_gpus": 0}, {"pue": 0.9}):
        with pytest.raises(InvalidInput) as err:
            tools.call("rent_vs_buy", {**BASE, **bad})
        assert err.value.field == next(iter(bad))


# --- data -------------------------------------------------------------------------------


def test_every_price_key_is_a_catalog_gpu():
    for gpu_id in price_table():
        assert get_gpu(gpu_id).id == gpu_id


def test_price_quotes_are_sourced_and_dated():
    for gpu_id, prices in price_table().items():
        for q in prices.quotes:
            assert q.source.url.startswith("http"), gpu_id
            assert q.source.as_of.year >= 2024
            if q.kind == "rental":
                assert q.high_cny < 200, (gpu_id, "rental is per card-hour")
            else:
                assert q.low_cny > 1000, (gpu_id, "purchase is per card")


def test_guide_defaults_are_kept():
    """The seed guide's table is the default for the four GPUs it names."""
    expect = {
        "a100-sxm4-80gb": (60000, 90000, 15, 25),
        "h800-sxm5-80gb": (100000, 150000, 25, 40),
        "h100-sxm5-80gb": (150000, 200000, 35, 50),
        "ascend-910b": (40000, 70000, 10, 18),
    }
    for gpu_id, (plo, phi, rlo, rhi) in expect.items():
        p = price_table()[gpu_id]
        assert (p.default("purchase").low_cny, p.default("purchase").high_cny) == (plo, phi)
        assert (p.default("rental").low_cny, p.default("rental").high_cny) == (rlo, rhi)


def test_tco_defaults_inside_their_ranges():
    for key, p in tco_params().items():
        assert p.low <= p.default <= p.high, key
        assert p.note, key


# --- CLI --------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_cost_json():
    res = runner.invoke(app, ["cost", "--gpu", "A100 80GB", "--hours", "100", "--n-gpus", "8", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["total_cny"] == 16000


def test_cli_cost_table_and_error():
    res = runner.invoke(app, ["cost", "--gpu", "A100 80GB", "--gpu-hours", "1000"])
    assert res.exit_code == 0 and "20,000" in res.stdout
    bad = runner.invoke(app, ["cost", "--gpu", "A100 80GB", "--gpu-hours", "0"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "gpu_hours" in bad.output


def test_cli_rent_vs_buy_writes_png(tmp_path):
    png = tmp_path / "tco.png"
    res = runner.invoke(
        app,
        [
            "rent-vs-buy",
            "--gpu",
            "A100 80GB",
            "--n-gpus",
            "8",
            "--hours-per-day",
            "24",
            "--months",
            "36",
            "--plot",
            str(png),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cheaper"] == "buy"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_cli_rent_vs_buy_table():
    res = runner.invoke(app, ["rent-vs-buy", "--gpu", "A100 80GB", "--hours-per-day", "8"])
    assert res.exit_code == 0, res.output
    assert "Rent." in res.stdout and "What would flip it" in res.stdout


def test_cli_plot_without_matplotlib(monkeypatch, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    res = runner.invoke(app, ["rent-vs-buy", "--gpu", "A100 80GB", "--plot", str(tmp_path / "x.png")])
    assert res.exit_code == 2
    assert "pip install 'gpu-advisor[plot]'" in res.output
    assert not (tmp_path / "x.png").exists()


def test_a_racks_power_limit_gives_whole_servers_per_rack_and_the_racks_needed():
    """DGX A100 draws 6.5 kW at full load: a 20 kW rack holds 3, so 64 GPUs (8 servers) need 3 racks."""
    r = tools.call("power_draw", {"gpu": "a800", "n_gpus": 64, "rack_limit_kw": 20})
    assert r["server_kw"] == 6.5 and r["servers_per_rack_at_limit"] == 3 and r["racks_at_limit"] == 3
    tight = tools.call("power_draw", {"gpu": "h100", "n_gpus": 8, "rack_limit_kw": 10})
    assert tight["servers_per_rack_at_limit"] == 0 and tight["racks_at_limit"] is None
    assert tools.call("power_draw", {"gpu": "h100"})["servers_per_rack_at_limit"] is None
