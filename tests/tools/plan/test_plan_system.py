"""plan_system: the BOM arithmetic worked by hand, what buyers in mainland China are shown, budgets and deadlines,
the three picks, and monotone rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.catalog.lookup import get_gpu
from tools.catalog.servers import network_parts, platform, platforms
from tools.plan import bom

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = yaml.safe_load((ROOT / "tests/golden/systems.yaml").read_text(encoding="utf-8"))


def system(**args) -> dict:
    return tools.call("plan_system", args)


def option(out: dict, label: str) -> dict:
    return next(o for o in out["options"] if o["label"] == label)


@pytest.mark.parametrize("case", GOLDEN["bom"], ids=lambda c: c["id"])
def test_bom_golden(case):
    p = platform(case["platform"])
    lines, priced = bom.bill(p, case["nodes"])
    low, high = bom.totals(lines, priced)
    net = bom.network(p, case["nodes"])
    assert priced
    assert low == pytest.approx(case["expect"]["total_low_cny"], abs=1)
    assert high == pytest.approx(case["expect"]["total_high_cny"], abs=1)
    assert (net.switches if net else 0) == case["expect"]["switches"]
    assert case["nodes"] * p.node_kw.value == pytest.approx(case["expect"]["power_kw"])


@pytest.mark.parametrize("case", GOLDEN["racks"], ids=lambda c: f"{c['platform']}-{c['rack_kw']}kW")
def test_racks_golden(case):
    n_racks, per_rack, too_hot = bom.racks(platform(case["platform"]), case["nodes"], case["rack_kw"])
    assert (per_rack, n_racks) == (case["expect_per_rack"], case["expect_racks"])
    assert too_hot == (platform(case["platform"]).node_kw.value > case["rack_kw"])


def test_every_platform_figure_has_a_source_and_a_date():
    for p in platforms():
        get_gpu(p.gpu)  # a real catalog card
        assert p.node_kw.source.url.startswith("http") and p.node_kw.source.as_of
        assert p.intra_node.source is None or p.intra_node.source.url.startswith("http")
        if p.card_price:
            assert p.card_price.source.url.startswith("http")
        assert p.price.note
    for part in network_parts().values():
        assert part.source.url.startswith("http") and part.usd > 0


def test_mainland_buyers_see_purchasable_cards_and_named_restricted_ones_flagged():
    out = system(job="finetune", model="Qwen2.5-14B", budget_cny=2_000_000)
    assert out["options"] and not any(o["export_restricted"] for o in out["options"])
    assert any("hgx-h800-8gpu" in s and "not purchasable" in s for s in out["skipped"])
    named = system(job="finetune", model="Qwen2.5-14B", platforms=["H800"])
    assert [o["label"] for o in named["options"]] == ["hgx-h800-8gpu"] and named["options"][0]["export_restricted"]


def test_domestic_means_domestic_vendors_only():
    out = system(job="finetune", model="Qwen2.5-7B", domestic=True)
    assert {o["label"] for o in out["options"]} == {"atlas-800t-a2"}


def test_a_budget_of_200_wan_for_a_14b_finetune_is_servers_not_one_card():
    """预算 200 万，做 7B 到 14B 的微调：whole servers within the budget, with hours, racks and a BOM."""
    out = system(job="finetune", model="Qwen2.5-14B", budget_cny=2_000_000)
    for o in out["options"]:
        assert o["n_gpus"] >= 8 and o["servers"][0]["nodes"] >= 1 and o["hours"] > 0
        if o["total_high_cny"] is not None:
            assert o["total_high_cny"] <= 2_000_000 and o["bom"]
    assert out["cheapest"] and out["fastest"] and out["best_value"]


def test_a_deadline_buys_more_nodes_and_a_fabric():
    out = system(job="train", model="7B", tokens="100B", deadline_hours=336, domestic=True)
    o = option(out, "atlas-800t-a2")
    assert o["hours"] <= 336 and o["servers"][0]["nodes"] > 1
    assert o["network"]["ports"] == o["servers"][0]["nodes"] * 8 and any("switch" in b["item"] for b in o["bom"])


def test_an_impossible_deadline_says_so_and_the_nearest():
    out = system(job="train", model="70B", tokens="2T", deadline_hours=1, max_nodes=8, domestic=True)
    assert out["cheapest"] is None and "deadline" in option(out, "atlas-800t-a2")["unmet"]
    assert "atlas-800t-a2" in out["nearest"] and "h" in option(out, "atlas-800t-a2")["note"]


def test_a_budget_below_one_server_says_what_the_budget_buys():
    out = system(job="serve", model="Qwen2.5-72B", concurrency=20, budget_cny=200_000)
    over = [o for o in out["options"] if "budget" in o["unmet"]]
    assert over and all("the budget buys 0 of" in o["note"] for o in over)
    assert "元" in out["nearest"]


def test_serving_replicas_need_no_rdma_fabric():
    out = system(job="serve", model="Qwen3-32B", concurrency=200, platforms=["H20"])
    o = option(out, "hgx-h20-8gpu")
    assert o["servers"][0]["nodes"] > 1 and o["network"] is None
    assert o["capacity"]["concurrency"] == 200 and o["capacity"]["gpus_per_replica"] <= 8


def test_the_picks_coincide_only_with_a_reason():
    out = system(job="finetune", model="Qwen2.5-7B", domestic=True)
    assert out["cheapest"] == out["fastest"] == "atlas-800t-a2"
    assert "cheapest=fastest" in out["coincide"] and "only_one_option_meets" in out["coincide"]


def test_serving_without_traffic_plans_one_request_and_says_so():
    out = system(job="serve", model="Qwen3-32B", platforms=["H20"])
    assert option(out, "hgx-h20-8gpu")["capacity"]["concurrency"] == 1
    assert any(a["key"] == "concurrency" and "no traffic given" in a["note"] for a in out["assumptions"])


def test_options_carry_the_contract_fields():
    o = system(job="finetune", model="Qwen2.5-7B", domestic=True)["options"][0]
    assert {"servers", "network", "power_kw", "racks", "bom", "total_low_cny", "total_high_cny", "hours"} <= set(o)
    assert {"platform", "gpus_per_node", "nodes"} <= set(o["servers"][0])
    assert {"item", "qty", "low_cny", "high_cny", "source"} <= set(o["bom"][0])


SMALL = settings(max_examples=10, deadline=None)


@SMALL
@given(budget=st.floats(1e6, 2e7), more=st.floats(0, 2e7))
def test_more_budget_never_buys_fewer_nodes(budget, more):
    def nodes(b):
        return option(system(job="finetune", model="Qwen2.5-14B", budget_cny=b, domestic=True), "atlas-800t-a2")[
            "servers"
        ][0]["nodes"]

    assert nodes(budget) <= nodes(budget + more)


@SMALL
@given(hours=st.floats(20, 2000), less=st.floats(0, 1))
def test_a_tighter_deadline_never_needs_fewer_nodes(hours, less):
    def nodes(h):
        out = system(job="train", model="7B", tokens="50B", deadline_hours=h, domestic=True)
        return option(out, "atlas-800t-a2")["servers"][0]["nodes"]

    assert nodes(hours * (1 - less * 0.9)) >= nodes(hours)


@SMALL
@given(c=st.integers(1, 3000), extra=st.integers(0, 3000))
def test_more_serving_traffic_never_needs_fewer_servers(c, extra):
    def nodes(k):
        out = system(job="serve", model="Qwen3-32B", concurrency=k, platforms=["H20"])
        return option(out, "hgx-h20-8gpu")["servers"][0]["nodes"]

    assert nodes(c) <= nodes(c + extra)
