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
import math
from dataclasses import dataclass

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import DATA_DIR, normalize
from tools.errors import UnknownFabric
from tools.memo import per_record
from tools.schemas.common import Assumption, assume
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


def bridge_group(gpu: GpuSpec) -> int | None:
    """Cards one NVLink bridge joins (2, or 4 for "2- or 4-card groups"), from the catalog's interconnect kind; None
    for a switched or PCIe-only card."""
    return _link_rates(gpu)[2]


@per_record
def _link_rates(gpu: GpuSpec) -> tuple[float, float, int | None]:
    """(scale-up bus GB/s, PCIe x16 bus GB/s, bridged group size or None), once per GPU record."""
    pcie = PCIE_X16_GB_S.get(gpu.pcie_gen or 4, 64.0) / 2 * SCALE_UP_EFFICIENCY
    kind = gpu.interconnect.kind.lower()
    bridged = "bridge" in kind and gpu.interconnect_gb_s and gpu.interconnect_gb_s > PCIE_X16_GB_S[4]
    return scale_up_gb_s(gpu)[0], pcie, ((4 if "4-card" in kind else 2) if bridged else None)


def ring_bus_gb_s(gpu: GpuSpec, ranks: int) -> float:
    """Inside a node, the bus bandwidth a ring over `ranks` GPUs gets: the scale-up link, but PCIe x16 when the
    ring is larger than the cards one NVLink bridge joins (a bridged pair's ring of 8 crosses PCIe)."""
    up, pcie, group = _link_rates(gpu)
    return pcie if group is not None and ranks > group else up


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
    up = ring_bus_gb_s(gpu, min(n_gpus, gpus_per_node))
    dp_bus = up if n_gpus <= gpus_per_node else min(up, fabric.node_gb_s())
    t_dp = ring_allreduce_s(grad_bytes_per_gpu, dp, dp_bus)
    act_bytes = tokens_per_replica * hidden * 2
    tp_up = ring_bus_gb_s(gpu, min(tp, gpus_per_node))
    tp_bus = tp_up if tp <= gpus_per_node else min(tp_up, fabric.node_gb_s())
    t_tp = (layers / pp) * tp_allreduces_per_layer * ring_allreduce_s(act_bytes, tp, tp_bus)
    return t_dp, t_tp, dp_bus, tp_bus


def exposed_dp_s(t_dp: float, backward_s: float, overlap: float) -> float:
    """Gradient all-reduce seconds not hidden behind backward compute: max((1 − overlap)·t, t − backward, 0)."""
    return max(0.0, max((1 - overlap) * t_dp, t_dp - backward_s))


# --- ZeRO-3 / FSDP: parameters gathered on every micro-step ------------------------------------------------------


@dataclass(frozen=True)
class Zero3Comm:
    """Seconds of ZeRO-3 / FSDP traffic per GPU: one micro-step's all-gathers and reduce-scatter, and (HSDP) the
    gradient all-reduce across node replicas once per optimizer step."""

    micro_s: float
    replica_s: float
    shard_ranks: int
    bus_gb_s: float


