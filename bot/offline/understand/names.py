"""GPU and model names in a question: catalog names and aliases matched token by token, plus the
shapes of names the catalog lacks ("RTX 9090", "Qwen5-300B", a bare "70B").

Matched spans are masked in the working text (`GPU_MARK`, `MODEL_MARK`) so that later stages of
`parse` do not read a name's digits as a count or a size.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from rapidfuzz import fuzz, process

from bot.core.language import HAN_CHARS
from bot.offline.understand import lexicon as lx
from bot.offline.understand.cards.variant import host_part, unlisted_variant
from bot.offline.understand.lexicon import to_number
from bot.offline.understand.patterns import C
from bot.offline.understand.request import name_shapes
from bot.offline.understand.request.addresses import addresses, named_part
from bot.offline.understand.request.distilled import distilled, distilled_stand_ins
from bot.offline.understand.request.name_shapes import FUNCTION_WORDS as _FUNCTION_WORDS
from bot.offline.understand.request.name_shapes import SIZE_FIRST, family_name, other_family, sized_name, stand_ins
from bot.offline.understand.request.same_model import named_size, own_size, refined, shortened, size_first
from tools.catalog import lookup as catalog
from tools.catalog.stand_in import family_default, is_vision
from tools.units import plain

GPU_MARK, MODEL_MARK, USED_MARK = "\ue000", "\ue001", "\ue002"
_C = C  # bounded patterns (linear-time parsing); ASCII: \\b between 中文 and Latin

_GAP = _C(r"[ \t\-_/·.]*")  # never across a line: "deepseek v2\n1. …" is a name, then a list
_NOT_NAME = _C(lx.NOT_NAMES)
_SIZE = _C(r"(\d+(?:\.\d+)?)b")
#: a size in millions ("124m"): a model size after a family name, or before 模型/model/参数
_SIZE_M = _C(r"(\d+(?:\.\d+)?)m")
_MODEL_WORD_AFTER = _C(r"^\s*(?:的)?\s*(?:小)?(?:(?:total|trainable)\s+)?(?:模型|models?\b|参数|params\b|parameters\b)")
_SIZE_ZH = _C(rf"(?<![a-z\d.])({lx.NUM})\s*(万亿|千亿|百亿|亿)\s*(?:个)?\s*(?:参数量?|规模|级别?|的模型|模型|params)")
_VERSION_WORD = _C(
    r"^(?:a\d+(?:\.\d+)?b|v\d.*|r\d.*|\d.*|chat|instruct|base|coder|moe|turbo|pro|max|mini|flash|o|vl|math|hf|it)$"
)
_GPU_NUMBER = _C(r"^[a-z]{0,3}\d{2,5}[a-z]{0,4}$")
_UNLISTED_CARD = _C(  # "Z9000 显卡": a card by the word after it, though the catalog lacks it
    r"[a-z]{1,3}\d{3,5}[a-z]?\s*(?:显卡|加速卡|计算卡|gpus?\b(?![- ]?h)|graphics cards?)|\d{4}[a-z]?\s*显卡"
)
_SOFTWARE = _C(lx.SOFTWARE)
#: "满血版" with no model named: the full DeepSeek-R1 (671B), which the word names in Chinese usage (against its
#: distilled and quantised versions); the catalog's aliases read it when "DeepSeek" is said beside it
_FULL_STRENGTH = _C(r"满血(?:版本?)?")
_O_AS_ZERO = re.compile(r"(?<=\d)o|o(?=\d)")
#: rapidfuzz ratio (0-100) a misspelt name needs to count as a catalog name (the digits must match exactly)
FUZZY_CUTOFF = 85


class _Names:
    """Catalog names and aliases, normalised, with the prefixes of every key for early stops."""

    def __init__(self) -> None:
        self.index: dict[str, tuple[str, str]] = {}
        #: a model key -> the numbers of the names it comes from ("qwen257b": ("2.5", "7"), never "qwen2-57b")
        self.numbers: dict[str, set[tuple[str, ...]]] = {}
        for kind, records in (("gpu", catalog.gpus()), ("model", catalog.models())):
            for rec in records:
                for name in (rec.id, rec.name, *rec.aliases):
                    self.index.setdefault(catalog.normalize(name), (kind, rec.id))
                    if kind == "model":
                        self.numbers.setdefault(catalog.normalize(name), set()).add(numbers(name))
        self.prefixes = {key[:i] for key in self.index for i in range(len(key) + 1)}
        gpu_keys = [k for k, (kind, _) in self.index.items() if kind == "gpu"]
        self.gpu_letters = {m.group(1) for k in gpu_keys if (m := re.match(r"([a-z]+)\d", k))} | set(lx.GPU_BRAND_WORDS)
        self.families = set(lx.MODEL_FAMILY_WORDS) | {
            m.group(1) for k, (kind, _) in self.index.items() if kind == "model" and (m := re.match(r"([a-z]{2,})", k))
        }
        self.gpu_letters -= self.families
        raw = [n for recs in (catalog.gpus(), catalog.models()) for r in recs for n in (r.name, *r.aliases)]
        cjk = {run for name in raw for run in re.findall(f"[{HAN_CHARS}]+", name)}
        cjk |= {*lx.GPU_ZH_PREFIXES, *(w for w in lx.MODEL_FAMILY_WORDS if not w.isascii())}
        self.token_rx = _C(
            # "4090lora": a card's number glued to a method word is the card, then the word
            r"[a-z]*\d[a-z0-9.]*?(?=(?:q?lora|sft|dpo|ppo)(?![a-z]))|"
            # "8A100", "2H100": a count glued before a card's name is the count, then the card ("1h20min" is time)
            r"(?<![a-z\d.])[1-9]\d{0,2}(?=[ahlv]\d{2,3}(?![\d.])(?!\s*(?:m\b|min|分|秒|s\b)))|"
            r"\d+x(?=[a-z]|\d{3,4}(?![\d.]))|[a-z0-9]+(?:\.[0-9]+)*[a-z0-9]*|"
            + "|".join(re.escape(p) for p in sorted(cjk, key=len, reverse=True))
        )
        self.by_digits: dict[str, list[str]] = {}
        for key in self.index:
            self.by_digits.setdefault(re.sub(r"\D", "", key), []).append(key)
        self._family_rx = re.compile(
            "^(?:"
            + "|".join(sorted(map(re.escape, self.families), key=len, reverse=True))
            + r")(?:[\d.]+(?:vl|[a-z])?)?$"  # "qwen2.5", "glm4v", "qwen3vl"
        )

    def lookup(self, key: str, typed: str | None = None) -> tuple[str, str] | None:
        hit = self.index.get(key)
        if hit is None and key.endswith("s"):  # "h800s"
            hit = self.index.get(key[:-1])
        if hit is None and typed and (bare := _GPU_WORD_AFTER.sub("", typed.lower())) != typed.lower():
            hit = self.index.get(_norm(bare))  # "3090GPU", "A800 卡": the card
            hit = hit if hit and hit[0] == "gpu" else None
        if hit and hit[0] == "model" and typed is not None and len(mine := numbers(typed)) > 1:
            if mine not in self.numbers.get(key, {mine}):  # "Qwen2-57B" is not "Qwen2.5-7B" without its dots
                return None
        return hit

    def is_prefix(self, key: str, typed: str) -> bool:
        return (
            key in self.prefixes
            or (key.endswith("s") and key[:-1] in self.prefixes)
            or _norm(_GPU_WORD_AFTER.sub("", typed.lower())) in self.prefixes
        )

    def fuzzy(self, key: str, typed: str | None = None) -> tuple[str, str] | None:
        """A typo of a catalog name: letter O for zero ("a1oo", "h8oo"), or a close spelling with the same
        digits ("lamma-3-8b", "qwen2.5-7b-instrcut"); None when nothing is close enough."""
        fixed = _O_AS_ZERO.sub("0", key)
        while fixed != key:
            key, fixed = fixed, _O_AS_ZERO.sub("0", fixed)
        if hit := self.lookup(key, typed):
            return hit
        digits = re.sub(r"\D", "", key)
        if len(key) < 5 or not digits:
            return None
        candidates = self.by_digits.get(digits)
        if not candidates:
            return None
        candidates = [c for c in candidates if c[:1] == key[:1]]  # a typo keeps the first letter: "mydeepseek2" no
        match = process.extractOne(key, candidates, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
        if match and is_vision(key) != is_vision(match[0]):
            return None  # "GLM-4V-9B" is the vision model, not GLM-4-9B (and "Qwen2-7B" not Qwen2-VL-7B): another model
        if match and typed and (mine := numbers(typed)) not in self.numbers.get(match[0], {mine}):
            return None  # "Deepsee-32B" is a 32B model, not DeepSeek-V3.2: the same digits, another number
        return self.lookup(match[0], typed) if match else None

    def is_family(self, token: str) -> bool:
        return bool(self._family_rx.match(token))


#: a word after a card's name that is no part of it: "3090GPU", "A800 卡", "4090显卡" (normalised: 显卡 -> 卡)
_GPU_WORD_AFTER = re.compile(r"(?<=[a-z0-9])\s*(?:gpus?|显卡|卡)$")
#: what makes "GPU" after a card part of a unit ("GPU-hours", "GPU 小时", "卡时")
_HOURS_AFTER = re.compile(r"[\s\-·]*(?:hours?|hrs?\b|h\b|小时|时)", re.IGNORECASE)


def numbers(name: str) -> tuple[str, ...]:
    """The numbers in a name as written, dots kept ("Qwen2.5-7B" -> ("2.5", "7"); "qwen2_5" -> ("2.5",))."""
    return tuple(re.findall(r"\d+(?:\.\d+)*", re.sub(r"(?<=\d)_(?=\d)", ".", name.lower())))


def _is_gpu(token: str, names: _Names) -> bool:
    """A token that is a card or its memory ("v100", "32g"), not a model's version word."""
    hit = names.lookup(_norm(token))
    return bool(hit and hit[0] == "gpu") or bool(re.fullmatch(r"\d+(?:g|gb)", token))


