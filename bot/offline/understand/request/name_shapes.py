"""A model name the catalog lacks, written against its size ("Foo-13B", "MyModel_7B", "xx-8x7B", "FooMoE-30B-A3B"):
read as one unknown name, so that the answer says it is not in the catalog and computes on the size in its name
(dense, or a MoE of its total and active sizes: `names._stand_ins`), never on a silent bare size.

A family the catalog knows is read by `names` itself; this is the word it does not know, joined to the size by a
hyphen or underscore (a space is not enough: "with 13B" is a bare size). Words that are not names (a method, a
precision, "MoE", "total") are left to the bare-size reading.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rapidfuzz import fuzz, process

from bot.offline.understand.patterns import C
from tools.catalog.lookup import MAX_PARAMS, MIN_PARAMS, get_model, normalize
from tools.catalog.stand_in import family_default, implied_size, read_name, resolve, same_line, stand_in
from tools.errors import AdvisorError
from tools.units import plain

#: the colon of an Ollama model tag ("deepseek-r1:32b", "qwen2.5:7b-instruct-q4_K_M"): read as a space (same length)
TAG = re.compile(r"(?<=[a-z0-9]):(?=\d+(?:\.\d+)?[bm](?![a-z]))", re.IGNORECASE)
#: a word that can open a model's name: letters, digits after the first two letters allowed ("foomoe", "orion2")
_NAME_WORD = C(r"[a-z][a-z\d]*[a-z][a-z\d]*")
_SIZE_TAG = C(r"\d+(?:\.\d+)?b|\d+x\d+(?:\.\d+)?b")
_HYPHEN = C(r"[\-_]")
#: a word between a name's first word and its size: a name word or a version ("mt", "oss", "3.1", "v2")
_MIDDLE = C(r"[a-z][a-z\d]*|v?\d+(?:\.\d+)*[a-z]?")
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?B")
#: a character that makes a name part of a longer word or path before it; a Chinese character does not ("请问Orion-14B")
_INSIDE = re.compile(r"(?:(?![\u2e80-\u9fff\uac00-\ud7af])[\w\-./\\])$")
_FILE_AFTER = re.compile(r"\.[a-z]{2,5}\b|/")
#: words written against a size that are not a model's name ("LoRA-7B", "MoE-47B", "total-400B")
NOT_MODEL_WORDS = frozenset(
    "lora qlora dora full sft dpo ppo grpo rlhf moe dense model models llm llms total active params param size "
    "int fp bf nf awq gptq gguf ggml base chat instruct distil distill distilled finetune finetuned finetuning fine "
    "tune tuned train training test eval run my our your the".split()
)
#: English words that begin no model or card name (a misspelt-name search starting on one swallows the real name)
FUNCTION_WORDS = frozenset(
    "for on with the and of to in using use run runs running from by at as is are was were an a or vs via into onto "
    "about than then that this these those my our your their its".split()
)
#: of the words not a name, those that end a name read up to its size ("Foo-Chat-7B" and "Foo-MoE-30B" are names)
NAME_STOP_WORDS = NOT_MODEL_WORDS - {"chat", "instruct", "base", "moe"}


def sized_name(w: Any, toks: list[tuple[int, int, str]], i: int, tail: Callable[[int], bool], mark: str) -> int | None:
    """Read the unknown name that opens at token i and carries a size ("foo", "-", "13b"), its version words
    included (`tail(j)`: token j still belongs to the name), into `w`'s unknown models; the index of the token after
    it, or None when token i opens no such name."""
    tok = toks[i][2]
    if (
        not _NAME_WORD.fullmatch(tok)
        or tok in NOT_MODEL_WORDS
        or i + 1 >= len(toks)
        or _INSIDE.search(w.t, 0, toks[i][0])
    ):
        return None  # "…-pytorch-20b", "/path/config_671B": part of a longer name or a path, not a name of its own
    k = i + 1  # its name words before the size, each joined by a hyphen ("Hunyuan-MT-7B", "Seed-OSS-36B")
    while (
        k < min(len(toks), i + 4)
        and _MIDDLE.fullmatch(toks[k][2])
        and _HYPHEN.fullmatch(w.t, toks[k - 1][1], toks[k][0])
    ):
        if _SIZE_TAG.fullmatch(toks[k][2]) or toks[k][2] in NAME_STOP_WORDS:
            break
        k += 1
    if k >= len(toks) or not (_SIZE_TAG.fullmatch(toks[k][2]) and _HYPHEN.fullmatch(w.t, toks[k - 1][1], toks[k][0])):
        return None
    j = k + 1  # its version words, joined by a hyphen ("-A3B", "-Chat"); another size ("/ 40B") is another model
    while j < len(toks) and j < i + 6 and tail(j) and _HYPHEN.fullmatch(w.t, toks[j - 1][1], toks[j][0]):
        if _SIZE_TAG.fullmatch(toks[j][2]):
            break
        j += 1
    if _FILE_AFTER.match(w.t, toks[j - 1][1]):
        return None  # "config_671B.json": a file
    start, end = toks[i][0], toks[j - 1][1]
    _add(w, "unknown_models", w.span(start, end))
    w.note("unknown_models", start, end)
    w.mask(start, end, mark)
    return j


_ACTIVE_TAG = C(r"a(\d+(?:\.\d+)?)b")
_NAME_PART = C(r"[a-z]{2,}|\d+(?:\.\d+)*")


def moe_size(w: Any, toks: list, i: int, total: float, mark: str) -> bool:
    """A size at token i joined by a hyphen to its active tag ("235B-A22B"): read as one MoE model of those two
    sizes, noted and masked; False when no smaller active tag follows."""
    if (
        i + 1 >= len(toks)
        or w.t[toks[i][1] : toks[i + 1][0]] != "-"
        or not (m := _ACTIVE_TAG.fullmatch(toks[i + 1][2]))
    ):
        return False
    if float(m.group(1)) >= total:
        return False
    start, end = toks[i][0], toks[i + 1][1]
    _add(w, "models", f"{plain(total)}B-A{plain(float(m.group(1)))}B")
    w.note("models", start, end)
    w.mask(start, end, mark)
    return True


def words_to_size(toks: list, j: int, joined: Callable[[int], bool], stop: Callable[[str], bool],
                  tail: Callable[[int], bool]) -> int:  # fmt: skip
    """After a family's word (and its version words) at token j: up to three name words or numbers, then a size,
    then its version words ("Hunyuan-MT-7B", "Mistral Small 3.1 24B", each `joined` to the last) belong to the
    name: the index after them; j itself when no size follows so (a word that `stop`s a name, a method word)."""
    k = j
    while k < min(len(toks), j + 4) and joined(k):
        if _SIZE_TAG.fullmatch(toks[k][2]):
            k += 1
            while k < min(len(toks), j + 6) and tail(k) and not _SIZE_TAG.fullmatch(toks[k][2]):
                k += 1
            return k
        if toks[k][2] in NAME_STOP_WORDS or stop(toks[k][2]) or not _NAME_PART.fullmatch(toks[k][2]):
            return j
        k += 1
    return j


#: a size glued in front of a family word, as one token ("72bqwen")
SIZE_FIRST = C(r"(\d+(?:\.\d+)?b)([a-z]+\d*(?:\.\d+)?)")
#: rapidfuzz ratio a second word needs to count as another family's name ("deepsee" for "deepseek")
_FAMILY_CUTOFF = 85


def other_family(w: Any, toks: list, j: int, families: set[str]) -> bool:
    """Token j, joined to the family word before it by a hyphen or underscore, is (a close spelling of) another
    family's word: "Qwen-Deepsee-32B" is one name, not Qwen and then something else."""
    if j >= len(toks) or not re.fullmatch(r"[\-_]", w.t[toks[j - 1][1] : toks[j][0]]):
        return False
    word = toks[j][2]
    if len(word) < 4 or not word.isalpha():
        return False
    return bool(process.extractOne(word, sorted(families), scorer=fuzz.ratio, score_cutoff=_FAMILY_CUTOFF))


