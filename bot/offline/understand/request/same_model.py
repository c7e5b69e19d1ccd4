"""Mentions that are a model already named, not a second model: a size tag right after the name ("DeepSeek-R1:671b"),
the named model's size said again elsewhere ("满血版 671B deepseek"), the name written short ("ChatGLM3 … GLM3")."""

from __future__ import annotations

import re
from typing import Any

from tools.catalog import lookup as catalog
from tools.catalog.stand_in import is_vision, read_name
from tools.errors import AdvisorError

_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?B")
#: between a name and its own size tag: separators, and words glued in by them ("internlm-chat-20b-pytorch-20b")
_TAG_GAP = re.compile(r"[\s:_\-/]*(?:[a-z][a-z0-9.]{0,15}[_\-/]+){0,3}")


def _is_its_size(model: str, value_b: float) -> bool:
    """A size within 10 % of the model's parameters, or of the size its own name says ("Qwen2-VL-7B" is the 7B
    though its vision tower makes it 8.3B); False for a name the catalog cannot give back."""
    try:
        m = catalog.get_model(model)
    except AdvisorError:
        return False
    said = catalog.parse_param_count(m.name)
    return any(abs(b - value_b) <= 0.1 * value_b for b in (m.params_b, *((said / 1e9,) if said else ())))


def own_size(w: Any, start: int, value_b: float) -> int | None:
    """ "DeepSeek-R1:671b" (an Ollama tag), "Llama-3.1-70B 70b": a size written right after a catalog model's name
    and within 10 % of its parameters is that model's own size, not a second model to compare with: the index
    of that name's span in `w.spans`, else None."""
    before = [(e, i) for i, (slot, _, e) in enumerate(w.spans) if slot == "models" and e <= start]
    named = [m for m in w.slots["models"] if not _BARE_SIZE.fullmatch(m)]
    if not before or not named or not _TAG_GAP.fullmatch(w.t, before[-1][0], start):
        return None
    return before[-1][1] if _is_its_size(named[-1], value_b) else None


def named_size(w: Any, value_b: float) -> bool:
    """ "deepseek-r1 … 满血版 671B": a bare size within 10 % of the one catalog model named before it, said again
    elsewhere in the text, is that model's size (not a generic model of that size beside it); never when two
    models are named or sizes are compared ("7B 和 14B"), where the size is a model of its own, nor beside a name we
    lack (whose stand-in the size decides)."""
    named = [m for m in w.slots["models"] if not _BARE_SIZE.fullmatch(m)]
    if len(set(named)) != 1 or any(_BARE_SIZE.fullmatch(m) for m in w.slots["models"]) or w.slots["unknown_models"]:
        return False  # a name we lack ("Llama 3.1 … the 70B model") may be the one this size belongs to
    return _is_its_size(named[0], value_b)


def shortened(w: Any) -> None:
    """ "ChatGLM3 … 另外 GLM3 能在 vLLM 上运行吗": a name we lack that is the tail of a catalog model's name said in
    the same text is that model written short, not a second, unknown model; so is its family and version without a
    size ("Qwen2-72B … Qwen2 doesn't have support for FSDP": never "Qwen2.5", another version)."""
    typed = w.slots["mentions"].get("models", [])
    said = [catalog.normalize(m) for m in typed]
    lines = {_line(m) for m in typed} - {None}
    short = [
        u
        for u in w.slots["unknown_models"]
        if any(k != (n := catalog.normalize(u)) and k.endswith(n) for k in said) or _bare_line(u) in lines
    ]
    if short and w.slots["models"]:
        w.slots["unknown_models"] = [u for u in w.slots["unknown_models"] if u not in short]
        w.spans = [(slot, a, b) for slot, a, b in w.spans if not (slot == "unknown_models" and w.span(a, b) in short)]


def _line(name: str) -> tuple[str, str, bool] | None:
    """The family and version a model name opens with, and whether it is a vision model ("Qwen2-72B-Instruct" ->
    ("qwen", "2", False); "Qwen2-VL" is another line), None without a version."""
    parts = read_name(name)
    return (parts.family, parts.version, is_vision(name)) if parts and parts.version else None


def _bare_line(name: str) -> tuple[str, str, bool] | None:
    """The family and version of a name that says nothing more: no size, no experts, no other word ("Qwen2")."""
    parts = read_name(name)
    if parts is None or parts.size_b is not None or parts.moe or parts.words:
        return None
    return _line(name)


#: words that put two models side by side: then a family and its later version are two models, not one
_SIDE_BY_SIDE = re.compile(
    r"对比|比较|区别|还是|或者|\bvs\.?\b|versus|\bor\b|compare|difference|better than|相比|和|与", re.I
)
_SIZE_TAIL = re.compile(r"[-_ ]?\d+(?:\.\d+)?b$")


def catalog_id(name: str) -> str | None:
    try:
        return catalog.get_model(name).id
    except AdvisorError:
        return None


def refined(w: Any) -> None:
    """ "serve Llama-3 70b … I want to use vLLM to serve Llama-3.3-70b": a model of the same size named again with a
    later point version of its family ("3" -> "3.3") is the one meant, the first written loosely; not when the text
    sets models side by side ("Qwen2-72B 和 Qwen2.5-72B 哪个好"), where both are asked about."""
    models = list(dict.fromkeys(w.slots["models"]))
    if len(models) != 2 or _SIDE_BY_SIDE.search(w.src):
        return
    try:
        a, b = (catalog.get_model(m) for m in models)
    except AdvisorError:
        return
    if abs(a.params_b - b.params_b) > 0.02 * max(a.params_b, b.params_b):
        return
    base = [_SIZE_TAIL.sub("", m.lower()) for m in models]  # catalog ids: "llama-3.3-70b" -> "llama-3.3"
    for loose, exact in ((0, 1), (1, 0)):
        if base[exact].startswith(base[loose] + "."):
            drop = models[loose]
            w.slots["models"] = [m for m in w.slots["models"] if m != drop]
            w.spans = [("model_again" if slot == "models" and catalog_id(w.span(a, e)) == drop else slot, a, e)
                       for slot, a, e in w.spans]  # fmt: skip
            w.slots["models"].insert(0, models[exact])
            w.slots["models"] = list(dict.fromkeys(w.slots["models"]))
            return


_SIZE_SPAN = re.compile(r"\d+(?:\.\d+)?\s*b", re.I)


def size_first(w: Any) -> None:
    """ "Time to fine-tune on 1m samples(13b) … fine-tuning llama 2 13b": a bare size said before the one catalog
    model the text names, within 10 % of its parameters, is that model's size (a title's tag), not a generic model
    beside it; not when the text sets models side by side or names one we lack (whose stand-in the size decides)."""
    models = list(dict.fromkeys(w.slots["models"]))
    sizes = [m for m in models if _BARE_SIZE.fullmatch(m)]
    named = [m for m in models if not _BARE_SIZE.fullmatch(m)]
    if not sizes or len(named) != 1 or w.slots["unknown_models"] or _SIDE_BY_SIDE.search(w.src):
        return
    if not all(_is_its_size(named[0], float(s[:-1])) for s in sizes):
        return
    w.slots["models"] = [m for m in w.slots["models"] if m not in sizes]
    w.spans = [("model_again" if slot == "models" and _SIZE_SPAN.fullmatch(w.span(a, e).strip()) else slot, a, e)
               for slot, a, e in w.spans]  # fmt: skip