@functools.cache
def _names() -> _Names:
    return _Names()


catalog.user_models.on_change(_names.cache_clear)


@functools.lru_cache(maxsize=4096)
def _norm(span: str) -> str:
    return catalog.normalize(span)


def _size_label(value_b: float) -> str:
    return f"{plain(value_b)}B"


def _add(w: Any, slot: str, value: str) -> None:
    if value not in w.slots[slot]:
        w.slots[slot].append(value)


def names_in(w: Any) -> None:
    """Find GPU and model names in `w` (parse's working text), record them in its slots and mask them."""
    names = catalog.user_models.refresh() or _names()  # a model added since (`gpu-advisor models add`) is read at once
    w.t = name_shapes.TAG.sub(" ", w.t)  # an Ollama tag, "deepseek-r1:32b" / "qwen2.5:7b", is the name and its size
    links = []  # the repository or model an address points at: read only when the prose names no model
    for start, end in addresses(w.t):  # "…/assets/eba8985c-fe1b-48b3-b705-…": no card or figure in an address
        if named := named_part(w.t, start, end):
            links.append(named)
        w.mask(start, end)
    for m in _SOFTWARE.finditer(w.t):
        w.mask(*m.span())
    for m in _SIZE_ZH.finditer(w.t):
        value = to_number(m.group(1))
        if value is not None:
            value *= to_number("1" + m.group(2))
            _add(w, "models", _size_label(value / 1e9)) if value > 0 else w.slots["invalid"].append(w.span(*m.span()))
            w.note("models", *m.span())
            w.mask(*m.span(), MODEL_MARK)
    listed = name_shapes.listed_sizes(w, MODEL_MARK)  # "llama7/13/70b": the 13B too, before the 70B
    _scan(w, names, [(m.start(), m.end(), m.group(0)) for m in names.token_rx.finditer(w.t)])
    name_shapes.place_listed(w, listed)
    if links and not w.slots["models"] and not w.slots["unknown_models"]:
        _read_links(w, names, links)
    if not w.slots["models"] and not w.slots["unknown_models"] and (m := _FULL_STRENGTH.search(w.t)):
        _add(w, "models", "deepseek-r1")
        w.note("model_again", *m.span())  # the word is the model's name, read as DeepSeek-R1
    _sibling_sizes(w, names)
    shortened(w)
    refined(w)
    size_first(w)  # "(13b) … llama 2 13b": the size said first is the named model's
    distilled(w)
    stand_ins(w, MODEL_MARK)
    distilled_stand_ins(w)
    name_shapes.joined_names(w)  # "DeepSeek-R1-0528-Qwen3-8B": one model, on the name with its size
    if links:  # a linked name the catalog cannot size ("github.com/THUDM/GLM-4/assets/…") is no question back
        w.slots["unknown_models"][:] = [
            n for n in w.slots["unknown_models"] if n in w.slots["stand_ins"] or not _linked(w, n, links)
        ]