def family_name(w: Any, start: int, end: int, nxt: int, mark: str) -> int:
    """A model name that opens with a family word, read from start to end: the catalog model it spells, else an
    unknown name (said as not in the catalog; computed on a stand-in when it carries a size: `stand_ins`)."""
    typed = w.span(start, end)
    parts = read_name(typed)
    if exact := parts and resolve(parts):  # "llama2_70b", "internlm2_5-7b", "72Bqwen": a catalog name, spelt otherwise
        _add(w, "models", exact.id)
        w.note("models", start, end)
    else:
        _add(w, "unknown_models", typed)
        w.note("unknown_models", start, end)
    w.mask(start, end, mark)
    return nxt


def stand_ins(w: Any, mark: str) -> None:
    """A model name the catalog lacks is computed on a stand-in when a size is in its name ("qwen72b",
    "Qwen2-57B-A14B", "Gemini-8x7B") or beside it ("GLM-5.2，总参 355B"): the family's catalog model nearest in
    size (`tools.catalog.stand_in`), else a generic model of that size (a generic MoE of its total and active sizes
    when the name gives both: "FooMoE-30B-A3B" is "30B-A3B"). `stand_ins` maps the typed name to it, so the answer
    says which; a name with no size anywhere has none (the planner asks for the size)."""
    models, given = w.slots["models"], [m for m in w.slots["models"] if _BARE_SIZE.fullmatch(m)]
    unknown = w.slots["unknown_models"]
    keys = [normalize(n) for n in unknown]  # "Qwen2-VL" beside "Qwen2-VL-7B", "qwen1_5" beside "qwen1_5_chat": one
    unknown[:] = [n for n, k in zip(unknown, keys, strict=True) if not any(o != k and o.startswith(k) for o in keys)]
    _family_words(w, models, mark)
    implied = implied_size(w.raw)
    for typed in unknown:
        parts = read_name(typed)
        if parts is None:
            continue
        size = parts.size_b if parts.size_b is not None else float(given[0][:-1]) if given else None
        if size is None and (default := family_default(typed)) and not implied:  # "ChatGLM": ChatGLM-6B, said
            _add(w, "models", default.id)
            w.slots["stand_ins"][typed], w.slots["stand_in_basis"][typed] = default.id, "default"
            continue
        if size is None and implied and not parts.experts and not parts.moe:  # "Baichuan2 … fp16 26G": the 13B
            if model := stand_in(parts, size_b=implied[0]):
                _add(w, "models", model.id)
                w.slots["stand_ins"][typed], w.slots["stand_in_basis"][typed] = model.id, implied[1]
                continue
        if parts.experts and size is None:
            n, each = parts.experts[:-1].split("x")
            size = float(n) * float(each)  # no layout in the catalog: all experts counted as dense weights
        if size is not None and not MIN_PARAMS <= size * 1e9 <= MAX_PARAMS:
            continue  # "0.000001BQwen2": no size a model has; the name stays unknown, said as such
        model = stand_in(parts, size_b=size) or (same_line(typed) if size is None else None)
        if model is None and size is None:
            continue
        value = model.id if model else f"{plain(size)}B"
        if model is None and parts.active_b and parts.active_b < size:
            value = f"{value}-A{plain(parts.active_b)}B"  # a generic MoE: weights on the total, compute on the active
        label = given[0] if given and parts.size_b is None and not parts.experts else None
        if label is None and model and size is not None and f"{plain(size)}B" in given:
            label = f"{plain(size)}B"  # "7b-awq … qwen2VL-7b": the bare size elsewhere is this model's own
        if label in models:  # the size given beside the name is this model's: its stand-in replaces it
            models[models.index(label)] = value
            given.remove(label)
        elif value not in models:
            models.insert(_place(w, models, typed), value)
        w.slots["stand_ins"][typed] = value


