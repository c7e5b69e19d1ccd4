"""A model name the catalog lacks, read for what it says, and the catalog model that can stand in for it.

`read_name("qwen72b")` -> family "qwen", size 72B; `read_name("Qwen2-57B-A14B")` -> family "qwen", version "2",
57B total with 14B active; `read_name("qwen1_5")` -> family "qwen", version "1.5", no size; `read_name("Gemini-8x7B")`
-> experts "8x7b". `keys()` gives the spellings to try against the catalog ("qwen72b" -> "qwen-72b"), so a glued or
oddly separated name that is a catalog name resolves to it. `stand_in()` picks the catalog MoE of the same expert layout ("8x7B"), else the catalog model of the same family
(same version first, then any version) with the nearest size, within `NEAR` of it, dense for dense and MoE for MoE;
None when there is none (the calculators then size a generic model of that size, `lookup.generic_model`).
`published_size()` reads a family the catalog knows only by its publisher's sizes (tools/data/model_families.yaml):

    >>> published_size("Orion"), published_size("zjunlp/KnowLM"), published_size("Foo")
    (14.0, 13.0, None)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import Field
from rapidfuzz import fuzz

from tools.catalog import lookup, user_models
from tools.catalog.model_spec import ModelSpec
from tools.catalog.record_base import Frozen, Source

#: how far (relative) a catalog model's size may be from the typed size to stand in for it
NEAR = 0.15

_FAMILY = re.compile(r"[a-z\u4e00-\u9fff]+")
_PIECE = re.compile(
    r"(?P<experts>\d+x\d+(?:\.\d+)?b)|a(?P<active>\d+(?:\.\d+)?)b(?![a-z])|(?P<size>\d+(?:\.\d+)?)(?P<unit>[bm])(?![a-z])"
    r"|(?P<number>\d+(?:\.\d+)*)|[a-z\u4e00-\u9fff]+"
)


@dataclass(frozen=True)
class NameParts:
    """What a typed model name says: its family word, version, total and active size (billions), expert layout."""

    typed: str
    family: str
    version: str = ""
    size_b: float | None = None
    active_b: float | None = None
    experts: str | None = None  # "8x7b": the catalog's MoE of that layout is the name for it
    #: other name words after the family ("Qwen-Deepsee-32B": "deepsee"): a model named for two families
    words: tuple[str, ...] = ()

    @property
    def moe(self) -> bool:
        return self.active_b is not None or self.experts is not None


#: a size written before the family word it is glued to ("72Bqwen", "7b-llama"): read as "qwen 72b"
_SIZE_FIRST = re.compile(r"^(\d+(?:\.\d+)?[bm])[\s\-_]*(?=[a-z\u4e00-\u9fff])")
#: words in a name that say its flavour, not another model it is made from
_FLAVOUR = frozenset("chat instruct base hf it sft dpo moe distill preview turbo pro max mini flash vl".split())


def _spaced(name: str) -> str:
    """Lower case, "1_5" -> "1.5" (a version written with an underscore), other separators -> spaces; a size
    written first moves after the family word ("72Bqwen" -> "qwen 72b")."""
    s = re.sub(r"(?<=\d)_(?=\d+(?:[^\d.bm]|$))", ".", name.strip().lower())
    if m := _SIZE_FIRST.match(s):
        s = f"{s[m.end() :]} {m.group(1)}"
    return re.sub(r"[\s\-_/·,，()（）]+", " ", s).strip()


def is_vision(name: str) -> bool:
    """A vision-language model's name ("GLM-4V-9B", "Qwen2-VL-7B", "InternVL2-26B")."""
    return bool(lookup.VISION_MARK.search(lookup.normalize(name)))


def read_name(name: str) -> NameParts | None:
    """The parts of a model name that opens with a family word; None when it opens with no letters."""
    s = _spaced(name)
    family = _FAMILY.match(s)
    if not family:
        return None
    version, size, active, experts, words = "", None, None, None, []
    for m in _PIECE.finditer(s, family.end()):
        if m.group(0).isalpha() and m.group(0) not in _FLAVOUR and len(m.group(0)) >= 3:
            words.append(m.group(0))
        if m.group("experts"):
            experts = experts or m.group("experts")
        elif m.group("active"):
            active = active or float(m.group("active"))
        elif m.group("size"):
            value = float(m.group("size")) / (1000 if m.group("unit") == "m" else 1)
            size = size or value
        elif m.group("number") and not version and size is None and m.start() <= family.end() + 1:
            version = m.group("number")  # "qwen1.5", "glm-5.2", "baichuan2": digits right after the family
    return NameParts(name, family.group(0), version, size, active, experts, tuple(words))