def _read_links(w: Any, names: _Names, links: list[tuple[int, int]]) -> None:
    """The prose named no model: read the names the links point at (one model only: links to several say none of
    them is what ran), and mask again what was not read as a name (a name keeps its own mark)."""
    for start, end in links:
        w.t = w.t[:start] + w.src[start:end] + w.t[end:]
    toks = [(m.start(), m.end(), m.group(0)) for m in names.token_rx.finditer(w.t)]
    _scan(w, names, [t for t in toks if any(s <= t[0] and t[1] <= e for s, e in links)])
    if len(w.slots["models"]) + len(w.slots["unknown_models"]) > 1:  # links to several models: which one ran
        w.slots["models"].clear()  # is not for the links to say ("example: …/CodeLlama-7B-AWQ, …/deepseek-33B")
        w.slots["unknown_models"].clear()
        w.slots["mentions"].pop("models", None)
        w.slots["mentions"].pop("unknown_models", None)
        w.spans[:] = [sp for sp in w.spans if sp[0] not in ("models", "unknown_models")]
    for s, e in links:  # what was not read as a name is masked again (a name keeps its own mark)
        w.t = w.t[:s] + "".join(USED_MARK if c == o else c for c, o in zip(w.t[s:e], w.src[s:e])) + w.t[e:]


