"""Communication time of a training step: data-parallel gradient sync and tensor-parallel collectives.

Conventions (stated in every output that uses them):
- a GPU's `interconnect_gb_s` is the NVLink (or PCIe) bidirectional total; one direction is half;
- a ring all-reduce of B bytes over n ranks moves 2·(n−1)/n·B through each rank's link, so it takes
  2·(n−1)/n·B / bus_bandwidth (NCCL's "bus bandwidth" convention);
- between nodes NCCL spreads the rings over every NIC of a node, so the bus bandwidth is the node's total
  NIC bandwidth (capped by the scale-up link), times an efficiency from `tools/data/network.yaml`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import DATA_DIR, normalize
from tools.errors import UnknownFabric
from tools.memo import per_record
from tools.units import GB
from tools.yaml_data import load_yaml

#: share of the NVLink/PCIe per-direction rate that a large NCCL all-reduce reaches (an assumption:
#: nccl-tests bus bandwidth on 8-GPU NVLink servers is typically 75–85% of the per-direction spec)
SCALE_UP_EFFICIENCY = 0.8

#: PCIe x16 bidirectional totals by generation, GB/s (PCI-SIG: 16/32/64/128 GT/s per lane → ≈ 2·lanes·rate/8)
PCIE_X16_GB_S = {3: 32.0, 4: 64.0, 5: 128.0, 6: 256.0}


@dataclass(frozen=True)
class Fabric:
    id: str
    name: str
    aliases: tuple[str, ...]
    gbit_s: float
    ports_per_node: int
    efficiency: float
    source_title: str
    source_url: str

    def node_gb_s(self) -> float:
        """Achieved bytes/s (in GB/s) one node can push to the others, all NICs together."""
        return self.gbit_s / 8 * self.ports_per_node * self.efficiency


@functools.cache
def fabrics() -> tuple[Fabric, ...]:
    with open(DATA_DIR / "network.yaml", encoding="utf-8") as fh:
        rows = load_yaml(fh)
    return tuple(
        Fabric(
            id=r["id"],
            name=r["name"],
            aliases=tuple(r.get("aliases", ())),
            gbit_s=float(r["gbit_s"]),
            ports_per_node=int(r["ports_per_node"]),
            efficiency=float(r["efficiency"]),
            source_title=r["source"]["title"],
            source_url=r["source"]["url"],
        )
        for r in rows
    )


@functools.lru_cache(maxsize=256)
def get_fabric(name: str) -> Fabric:
    key = normalize(name)
    for f in fabrics():
        if key in {normalize(f.id), *(normalize(a) for a in f.aliases)}:
            return f
    raise UnknownFabric(name, [f.id for f in fabrics()])


@per_record
def scale_up_gb_s(gpu: GpuSpec) -> tuple[float, str]:
    """Achieved one-direction bus bandwidth inside a node (GB/s) and how it was derived (once per GPU record)."""
    if gpu.interconnect_gb_s:
        total, kind = gpu.interconnect_gb_s, gpu.interconnect.kind
    else:
        total, kind = PCIE_X16_GB_S.get(gpu.pcie_gen or 4, 64.0), f"PCIe {gpu.pcie_gen or 4}.0 x16"
    return (
        total / 2 * SCALE_UP_EFFICIENCY,
        f"{kind}: {total:g} GB/s bidirectional → {total / 2:g} per direction × {SCALE_UP_EFFICIENCY}",
    )


def ring_allreduce_s(n_bytes: float, ranks: int, bus_gb_s: float) -> float:
    """Seconds for a ring all-reduce of `n_bytes` over `ranks` at `bus_gb_s` bus bandwidth."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return 2 * (ranks - 1) / ranks * n_bytes / (bus_gb_s * GB)


@dataclass(frozen=True)
class StepComm:
    """Per-GPU seconds of one optimizer step spent in communication."""

    dp_s: float  # gradient all-reduce, total
    dp_exposed_s: float
    tp_s: float  # tensor-parallel all-reduces (not overlapped)
    dp_bus_gb_s: float
    tp_bus_gb_s: float

    @property
    def exposed_s(self) -> float:
        return self.dp_exposed_s + self.tp_s


def step_comm(
    *,
    gpu: GpuSpec,
    fabric: Fabric,
    n_gpus: int,
    gpus_per_node: int,
    tp: int,
    pp: int,
    grad_bytes_per_gpu: float,
    tokens_per_replica: float,
    hidden: int,
    layers: int,
    tp_allreduces_per_layer: int,
    backward_s: float,
    overlap: float,
) -> StepComm:
    """Communication of one step.

    Data parallel: a ring all-reduce of each GPU's gradient shard over the dp = n/(tp·pp) replicas,
    over NVLink/PCIe when they share a node, else over the fabric (bus bandwidth = the node's NICs,
    capped by the scale-up link). A share `overlap` of it hides behind backward compute, and no more
    than the backward pass itself can hide: exposed = max((1 − overlap)·t, t − backward).
    Tensor parallel (Megatron): `tp_allreduces_per_layer` all-reduces of the activations
    (tokens × hidden × 2 bytes) per layer on the GPU's pipeline stage, not overlapped: inside the node, or
    over the fabric when the tensor-parallel group is larger than a node.
    """
    t_dp, t_tp, dp_bus, tp_bus = comm_times(
        gpu=gpu,
        fabric=fabric,
        n_gpus=n_gpus,
        gpus_per_node=gpus_per_node,
        tp=tp,
        pp=pp,
        grad_bytes_per_gpu=grad_bytes_per_gpu,
        tokens_per_replica=tokens_per_replica,
        hidden=hidden,
        layers=layers,
        tp_allreduces_per_layer=tp_allreduces_per_layer,
    )
    return StepComm(t_dp, exposed_dp_s(t_dp, backward_s, overlap), t_tp, dp_bus, tp_bus)


def comm_times(
    *,
    gpu: GpuSpec,
    fabric: Fabric,
    n_gpus: int,
    gpus_per_node: int,
    tp: int,
    pp: int,
    grad_bytes_per_gpu: float,
    tokens_per_replica: float,
    hidden: int,
    layers: int,
    tp_allreduces_per_layer: int,
) -> tuple[float, float, float, float]:
    """The parts of `step_comm` that do not depend on compute speed: (gradient all-reduce s, tensor-parallel s,
    data-parallel bus GB/s, tensor-parallel bus GB/s); a calculator timing several utilisations works them out once."""
    dp = n_gpus // (tp * pp)
    up, _ = scale_up_gb_s(gpu)
    dp_bus = up if n_gpus <= gpus_per_node else min(up, fabric.node_gb_s())
    t_dp = ring_allreduce_s(grad_bytes_per_gpu, dp, dp_bus)
    act_bytes = tokens_per_replica * hidden * 2
    tp_bus = up if tp <= gpus_per_node else min(up, fabric.node_gb_s())
    t_tp = (layers / pp) * tp_allreduces_per_layer * ring_allreduce_s(act_bytes, tp, tp_bus)
    return t_dp, t_tp, dp_bus, tp_bus


def exposed_dp_s(t_dp: float, backward_s: float, overlap: float) -> float:
    """Gradient all-reduce seconds not hidden behind backward compute: max((1 − overlap)·t, t − backward, 0)."""
    return max(0.0, max((1 - overlap) * t_dp, t_dp - backward_s))
