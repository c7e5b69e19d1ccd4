"""A model name the catalog lacks, read for what it says, and the catalog model that can stand in for it.

`read_name("qwen72b")` -> family "qwen", size 72B; `read_name("Qwen2-57B-A14B")` -> family "qwen", version "2",
57B total with 14B active; `read_name("qwen1_5")` -> family "qwen", version "1.5", no size; `read_name("Gemini-8x7B")`
-> experts "8x7b". `keys()` gives the spellings to try against the catalog ("qwen72b" -> "qwen-72b"), so a glued or
oddly separated name that is a catalog name resolves to it. `stand_in()` picks the catalog MoE of the same expert layout ("8x7B"), else the catalog model of the same family
(same version first, then any version) with the nearest size, within `NEAR` of it, dense for dense and MoE for MoE;
None when there is none (the calculators then size a generic model of that size, `lookup.generic_model`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tools.catalog import lookup, user_models
from tools.catalog.model_spec import ModelSpec

#: how far (relative) a catalog model's size may be from the typed size to stand in for it
NEAR = 0.15

#: what marks a vision-language model in a normalised name ("glm4v9b", "qwen2vl7b", "internvl2")
_VISION = re.compile(r"\dv(?=\d|$)|vl|vision|visual")
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

    @property
    def moe(self) -> bool:
        return self.active_b is not None or self.experts is not None


def _spaced(name: str) -> str:
    """Lower case, "1_5" -> "1.5" (a version written with an underscore), other separators -> spaces."""
    s = re.sub(r"(?<=\d)_(?=\d+(?:[^\d.bm]|$))", ".", name.strip().lower())
    return re.sub(r"[\s\-_/·,，()（）]+", " ", s).strip()


def is_vision(name: str) -> bool:
    """A vision-language model's name ("GLM-4V-9B", "Qwen2-VL-7B", "InternVL2-26B")."""
    return bool(_VISION.search(lookup.normalize(name)))


def read_name(name: str) -> NameParts | None:
    """The parts of a model name that opens with a family word; None when it opens with no letters."""
    s = _spaced(name)
    family = _FAMILY.match(s)
    if not family:
        return None
    version, size, active, experts = "", None, None, None
    for m in _PIECE.finditer(s, family.end()):
        if m.group("experts"):
            experts = experts or m.group("experts")
        elif m.group("active"):
            active = active or float(m.group("active"))
        elif m.group("size"):
            value = float(m.group("size")) / (1000 if m.group("unit") == "m" else 1)
            size = size or value
        elif m.group("number") and not version and size is None and m.start() <= family.end() + 1:
            version = m.group("number")  # "qwen1.5", "glm-5.2", "baichuan2": digits right after the family
    return NameParts(name, family.group(0), version, size, active, experts)


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


def stand_in(parts: NameParts, size_b: float | None = None, active_b: float | None = None) -> ModelSpec | None:
    """The family's catalog model nearest in size (within `NEAR`), the same version first; None when none is."""
    if parts.experts and (same := _index().get(parts.experts)) and same.is_moe:
        return same  # "Gemini-8x7B": the catalog's model of that expert layout ("8x7B" is Mixtral's alias)
    size = parts.size_b if parts.size_b is not None else size_b
    active = parts.active_b if parts.active_b is not None else active_b
    if size is None or size <= 0:
        return None
    moe = parts.moe or active is not None
    for version in (True, False) if parts.version else (False,):
        near = [
            m
            for m in _in_family(parts, version)
            if m.is_moe == moe
            and abs(m.params_b - size) <= NEAR * size
            and (active is None or abs(m.active_b - active) <= NEAR * active)
        ]
        if near:  # the nearest size; of equal sizes the newest release
            return min(near, key=lambda m: (abs(m.params_b - size), -int((m.release or "0").replace("-", ""))))
    return None


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


user_models.on_change(_index_cached.cache_clear)
