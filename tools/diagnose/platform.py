"""Slow, not broken, and the setup shows why: the known engine and platform causes (frameworks.yaml `slow_causes`)
that the asker's setup has, each with the share of the gap between the measured decode speed and the roofline it
explains, largest first.

A cause's share is computed where a rule gives one: layers placed on n GPUs in turn decode at one card's bandwidth
(×n against the roofline's tensor parallel); layers on the CPU are read at host-memory bandwidth; bitsandbytes
weights decode no faster than bf16 (the roofline at their width over the roofline at bf16); an eager decode
(transformers `generate()`, `--enforce-eager`) waits on the host launching each layer's kernels
(`inference_speed(eager=True)` over the captured-graphs figure). Causes with no such rule (kernels a loader lacks,
an early Ascend backend) are named for what is left once the computed
shares are taken out. Each is said with its fix and the address of its documentation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.diagnose.context import Setup, flag_values
from tools.diagnose.facts import Said, facts
from tools.errors import AdvisorError
from tools.memory.hybrid import default_host_bandwidth
from tools.schemas.speed import InferenceSpeedInput
from tools.speed.inference_speed import inference_speed
from tools.yaml_data import load_yaml

_WORDS = Path(__file__).resolve().parent / "platform_words.yaml"
#: a remaining gap under this factor is what the computed shares leave as noise: they explain it
EXPLAINED = 1.5
#: frameworks that place a model's layers over several GPUs with device_map (one process, layers in turn)
LAYER_PLACING = frozenset({"transformers", "accelerate"})
#: flags that place the layers over the GPUs (transformers / accelerate, text-generation-webui)
PLACING_FLAGS = ("device_map", "auto_devices", "gpu_split")
#: an eager decode slower than captured graphs by less than this share is not counted as explaining the gap
EAGER_SHARE = 1.05


@functools.cache
def _words() -> dict[str, Any]:
    return load_yaml(_WORDS.read_text(encoding="utf-8"))


@dataclass
class Finding:
    """One cause the setup shows: its id in `slow_causes`, the factor of the gap it explains (None: no rule gives
    one), its words' fields, and the fix (flag, value) it leads with."""

    id: str
    factor: float | None
    fields: dict[str, Any]
    flag: str
    value: Any
    words: str | None = None  # the words' key where they differ from the id's


def findings(s: Setup, expected: float, precision: str | None) -> list[Finding]:
    """Every known cause this setup shows, largest computed share first, then those without one."""
    out = [f for f in (_layers_in_turn(s), _cpu_layers(s), _bnb(s, expected, precision)) if f is not None]
    out += [f for f in (_gptq(s), _moe(s), _hf_eager(s, precision), _engine_eager(s, precision), _ascend(s)) if f]
    return sorted(out, key=lambda f: -(f.factor or 0.0))


def platform_slow(s: Setup, expected: float, bound: str, precision: str | None) -> tuple[Said, str, Any, dict] | None:
    """The arithmetic line naming the causes (ranked by the share of the gap each explains), the leading fix and
    the words said with it (explanation and the lead fix's cost); None where the setup shows none of them."""
    measured = s.inp.measured_tokens_per_s
    found = findings(s, expected, precision)
    if not found or not measured or not expected:
        return None
    gap = expected / measured
    w, out = _words(), []
    for lang in ("en", "zh"):
        items = [_item(f, k + 1, lang) for k, f in enumerate(found)]
        computed = math.prod(f.factor for f in found if f.factor)
        rest = gap / computed
        if rest < EXPLAINED:
            tail = w["explained"][lang]
        elif not any(f.factor for f in found):
            tail = w["rest_none"][lang].format(rest=f"{rest:.1f}")
        elif any(f.factor is None for f in found):
            tail = w["rest_named"][lang].format(rest=f"{rest:.1f}")
        else:
            tail = w["rest_unexplained"][lang].format(rest=f"{rest:.1f}")
        sep = "; " if lang == "en" else "；"
        out.append(w["head"][lang].format(measured=f"{measured:g}", pct=pct(measured / expected * 100),
                                          expected=f"{expected:.1f}", bound=bound, gap=f"{gap:.1f}",
                                          items=sep.join(items)) + tail)  # fmt: skip
    said = Said(tuple(out))
    said.template = "platform_slow"
    lead = w["causes"][found[0].words or found[0].id]
    variant = {**w["explanation"], "cost_en": lead["cost_en"], "cost_zh": lead["cost_zh"]}
    return said, found[0].flag, found[0].value, variant


