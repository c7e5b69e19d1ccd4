"""Load the GPU and model catalogs and resolve what people type to a record.

`get_gpu("A100 80G")`, `get_gpu("昇腾910B")`, `get_model("Qwen2.5-72B")`, `get_model("700亿参数")`.
Names are normalised (case, spaces, hyphens, vendor words, "80G" -> "80gb") before they are
matched against each record's id, name and aliases. A model name that is not in the catalog but
carries a size ("65B", "Qwen-72B", "a 37B model", "700亿参数") resolves to a generic dense
architecture of that size (`ModelSpec.generic`); anything else raises `UnknownGpu` /
`UnknownModel` with the closest known names.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

from rapidfuzz import fuzz, process

from tools.catalog import user_models
from tools.catalog.architecture import param_count, vision_params
from tools.catalog.generic import GENERIC_NEAR, shaped_model, shaped_moe
from tools.catalog.records import GpuSpec, ModelSpec
from tools.errors import UnknownGpu, UnknownModel
from tools.units import plain
from tools.yaml_data import load_yaml

DATA_DIR = Path(__file__).parents[1] / "data"

#: vendor and brand words people put in front of a part number, in English and Chinese; removed before matching
#: ("英伟达 H800", "海光 K100", "Moore Threads S4000", "NVIDIA GeForce RTX 4090")
_VENDOR_WORDS = (
    "nvidia",
    "英伟达",
    "辉达",
    "geforce",
    "tesla",
    "huawei",
    "华为",
    "amd",
    "instinct",
    "radeon",
    "超威",
    "hygon",
    "海光",
    "moore threads",
    "moorethreads",
    "摩尔线程",
    "cambricon",
    "寒武纪",
    "kunlunxin",
    "昆仑芯",
    "baidu",
    "百度",
    "biren",
    "壁仞",
    "metax",
    "沐曦",
    "enflame",
    "燧原",
    "iluvatar",
    "天数智芯",
    "天数",
    "habana",
    "intel",
    "英特尔",
    "昇腾",
    "ascend",
    "mtt",
)
_ZH_WORDS = {"显卡": "", "加速卡": "", "计算卡": "", "版": "", "显存": ""}
_TOKEN = re.compile(r"[a-z]+\d*[a-z]*|\d+[a-z]*|[^\x00-\x7f]+")
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?[bmkt]?")


@functools.lru_cache(maxsize=4096)
def normalize(name: str) -> str:
    """Canonical key for matching: lower case, vendor words and separators removed."""
    return re.sub(r"[\s_\-/·().,，（）+]+", "", _spaced(name))


def _spaced(name: str) -> str:
    """Lower case, vendor words removed, "80G"/"80 GB" -> "80gb", separators kept (for word order)."""
    s = name.strip().lower()
    for zh, en in _ZH_WORDS.items():
        s = s.replace(zh, en)
    for word in _VENDOR_WORDS:
        s = s.replace(word, " ")
    s = re.sub(r"(\d)\s*(?:g|gb|gig)\b", r"\1gb", s)  # "80G", "80 GB" -> "80gb"
    s = re.sub(r"(\d)g(?=[^b]|$)", r"\1gb", s)  # "80g-pcie"
    return s


@functools.lru_cache(maxsize=4096)
def word_key(name: str) -> str:
    """Order-free key: the name's words sorted ("A100 80GB SXM" and "A100 SXM 80GB" give the same key)."""
    return " ".join(sorted(_TOKEN.findall(re.sub(r"[\s_\-/·().,，（）+]+", " ", _spaced(name)))))


def _load_yaml(filename: str) -> list[dict]:
    with open(DATA_DIR / filename, encoding="utf-8") as fh:
        return load_yaml(fh) or []


@functools.cache
def gpus() -> tuple[GpuSpec, ...]:
    return tuple(GpuSpec.model_validate(row) for row in _load_yaml("gpus.yaml"))


@functools.cache
def shipped_models() -> tuple[ModelSpec, ...]:
    """The models of tools/data/models.yaml, the catalog the package ships."""
    return tuple(ModelSpec.model_validate(row) for row in _load_yaml("models.yaml"))


def models() -> tuple[ModelSpec, ...]:
    """The shipped models, then those a user added (`user_models`) whose names clash with none of them."""
    user_models.refresh()
    return _all_models()


@functools.cache
def _all_models() -> tuple[ModelSpec, ...]:
    shipped = shipped_models()
    taken = {k for m in shipped for k in _keys(m)}
    added = []
    for m in user_models.load():
        keys = _keys(m)
        if not keys & taken:
            added.append(m)
            taken |= keys
    return (*shipped, *added)