def _place(w: Any, models: list[str], typed: str) -> int:
    """Where the stand-in of `typed` goes among the models: before the first bare size the question says after it
    ("部署 Ornith-1.0-35B …，比27b的都慢": the 35B, read here after every bare size, goes back where it was written,
    before the 27B it is set against); after the catalog models, which keep the order they were read in."""
    at = next((a for slot, a, b in w.spans if slot == "unknown_models" and w.span(a, b) == typed), None)
    if at is None:
        return len(models)
    for k, model in enumerate(models):
        if not _BARE_SIZE.fullmatch(model):
            continue
        starts = [a for slot, a, b in w.spans if slot == "models" and w.span(a, b).strip().lower() == model.lower()]
        if starts and min(starts) > at:
            return k
    return len(models)


def _family_words(w: Any, models: list[str], mark: str) -> None:
    """A family's name with no size and nothing else named ("Mistral on CPU", "ChatGLM 微调"): read as an unknown
    name that stands on the size the family is known for (`ModelSpec.family_default`), said in the answer."""
    spans = w.slots.pop("family_words", [])
    if models or w.slots["unknown_models"] or not spans:
        return
    start, end = spans[0]
    _add(w, "unknown_models", w.span(start, end))
    w.note("unknown_models", start, end)
    w.mask(start, end, mark)