def _item(f: Finding, k: int, lang: str) -> str:
    w = _words()
    c = w["causes"][f.words or f.id]
    what = c[lang].format(**f.fields)
    fix = c[f"fix_{lang}"].format(**f.fields)
    url = facts()["slow_causes"][f.id]["source"]["url"]
    if f.factor is not None:
        return w["item_gap"][lang].format(k=k, what=what, factor=f"{f.factor:.1f}", fix=fix, url=url)
    return w["item"][lang].format(k=k, what=what, fix=fix, url=url)


def _layers_in_turn(s: Setup) -> Finding | None:
    """Layers placed on the GPUs in turn (device_map over several cards): the roofline split each layer over them."""
    i = s.inp
    flags = flag_values(i)
    placed = i.layer_split or any(k in flags for k in PLACING_FLAGS) or s.framework in LAYER_PLACING
    if i.n_gpus < 2 or not placed or s.framework in ("vllm", "sglang", "tgi", "lmdeploy", "ollama", "llama.cpp"):
        return None
    n = min(s.tp, i.n_gpus)
    return Finding("layers_in_turn", float(n), {"n": n}, "engine", f"vLLM --tensor-parallel-size {n}")


def _cpu_layers(s: Setup) -> Finding | None:
    """Layers the runtime left on the CPU: each token reads them at host bandwidth."""
    i = s.inp
    total, on = i.layers_total, i.layers_on_gpu
    if i.gpu_layers_unset and total is None and s.model is not None:
        total, on = s.model.n_layers, 0
    if (
        on is not None and total is None and s.model is not None
    ):  # ("--pre_layer 26": layers on the GPU, of the model's)
        total = s.model.n_layers
    if total is None or on is None or on >= total or s.gpu is None or not s.gpu.bandwidth_gb_s:
        return None
    consumer = s.gpu.segment == "consumer"  # a GeForce card with its RAM unsaid sits in a desktop (two channels)
    host, _ = default_host_bandwidth(i.host_ram_gb if i.host_ram_gb or not consumer else 0.0, consumer)
    host_gb, gpu_gb = host / 1e9, s.gpu.bandwidth_gb_s * max(1, s.tp)
    cpu = total - on
    factor = on / total + cpu / total * gpu_gb / host_gb
    flag, val = {"ollama": ("num_gpu", 99), "llama.cpp": ("-ngl", 99)}.get(s.framework or "", ("n_gpu_layers", total))
    said = f"{flag} {val}" if s.framework in ("ollama", "llama.cpp") else f"-ngl / n_gpu_layers / pre_layer {total}"
    fields = {"cpu": cpu, "total": total, "host": round(host_gb, 1), "gpu": gpu_gb, "flag": said}
    return Finding("cpu_layers", factor, fields, flag, val, "cpu_layers_unset" if i.gpu_layers_unset else None)


def _bnb_bits(s: Setup) -> int | None:
    i = s.inp
    flags = flag_values(i)
    on = {k for k in ("load_in_4bit", "load_in_8bit") if str(flags.get(k, "")).lower() in ("true", "1")}
    if "load_in_8bit" in on:
        return 8
    if "load_in_4bit" in on or i.precision == "nf4" or i.method == "qlora":
        return 4
    return None


def _bnb(s: Setup, expected: float, precision: str | None) -> Finding | None:
    """bitsandbytes weights decode at best as bf16 does: the roofline at their width over the roofline at bf16."""
    bits = _bnb_bits(s)
    if bits is None or s.model is None or s.gpu is None:
        return None
    try:
        r = inference_speed(InferenceSpeedInput(model=s.model.id, gpu=s.gpu.id, n_gpus=min(s.tp, 64), precision="bf16"))
    except AdvisorError:
        return None
    bf16 = r.total_tokens_per_s
    if not bf16 or precision in (None, "bf16", "fp16"):  # (the roofline was already at 16-bit: nothing to take out)
        return Finding("bnb_dequant", None, {"bits": bits, "bf16": f"{bf16:.1f}", "weights": _gb(s)},
                       f"load_in_{bits}bit", False)  # fmt: skip
    factor = max(1.0, expected / bf16)
    return Finding("bnb_dequant", factor, {"bits": bits, "bf16": f"{bf16:.1f}", "weights": _gb(s)},
                   f"load_in_{bits}bit", False)  # fmt: skip