def clashes(spec: ModelSpec) -> ModelSpec | None:
    """The catalog model (shipped or added) one of `spec`'s names already belongs to, if any."""
    index = _model_index()
    for key in _keys(spec):
        if key in index:
            return index[key]
    return None


def _keys(record: GpuSpec | ModelSpec) -> set[str]:
    return {normalize(record.id), normalize(record.name), *(normalize(a) for a in record.aliases)}


@functools.cache
def _gpu_index() -> dict[str, GpuSpec]:
    return _build_index(gpus())


@functools.cache
def _model_index() -> dict[str, ModelSpec]:
    return _build_index(models())


for _cache in ("_all_models", "_model_index", "_word_index", "_model_named", "family_anchor"):
    user_models.on_change(lambda name=_cache: globals()[name].cache_clear())


def _build_index(records):
    index: dict = {}
    for rec in records:
        for key in _keys(rec):
            if key in index and index[key].id != rec.id:
                raise ValueError(f"name {key!r} is used by both {index[key].id} and {rec.id}")
            index[key] = rec
    return index


@functools.cache
def _word_index(kind: str) -> dict[str, object]:
    """Word-order-free keys -> record; a key two records share is left out (ambiguous)."""
    records = gpus() if kind == "gpu" else models()
    index: dict[str, object] = {}
    clash: set[str] = set()
    for rec in records:
        for name in (rec.id, rec.name, *rec.aliases):
            key = word_key(name)
            if not key or _BARE_SIZE.fullmatch(key):  # "70B" alone must stay a generic size
                continue
            if key in index and index[key].id != rec.id:
                clash.add(key)
            index[key] = rec
    return {k: v for k, v in index.items() if k not in clash}


#: a typo is corrected only at this similarity (0–100) or more, and only when no other record is as close
TYPO_SCORE = 85
TYPO_MARGIN = 4


def _digits(key: str) -> str:
    return "".join(ch for ch in key if ch.isdigit())


#: what marks a vision-language model in a normalised name ("glm4v9b", "qwen2vl7b", "internvl2")
VISION_MARK = re.compile(r"\dv(?=\d|$)|vl|vision|visual")


def _typo(key: str, index: dict, kind: str = "gpu"):
    """The one record whose name is a small typo away, with the same digits ("H8OO" is not "H800", "5090" never "4090")
    and, for models, the same modality ("qwen27b" is no typo of "qwen2vl7b": a vision model is another model)."""
    if len(key) < 3:
        return None
    vision = kind == "model" and bool(VISION_MARK.search(key))
    same = [
        k for k in index if _digits(k) == _digits(key) and (kind != "model" or bool(VISION_MARK.search(k)) == vision)
    ]
    if not same:
        return None
    hits = process.extract(key, same, scorer=fuzz.ratio, limit=8)
    best = [(k, score) for k, score, _ in hits if score >= TYPO_SCORE]
    if not best:
        return None
    top = index[best[0][0]]
    rivals = [score for k, score, _ in hits if index[k].id != top.id]
    if rivals and rivals[0] > best[0][1] - TYPO_MARGIN:
        return None
    return top


def _closest(name: str, records, index: dict, n: int = 5) -> list[str]:
    """Display names of the records closest to what was typed (edit distance, then shared words)."""
    key = normalize(name)
    out: list[str] = []
    hits = process.extract(key, list(index), scorer=fuzz.WRatio, limit=n * 4, score_cutoff=50) if key else []
    # substring matches ("a100" -> every A100) are what people usually mean
    subs = [k for k in index if key and (key in k or k in key)]
    for k in [*subs, *(k for k, _, _ in hits)]:
        display = index[k].name
        if display not in out:
            out.append(display)
    return out[:n]


def _resolve(name: str, index: dict, kind: str):
    """Exact key, then the same words in another order, then a one-record typo; None when nothing is close."""
    key = normalize(name)
    hit = index.get(key)
    if hit is None:
        hit = _word_index(kind).get(word_key(name))
    if hit is None:
        hit = _typo(key, index, kind)
    if hit is None:  # a misspelt vendor word ("Gefroce RTX 4090", "Nvidai H800"): drop it and try again
        words = _spaced(name).split()
        kept = [w for w in words if not (w.isalpha() and len(w) > 3 and _near_vendor_word(w))]
        if kept and len(kept) < len(words):
            return _resolve(" ".join(kept), index, kind)
    return hit


def _near_vendor_word(word: str) -> bool:
    return any(fuzz.ratio(word, v) >= 75 for v in _VENDOR_WORDS if v.isascii() and " " not in v)


@functools.lru_cache(maxsize=1024)
def _gpu_by_name(name: str) -> GpuSpec | None:
    return _resolve(name, _gpu_index(), "gpu")