def keys(parts: NameParts) -> list[str]:
    """Spellings of the name to try against the catalog: family, version and size as the catalog writes them."""
    size = f"{parts.size_b:g}b" if parts.size_b is not None else ""
    tail = [t for t in (parts.experts or size, f"a{parts.active_b:g}b" if parts.active_b else "") if t]
    if not tail:
        return []
    return list(
        dict.fromkeys(
            [" ".join([f"{parts.family}{parts.version}", *tail]), " ".join([parts.family, parts.version, *tail])]
        )
    )


def _index() -> dict[str, ModelSpec]:
    user_models.refresh()  # a model added since: the index is rebuilt
    return _index_cached()


@functools.cache
def _index_cached() -> dict[str, ModelSpec]:
    return {lookup.normalize(n): m for m in lookup.models() for n in (m.id, m.name, *m.aliases)}


def resolve(parts: NameParts) -> ModelSpec | None:
    """The catalog model the name is, once glued sizes and separators are read ("llama2_70b"); else None. Exact
    names only: a near spelling of another size is another model."""
    vision = is_vision(parts.typed)
    if parts.words:
        return None  # "Qwen-Deepsee-32B" is not "Qwen-32B": a name with another family's word in it (`stand_in`)
    for key in keys(parts):
        if (hit := _index().get(lookup.normalize(key))) and not (vision and not is_vision(hit.name)):
            return hit  # "GLM-4V-9B" is not GLM-4-9B: a vision model is another model (stood in for, and said)
    return None


def _in_family(parts: NameParts, version: bool) -> Iterator[ModelSpec]:
    word = lookup.normalize(parts.family + (parts.version if version else ""))
    for m in lookup.models():
        names = (m.id, m.name, *m.aliases)
        if any(lookup.normalize(n).startswith(word) for n in names):
            yield m


def catalog_family(name: str) -> bool:
    """The name opens with the family word of a catalog model ("Llama-5-13B", "qwen72b"; not "Reranker-0.6B")."""
    parts = read_name(name)
    return bool(parts) and next(_in_family(parts, False), None) is not None


def stand_in(parts: NameParts, size_b: float | None = None, active_b: float | None = None) -> ModelSpec | None:
    """The family's catalog model nearest in size (within `NEAR`), the same version first; None when none is."""
    if parts.experts and (same := _index().get(parts.experts)) and same.is_moe:
        return same  # "Gemini-8x7B": the catalog's model of that expert layout ("8x7B" is Mixtral's alias)
    size = parts.size_b if parts.size_b is not None else size_b
    active = parts.active_b if parts.active_b is not None else active_b
    if size is None or size <= 0:
        return None
    moe = parts.moe or active is not None
    vision = is_vision(parts.typed)
    if parts.words and (both := _named_for_all(parts, size, moe)):
        return both  # "Qwen-Deepsee-32B": the catalog's 32B model whose name has both words (R1-Distill-Qwen-32B)
    for version in (True, False) if parts.version else (False,):
        near = [
            m
            for m in _in_family(parts, version)
            if m.is_moe == moe
            and abs(m.params_b - size) <= NEAR * size
            and (active is None or abs(m.active_b - active) <= NEAR * active)
        ]
        if near:  # the same modality (a text name, a text model), then the nearest size, then the newest release
            return min(
                near,
                key=lambda m: (
                    is_vision(m.name) != vision,
                    abs(m.params_b - size),
                    -int((m.release or "0").replace("-", "")),
                ),
            )
    return None


#: rapidfuzz partial ratio (0-100) a typed word needs to count as a word of a catalog name ("deepsee", "deepseek")
WORD_CUTOFF = 85


def _named_for_all(parts: NameParts, size: float, moe: bool) -> ModelSpec | None:
    """The catalog model nearest in size (within `NEAR`) whose name holds the family word and every other word of
    the typed name, each spelt closely enough; None when none does."""
    want = [parts.family, *parts.words]

    def holds(m: ModelSpec) -> bool:
        names = [lookup.normalize(n) for n in (m.name, *m.aliases)]
        return any(all(fuzz.partial_ratio(w, n) >= WORD_CUTOFF for w in want) for n in names)

    near = [m for m in lookup.models() if m.is_moe == moe and abs(m.params_b - size) <= NEAR * size and holds(m)]
    return min(near, key=lambda m: abs(m.params_b - size)) if near else None


