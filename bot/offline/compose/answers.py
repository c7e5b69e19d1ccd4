"""The offline planner's composers, dispatched by the intent's frame (`bot.offline.understand.frames`).

Each composer calls tools and fills templates; every figure written is a tool output (formatted,
never computed), so grounding finds it. The composers live by job: `memory` (sizes of a
model), `train` (fit, time), `serving` (inference), `money` (cost, prices, rent vs buy, budget,
power), `info` (specs, comparisons, recommendations, knowledge).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.support import knowledge_part, supports  # noqa: F401 (the planner calls it here)
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, method_label, num
from bot.offline.understand.frames import frame
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.request.reader import normalised
from tools.catalog.lookup import get_model
from tools.catalog.stand_in import is_vision, read_name
from tools.errors import AdvisorError, UnknownModel
from tools.units import plain


def compose(intent: str, s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Run the intent's composer (unknown names are said first, with the closest known ones)."""
    if p.unknown_gpus or p.unknown_models:
        # a name computed on its stand-in ("ChatGLM" as ChatGLM-6B, said so) is known enough for a note to answer
        stood = not p.unknown_gpus and all(n in p.stand_ins for n in p.unknown_models)
        stops = (
            (p.unknown_gpus and not s.get("gpu"))
            or (p.unknown_models and not s.get("model"))
            or (intent in ("knowledge", "out_of_scope", "specs") and not stood)
        )
        unknown_names(p, run, out)
        if stops:
            return
    at, calls = len(out.blocks), len(run.calls)
    module, name = frame(intent).compose.split(":")
    getattr(importlib.import_module(f"bot.offline.compose.{module}"), name)(s, p, run, out)
    used = {c.input.get("model") for c in run.calls[calls:] if isinstance(c.input, dict)}
    for typed, value in p.stand_ins.items():  # said before the figures, when they are computed on it
        if value in used and typed in p.unknown_models:
            out.blocks.insert(at, stand_in_line(typed, value, out.lang, p.stand_in_basis.get(typed)))
            at += 1
    tools = {c.tool for c in run.calls[calls:]}
    if tools & {"fit_training", "fit_inference", "model_memory", "diagnose"} and not tools & _SPEED_TOOLS:
        small_model(used, run, out)  # a memory answer: how small the model is, once
    for value in p.models:  # "400B total, 20B active, MoE" with no name: which shape the figures are for
        if _MOE_LABEL.fullmatch(value) and value in used and value not in p.stand_ins.values():
            total, active = value.split("-A")
            out.blocks.insert(at, say("generic_moe_shape", out.lang, total=total, active=active))
            at += 1


#: under this many parameters (billions) a model is small: a 16 GB card serves it and a CPU can run it
SMALL_B = 1.0
#: the common small card its inference is checked on
SMALL_CARD = "t4"
#: tools of a speed or time answer, where a small model's memory line is no answer to what was asked
_SPEED_TOOLS = {"training_time", "inference_speed"}


def small_model(used: set, run: ToolRun, out: Out) -> None:
    """An embedding model or another model under `SMALL_B` ("bge-m3", "bge-base-zh-v1.5"): one line that says it is
    small, with its weights, the fit on a 16 GB card and that a CPU runs it, whatever else the answer sized."""
    for value in sorted(v for v in used if isinstance(v, str)):
        try:
            spec = get_model(value)
        except AdvisorError:
            continue
        if spec.params_b >= SMALL_B:
            continue
        sizes = run("model_memory", {"model": value})
        card = run("gpu_specs", {"gpu": SMALL_CARD})
        fit = run("fit_inference", {"model": value, "gpu": SMALL_CARD})
        line = say("small_model", out.lang, model=spec.name, params=sizes["params_b"], weights=num(sizes["weights_gb"]),
                        precision=sizes["precision"], card=card["name"], memory=plain(card["memory_gb"]),
                        need=num(fit["per_gpu_gb"]), usable=num(fit["usable_gb"]))  # fmt: skip
        if fit["fits"] and line not in out.blocks:
            out.add(line)
        return


