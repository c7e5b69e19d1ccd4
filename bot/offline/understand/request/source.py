"""The model of the place a question was asked in. An issue filed in "QwenLM/Qwen3" that asks "32B 要几张卡？", or one in
"zai-org/ChatGLM-6B" that asks for "5 token/s minimal hardware", means the repository's model: a reader of that page
knows it, though the words never say it. The channel passes that place as an explicit context (`source`: a
repository "owner/name" or its address); it is never guessed from the words.

The repository's name is read with the same name reader as the question (`names.names_in`), and only when the
question names no model itself (a bare size, "32B", is no name: it picks the family's model of that size). The name
must open the repository's name ("ChatGLM-finetune-LoRA" is ChatGLM's; "open-r1" is not DeepSeek-R1's), and the user's
figures win: a size the question gives that the repository's model does not have leaves the repository out ("13B"
asked in "Baichuan-7B"), and a size the family has no catalog model of stays a bare size ("72B" asked in "Qwen3",
whose repository once held Qwen2 and Qwen1.5, is no "Qwen3 72B"). A name the catalog cannot size, with no size
asked ("grok-1", "Qwen3"), is no model, as with a linked name (`names._read_links`): it asks no question back, the
answer goes on as it would without the place. A family the catalog knows only by its published sizes
(tools/data/model_families.yaml: "OrionStarAI/Orion", "zjunlp/KnowLM") is read at the size its publisher releases
first ("Orion-14B"), computed on that size's stand-in.

    >>> from bot.offline.understand.parse import parse
    >>> sourced(parse("32B 的模型 4 张 4090 能跑吗"), "QwenLM/Qwen3").models
    ['qwen3-32b']
    >>> sourced(parse("LoRA训练时间大概是多久呢？"), "lich99/ChatGLM-finetune-LoRA").model_source
    'lich99/ChatGLM-finetune-LoRA'
    >>> sourced(parse("Llama-2-7B LoRA 要多久"), "QwenLM/Qwen3").models  # the question's own name wins
    ['llama-2-7b']
"""

from __future__ import annotations

import re

from bot.offline.understand.names import names_in
from bot.offline.understand.question import ParsedQuestion
from bot.offline.understand.request.model import Request
from bot.offline.understand.work import Work
from tools.catalog.lookup import get_model
from tools.catalog.stand_in import catalog_family, published

#: "owner/name", or an address on a code or model host ("https://github.com/owner/name/issues/3")
_REPO = re.compile(
    r"^(?:https?://(?:www\.)?(?:github\.com|gitee\.com|huggingface\.co|hf-mirror\.com|modelscope\.cn)/(?:models/)?)?"
    r"[\w.-]+/([\w.-]{2,80})(?:[/#?].*)?$",
    re.IGNORECASE,
)
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?B")
_SIZE_IN = re.compile(r"(?<![a-z\d.])(\d+(?:\.\d+)?)b(?![a-z\d])", re.IGNORECASE)
_NAME_SLOTS = ("models", "unknown_models")


def repository_name(source: str | None) -> str | None:
    """The repository's own name in `source` ("QwenLM/Qwen3" -> "Qwen3"); None for anything else."""
    m = _REPO.match((source or "").strip())
    return m.group(1).removesuffix(".git") if m else None


def sourced(p: ParsedQuestion, source: str | None) -> ParsedQuestion:
    """`p` with the model of the repository `source` when the question names none (a copy; `p` is not changed);
    `p` itself otherwise. The copy's `model_source` says where the model came from, for the answer to say it."""
    name = repository_name(source)
    if name and (in_family := _in_family(p, name)):
        return in_family
    sizes = [m for m in p.models if _BARE_SIZE.fullmatch(m)]
    if not name or p.unknown_models or len(sizes) < len(p.models) or len(sizes) > 1:
        return p  # no place, or the question names its model (or several sizes: which one is the repository's)
    found = _read(name, float(sizes[0][:-1]) if sizes else None)
    if sizes:
        own = _SIZE_IN.search(found["span"]) if found else None
        if own and float(own.group(1)) != float(sizes[0][:-1]):
            return p  # "13B" asked in "Baichuan-7B": another model of the family, not the repository's
        if not own:  # "32B" in "Qwen3": the family's catalog model of that size, read as if the user wrote it
            found = _read(f"{found['span'] if found else name} {sizes[0]}")
            if not found or found["unknown_models"] or found["models"] == sizes:
                # "KnowLM 13B" (the size alone was read) or "Qwen3 72B" (a name nobody wrote, only a stand-in):
                # the repository names no catalog model of the size asked; the size stays the user's
                return p
    if not found or not found["models"]:
        return p
    return p.model_copy(
        update={
            "models": found["models"],
            "unknown_models": found["unknown_models"],
            "stand_ins": found["stand_ins"],
            "stand_in_basis": found["stand_in_basis"],
            "model_source": source.strip(),
        }
    )