def _linked(w: Any, name: str, links: list[tuple[int, int]]) -> bool:
    return any(name in w.span(s, e) for s, e in links)


def _scan(w: Any, names: _Names, toks: list) -> None:
    """Read the catalog and unknown names among the tokens `toks` of the working text."""
    i = 0
    while i < len(toks):
        start = toks[i][0]
        best, j = None, i
        while j < len(toks) and j < i + 12:
            if j > i and not _GAP.fullmatch(w.t, toks[j - 1][1], toks[j][0]):
                break
            key = _norm(w.t[start : toks[j][1]])
            hit = names.lookup(key, w.t[start : toks[j][1]])
            if hit and j > i and toks[j][2] in ("gpu", "gpus") and _HOURS_AFTER.match(w.t, toks[j][1]):
                hit = None  # "2000 H20 GPU-hours": the word belongs to the unit, not to the card's name
            if hit:
                best = (j, hit)
            if not names.is_prefix(key, w.t[start : toks[j][1]]):
                break
            j += 1
        if best:
            j, (kind, rid) = best
            end = toks[j][1]
            if kind == "gpu" and (variant := unlisted_variant(w.t, end, catalog.get_gpu(rid))):
                stop, memory = variant  # "3060 Ti": not the 3060 the catalog lists; "5060 Ti 8G": not its 16 GB
                _add(w, "unknown_gpus", w.span(start, stop))
                w.note("unknown_gpus", start, stop)
                w.mask(start, stop, GPU_MARK)
                if memory and not w.slots.get("gpu_from_memory"):  # checked on the memory the user gave
                    w.slots["gpu_from_memory"] = {"memory_gb": memory, "gpu": None, "named": w.span(start, stop)}
                i = next((k for k in range(j + 1, len(toks)) if toks[k][0] >= stop), len(toks))
                continue
            _add(w, "gpus" if kind == "gpu" else "models", rid)
            w.note("gpus" if kind == "gpu" else "models", start, end)
            w.mask(start, end, GPU_MARK if kind == "gpu" else MODEL_MARK)
            i = j + 1
            continue
        i = _unknown_name(w, toks, i, names)