def ring_gather_s(n_bytes: float, ranks: int, bus_gb_s: float) -> float:
    """Seconds for a ring all-gather (or reduce-scatter) of `n_bytes` in all over `ranks`: (n−1)/n·B / bus."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * n_bytes / (bus_gb_s * GB)


def zero3_comm(
    *,
    gpu: GpuSpec,
    fabric: Fabric,
    n_gpus: int,
    gpus_per_node: int,
    tp: int,
    pp: int,
    param_bytes_per_gpu: float,
    grad_bytes_per_gpu: float,
    within_node: bool,
) -> Zero3Comm:
    """ZeRO-3 / FSDP over the data-parallel group: each micro-step all-gathers the stage's parameters for the forward,
    again for the backward (FSDP's reshard-after-forward, DeepSpeed's release of gathered parameters), and
    reduce-scatters the gradients. The ring runs at the slowest link it crosses: NVLink/PCIe inside a node, the node's
    NICs (capped by the scale-up link) once the group spans nodes. HSDP (`within_node`) keeps the shard group inside
    a node and all-reduces each GPU's gradient shard across the node replicas once per step."""
    dp = max(1, n_gpus // (tp * pp))
    up = ring_bus_gb_s(gpu, min(n_gpus, gpus_per_node))
    cross = min(up, fabric.node_gb_s())
    if within_node and n_gpus > gpus_per_node:
        shard = max(1, min(dp, gpus_per_node // (tp * pp) or 1))
        bus, replicas = ring_bus_gb_s(gpu, shard), dp // shard
        replica_s = ring_allreduce_s(grad_bytes_per_gpu / shard, replicas, cross)
    else:
        shard, bus, replica_s = dp, (up if n_gpus <= gpus_per_node else cross), 0.0
    micro = 2 * ring_gather_s(param_bytes_per_gpu, shard, bus) + ring_gather_s(grad_bytes_per_gpu, shard, bus)
    return Zero3Comm(micro, replica_s, shard, bus)


def exposed_zero3_s(micro_s: float, compute_s: float, layers: float) -> float:
    """ZeRO-3 seconds of one micro-step not hidden behind its compute. Prefetching gathers the next layer while
    this one computes, so what cannot hide is what exceeds the compute, and never less than one layer's collectives
    per pass (the first gather of the forward and of the backward, the last reduce-scatter): max(t − compute, t / L)."""
    if micro_s <= 0:
        return 0.0
    return max(micro_s - compute_s, micro_s / max(layers, 1.0))


@functools.lru_cache(maxsize=256)
def zero3_assumption(z3: Zero3Comm, micro_steps: int, within_node: bool, default: bool) -> Assumption:
    """The ZeRO-3 / FSDP traffic as a stated assumption."""
    group = "inside each node (HSDP; gradients all-reduced across nodes once per step)" if within_node else "all"
    return assume(
        key="zero_stage",
        value=3,
        default=default,
        note=f"ZeRO-3 / FSDP sharded over {z3.shard_ranks} data-parallel ranks ({group}) at {z3.bus_gb_s:.0f} GB/s: "
        f"parameters all-gathered for forward and again for backward, gradients reduce-scattered, "
        f"{z3.micro_s * 1e3:.0f} ms per micro-step × {micro_steps} micro-step(s) per optimizer step; prefetch hides "
        "it behind compute except what exceeds the compute and one layer's collectives per pass. Gathers in the "
        "compute dtype (FP8 all-gather not modelled).",
    )


def zero3_plan(inp, gpu: GpuSpec, fabric: Fabric, n_sync: float, grad_bytes: float, tokens_per_replica: float):
    """(ZeRO-3 traffic, micro-steps per optimizer step) of a `TrainingTimeInput`, or (None, 1) below stage 3.

    The stage is the user's, else 3 on the FSDP stacks (torchtitan, llm-foundry), else 0 (DDP-like traffic). The
    micro-batch is the user's, else torchtitan's one pass over the GPU's share, else one sequence per pass (HF
    per_device_train_batch_size 1 with gradient accumulation). Parameters travel in the compute dtype (4-bit for
    QLoRA)."""
    stage = inp.zero_stage if inp.zero_stage is not None else 3 if inp.framework in ("torchtitan", "llm-foundry") else 0
    tp, pp = inp.tp, inp.pp
    if stage != 3 or inp.n_gpus // (tp * pp) <= 1:
        return None, 1
    weight_bytes = 0.5 if inp.method == "qlora" else (4.0 if inp.precision in ("fp32", "tf32") else 2.0)
    z3 = zero3_comm(
        gpu=gpu,
        fabric=fabric,
        n_gpus=inp.n_gpus,
        gpus_per_node=inp.gpus_per_node,
        tp=tp,
        pp=pp,
        param_bytes_per_gpu=n_sync / (tp * pp) * weight_bytes,
        grad_bytes_per_gpu=grad_bytes,
        within_node=inp.shard_within_node,
    )
    micro = inp.micro_batch or (None if inp.framework == "torchtitan" else 1)
    steps = 1 if micro is None else max(1, math.ceil(tokens_per_replica / (micro * inp.seq_len)))
    return z3, steps


def scale_up_assumption(gpu: GpuSpec, ranks: int) -> Assumption:
    """The scale-up bus a ring over `ranks` GPUs of one node gets, as a stated assumption (built once per record and
    outcome)."""
    crosses = ring_bus_gb_s(gpu, ranks) < scale_up_gb_s(gpu)[0]
    made = _scale_up_made(gpu)
    if (crosses, ranks if crosses else 0) not in made:
        up_note = scale_up_gb_s(gpu)[1]
        ring = ring_bus_gb_s(gpu, ranks)
        if crosses:  # a bridged pair (or group of 4) of PCIe cards: a ring over more of them crosses PCIe
            up_note = f"{up_note}; a ring over {ranks} of these cards crosses PCIe x16: {ring:g} GB/s"
        made[crosses, ranks if crosses else 0] = assume(
            key="scale_up_bus_gb_s", value=round(ring, 1), unit="GB/s", note=up_note
        )
    return made[crosses, ranks if crosses else 0]


@per_record
def _scale_up_made(gpu: GpuSpec) -> dict:
    """The scale-up assumptions made for this GPU record, by (ring crosses PCIe, its ranks)."""
    return {}