def _in_family(p: ParsedQuestion, name: str) -> ParsedQuestion | None:
    """A name with no family word of its own ("Reranker-0.6B"), stood in for by a generic model of its size, asked in
    a repository of a catalog family ("QwenLM/Qwen3-Embedding") is that family's model: the family's catalog model
    of the size stands in for it (Qwen3-0.6B, said as the stand-in). None when that is not the case."""
    if len(p.unknown_models) != 1 or len(p.models) != 1:
        return None
    typed = p.unknown_models[0]
    size = p.stand_ins.get(typed)
    if size != p.models[0] or not _BARE_SIZE.fullmatch(size or "") or catalog_family(typed):
        return None  # a catalog model or the name's own family ("Llama-5-13B"): the question's words win
    found = _read(f"{name}-{size}")
    if not found or len(found["models"]) != 1 or _BARE_SIZE.fullmatch(found["models"][0]):
        return None
    return p.model_copy(update={"models": found["models"], "stand_ins": {typed: found["models"][0]}})


def _read(name: str, asked: float | None = None) -> dict | None:
    """The one model `name` opens with: its catalog ids, unknown names and stand-ins, and the span read; None when
    it opens with none (a framework's repository: "vllm", "LlamaFactory") or names several. A family known by its
    published sizes only is read at the size `asked`, if the publisher has it, else at its first release."""
    w = Work(name)
    names_in(w)
    spans = [(a, b) for slot, a, b in w.spans if slot in _NAME_SLOTS]
    if not spans and (family := published(name)):  # "Orion", "KnowLM": the size asked, if the publisher has it,
        size = asked if asked in family.sizes_b else family.default_b  # else the one it releases first
        return _read(f"{name}-{size:g}B")
    if not spans or min(a for a, _ in spans) > 0 or len(w.slots["models"]) > 1:
        return None
    unknown = [n for n in w.slots["unknown_models"] if n in w.slots["stand_ins"]]
    models = [m for m in w.slots["models"] if m in w.slots["stand_ins"].values() or not w.slots["unknown_models"]]
    return {
        "span": w.raw[: max(b for _, b in spans)],
        "models": models,
        "unknown_models": unknown,
        "stand_ins": {k: v for k, v in w.slots["stand_ins"].items() if k in unknown},
        "stand_in_basis": {k: v for k, v in w.slots["stand_in_basis"].items() if k in unknown},
    }


def with_source(request: Request, source: str | None, state: dict | None = None) -> Request:
    """`request` with its parsed question `sourced` (a copy when the place gives the model; `request` otherwise).
    A conversation whose last question had a model (`state["frame"]`) keeps it: the place speaks only for the
    first model of the conversation, a follow-up carries what was said before."""
    if ((state or {}).get("frame") or {}).get("slots", {}).get("model"):
        return request
    parsed = sourced(request.parsed, source)
    return request if parsed is request.parsed else request.model_copy(update={"parsed": parsed})


#: an inference engine's own repository: a question filed there is about that engine (vllm-ascend is vLLM's backend
#: for Ascend NPUs, run as `vllm serve`), whatever the paste's words name
ENGINE_REPOSITORIES = {
    "vllm": "vllm", "vllm-ascend": "vllm", "sglang": "sglang", "lmdeploy": "lmdeploy",
    "text-generation-inference": "tgi", "ollama": "ollama", "llama.cpp": "llama.cpp",
}  # fmt: skip


def engine_of_source(source: str | None) -> str | None:
    """The engine whose repository `source` is ("vllm-project/vllm-ascend" -> "vllm"); None for any other place.

    >>> engine_of_source("vllm-project/vllm-ascend"), engine_of_source("QwenLM/Qwen3")
    ('vllm', None)
    """
    name = repository_name(source)
    return ENGINE_REPOSITORIES.get(name.lower()) if name else None


def source_model_name(p: ParsedQuestion) -> str:
    """The name of the model `sourced` took from the place: the repository's own name for a model the catalog
    lacks (its stand-in is said by the stand-in line), else the catalog's name."""
    if p.unknown_models:
        return p.unknown_models[0]
    model = get_model(p.models[0]) if p.models else None
    return model.name if model else (p.models[0] if p.models else "")
