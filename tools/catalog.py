"""Load the GPU and model catalogs and resolve what people type to a record.

`get_gpu("A100 80G")`, `get_gpu("昇腾910B")`, `get_model("Qwen2.5-72B")`, `get_model("700亿参数")`.
Names are normalised (case, spaces, hyphens, vendor words, "80G" -> "80gb") before they are
matched against each record's id, name and aliases. A model name that is not in the catalog but
carries a size ("65B", "Qwen-72B", "a 37B model", "700亿参数") resolves to a generic dense
architecture of that size (`ModelSpec.generic`); anything else raises `UnknownGpu` /
`UnknownModel` with the closest known names.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import math
import re
from pathlib import Path

import yaml

from tools.errors import InvalidInput, UnknownGpu, UnknownModel
from tools.specs import GpuSpec, ModelSpec, Source

DATA_DIR = Path(__file__).parent / "data"

_VENDOR_WORDS = ("nvidia", "英伟达", "辉达", "geforce", "tesla", "huawei", "华为", "amd", "instinct", "radeon")
_ZH_WORDS = {"昇腾": "ascend", "寒武纪": "cambricon", "摩尔线程": "mtt", "显卡": "", "加速卡": "", "版": ""}


@functools.lru_cache(maxsize=4096)
def normalize(name: str) -> str:
    """Canonical key for matching: lower case, vendor words and separators removed."""
    s = name.strip().lower()
    for zh, en in _ZH_WORDS.items():
        s = s.replace(zh, en)
    for word in _VENDOR_WORDS:
        s = s.replace(word, "")
    s = re.sub(r"(\d)\s*(?:g|gb|gig)\b", r"\1gb", s)  # "80G", "80 GB" -> "80gb"
    s = re.sub(r"(\d)g(?=[^b]|$)", r"\1gb", s)  # "80g-pcie"
    s = re.sub(r"[\s_\-/·().,，（）]+", "", s)
    return s


def _load_yaml(filename: str) -> list[dict]:
    with open(DATA_DIR / filename, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or []


@functools.cache
def gpus() -> tuple[GpuSpec, ...]:
    return tuple(GpuSpec.model_validate(row) for row in _load_yaml("gpus.yaml"))


@functools.cache
def models() -> tuple[ModelSpec, ...]:
    return tuple(ModelSpec.model_validate(row) for row in _load_yaml("models.yaml"))


def _keys(record: GpuSpec | ModelSpec) -> set[str]:
    return {normalize(record.id), normalize(record.name), *(normalize(a) for a in record.aliases)}


@functools.cache
def _gpu_index() -> dict[str, GpuSpec]:
    return _build_index(gpus())


@functools.cache
def _model_index() -> dict[str, ModelSpec]:
    return _build_index(models())


def _build_index(records):
    index: dict = {}
    for rec in records:
        for key in _keys(rec):
            if key in index and index[key].id != rec.id:
                raise ValueError(f"name {key!r} is used by both {index[key].id} and {rec.id}")
            index[key] = rec
    return index


def _closest(name: str, records, index: dict, n: int = 5) -> list[str]:
    key = normalize(name)
    hits = difflib.get_close_matches(key, list(index), n=n * 3, cutoff=0.5)
    # substring matches ("a100" -> every A100) are what people usually mean
    hits += [k for k in index if key and (key in k or k in key)]
    out: list[str] = []
    for k in hits:
        display = index[k].name
        if display not in out:
            out.append(display)
    return out[:n]


def get_gpu(name: str | GpuSpec) -> GpuSpec:
    if isinstance(name, GpuSpec):
        return name
    hit = _gpu_index().get(normalize(name))
    if hit is None:
        raise UnknownGpu(name, _closest(name, gpus(), _gpu_index()))
    return hit


def get_model(name: str | ModelSpec) -> ModelSpec:
    """A catalog model, or a generic dense model when the name only carries a size."""
    if isinstance(name, ModelSpec):
        return name
    hit = _model_index().get(normalize(name))
    if hit is not None:
        return hit
    size = parse_param_count(name)
    if size is None:
        raise UnknownModel(name, _closest(name, models(), _model_index()))
    if not MIN_PARAMS <= size <= MAX_PARAMS:
        raise InvalidInput(
            f"A model of {size / 1e9:g}B parameters is outside what the calculators size (0.01B to 100,000B).",
            f"{size / 1e9:g}B 参数的模型超出了可估算范围（0.01B 到 100,000B）。",
            field="model",
        )
    return generic_model(round(size / 1e9, 6), typed=name)


# --- sizes -----------------------------------------------------------------------------

MIN_PARAMS = 1e7  # 0.01B: below this a "model" is a typo
MAX_PARAMS = 1e14  # 100T: far beyond any published model
_ZH_MAGNITUDE = {"亿": 1e8, "万": 1e4, "千": 1e3, "百": 1e2}
_EN_MAGNITUDE = {"t": 1e12, "b": 1e9, "m": 1e6, "k": 1e3}
_SIZE_EN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([bmt])(?![a-z])", re.IGNORECASE)
_SIZE_ZH = re.compile(r"(\d+(?:\.\d+)?)\s*(万亿|千亿|百亿|亿|万)\s*(?:个)?(?:参数|参数量)?")


def parse_param_count(text: str) -> float | None:
    """Parameter count in a name or phrase: "65B" -> 6.5e10, "700亿参数" -> 7e10, else None.

    Mixture names such as "8x7B" are not sizes of a dense model and are not parsed here.
    """
    if re.search(r"\d+\s*[x×]\s*\d+(?:\.\d+)?\s*b", text, re.IGNORECASE):
        return None
    m = _SIZE_ZH.search(text)
    if m:
        mult = {"万亿": 1e12, "千亿": 1e11, "百亿": 1e10, "亿": 1e8, "万": 1e4}[m.group(2)]
        return float(m.group(1)) * mult
    m = _SIZE_EN.search(text)
    if m:
        return float(m.group(1)) * _EN_MAGNITUDE[m.group(2).lower()]
    return None


_GENERIC_SOURCE = Source(
    title="Generic dense decoder shape (Llama-style: GQA-free MHA, SwiGLU ffn = 8/3·h, head_dim 128)",
    url="https://arxiv.org/abs/2302.13971",
    as_of=dt.date(2023, 2, 27),
    fields=("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "ffn_size", "vocab_size", "params_b", "max_context"),
    verified=False,
    note="shape chosen by gpu-advisor to match the requested parameter count; not a published model",
)

_HIDDEN_LADDER = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192, 12288, 16384, 18432, 20480, 25600)


@functools.cache
def generic_model(params_b: float, typed: str | None = None) -> ModelSpec:
    """A Llama-style dense decoder with about `params_b` billion parameters.

    Per layer ≈ 4·h² (attention) + 3·h·ffn with ffn = 8/3·h, i.e. ≈ 12·h²; embeddings and
    an untied head add 2·V·h with V = 32,000. The hidden size is the ladder entry whose layer
    count is closest to the Llama aspect ratio L ≈ h / 128.
    """
    n = params_b * 1e9
    vocab = 32000
    best = None
    for h in _HIDDEN_LADDER:
        ffn = int(math.ceil(8 * h / 3 / 256) * 256)
        per_layer = 4 * h * h + 3 * h * ffn
        layers = round((n - 2 * vocab * h) / per_layer)
        if layers < 1:
            continue
        score = abs(math.log(layers / (h / 128)))
        if best is None or score < best[0]:
            best = (score, h, ffn, layers)
    if best is None:  # tiny models: one layer at the smallest width
        best = (0.0, 512, 1536, 1)
    _, h, ffn, layers = best
    heads = max(1, h // 128)
    label = f"{params_b:g}B"
    return ModelSpec(
        id=f"generic-{label.lower()}",
        name=f"generic dense {label}",
        family="generic",
        org="gpu-advisor",
        n_layers=layers,
        hidden_size=h,
        n_heads=heads,
        n_kv_heads=heads,
        head_dim=h // heads,
        ffn_size=ffn,
        vocab_size=vocab,
        params_b=params_b,
        attention="MHA",
        max_context=4096,
        sources=(_GENERIC_SOURCE,),
        generic=True,
        notes=(f"{typed!r} is not in the catalog; " if typed else "")
        + f"treated as a generic dense {label} model ({layers} layers, hidden {h}, MHA).",
    )
