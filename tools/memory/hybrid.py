"""CPU+GPU hybrid inference (KTransformers, llama.cpp -ngl / partial offload, Ollama spilling to RAM): the weights at
each quantisation against VRAM + host RAM, what sits on the GPU, and the decode speed the two memories allow.

Rules and figures in tools/data/frameworks.yaml: `llamacpp.gguf_bits_per_weight` (the formats), `ktransformers.
placement` (a MoE model's routed experts in host RAM, everything else on the GPU), `llamacpp.partial_offload` (a
dense model's layers on the GPU while they fit, the rest on the CPU), `hardware.ddr_channel_bandwidth` (host memory
bandwidth). Decode reads every weight it uses once per token: time = bytes read on the GPU ÷ GPU bandwidth + bytes
read from host RAM ÷ host bandwidth; the tokens/s figure is that bound, a ceiling that runs reach a share of.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.catalog.model_spec import ModelSpec
from tools.yaml_data import load_yaml

_FRAMEWORKS = Path(__file__).resolve().parent.parent / "data" / "frameworks.yaml"
#: share of host RAM the weights may take (the OS, the runtime and the page cache keep the rest)
RAM_USABLE = 0.9
#: the formats the published precision is said in, bits per weight
PUBLISHED_BITS = {"bf16": 16.0, "fp16": 16.0, "fp8": 8.0}


@functools.cache
def _rules() -> dict[str, Any]:
    raw = load_yaml(_FRAMEWORKS.read_text(encoding="utf-8"))
    return {f"{fw}.{f['id']}": f["value"] for fw, items in raw.items() for f in items if "value" in f}


def formats() -> dict[str, float]:
    """GGUF format -> bits per weight (frameworks.yaml `llamacpp.gguf_bits_per_weight`)."""
    return dict(_rules()["llamacpp.gguf_bits_per_weight"])


def default_host_bandwidth(ram_gb: float | None = None, consumer_card: bool = True) -> tuple[float, str]:
    """(bytes/s, what it is): the stated default host memory, channels × one DDR channel's peak: a desktop's two
    channels when the RAM is no more than a desktop takes and the card is a consumer one, else one server
    socket's (an A800 sits in a server, whatever its RAM)."""
    ddr = _rules()["hardware.ddr_channel_bandwidth"]
    desktop = consumer_card and ram_gb is not None and ram_gb <= ddr["desktop_max_ram_gb"]
    kind, channels = (
        (ddr["desktop_kind"], ddr["desktop_channels"]) if desktop else (ddr["default_kind"], ddr["default_channels"])
    )
    return channels * ddr[kind] * 1e9, f"{channels} × {kind.upper().replace('_', '-')} channels"


@dataclass(frozen=True)
class Hybrid:
    fmt: str
    bits: float
    weights: float  # bytes
    on_gpu: float  # weight bytes on the GPUs
    in_ram: float  # weight bytes in host RAM
    fits: bool
    decode_tokens_per_s: float | None


def routed_expert_params(m: ModelSpec) -> tuple[float, float]:
    """(all routed experts' parameters, those one token uses): gate, up and down of each expert of each MoE layer."""
    if not m.is_moe:
        return 0.0, 0.0
    per_expert = 3 * m.hidden_size * (m.moe_ffn_size or m.ffn_size)
    layers = m.n_layers - (m.n_dense_layers or 0)
    return float(layers * m.n_experts * per_expert), float(layers * m.experts_per_token * per_expert)


def hybrid_fit(
    m: ModelSpec,
    fmt: str,
    bits: float,
    *,
    gpu_room: float,
    ram: float,
    gpu_bandwidth: float | None,
    host_bandwidth: float,
) -> Hybrid:
    """One format: `gpu_room` is the VRAM left for weights (bytes, after the KV cache and the context), `ram` the
    host RAM (bytes), bandwidths in bytes/s. The GPUs hold a MoE model's attention, shared experts and dense
    layers first (KTransformers' placement), then routed experts while VRAM is left; the rest sits in RAM. A dense
    model's layers go on the GPU while they fit, the others to RAM (llama.cpp -ngl)."""
    per = bits / 8
    total = m.params_b * 1e9
    active = (m.active_params_b or m.params_b) * 1e9
    routed, routed_active = routed_expert_params(m)
    rest = total - routed  # attention, shared experts, dense layers, embeddings: the GPU's first
    on_gpu = min(total, max(0.0, gpu_room / per))  # then routed experts while VRAM is left (llama.cpp -ot / -ngl)
    spill = max(0.0, rest - on_gpu)  # the rest's share that did not fit: its layers run on the CPU
    experts_share = (on_gpu - rest) / routed if routed and on_gpu > rest else 0.0  # routed experts held in VRAM
    in_ram = total - on_gpu
    fits = in_ram * per <= RAM_USABLE * ram
    rest_active = active - routed_active
    spill_active = rest_active * (spill / rest) if rest else 0.0
    gpu_read = (rest_active - spill_active + routed_active * experts_share) * per
    ram_read = (spill_active + routed_active * (1 - experts_share)) * per
    decode = None  # no bandwidth on file for the card: the split stands, the decode bound is not computed
    if gpu_bandwidth:
        seconds = gpu_read / gpu_bandwidth + ram_read / host_bandwidth
        decode = 1 / seconds if seconds > 0 else 0.0
    return Hybrid(
        fmt=fmt, bits=bits, weights=total * per, on_gpu=on_gpu * per, in_ram=in_ram * per, fits=fits,
        decode_tokens_per_s=decode,
    )  # fmt: skip


def hybrid_rows(
    m: ModelSpec, published: str, *, gpu_room: float, ram: float, gpu_bandwidth: float | None, host_bandwidth: float
) -> list[dict[str, Any]]:
    """The published format (when it is 16 or 8 bits) and every GGUF format below it, largest first, as output rows."""
    bits = {published: PUBLISHED_BITS[published]} if published in PUBLISHED_BITS else {}
    top = max(bits.values(), default=16.0)
    bits |= {f: b for f, b in formats().items() if b < top}
    out = []
    for fmt, b in sorted(bits.items(), key=lambda kv: -kv[1]):
        h = hybrid_fit(m, fmt, b, gpu_room=gpu_room, ram=ram, gpu_bandwidth=gpu_bandwidth,
                       host_bandwidth=host_bandwidth)  # fmt: skip
        out.append({
            "format": fmt, "bits_per_weight": b, "weights_gb": round(h.weights / 1e9, 1),
            "gpu_gb": round(h.on_gpu / 1e9, 1), "ram_gb": round(h.in_ram / 1e9, 1), "fits": h.fits,
            "decode_tokens_per_s": None if h.decode_tokens_per_s is None else round(h.decode_tokens_per_s, 1),
        })  # fmt: skip
    return out
