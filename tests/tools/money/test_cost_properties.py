"""Property tests: cost is linear in GPU-hours; break-even moves the right way with each lever."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools

GPU = "A100 80GB"
prices = st.floats(min_value=0.5, max_value=80, allow_nan=False)
hours = st.floats(min_value=1, max_value=1e6, allow_nan=False)


def _be(**kw) -> float:
    """Break-even months, with "never" as +inf so comparisons read naturally."""
    r = tools.call("rent_vs_buy", {"gpu": GPU, "n_gpus": 8, **kw})
    return float("inf") if r["breakeven_months"] is None else r["breakeven_months"]


@settings(max_examples=40, deadline=None)
@given(h=hours, k=st.floats(min_value=0.1, max_value=100, allow_nan=False), p=prices)
def test_cost_is_linear_in_gpu_hours(h, k, p):
    one = tools.call("run_cost", {"gpu": GPU, "gpu_hours": h, "price_cny_per_hour": p})
    many = tools.call("run_cost", {"gpu": GPU, "gpu_hours": h * k, "price_cny_per_hour": p})
    # totals are rounded to the fen: compare each with the exact product, then the ratio
    assert one["total_cny"] == pytest.approx(p * h, abs=0.006)
    assert many["total_cny"] == pytest.approx(p * h * k, abs=0.006)
    assert many["low_cny"] == pytest.approx(one["low_cny"] * k, rel=1e-6, abs=0.006 * (k + 1))


@settings(max_examples=30, deadline=None)
@given(p1=prices, p2=prices)
def test_higher_rent_means_owning_pays_off_sooner(p1, p2):
    lo, hi = sorted((p1, p2))
    assert _be(rent_cny_per_hour=hi) <= _be(rent_cny_per_hour=lo)


@settings(max_examples=30, deadline=None)
@given(e1=st.floats(min_value=0, max_value=3), e2=st.floats(min_value=0, max_value=3))
def test_dearer_electricity_means_owning_pays_off_later(e1, e2):
    lo, hi = sorted((e1, e2))
    assert _be(electricity_cny_per_kwh=hi) >= _be(electricity_cny_per_kwh=lo)


@settings(max_examples=30, deadline=None)
@given(h1=st.floats(min_value=0.5, max_value=24), h2=st.floats(min_value=0.5, max_value=24))
def test_more_hours_a_day_means_owning_pays_off_sooner(h1, h2):
    lo, hi = sorted((h1, h2))
    assert _be(hours_per_day=hi) <= _be(hours_per_day=lo)


@settings(max_examples=30, deadline=None)
@given(c1=st.floats(min_value=1000, max_value=500000), c2=st.floats(min_value=1000, max_value=500000))
def test_dearer_cards_mean_owning_pays_off_later(c1, c2):
    lo, hi = sorted((c1, c2))
    assert _be(purchase_cny=hi) >= _be(purchase_cny=lo)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(min_value=1, max_value=120), p=prices)
def test_verdict_agrees_with_breakeven_when_nothing_is_resold(m, p):
    r = tools.call("rent_vs_buy", {"gpu": GPU, "n_gpus": 8, "months": m, "rent_cny_per_hour": p})
    be = r["breakeven_months"]
    if be is not None and abs(be - m) > 0.01:
        assert r["cheaper"] == ("buy" if be < m else "rent")
    if be is None:
        assert r["cheaper"] == "rent"