def family_default(name: str) -> ModelSpec | None:
    """The model a family's name written without a size means (`ModelSpec.family_default`: "ChatGLM" is
    ChatGLM-6B); None when the catalog marks none for it."""
    key = lookup.normalize(name)
    return next((m for m in lookup.models() if key in {lookup.normalize(n) for n in m.family_default}), None)


#: bytes per weight of a precision word ("fp16 26G": 13B parameters)
_WEIGHT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "float16": 2, "bfloat16": 2, "半精度": 2, "fp8": 1, "int8": 1,
                 "8bit": 1, "int4": 0.5, "4bit": 0.5}  # fmt: skip
_PRECISION = r"fp32|fp16|bf16|bfloat16|float16|半精度|fp8|int8|8[\- ]?bit|int4|4[\- ]?bit"
_UNIT = r"\s*(?:gb|gib|g)(?![a-z\d])"
#: a weight size said with its precision: "fp16只用26G", "fp16 needs 26 GB", "26G (fp16)"
_WEIGHTS_AT = re.compile(
    rf"(?P<p>{_PRECISION})[^\d\n]{{0,8}}?(?P<gb>\d+(?:\.\d+)?)(?:{_UNIT}|(?=\s*(?:吗|呢|[,，。?？!！)）]|$)))"
    rf"|(?<![\d.])(?P<gb2>\d+(?:\.\d+)?){_UNIT}\s*[（(]?\s*(?:的)?\s*(?P<p2>{_PRECISION})"
)


def implied_size(text: str) -> tuple[float, str] | None:
    """The parameter count (billions) a weight size said with its precision implies ("fp16只用26G" -> 13), and the
    words that say it; None when the text says none."""
    low = text.lower()
    m = _WEIGHTS_AT.search(low)
    if not m:
        return None
    said = (text if len(low) == len(text) else low)[m.start() : m.end()]
    precision = re.sub(r"[\- ]", "", m.group("p") or m.group("p2"))
    gb = float(m.group("gb") or m.group("gb2"))
    if gb <= 0:
        return None
    return gb / _WEIGHT_BYTES[precision], said.strip(" \t(（")


def same_line(name: str) -> ModelSpec | None:
    """A later version of a catalog model whose version line has one size ("DeepSeek-V3.2" after DeepSeek-V3 and
    V3.1, all 671B): that model, the newest of the longest catalog name the typed name starts with. None when
    the line has several sizes (then the size must be asked) or no catalog name is a prefix."""
    typed = lookup.normalize(name)
    best: list[ModelSpec] = []
    longest = 0
    for m in lookup.models():
        for n in (m.name, *m.aliases):
            key = lookup.normalize(n)
            if len(key) >= 5 and typed.startswith(key) and typed != key and not typed[len(key)].isalpha():
                if len(key) > longest:
                    best, longest = [m], len(key)
                elif len(key) == longest and m not in best:
                    best.append(m)
    if not best or len({m.params_b for m in best}) != 1:
        return None
    return max(best, key=lambda m: int((m.release or "0").replace("-", "")))


#: families known only by the sizes their publisher releases (tools/data/model_families.yaml): the catalog has no
#: shape for them, but a family named without a size ("OrionStarAI/Orion", "KnowLM") still means a size, the one the
#: publisher releases first, computed on that size's stand-in and said in the answer
class PublishedFamily(Frozen):
    family: str
    org: str
    names: tuple[str, ...]
    sizes_b: tuple[float, ...] = Field(min_length=1)
    default_b: float = Field(gt=0)
    sources: tuple[Source, ...] = Field(min_length=1)


@functools.cache
def families() -> tuple[PublishedFamily, ...]:
    return tuple(PublishedFamily.model_validate(row) for row in lookup._load_yaml("model_families.yaml"))


@functools.cache
def _by_name() -> dict[str, PublishedFamily]:
    return {lookup.normalize(n): f for f in families() for n in (f.family, *f.names)}


def published(name: str) -> PublishedFamily | None:
    """The published family `name` is (a repository "owner/name" by its own name); None for any other name."""
    return _by_name().get(lookup.normalize(name.strip().rsplit("/", 1)[-1]))


def published_size(name: str) -> float | None:
    """The size (billions) a family's name written without one means: the publisher's first release."""
    family = published(name)
    return family.default_b if family else None


user_models.on_change(_index_cached.cache_clear)
