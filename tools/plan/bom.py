"""The bill of materials of `nodes` servers of one platform: cards, the rest of each server, the fabric between
servers, and the racks at a power limit.

    cards        = nodes × GPUs per node × the card's purchase quote (low–high)
    host         = nodes × GPUs per node × tco.yaml host_share_cny_per_gpu (a stated ratio, the same at both ends)
    fabric ports = nodes × NICs per node (when nodes > 1)
    switches     = 1 for up to 64 ports; else a two-tier leaf–spine: ⌈ports / 32⌉ leaves (half their ports down),
                   ⌈leaves / 2⌉ spines
    cables       = ports × the per-port optics and cable price
    racks        = ⌈nodes / servers per rack⌉, servers per rack = ⌊rack_kw / node_kw⌋ (at least 1)
"""

from __future__ import annotations

import datetime as dt
import math

from tools.catalog import price_book
from tools.catalog.lookup import get_gpu
from tools.catalog.prices import book_cny, prices_for, tco_params
from tools.catalog.servers import Platform, network_parts
from tools.schemas.plan import BomLine, Network

SWITCH_PORTS = 64
#: NICs at or above this rate join a priced RDMA fabric (InfiniBand/RoCE); slower ones an Ethernet switch we cannot price
FABRIC_GBPS = 200


def card_quote(p: Platform) -> tuple[float, float, str] | None:
    """(low, high, source) per card: the platform's own card price, else the purchase quote of its GPU (or of the
    GPU it names as a stand-in)."""
    own = prices_for(get_gpu(p.gpu))
    booked = own.default("purchase") if own else None
    if booked is not None and booked.channel == "price-book":  # the deployment's own quote for the card wins
        return booked.low_cny, booked.high_cny, f"{booked.note} {booked.cite()}"
    if p.card_price is not None:
        return p.card_price.low_cny, p.card_price.high_cny, f"{p.card_price.note}; {p.card_price.source.cite()}"
    gpu = get_gpu(p.price.card_price_from or p.gpu)
    table = prices_for(gpu)
    quote = table.default("purchase") if table else None
    if quote is None:
        return None
    stand_in = f" (stand-in for {p.gpu}: {p.price.note})" if p.price.card_price_from else ""
    return quote.low_cny, quote.high_cny, f"{quote.note}{stand_in} {quote.cite()}"


def server_quote(p: Platform) -> tuple[float, str] | None:
    """(元 per server, source) from the deployment's price book, when it prices this platform as a whole server."""
    book = price_book.current()
    row = book.for_server(p.id) if book else None
    if row is None:
        return None
    return book_cny(row), f"{book.label(row, dt.date.today())}; {book.file} row {row.row} ({row.currency})"


def host_share() -> tuple[float, str]:
    param = tco_params()["host_share_cny_per_gpu"]
    return param.default, param.cite()


def fx() -> float:
    return tco_params()["fx_cny_per_usd"].default


def network(p: Platform, nodes: int) -> Network | None:
    if nodes <= 1:
        return None
    ports = nodes * p.nics.count
    if ports <= SWITCH_PORTS:
        switches, tiers = 1, 1
    else:
        leaves = math.ceil(ports / (SWITCH_PORTS // 2))
        switches, tiers = leaves + math.ceil(leaves / 2), 2
    return Network(kind=p.nics.kind, ports=ports, gbps=p.nics.gbps, switches=switches, tiers=tiers)


def bill(p: Platform, nodes: int, fabric: bool = True) -> tuple[list[BomLine], bool]:
    """The BOM lines and whether every line is priced; `fabric` false: no RDMA network between the servers (serving
    replicas that each stay inside one server need only the data centre's front-end Ethernet)."""
    n_gpus = nodes * p.gpus_per_node
    lines: list[BomLine] = []
    priced = True
    server = server_quote(p)
    quote = card_quote(p) if p.price.basis != "none" else None
    if server is not None:  # the price book quotes the whole server: one line, cards and host included
        lines.append(
            BomLine(
                item=f"{p.name} (whole server)",
                qty=nodes,
                low_cny=server[0] * nodes,
                high_cny=server[0] * nodes,
                source=server[1],
            )
        )
    elif quote is None:
        priced = False
        lines.append(
            BomLine(item=f"{p.name} (whole server)", qty=nodes, low_cny=None, high_cny=None, source=p.price.note)
        )
    else:
        low, high, source = quote
        lines.append(
            BomLine(
                item=f"GPU cards ({get_gpu(p.gpu).name})",
                qty=n_gpus,
                low_cny=low * n_gpus,
                high_cny=high * n_gpus,
                source=source,
            )
        )
        share, share_source = host_share()
        lines.append(
            BomLine(
                item=f"{p.name}: chassis, CPUs, RAM, NICs, PSUs (host share per GPU)",
                qty=nodes,
                low_cny=share * n_gpus,
                high_cny=share * n_gpus,
                source=f"tco.yaml host_share_cny_per_gpu {share:g} 元/卡 × {n_gpus}; {share_source}",
            )
        )
    net = network(p, nodes) if fabric else None
    if net is not None:
        parts = network_parts()
        if p.nics.gbps >= FABRIC_GBPS:
            switch = parts["ib_switch_400g_64port"] if "InfiniBand" in p.nics.kind else parts["roce_switch_200g_64port"]
            cable = parts["cable_per_gpu"]
            rate = fx()
            lines.append(
                BomLine(
                    item=switch.item,
                    qty=net.switches,
                    low_cny=switch.usd * rate * net.switches,
                    high_cny=switch.usd * rate * net.switches,
                    source=f"${switch.usd:g} × {rate:g} 元/$ ({switch.note}); {switch.source.cite()}",
                )
            )
            lines.append(
                BomLine(
                    item=cable.item,
                    qty=net.ports,
                    low_cny=cable.usd * rate * net.ports,
                    high_cny=cable.usd * rate * net.ports,
                    source=f"${cable.usd:g} × {rate:g} 元/$ per port ({cable.note}); {cable.source.cite()}",
                )
            )
        else:
            priced = False
            lines.append(
                BomLine(
                    item=f"{p.nics.gbps:g} GbE switch ({net.ports} ports)",
                    qty=net.switches,
                    low_cny=None,
                    high_cny=None,
                    source="no public price found; ask for a quote",
                )
            )
    return lines, priced


def racks(p: Platform, nodes: int, rack_kw: float) -> tuple[int, int, bool]:
    """(racks, servers per rack, whether one server alone exceeds the rack's power)."""
    per_rack = max(1, math.floor(rack_kw / p.node_kw.value))
    return math.ceil(nodes / per_rack), per_rack, p.node_kw.value > rack_kw


def totals(lines: list[BomLine], priced: bool) -> tuple[float | None, float | None]:
    if not priced:
        return None, None
    return sum(line.low_cny or 0 for line in lines), sum(line.high_cny or 0 for line in lines)
