"""Host RAM (CPU memory) a serving engine needs on one node to load and run a model, by term, and the disk its
checkpoint takes. The rules and their sources are in tools/data/frameworks.yaml:

- vLLM (`vllm.weight_loading`, `vllm.swap_space`, `vllm.cpu_offload_gb`): safetensors are read through mmap,
  so loading passes the node's share of the checkpoint through the page cache once (shared by the workers,
  reclaimable afterwards); each GPU worker pins `--swap-space` (4 GiB per GPU by default, V0 engine) and
  `--cpu-offload-gb` of its weights (0 by default) for as long as it serves;
- transformers (`transformers.load_copies`): each process that calls from_pretrained holds one copy of the model
  with low_cpu_mem_usage / device_map (two without) while it loads; device_map runs one process for all GPUs;
- llama.cpp / Ollama (`llamacpp.mmap`): the GGUF file is mapped and stays in the page cache: the file's size.

The load phase ends when the weights are on the GPUs; the serve phase is what stays. The node needs the larger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tools.memory.host_memory import HostRam, value
from tools.schemas.memory import ServingHostRam
from tools.units import GB

GIB = 2**30
Loader = Literal["vllm", "hf", "llamacpp"]


@dataclass(frozen=True)
class ServeHost:
    """One serving setup as host RAM sees it: the checkpoint's stored bytes and the GPUs on one node."""

    checkpoint_bytes: float  # the weights as stored (safetensors at the serving precision, or the GGUF file)
    gpus_per_node: int = 1
    nodes: int = 1  # nodes one replica spans (pipeline stages): each loads its share of the checkpoint
    loader: Loader = "vllm"
    swap_space_gib: float | None = None  # vLLM --swap-space per GPU (None: the default)
    cpu_offload_gb: float | None = None  # vLLM --cpu-offload-gb per GPU (None: the default)
    low_cpu_mem_usage: bool = True  # transformers: device_map implies it


@dataclass(frozen=True)
class ServeHostRam(HostRam):
    """Bytes of host RAM per node by term and phase (as a training run's `HostRam`), and the disk the checkpoint
    takes."""

    disk: float


def serving_host_ram(s: ServeHost) -> ServeHostRam:
    """Host RAM per node for serving: terms {checkpoint, swap_space, cpu_offload} (vLLM), {load} (transformers),
    {mapped_file} (llama.cpp / Ollama), in bytes; phases load and serve; `total` is the larger phase."""
    share = s.checkpoint_bytes / max(1, s.nodes)
    if s.loader == "vllm":
        swap = value("vllm", "swap_space")["gib_per_gpu"] if s.swap_space_gib is None else s.swap_space_gib
        off = value("vllm", "cpu_offload_gb")["gb_per_gpu"] if s.cpu_offload_gb is None else s.cpu_offload_gb
        terms = {"checkpoint": share, "swap_space": swap * GIB * s.gpus_per_node,
                 "cpu_offload": off * GB * s.gpus_per_node}  # fmt: skip
        phases = {"load": share + terms["cpu_offload"], "serve": terms["swap_space"] + terms["cpu_offload"]}
    elif s.loader == "hf":
        copies = value("transformers", "load_copies")["low_cpu_mem_usage" if s.low_cpu_mem_usage else "default"]
        terms = {"load": share * copies}
        phases = {"load": terms["load"]}
    else:
        terms = {"mapped_file": share}
        phases = {"load": share, "serve": share}
    return ServeHostRam(terms=terms, phases=phases, disk=s.checkpoint_bytes)


def host_ram_fields(checkpoint_bytes: float, n_gpus: int, loader: Loader, gpus_per_node: int = 8) -> ServingHostRam:
    """fit_inference's `host_ram` output for a replica on `n_gpus` (whole nodes of `gpus_per_node` beyond one)."""
    nodes = -(-n_gpus // gpus_per_node)
    r = serving_host_ram(ServeHost(checkpoint_bytes, min(n_gpus, gpus_per_node), nodes, loader))
    return ServingHostRam(
        loader=loader, per_node_gb=round(r.total / GB, 1), peak_phase=r.peak_phase,
        terms_gb={k: round(v / GB, 1) for k, v in r.terms.items()},
        phases_gb={k: round(v / GB, 1) for k, v in r.phases.items()},
        disk_gb=round(r.disk / GB, 1), gpus_per_node=min(n_gpus, gpus_per_node), nodes=nodes,
    )  # fmt: skip