_BARE_MEMORY = _C(r"(?:(?<![\w.])|(?<=\d[x×*]))(\d{2,3})\s*(?:g|gb|gib)(?![a-z\d])")
_MEMORY_SUFFIX = _C(r"\s*-?\s*\d{2,3}\s*(?:g|gb|gib)(?![a-z\d])")
#: between a card's name and its own memory ("V100（16G）", "V100-16G", "A100=40G", "DGX-A100 (8X40G)": a count)
_RIGHT_AFTER = re.compile(r"\s*[（(\-=:：]?\s*(?:\d{1,2}\s*[x×*]\s*)?")
#: host RAM said around a bare size ("RAM: 32G", "32G 内存", "16GB of swap"): not a card's memory
_HOST_BEFORE = _C(r"(?:\bram\b|(?<!显)内存|system memory|host memory|cpu memory|shm[-_ ]?size|swap)[^\d\n]{0,6}$")
_HOST_AFTER = _C(r"\s*(?:of\s+|的)?\s*(?:\bram\b|内存|swap|system memory|host memory)")
_SIDE_BY_SIDE = _C(r"和|与|跟|及|还是|区别|对比|比较|差别|差多少|vs\.?|versus|compare|or\b|and\b|版本|版")


def _sibling_sizes(w: Any, names: _Names) -> None:
    """ "H20 141G 版本和 96G 有什么区别": a bare memory size beside a named card is that card's sibling with that
    memory, when the catalog has one ("A100 40G 和 80G" -> the 80GB A100)."""
    spans = w.slots["mentions"].get("gpus") or []
    if not spans:
        return
    base = _GPU_WORD_AFTER.sub("", _MEMORY_SUFFIX.sub("", spans[0].lower()).strip()).strip()  # "A100 GPUs (40GB)"
    first_end = next((end for slot, _, end in w.spans if slot == "gpus"), None)
    for m in _BARE_MEMORY.finditer(w.t):
        hit = names.lookup(_norm(f"{base} {m.group(1)}g")) or names.lookup(_norm(f"{base} {m.group(1)}gb"))
        if not hit or hit[0] != "gpu":
            continue
        if _HOST_BEFORE.search(w.src[max(0, m.start() - 20) : m.start()]) or _HOST_AFTER.match(w.src, m.end()):
            continue  # the host's RAM, read as such by the request reader
        if first_end is not None and _RIGHT_AFTER.fullmatch(w.src[first_end : m.start()]) and w.slots["gpus"]:
            w.slots["gpus"][0] = hit[1]  # "3*V100（16G）": that card's own memory, the variant it names
        elif _SIDE_BY_SIDE.search(w.src):
            _add(w, "gpus", hit[1])
        else:
            continue
        w.note("gpus", *m.span())
        w.mask(*m.span(), GPU_MARK)


