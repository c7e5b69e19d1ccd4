"""`plan_cluster` (issue 26): a GPU count beyond one server, worked by hand from tools/data/servers.yaml.

144 × H800 on HGX H800 (8 per node, 8 × 400G NICs, 10.2 kW):  nodes 144/8 = 18; ports 18 × 8 = 144;
    144 > 64 ports: leaves ⌈144 / 32⌉ = 5, spines ⌈5 / 2⌉ = 3 -> 8 switches, two tiers;
    power 18 × 10.2 = 183.6 kW; ⌊15 / 10.2⌋ = 1 server per 15 kW rack -> 18 racks
24 × A100 80GB on HGX A100 (8 per node, 8 × 200G HDR, 6.5 kW):  3 nodes, 24 ports, 1 switch;
    19.5 kW; ⌊15 / 6.5⌋ = 2 per rack -> ⌈3 / 2⌉ = 2 racks
40 × V100 (no platform in the catalog): 8 per server assumed -> 5 servers, fabric not sized;
    server 1.8 × 8 × 300 W = 4.32 kW -> 21.6 kW; ⌊15 / 4.32⌋ = 3 per rack -> 2 racks
"""

from __future__ import annotations

import pytest

import tools


def test_144_h800_are_18_servers_on_a_two_tier_fabric_in_18_racks():
    c = tools.call("plan_cluster", {"gpu": "H800", "n_gpus": 144})
    assert (c["nodes"], c["gpus_per_node"], c["platform"]) == (18, 8, "hgx-h800-8gpu")
    assert c["network"] == {**c["network"], "ports": 144, "gbps": 400, "switches": 8, "tiers": 2}
    assert c["power_kw"] == pytest.approx(183.6) and (c["racks"], c["servers_per_rack"]) == (18, 1)
    items = {line["item"]: line for line in c["bom"]}
    assert items["GPU cards (NVIDIA H800 SXM5 80GB)"]["qty"] == 144
    assert sum(line["low_cny"] for line in c["bom"]) == pytest.approx(c["total_low_cny"])


def test_24_a100_are_3_servers_one_switch_two_racks():
    c = tools.call("plan_cluster", {"gpu": "A100 80GB", "n_gpus": 24})
    assert (c["nodes"], c["network"]["ports"], c["network"]["gbps"], c["network"]["switches"]) == (3, 24, 200, 1)
    assert c["power_kw"] == pytest.approx(19.5) and c["racks"] == 2


def test_a_card_without_a_platform_is_counted_at_8_per_server_and_says_so():
    c = tools.call("plan_cluster", {"gpu": "V100", "n_gpus": 40})
    assert c["platform"] is None and c["nodes"] == 5 and c["network"] is None and c["bom"] == []
    assert c["node_kw"] == pytest.approx(4.32) and c["racks"] == 2
    assert any(a["key"] == "gpus_per_node" for a in c["assumptions"])


def test_one_server_needs_no_fabric():
    c = tools.call("plan_cluster", {"gpu": "A800", "n_gpus": 8})
    assert c["nodes"] == 1 and c["network"] is None


def test_a_fit_beyond_one_server_ends_with_the_servers_network_and_racks(advisor):
    t = advisor.ask("How many A100 80GB GPUs do I need for full training of Llama-2-70B?")
    fit = next(c for c in t.tool_calls if c.tool == "fit_training").output
    need = fit["n_gpus"] if fit["fits"] else fit["min_gpus"]
    cluster = next(c for c in t.tool_calls if c.tool == "plan_cluster").output
    assert cluster["n_gpus"] == need > 8
    assert f"**Across servers:** {need} GPUs (NVIDIA A100 SXM4 80GB) take {cluster['nodes']} servers" in t.answer
    assert f"{cluster['network']['ports']} ports at 200 Gb/s" in t.answer and t.ungrounded == []
