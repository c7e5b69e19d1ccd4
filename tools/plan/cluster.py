"""`plan_cluster`: a GPU count that one server cannot hold -> the servers, the network between them, power and
racks, and the bill of materials, on the card's own server platform (tools/data/servers.yaml).

    nodes   = ⌈GPUs / GPUs per node⌉ (the platform's; 8 where the catalog has no platform for the card, stated)
    fabric  = bom.network: nodes × NICs per node ports, one switch up to 64 ports, else a two-tier leaf–spine
    power   = nodes × the platform's node kW (else tco.yaml's node factor × GPUs per node × the card's TDP)
    racks   = bom.racks at `rack_kw`
    BOM     = bom.bill (cards, host share, switches, optics) where the card has a platform and prices
    host    = with host_workload: each server's CPU cores, system RAM and disk for the job (tools/plan/host.py)

A count within one node comes back as one node and no fabric. Pure: catalog data in, figures out.
"""

from __future__ import annotations

import math

from tools.catalog.lookup import get_gpu
from tools.catalog.prices import tco_params
from tools.catalog.records import GpuSpec
from tools.catalog.servers import Platform, platforms
from tools.plan import bom
from tools.plan.host import host_side
from tools.schemas.common import assume
from tools.schemas.plan import PlanClusterInput, PlanClusterOutput

#: GPUs per server where the catalog has no platform for the card (HGX/OAM boards and 8-card PCIe servers hold 8)
DEFAULT_PER_NODE = 8


def _platform(gpu_id: str) -> Platform | None:
    """The card's own platform with the most GPUs per node (8-GPU boards before 4-card servers)."""
    own = [p for p in platforms() if p.gpu == gpu_id]
    return max(own, key=lambda p: p.gpus_per_node) if own else None


def _host(inp: PlanClusterInput, gpus_per_node: int, gpu: GpuSpec):
    if inp.host_workload is None:
        return None
    per = min(gpus_per_node, inp.n_gpus)  # one server of fewer cards than a board holds is sized as it is
    return host_side(per, gpu.memory_gb, inp.host_workload, inp.model, inp.method, inp.precision, inp.host_need_gb,
                     consumer=gpu.segment == "consumer")  # fmt: skip


def plan_cluster(inp: PlanClusterInput) -> PlanClusterOutput:
    """Servers for N GPUs."""
    gpu = get_gpu(inp.gpu)
    p = _platform(gpu.id)
    rack_kw = assume(
        "rack_kw", inp.rack_kw, "kW", "rack_kw" not in inp.model_fields_set, note="power one rack may draw"
    )
    if p is not None:
        nodes = math.ceil(inp.n_gpus / p.gpus_per_node)
        lines, priced = bom.bill(p, nodes)
        low, high = bom.totals(lines, priced)
        n_racks, per_rack, _ = bom.racks(p, nodes, inp.rack_kw)
        return PlanClusterOutput.trusted(
            gpu=gpu.name, n_gpus=inp.n_gpus, platform=p.id, platform_name=p.name, platform_name_zh=p.name_zh,
            gpus_per_node=p.gpus_per_node, nodes=nodes, network=bom.network(p, nodes), nic_kind=p.nics.kind,
            switch_ports=bom.SWITCH_PORTS,
            node_kw=p.node_kw.value, power_kw=round(nodes * p.node_kw.value, 2), racks=n_racks,
            servers_per_rack=per_rack, bom=lines, total_low_cny=low, total_high_cny=high,
            host=_host(inp, p.gpus_per_node, gpu),
            assumptions=[rack_kw, assume("node_kw", p.node_kw.value, "kW", note=p.node_kw.note)],
        )  # fmt: skip
    nodes = math.ceil(inp.n_gpus / DEFAULT_PER_NODE)
    factor = tco_params()["node_power_factor_vs_tdp"].default
    node_kw = round(factor * DEFAULT_PER_NODE * (gpu.tdp_w or 0) / 1000, 2) if gpu.tdp_w else None
    per_rack = max(1, math.floor(inp.rack_kw / node_kw)) if node_kw else None
    return PlanClusterOutput.trusted(
        gpu=gpu.name, n_gpus=inp.n_gpus, platform=None, platform_name=None, platform_name_zh=None,
        gpus_per_node=DEFAULT_PER_NODE, nodes=nodes, network=None, nic_kind=None, switch_ports=bom.SWITCH_PORTS,
        node_kw=node_kw,
        power_kw=round(nodes * node_kw, 2) if node_kw else None,
        racks=math.ceil(nodes / per_rack) if per_rack else None, servers_per_rack=per_rack, bom=[],
        total_low_cny=None, total_high_cny=None, host=_host(inp, DEFAULT_PER_NODE, gpu),
        assumptions=[
            rack_kw,
            assume("gpus_per_node", DEFAULT_PER_NODE, note="no server platform for this card in the catalog: 8 per server"),
            assume("node_power_factor_vs_tdp", factor, note="server power per GPU = factor × the card's TDP"),
        ],
    )  # fmt: skip
