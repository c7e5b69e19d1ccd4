"""rent_vs_buy as the hardware will be used (issue 26): one job compared with renting that job, and the IDC side
(its price per card-hour and occupancy: revenue, running cost, payback, the occupancy floor). Worked by hand from
the catalog figures the outputs state (H800: 32.5 元/卡时 rent mid, 12.5万 card mid, host 4万, 10.2 kW / 8 per card,
load 0.75, PUE 1.3, 0.7 元/kWh, hosting 1,065 元/kW·月, maintenance 5 %/年, capital 3 %/年)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools

KW = 10.2 / 8
ENERGY = KW * 0.75 * 1.3 * 0.7  # 元 per busy card-hour = 0.8702
CAPEX = 125_000 + 40_000  # per card
FIXED = KW * 1065 + CAPEX * (5 + 3) / 100 / 12  # per card-month = 1,357.9 + 1,100 = 2,457.9


def test_one_job_is_compared_with_renting_that_job():
    r = tools.call("rent_vs_buy", {"gpu": "H800", "n_gpus": 8, "job_hours": 30})
    # rent: 8 × 32.5 × 30 = 7,800; own: 8 × 165,000 + 8 × (0.8702 × 30 + 2,457.9 × 30 / 730) = 1,320,000 + 1,017
    assert r["job_rent_cny"] == pytest.approx(7_800)
    assert r["job_own_cny"] == pytest.approx(8 * CAPEX + 8 * (ENERGY * 30 + FIXED * 30 / 730), rel=1e-4)
    assert r["cheaper"] == "rent"
    # jobs before owning wins: 1,320,000 / (7,800 − 1,017) ≈ 194.6
    assert r["jobs_to_break_even"] == pytest.approx(
        8 * CAPEX / (7_800 - 8 * (ENERGY * 30 + FIXED * 30 / 730)), rel=1e-3
    )


def test_the_idc_side_payback_and_occupancy_floor():
    r = tools.call("rent_vs_buy", {"gpu": "H800", "n_gpus": 8, "occupancy": 0.6, "rent_cny_per_hour": 20})
    busy = 0.6 * 730  # 438 h a month
    assert r["hours_per_day"] == pytest.approx(14.4)
    assert r["rent_monthly_cny"] == pytest.approx(8 * 20 * busy)  # revenue 70,080 a month
    running = 8 * (ENERGY * busy + FIXED)
    assert r["own_monthly_cny"] == pytest.approx(running, rel=1e-4)
    assert r["breakeven_months"] == pytest.approx(8 * CAPEX / (8 * 20 * busy - running), rel=1e-3)  # ≈ 27.9
    # below FIXED / (730 × (20 − ENERGY)) ≈ 17.6 % rented the income never covers the running costs
    assert r["payback_floor_utilisation"] == pytest.approx(FIXED / (730 * (20 - ENERGY)), rel=1e-3)


@settings(max_examples=25, deadline=None)
@given(occ=st.floats(0.05, 1.0), more=st.floats(0, 0.5))
def test_higher_occupancy_never_pays_back_later(occ, more):
    def months(o):
        r = tools.call("rent_vs_buy", {"gpu": "H800", "n_gpus": 8, "occupancy": o, "rent_cny_per_hour": 20})
        return r["breakeven_months"] if r["breakeven_months"] is not None else float("inf")

    assert months(min(1.0, occ + more)) <= months(occ)


@settings(max_examples=25, deadline=None)
@given(h=st.floats(1, 5000), more=st.floats(0, 5000))
def test_a_longer_job_never_needs_more_jobs_to_break_even(h, more):
    def jobs(x):
        r = tools.call("rent_vs_buy", {"gpu": "H800", "n_gpus": 8, "job_hours": x})
        return r["jobs_to_break_even"]

    assert jobs(h + more) <= jobs(h) + 0.1  # rounding to 0.1