def _add(w: Any, slot: str, value: str) -> None:
    if value not in w.slots[slot]:
        w.slots[slot].append(value)


def place_listed(w: Any, listed: list[tuple[str, str]]) -> None:
    """Each listed size (`listed_sizes`) in the models before the size that carries the unit, in the order written."""
    models = w.slots["models"]
    for label, last in listed:
        if label not in models:
            models.insert(models.index(last) if last in models else len(models), label)


#: sizes listed with the unit on the last one only ("llama7/13/70b", "Qwen2.5 的 7、14、72B"): each is a size asked
_LISTED = C(r"(?<![\d.])\d+(?:\.\d+)?(?:\s*[/、，,]\s*\d+(?:\.\d+)?)+\s*b\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
#: a number given as a setting's value ("max_words = 512", "batch: 8")
_SETTING = re.compile(r"[a-z_]\s*[=:：]\s*$", re.IGNORECASE)


def listed_sizes(w: Any, mark: str) -> list[tuple[str, str]]:
    """The sizes of a list before its last one, which carries the unit ("13" of "llama7/13/70b"), noted and masked in
    `w`, as (label, the last size's label): `place_listed` puts each before the last one in the models. A number
    glued to a name's letters ("llama7") is that name's own size, read with the name."""
    out = []
    for m in _LISTED.finditer(w.t):
        numbers = list(_NUMBER.finditer(m.group(0)))
        last = f"{plain(float(numbers[-1].group(0)))}B"
        for n in numbers[:-1]:
            start, end = m.start() + n.start(), m.start() + n.end()
            value = float(n.group(0))
            if (start and w.t[start - 1].isalpha()) or not 0.1 <= value <= 2000 or _SETTING.search(w.t, 0, start):
                continue  # "max_words = 512, 7B": a setting's value, not a size of the list
            out.append((f"{plain(value)}B", last))
            w.note("models", start, end)
            w.mask(start, end, mark)
    return out


#: what joins two catalog names into one name ("DeepSeek-R1-0528-Qwen3-8B"): a hyphen or underscore, no space
_JOIN = re.compile(r"[\-_]")
_SIZED = re.compile(r"\d+(?:\.\d+)?b\b", re.IGNORECASE)


def joined_names(w: Any) -> None:
    """Two catalog names written as one ("DeepSeek-R1-0528-Qwen3-8B": R1-0528 distilled into Qwen3-8B) are one model
    the catalog lacks, computed on the name in it that carries its size (`stand_in_basis` "named"), never as two
    models (a 671B one beside the 8B)."""
    spans = sorted((a, b) for slot, a, b in w.spans if slot == "models")
    for (a1, b1), (a2, b2) in zip(spans, spans[1:], strict=False):
        if not _JOIN.fullmatch(w.src[b1:a2]) or not _SIZED.search(w.raw[a2:b2]):
            continue
        first, second = _catalog_model(w.span(a1, b1)), _catalog_model(w.span(a2, b2))
        if first is None or second is None or first.id == second.id or first.generic or second.generic:
            continue
        models, typed = w.slots["models"], w.span(a1, b2)
        if first.id in models and sum(_catalog_model(w.span(a, b)) == first for a, b in spans) == 1:
            models.remove(first.id)
        mentions = w.slots["mentions"].get("models", [])
        for said in (w.span(a1, b1), w.span(a2, b2)):
            if said in mentions:
                mentions.remove(said)
        w.spans[:] = [s for s in w.spans if s not in (("models", a1, b1), ("models", a2, b2))]
        _add(w, "unknown_models", typed)
        w.note("unknown_models", a1, b2)
        w.slots["stand_ins"][typed], w.slots["stand_in_basis"][typed] = second.id, "named"
        return


def _catalog_model(name: str):
    try:
        return get_model(name)
    except AdvisorError:
        return None
