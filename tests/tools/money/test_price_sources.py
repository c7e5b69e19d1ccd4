"""Where a price comes from: a rental price the user gives in US dollars is their price, in 元 at the dated rate
(both stated), never the catalog's in its place; a card with no quote of its own (an A800) is priced at the card it
shares its silicon with, said so."""

import pytest

import tools
from tools.catalog.prices import tco_params

FX = tco_params()["fx_cny_per_usd"].default


@pytest.mark.parametrize("usd", [0.8, 2.2, 4.0])
def test_run_cost_takes_a_dollar_price_at_the_dated_rate(usd):
    r = tools.call("run_cost", {"gpu": "H100", "gpu_hours": 100, "price_usd_per_hour": usd})
    assert r["price_cny_per_hour"] == pytest.approx(usd * FX)
    assert r["total_cny"] == pytest.approx(100 * usd * FX, rel=1e-3)
    assert r["low_cny"] == r["high_cny"] == r["total_cny"]  # the user's one price, no catalog range
    keys = {a["key"]: a for a in r["assumptions"]}
    assert keys["fx_cny_per_usd"]["value"] == FX and f"{usd:g} USD" in keys["price_cny_per_hour"]["note"]


def test_a_given_fx_rate_is_used():
    r = tools.call("run_cost", {"gpu": "H100", "gpu_hours": 10, "price_usd_per_hour": 2, "fx_cny_per_usd": 7.0})
    assert r["price_cny_per_hour"] == pytest.approx(14.0)


def test_rent_vs_buy_weighs_the_dollar_rent_the_user_pays():
    base = {"gpu": "H100", "n_gpus": 8, "hours_per_day": 10, "months": 24}
    cheap = tools.call("rent_vs_buy", {**base, "rent_usd_per_hour": 2.5})
    assert cheap["rent_cny_per_hour"] == pytest.approx(2.5 * FX)
    dear = tools.call("rent_vs_buy", {**base, "rent_usd_per_hour": 9.0})
    # the verdict follows the price: the cheap rent beats buying at 10 h a day, the dear one does not
    assert cheap["cheaper"] == "rent" and dear["cheaper"] == "buy"


def test_a_price_in_yuan_wins_over_one_in_dollars():
    r = tools.call("run_cost", {"gpu": "H100", "gpu_hours": 10, "price_cny_per_hour": 20, "price_usd_per_hour": 2})
    assert r["price_cny_per_hour"] == 20


def test_a_card_without_a_quote_is_priced_as_its_silicon_twin_and_says_so():
    from tools.catalog.lookup import get_gpu
    from tools.catalog.prices import prices_for

    a800, a100 = get_gpu("a800-sxm4-80gb"), get_gpu("a100-sxm4-80gb")
    assert a800.same_silicon_as == a100.id and prices_for(a800) is None  # the case this is for
    twin = tools.call("run_cost", {"gpu": "A800", "gpu_hours": 100})
    own = tools.call("run_cost", {"gpu": "A100 80GB", "gpu_hours": 100})
    assert twin["total_cny"] == own["total_cny"]
    said = {a["key"]: a for a in twin["assumptions"]}
    assert said["rental_price_of"]["value"] == a100.name
    rvb = tools.call("rent_vs_buy", {"gpu": "A800", "n_gpus": 8, "hours_per_day": 8, "months": 36})
    assert {"rental_price_of", "purchase_price_of"} <= {a["key"] for a in rvb["assumptions"]}
    assert "rental_price_of" not in {a["key"] for a in own["assumptions"]}