def unknown_names(p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Unknown GPU and model names with the closest catalog names (from the tools' own errors); a model name with
    no size anywhere gets one question for its size. One with a stand-in is said by `compose`, before the figures
    computed on it (`stand_in_line`)."""
    for name in p.unknown_gpus:
        memory = (p.gpu_from_memory or {}).get("memory_gb")
        if memory and (p.gpu_from_memory or {}).get("gpu") is None:  # "4张12g的显存卡": only its memory was given
            checked = against_memory(p, float(memory), run, out.lang)
            variant = (p.gpu_from_memory or {}).get("named") == name  # "5060 Ti 8G": a card named, its size unlisted
            key = "unknown_variant" if variant else "unknown_memory_card"
            key = "unknown_device" if variant and (p.gpu_from_memory or {}).get("unlisted") else key  # "M2 Ultra 192GB"
            out.add(say(f"{key}_checked" if checked else key, out.lang, name=name, memory=f"{float(memory):g} GB"))
            out.add(checked)
            continue
        try:
            run("gpu_specs", {"gpu": name})
        except AdvisorError as err:
            out.add(say("unknown_name", out.lang, message=err.message(out.lang)))
            out.add(_job_needs(p, name, run, out.lang))  # what the job needs, whatever the card: and its memory?
    asked = False
    for name in p.unknown_models:
        if name in p.stand_ins:
            continue
        if asked:
            continue  # one question for a size at a time
        try:
            run("model_memory", {"model": name})
        except UnknownModel as err:
            if p.models:  # the question is computed on the models it names; this one is said, with the closest
                out.add(say("unknown_name", out.lang, message=err.message(out.lang)))
            else:  # nothing to compute on: one question for its size
                near = say("ask_model_size_near", out.lang, names="、".join(err.suggestions[:3]) if out.lang == "zh"
                           else ", ".join(err.suggestions[:3])) if err.suggestions else ""  # fmt: skip
                out.add(say("ask_model_size", out.lang, name=name, near=near))
                asked = True
        except AdvisorError as err:
            out.add(say("unknown_name", out.lang, message=err.message(out.lang)))


#: the share of a card's memory a serving engine uses (vLLM's default gpu_memory_utilization)
SERVING_SHARE = 0.9


def against_memory(p: ParsedQuestion, memory_gb: float, run: ToolRun, lang: str, said: str | None = None) -> str:
    """A card the catalog lacks, known by its memory: what the model needs to serve, from `model_memory`, against the
    memory the user has (their cards × their size, at a serving engine's share) as a verdict in words."""
    if not p.models:
        return ""
    try:
        r = run("model_memory", {"model": p.models[0]})
    except AdvisorError:
        return ""
    have = (1 if said else p.n_gpus or 1) * memory_gb * SERVING_SHARE  # the memory said in all is not per card
    verdict = "memory_card_fits" if r["serving_gb"] <= have else "memory_card_short"
    if said:  # the memory the user has in all, in their words: the yes or no on it leads
        verdict = verdict.replace("card", "total")
    return say(verdict, lang, model=r["model"], need=gb(r["serving_gb"]), weights=gb(r["weights_gb"]), have=said)


def memory_verdict(request, run: ToolRun, lang: str) -> str:
    """ "是否只需要 700G 显卡就可以了", "is 300 GB of VRAM enough": a memory figure no card has, asked about a serving
    fit of a catalog model, is the memory the user has in all; the verdict on it, from `model_memory` ("" when
    the question is not that)."""
    p = request.parsed
    if "fits" not in request.asks or not p.models or p.gpu_from_memory or p.workload in _TRAINING or p.method:
        return ""
    text = normalised(request.text)  # the text the mentions' positions refer to
    for m in request.mentions:  # a memory figure the question asks about ("是否只需要 700G 就可以", "is 300 GB enough")
        figure = _MEMORY.fullmatch(m.text.strip())
        if m.role in ("gpu_memory_gb", "claim") and figure and _ENOUGH.match(text[m.end : m.end + 24]):
            return against_memory(p, float(figure.group(1)), run, lang, said=m.text.strip())
    return ""


_TRAINING = ("train", "finetune", "pretrain")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*(?:g|gb)", re.IGNORECASE)
#: the words after a memory figure that make it a yes-or-no question ("700G 显卡就可以了吗", "300G 显存就够了",
#: "300 GB of VRAM enough"): the memory in all, a figure no card has
_ENOUGH = re.compile(
    r"\s*(?:的)?\s*(?:显存|显卡|内存|of (?:vram|gpu memory|memory)|vram|gpu memory|memory)?\s*(?:就|是否|是不是|is|be)?\s*"
    r"(?:够|足够|可以|行|enough|suffic)",
    re.IGNORECASE,
)


def _job_needs(p: ParsedQuestion, card: str, run: ToolRun, lang: str) -> str:
    """A card the catalog lacks, for a model it has: the memory the job needs on one card (training: model states
    and activations, unsharded; serving: weights and KV cache), from `model_memory`, and one question for the
    card's memory, which decides it."""
    if not p.models:
        return ""
    training = p.workload in ("train", "finetune", "pretrain") or p.method is not None
    method = p.method if p.method in ("full", "lora", "qlora") else "full"
    try:
        r = run("model_memory", {"model": p.models[0], **({"method": method} if training else {})})
    except AdvisorError:
        return ""
    if training:
        return say(
            "unknown_card_train_needs", lang, card=card, model=r["model"], method=method_label(method, lang),
            need=gb(r["training_total_gb"]), states=gb(r["model_states_gb"]),
        )  # fmt: skip
    return say("unknown_card_serve_needs", lang, card=card, model=r["model"], need=gb(r["serving_gb"]),
               weights=gb(r["weights_gb"]))  # fmt: skip


#: a generic MoE given by its total and active sizes, as parse writes it ("400B-A20B")
_MOE_LABEL = re.compile(r"\d+(?:\.\d+)?B-A\d+(?:\.\d+)?B")


def stand_in_line(name: str, value: str, lang: str, basis: str | None = None) -> str:
    """ "“qwen72b”不在目录里，下面按…Qwen2.5-72B 估算": which model an unknown name is computed on, and why that one
    (`basis`: "default" for the size a family is known for, else the figure that implies the size)."""
    if basis == "default":  # "ChatGLM" is ChatGLM-6B: an assumption, said so that they can correct it
        return say("stand_in_family_default", lang, name=name, model=get_model(value).name)
    if basis == "named":  # "DeepSeek-R1-0528-Qwen3-8B": the model in its name that carries the size
        return say("stand_in_named", lang, name=name, model=get_model(value).name)
    if basis:  # "Baichuan2 … fp16 26G": the size its weights at that precision imply
        return say("stand_in_implied", lang, name=name, model=get_model(value).name, figure=basis)
    parts = read_name(name)
    if _MOE_LABEL.fullmatch(value):  # "GLM-5.2，总参 355B、激活 32B": a generic MoE of those sizes
        total, active = value.split("-A")
        return say("stand_in_generic_moe_shape", lang, name=name, total=total, active=active)
    if not re.fullmatch(r"\d+(?:\.\d+)?B", value):
        model = get_model(value)
        if parts and parts.experts and model.is_moe:
            return say("stand_in_layout", lang, name=name, model=model.name, layout=parts.experts.replace("b", "B"))
        line = say("stand_in_family", lang, name=name, model=model.name)
        if is_vision(name):  # a vision-language model: its language model is what the stand-in sizes
            line += " " + say("stand_in_vision", lang)
        return line
    return say("stand_in_generic_moe" if parts and parts.moe else "stand_in_generic", lang, name=name, size=value)


def cite(text: str, intent: str, run: ToolRun, out: Out) -> None:
    """Cite the knowledge base where a passage supports a sentence of this answer (`support.py`): the marker on
    that sentence, the passage's supporting sentence in the sources list; passages that support nothing are
    neither listed nor kept as citations. A knowledge answer cites what it quotes (its composer placed them)."""
    if intent in ("out_of_scope", "greeting"):
        return
    if intent == "knowledge":  # its composer placed the markers of what it quotes: those notes, and no others
        docs = list(dict.fromkeys(c.doc_id for c in run.citations))
        shown = {int(n) for n in re.findall(r"\[(\d+)\]", out.text())}
        keep = [d for i, d in enumerate(docs, 1) if i in shown]
        # the quoted notes when they are the first ones; else up to the last marker, in the composer's numbering
        _sources(run, out, keep if keep == docs[: len(keep)] else docs[: max(shown, default=0)], {})
        return
    shown = len(run.citations)
    try:
        hint = CITE_HINTS.get(intent, {}).get(out.lang, "")
        r = run("search_knowledge", {"query": f"{text[:400]} {hint}", "k": 3, "lang": out.lang})
    except AdvisorError:
        return
    # a block a composer cited already (a part answered from a note) is not cited again
    found = supports(["" if _MARKER.search(b) else b for b in out.blocks], r["passages"])
    keep = {c.doc_id for c in run.citations[:shown]} | {s.passage["doc_id"] for s in found}
    run.citations[:] = [c for c in run.citations if c.doc_id in keep]
    docs = list(dict.fromkeys(c.doc_id for c in run.citations))
    for s in sorted(found, key=lambda s: (s.block, -s.end)):  # right to left within a block: ends stay valid
        n = docs.index(s.passage["doc_id"]) + 1
        block = out.blocks[s.block]
        out.blocks[s.block] = block[: s.end] + f" [{n}]" + block[s.end :]
    _sources(run, out, docs, {s.passage["doc_id"]: s.quote for s in found})


_MARKER = re.compile(r" \[\d+\]")
#: how much of a supporting sentence the sources list shows
QUOTE_CHARS = 160


def _cut(quote: str, limit: int = QUOTE_CHARS) -> str:
    """A passage's sentence, shortened; never through a figure (a cut "5.35" would be a "5.3" of its own)."""
    if len(quote) <= limit:
        return quote
    return re.sub(r"[\d.,，]+$", "", quote[:limit]).rstrip() + "…"


def _sources(run: ToolRun, out: Out, docs: list[str], quotes: dict[str, str]) -> None:
    if not docs:
        return
    first = {c.doc_id: c for c in reversed(run.citations)}
    lines = []
    for i, doc in enumerate(docs, 1):
        c = first[doc]
        line = say("ref_line", out.lang, n=i, title=c.title, source=c.source)
        if doc in quotes and quotes[doc].strip() != c.title.strip():  # the note's title may be its claim
            line += say("ref_quote", out.lang, quote=_cut(quotes[doc]))
        lines.append(line)
    out.add(say("refs_header", out.lang) + "\n" + "\n".join(lines))


#: words added to the citation search so passages match what the answer is about, not just its words


CITE_HINTS = {
    "fit": {"zh": "显存 放不下 OOM 估算", "en": "memory fit OOM estimate"},
    "min_gpus": {"zh": "显存 多卡 估算", "en": "memory how many GPUs"},
    "time": {"zh": "训练时间 集群 互联", "en": "training time cluster interconnect"},
    "cost": {"zh": "价格 渠道 租赁", "en": "price channel rental"},
    "price_claim": {"zh": "价格 渠道", "en": "price channel"},
    "rent_vs_buy": {"zh": "自建 租赁 回本", "en": "build rent break-even"},
    "compare": {"zh": "对比 替代 国产卡 生态", "en": "compare replace domestic accelerators software"},
    "speed": {"zh": "推理 KV cache 带宽", "en": "inference KV cache bandwidth"},
    "recommend": {"zh": "选型 显存 预算", "en": "selection memory budget"},
    "specs": {"zh": "规格 显存 互联", "en": "specs memory interconnect"},
    "availability": {"zh": "出口管制 许可证 国内 采购 供货", "en": "export controls licence China availability"},
    "power": {"zh": "电费 功耗 机房 PUE 自建", "en": "electricity power PUE colocation"},
}


FOLLOW_UPS = {
    "fit": {
        "zh": ["用 QLoRA 的话单卡够吗？", "换成 H800 呢？", "训练 1B token 要多久？"],
        "en": ["What about QLoRA on one card?", "And on H800?", "How long for 1B tokens?"],
    },
    "time": {
        "zh": ["租还是买更划算？", "换成 A800 要多久？", "用 LoRA 能快多少？"],
        "en": ["Rent or buy?", "How long on A800 instead?", "How much faster with LoRA?"],
    },
    "cost": {"zh": ["租还是买更划算？", "国产卡能省多少？"], "en": ["Rent or buy?", "What would domestic cards cost?"]},
    "rent_vs_buy": {
        "zh": ["每天只用 8 小时呢？", "换成 H800 呢？"],
        "en": ["What if we use it 8 hours a day?", "And for H800?"],
    },
    "compare": {
        "zh": ["70B 模型 LoRA 微调放得下吗？", "两者租金差多少？"],
        "en": ["Does a 70B LoRA fine-tune fit?", "How do their rental prices compare?"],
    },
    "recommend": {
        "zh": ["只考虑国产卡呢？", "预算翻倍呢？"],
        "en": ["Only domestic cards?", "What if the budget doubles?"],
    },
    "speed": {
        "zh": ["并发 64 呢？", "用 int4 量化呢？"],
        "en": ["What about 64 concurrent users?", "And with int4 weights?"],
    },
    "specs": {
        "zh": ["和 A100 比呢？", "能放下 70B 推理吗？"],
        "en": ["How does it compare to the A100?", "Can it serve a 70B model?"],
    },
    "availability": {
        "zh": ["哪些国产卡能替代它？", "多少钱一张？"],
        "en": ["Which Chinese-made cards can replace it?", "What does it cost?"],
    },
    "power": {"zh": ["租还是买更划算？", "PUE 1.5 呢？"], "en": ["Rent or buy?", "What if the PUE is 1.5?"]},
}


def follow_ups(intent: str, s: dict[str, Any], lang: str) -> list[str]:
    key = "fit" if intent == "min_gpus" else intent
    return list(FOLLOW_UPS.get(key, {}).get(lang, []))


def reading_notes(p: ParsedQuestion, lang: str) -> list[str]:
    """What was read for the user and is said before the answer: a card known only by its memory, the model of the
    repository the question came from, the GPUs taken per server of a board-only card ("4台H100" = 32)."""
    from bot.offline.understand.dialogue import slots_of
    from bot.offline.understand.request.source import source_model_name
    from tools.catalog.lookup import get_gpu

    lines, slots = [], slots_of(p)
    if (seen := p.gpu_from_memory) and seen["gpu"] and slots.get("gpu") == seen["gpu"]:
        memory = seen.get("memory_gb") or seen.get("memory_gib")
        unit = "GB" if "memory_gb" in seen else "GiB"
        key, name = ("gpu_named_memory", seen["named"]) if seen.get("named") else ("gpu_from_memory", None)
        lines.append(say(key, lang, memory=f"{memory:g} {unit}", gpu=get_gpu(seen["gpu"]).name, name=name))
    if p.precision_from:  # a runtime's default build, not a precision the user named: said, as every default is
        lines.append(say(f"precision_from_{p.precision_from}", lang, precision=p.precision))
    if p.model_source:
        lines.append(say("model_from_source", lang, source=p.model_source, model=source_model_name(p)))
    if (nodes := p.gpus_from_nodes) and slots.get("n_gpus") == nodes["nodes"] * nodes["per_node"]:
        per, gpu = nodes["per_node"], get_gpu(nodes["gpu"]).name
        lines.append(say("gpus_from_nodes", lang, nodes=nodes["nodes"], gpu=gpu, per=per, n=slots["n_gpus"]))
    return lines