def _unknown_name(w: Any, toks: list, i: int, names: _Names) -> int:
    """Handle token i when no catalog name starts there; return the next token to look at."""
    start, end, tok = toks[i]
    if tok in _FUNCTION_WORDS:
        return i + 1  # "for DeepSeek-R1-Distill-Qwen-7B": no name starts with "for"; the name starts after it

    def joined(j: int) -> bool:
        return j < len(toks) and _GAP.fullmatch(w.t, toks[j - 1][1], toks[j][0]) is not None

    tail = lambda j: joined(j) and _VERSION_WORD.match(toks[j][2]) and not _is_gpu(toks[j][2], names)  # noqa: E731
    if re.search(r"[a-z]{2}|[a-z]\d|\d[a-z]", tok) and not _NOT_NAME.match(tok):  # a misspelt name, longest span first
        last = i
        while last + 1 < min(len(toks), i + 5) and joined(last + 1):
            last += 1
        for j in range(last, i - 1, -1):
            hit = names.fuzzy(_norm(w.t[start : toks[j][1]]), w.t[start : toks[j][1]])
            if hit:
                kind, rid = hit
                slot = "gpus" if kind == "gpu" else "models"
                _add(w, slot, rid)
                w.note(slot, start, toks[j][1])
                w.mask(start, toks[j][1], GPU_MARK if kind == "gpu" else MODEL_MARK)
                return j + 1

    if (m := SIZE_FIRST.fullmatch(tok)) and names.is_family(m.group(2)):  # "72Bqwen": the size glued in front
        return family_name(w, start, end, i + 1, MODEL_MARK)
    if names.is_family(tok):  # "gpt-7", "qwen3-235b-a22b", "llama 5 400b"
        j = i + 1
        if other_family(w, toks, j, names.families) and joined(j + 1) and _SIZE.fullmatch(toks[j + 1][2]):
            j += 1  # "Qwen-Deepsee-32B": a model named for two families, read whole (`stand_in._named_for_all`)
        while joined(j) and j < i + 5 and _VERSION_WORD.match(toks[j][2]) and not _is_gpu(toks[j][2], names):
            j += 1
        stop = lambda t: t in _FUNCTION_WORDS or _is_gpu(t, names) or names.is_family(t)  # noqa: E731
        j = name_shapes.words_to_size(toks, j, joined, stop, tail)  # "Hunyuan-MT-7B": name words, then the size
        if j == i + 1 and not re.search(r"\d", tok):
            if not (joined(j) and re.match(r"^\d", toks[j][2])):
                if family_default(w.span(start, end)):  # "Mistral", "ChatGLM": the size the family is known for,
                    w.slots["family_words"] = [*w.slots.get("family_words", []), (start, end)]  # if nothing else
                return i + 1  # a bare family word ("Qwen 做客服") names no model
        return family_name(w, start, toks[j - 1][1], j, MODEL_MARK)
    if (j := sized_name(w, toks, i, tail, MODEL_MARK)) is not None:  # "Foo-13B", "FooMoE-30B-A3B": a name we lack
        return j
    if tok in lx.GPU_BRAND_WORDS or tok in lx.GPU_ZH_PREFIXES:  # "rtx 9090", "昇腾 920"
        nxt = toks[i + 1][2] if i + 1 < len(toks) else ""
        if joined(i + 1) and _GPU_NUMBER.match(nxt) and not _SIZE.fullmatch(nxt):
            end = toks[i + 1][1]
            _add(w, "unknown_gpus", w.span(start, end))
            w.note("unknown_gpus", start, end)
            w.mask(start, end, GPU_MARK)
            return i + 2
        return i + 1
    if m := _SIZE.fullmatch(tok):  # a bare size: "70B", "7b", "-5B"
        before = w.t[max(0, start - 2) : start]
        value = float(m.group(1))
        out_of_range = not catalog.MIN_PARAMS <= value * 1e9 <= catalog.MAX_PARAMS  # "0.000001B": no model, a typo
        if value <= 0 or out_of_range or re.search(r"(?:^|[^\w])-$|^-$", before):
            w.slots["invalid"].append(w.span(start - (1 if before.endswith("-") else 0), end))
        elif (own := own_size(w, start, value)) is not None:  # the name and its size tag are one mention
            w.spans[own] = ("models", w.spans[own][1], end)
            w.mask(start, end, MODEL_MARK)
            return i + 1
        elif named_size(w, value):  # "满血版 671B deepseek" after "DeepSeek-R1": the named model's size again
            w.note("model_again", start, end)
            w.mask(start, end, MODEL_MARK)
            return i + 1
        elif name_shapes.moe_size(w, toks, i, value, MODEL_MARK):  # "235B-A22B": a MoE's two sizes, one model
            return i + 2
        else:
            _add(w, "models", _size_label(value))
        w.note("models", start, end)
        w.mask(start, end, MODEL_MARK)
        return i + 1
    if _SIZE_M.fullmatch(tok) and w.t[max(0, start - 2) : start] == MODEL_MARK + "-":
        w.mask(start, end, MODEL_MARK)  # "glm4-9b-1m": the name's context tag (the 1M-context build), not a size
        return i + 1
    if (m := _SIZE_M.fullmatch(tok)) and _MODEL_WORD_AFTER.match(w.t[end:]) and float(m.group(1)) > 0:  # "350M 模型"
        _add(w, "models", _size_label(float(m.group(1)) / 1000))
        w.note("models", start, end)
        w.mask(start, end, MODEL_MARK)
        return i + 1
    if not _NOT_NAME.match(tok) and _GPU_NUMBER.match(tok):
        letters, part = re.match(r"[a-z]*", tok).group(0), host_part(w.t, start, end)  # "C621主板": a chipset
        if not part and ((letters and letters in names.gpu_letters) or _UNLISTED_CARD.match(w.t, start, end + 16)):
            _add(w, "unknown_gpus", w.span(start, end))
            w.note("unknown_gpus", start, end)
            w.mask(start, end, GPU_MARK)
    return i + 1