def get_gpu(name: str | GpuSpec) -> GpuSpec:
    if isinstance(name, GpuSpec):
        return name
    return _gpu_named(name)


@functools.lru_cache(maxsize=4096)
def _gpu_named(name: str) -> GpuSpec:
    """Resolved once per spelling: every calculator call resolves its GPU (an unknown name raises, uncached)."""
    hit = _gpu_index().get(normalize(name)) or _gpu_by_name(name)
    if hit is None:
        raise UnknownGpu(name, _closest(name, gpus(), _gpu_index()))
    return hit


def get_model(name: str | ModelSpec) -> ModelSpec:
    """A catalog model, or a generic dense model when the name only carries a size."""
    if isinstance(name, ModelSpec):
        return name
    user_models.refresh()
    return _model_named(name)


@functools.lru_cache(maxsize=4096)
def _model_named(name: str) -> ModelSpec:
    """Resolved once per spelling: a bare size ("70B") otherwise runs the typo search on every call."""
    index = _model_index()
    hit = index.get(normalize(name))
    if hit is not None:
        return hit
    size = parse_param_count(name)
    if size is None:
        hit = _resolve(name, index, "model")
        if hit is not None:
            return hit
        raise UnknownModel(name, _closest(name, models(), index))
    hit = _word_index("model").get(word_key(name)) or _typo(normalize(name), index, "model")
    if hit is not None:
        return hit
    if not MIN_PARAMS <= size <= MAX_PARAMS:  # a name that is no model we know, nor a size we can stand in for
        raise UnknownModel(
            name,
            _closest(name, models(), index),
            why=(
                f"A model of {plain(size / 1e9)}B parameters is outside what the calculators size (0.01B to 100,000B).",
                f"{plain(size / 1e9)}B 参数的模型超出了可估算范围（0.01B 到 100,000B）。",
            ),
        )
    active = parse_active_count(name)
    if active is not None:
        total = max(size, *(float(v) * _EN_MAGNITUDE[u.lower()] for v, u in _SIZE_EN.findall(name)))
        if MIN_PARAMS <= active < total:  # "400B-A20B", "400B total, 20B active": a generic MoE of those sizes
            return shaped_moe(round(total / 1e9, 6), round(active / 1e9, 6), typed=name)
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


_ACTIVE = (
    re.compile(r"(?<![a-z])a(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE),  # "400B-A20B" (Qwen's naming)
    re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*b\s*(?:active|activated)\b", re.IGNORECASE),  # "20B active"
    re.compile(
        r"(?:active|activated|激活|活跃)(?:参数量?)?\s*[:：]?\s*(\d+(?:\.\d+)?)\s*b", re.IGNORECASE
    ),  # "激活 20B"
)


def parse_active_count(text: str) -> float | None:
    """The activated parameter count a MoE's name or phrase states ("A20B", "20B active", "激活 20B"), else None."""
    for rx in _ACTIVE:
        m = rx.search(text)
        if m:
            return float(m.group(1)) * 1e9
    return None


def generic_model(params_b: float, typed: str | None = None) -> ModelSpec:
    """A dense model of exactly `params_b` billion parameters on the shape of the catalog's nearest dense model
    (`tools.catalog.generic.shaped_model`)."""
    return shaped_model(params_b, typed, family_anchor(params_b))


#: how much nearer (log of the size ratio, about 5%) a vision-language model's decoder must be than a text model to
#: lend its shape: of two decoders of about the size said, the text model's is the shape a bare size means
VISION_ANCHOR_PENALTY = 0.05


@functools.cache
def family_anchor(params_b: float) -> ModelSpec | None:
    """The catalog's dense SwiGLU model nearest in size (within GENERIC_NEAR), the first released of equal sizes
    (an original family rather than a later distillation or fine-tune of its shape). A vision-language model is
    measured by its decoder alone (GLM-4V-9B's 13.9B hold a 4.3B vision tower: its depth and width are a 9B's), and a
    text model of about that size goes first (`VISION_ANCHOR_PENALTY`)."""
    best = None
    for m in models():
        text_b = (param_count(m).total - vision_params(m)) / 1e9 if m.vision_layers else m.params_b
        if m.is_moe or m.generic or m.mlp != "swiglu" or text_b <= 0:
            continue
        ratio = max(text_b, params_b) / min(text_b, params_b)
        key = (abs(math.log(ratio)) + (VISION_ANCHOR_PENALTY if m.vision_layers else 0.0), m.release or "")
        if ratio <= GENERIC_NEAR and (best is None or key < best[0]):
            best = (key, m)
    return best[1] if best else None