def _gb(s: Setup) -> str:
    from tools.catalog.architecture import param_count

    return f"{param_count(s.model).total * 2 / 1e9:.0f}"


def _gptq(s: Setup) -> Finding | None:
    i = s.inp
    if s.framework != "transformers" or i.precision not in ("int4", "int8") or _bnb_bits(s) is not None:
        return None
    bits = 4 if i.precision == "int4" else 8
    return Finding("gptq_no_fast_kernels", None, {"bits": bits}, "engine", "vLLM (Marlin kernels)")


def _moe(s: Setup) -> Finding | None:
    if s.framework != "transformers" or s.model is None or not s.model.is_moe:
        return None
    return Finding("moe_python_loop", None, {}, "engine", "vLLM / SGLang (fused MoE kernels)")


def _eager_factor(s: Setup, precision: str | None) -> float | None:
    """How much slower the same decode runs eagerly (the host launching every layer's kernels each step,
    `inference_speed(eager=True)`) than with captured CUDA graphs; None where it makes no difference (a step whose
    GPU work outlasts the launches) or nothing can be computed."""
    if s.model is None or s.gpu is None:
        return None
    # bitsandbytes weights decode at bf16's pace at best (`_bnb` takes that share): the launches are set on bf16's
    precision = "bf16" if _bnb_bits(s) is not None else precision
    args = dict(model=s.model.id, gpu=s.gpu.id, n_gpus=min(s.tp, 64), precision=precision or "bf16")
    try:
        graphs = inference_speed(InferenceSpeedInput(**args)).total_tokens_per_s
        eager = inference_speed(InferenceSpeedInput(**args, eager=True)).total_tokens_per_s
    except AdvisorError:
        return None
    factor = graphs / eager if graphs and eager else None
    return factor if factor and factor >= EAGER_SHARE else None


def _hf_eager(s: Setup, precision: str | None = None) -> Finding | None:
    if s.framework != "transformers":
        return None
    return Finding("hf_eager", _eager_factor(s, precision), {}, "engine",
                   "vLLM / SGLang (CUDA graphs, continuous batching)")  # fmt: skip


def _engine_eager(s: Setup, precision: str | None = None) -> Finding | None:
    i = s.inp
    if s.framework == "vllm" and i.enforce_eager:
        return Finding("engine_eager", _eager_factor(s, precision), {"flag": "--enforce-eager"}, "--enforce-eager",
                       False)  # fmt: skip
    if (
        s.framework == "sglang"
        and str(flag_values(i).get("disable_cuda_graph", "")).lower() in ("", "true", "1")
        and ("disable_cuda_graph" in flag_values(i))
    ):
        return Finding("engine_eager", _eager_factor(s, precision), {"flag": "--disable-cuda-graph"},
                       "--disable-cuda-graph", False)  # fmt: skip
    return None


def _ascend(s: Setup) -> Finding | None:
    """vLLM on a Huawei Ascend card runs through vllm-ascend, whose early releases decoded eagerly."""
    if s.framework != "vllm" or s.gpu is None or s.gpu.vendor != "huawei":
        return None
    fix = facts()["slow_causes"]["ascend_eager"]["fix"]
    ran = _version(flag_values(s.inp).get("vllm_ascend_version"))
    if ran is not None and ran >= _version(fix["value"].rstrip("+")):  # a release with graph mode on: not this
        return None
    return Finding("ascend_eager", None, {"card": s.gpu.name}, fix["flag"], fix["value"])


def pct(p: float) -> str:
    """A share in per cent as people say it: whole numbers, one significant figure under 1% (0.4%, not 0%)."""
    return f"{p:.0f}" if p >= 1 else f"{p:.1g}"


def _version(text: str | None) -> tuple[int, ...] | None:
    """'0.9.1' -> (0, 9, 1); None for no version."""
    parts = [int(p) for p in (text or "").split(".") if p.isdigit()]
    return tuple(parts) or None
