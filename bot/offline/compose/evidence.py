"""When the user has already seen it fail: a pasted OOM ("CUDA out of memory. Tried to allocate 2.50 GiB",
"爆显存") is evidence, and evidence beats an estimate. Where the calculator says the setup fits, the answer
says so and that the log wins, and then what to change, each change priced by the calculator on the user's
own setup (ZeRO-3, gradient checkpointing, micro-batch 1, LoRA, QLoRA), with the setting's name in the
usual trainers (DeepSpeed, Hugging Face / LLaMA-Factory). It never answers a bare "fits" to an OOM.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.toolargs import training_args
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, usable
from bot.offline.understand.lexicon import CUE_GROUPS
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.request.figures import used_on_card
from bot.offline.understand.request.reader import normalised, read
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError
from tools.memory.verdict import seen_verdict
from tools.speed.measured import verdict

_SPEED_WORDS = re.compile(r"tok|t/s|token|字", re.I)
_OOM = re.compile(
    dict(CUE_GROUPS)["oom"] + r"|tried to allocate|outofmemoryerror|显存不足|cuda error: out of memory", re.I
)


def reported_oom(p: ParsedQuestion) -> bool:
    return bool(_OOM.search(p.text or ""))


def _changes(s: dict[str, Any], r: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The memory levers that apply to this setup, most often the fix first."""
    out: list[tuple[str, dict[str, Any]]] = []
    if r["n_gpus"] > 1 and r["zero_stage"] < 3:
        out.append(("lever_zero3", {"zero_stage": 3}))
    if s.get("grad_checkpointing") is False:
        out.append(("lever_checkpointing", {"grad_checkpointing": True}))
    if (s.get("micro_batch") or 1) > 1:
        out.append(("lever_micro_batch", {"micro_batch": 1}))
    if r["method"] == "full":
        out.append(("lever_lora", {"method": "lora"}))
    if r["method"] in ("full", "lora"):  # on several GPUs: the 4-bit base in bf16 storage, which ZeRO-3 shards
        many = {"quant_storage": "bf16"} if r["n_gpus"] > 1 else {}
        key = "lever_qlora_sharded" if many else "lever_qlora"
        out.append((key, {"method": "qlora", "grad_checkpointing": True, **many}))
    return out


def oom_but_fits(s: dict[str, Any], r: dict[str, Any], run: ToolRun, out: Out) -> None:
    """The estimate (`r`, fit_training on the user's setup) fits, but the user reports an OOM."""
    lang = out.lang
    key = "oom_but_fits_z3" if r["zero_stage"] == 3 else "oom_but_fits"
    out.add(say(key, lang, need=gb(r["per_gpu_gb"]), usable=usable(r, lang), headroom=gb(r["headroom_gb"])))
    lines = []
    if r["zero_stage"] == 3:  # ZeRO-3 shards after loading: a rank that loads the whole model first runs out at load
        try:
            whole = run("model_memory", {"model": s["model"]})
        except AdvisorError:
            whole = None
        if whole and whole["weights_gb"] > r["usable_gb"]:
            lines.append(say("oom_at_load", lang, weights=gb(whole["weights_gb"]), usable=usable(r, lang)))
    for key, change in _changes(s, r):
        try:
            v = run("fit_training", {**training_args(s), **change})
        except AdvisorError:
            continue
        lines.append(say(key, lang, need=gb(v["per_gpu_gb"]), fits=say("yes_fits" if v["fits"] else "no_fits", lang)))
    if lines:
        out.add(say("levers_header", lang) + "\n" + "\n".join(lines))
    out.add(say("oom_other_causes", lang))


def _serving_changes(args: dict[str, Any], r: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if r["context_len"] > 4096:
        out.append(("lever_context", {"context_len": r["context_len"] // 2}))
    precision = next((a["value"] for a in r["assumptions"] if a["key"] == "precision"), "bf16")
    for lower in {"bf16": ("int8", "int4"), "fp16": ("int8", "int4"), "fp8": ("int4",), "int8": ("int4",)}.get(
        precision, ()
    ):
        out.append(("lever_weights", {"precision": lower}))
    out.append(("lever_tp", {"n_gpus": r["n_gpus"] * 2}))
    return out


def oom_but_serves(args: dict[str, Any], r: dict[str, Any], run: ToolRun, out: Out) -> None:
    """The estimate (`r`, fit_inference on the user's setup) fits, but the user reports an OOM."""
    lang = out.lang
    out.add(say("oom_but_serves", lang, need=gb(r["per_gpu_gb"]), usable=usable(r, lang), ctx=f"{r['context_len']:,}"))
    lines = []
    for key, change in _serving_changes(args, r):
        try:
            v = run("fit_inference", {**args, **change})
        except AdvisorError:
            continue
        value = change.get("precision") or change.get("context_len") or change.get("n_gpus")
        lines.append(
            say(key, lang, value=f"{value:,}" if isinstance(value, int) else value, need=gb(v["per_gpu_gb"]),
                fits=say("yes_fits" if v["fits"] else "no_fits", lang))
        )  # fmt: skip
    if lines:
        out.add(say("levers_header", lang) + "\n" + "\n".join(lines))
    out.add(say("oom_serving_causes", lang))


#: a figure with the speed unit written after it, as the user wrote it ("5 tokens per second")
_UNIT = re.compile(r"[^\n]*?(?:tokens? per second|tokens?/s|tok/s|t/s|token/秒|字/秒)", re.I)


def _figure(p: ParsedQuestion, role: str, words: str = "") -> tuple[str, float] | None:
    """The first figure of the question read in `role` (and written with `words`, when given): (their words, value)."""
    request = read(p.text)
    for m in request.mentions:
        # the words may follow the figure ("5 tokens per second or more": the mention is the "5")
        written = m.text if re.search(words, m.text, re.I) else request.text[m.start : m.end + 24]
        if m.role == role and isinstance(m.value, float) and re.search(words, written, re.I):
            unit = _UNIT.match(written)
            return (unit.group(0) if unit and written != m.text else m.text).strip(), m.value
    return None


#: a host RAM said as the machine's total, beside the size of each module ("32G 内存条(总128G)")
_TOTAL_BEFORE = re.compile(r"(?:总|共|合计|一共|total|in all)\s*(?:[:：=]|是|为|有)?\s*$", re.I)


def _total_ram(p: ParsedQuestion) -> tuple[str, float] | None:
    request = read(p.text)
    for m in request.mentions:
        if m.role == "ram_gb" and isinstance(m.value, float) and _TOTAL_BEFORE.search(request.text[: m.start][-8:]):
            return m.text, m.value
    return None


def host_ram(p: ParsedQuestion) -> tuple[str, float] | None:
    """The host RAM the user states ("内存 512G", "1TB RAM"), as (their words, GB); the total where they give one
    beside a module's size."""
    if found := _total_ram(p) or _figure(p, "ram_gb"):
        text, value = found
        return text, value * (1024 if re.search(r"\d\s*t", text, re.I) else 1)
    return None


#: what a measured speed is said of: the model or the card named before it on its line
_SUBJECTS = ("model", "gpu")


def _subjects(mentions: list, at: int, text: str) -> list[tuple[str, str]]:
    """The model and the card a figure at offset `at` of `text` (the reader's normalised text) is said of: of each,
    the last one named before it on the same line, as (role, value)."""
    line_start = text.rfind("\n", 0, at) + 1
    out = []
    for role in _SUBJECTS:
        if before := [m for m in mentions if m.role == role and line_start <= m.start < at]:
            out.append((role, str(before[-1].value)))
    return out


def _key(role: str, name: str) -> str | None:
    """The catalog id a model or card name resolves to, else None (a name the catalog does not size)."""
    try:
        return (get_model(name) if role == "model" else get_gpu(name)).id
    except AdvisorError:
        return None


def _own(role: str, value: str, s: dict[str, Any], p: ParsedQuestion) -> bool:
    """Whether a named model or card is the one this part computes (`s`): the same catalog record (a stand-in is
    the record it is computed on)."""
    named = p.stand_ins.get(value, value) if role == "model" else value
    return bool(s.get(role)) and _key(role, named) in (_key(role, str(s[role])), str(s[role]))


def measured_speed(p: ParsedQuestion, s: dict[str, Any] | None = None) -> tuple[str, float] | None:
    """The decode speed the user measured ("只有19tokens/s", "35 tok/s"), as (their words, tokens/s). Where speeds
    are said of different models or cards ("chatglm2-6B 约 32tokens/s，qwen7B 只有 17tokens/s"), the part for `s`
    gets the one said of its own (the Qwen-7B part gets 17), else none: another model's speed is never its own."""
    mentions = read(p.text).mentions
    found = [
        m for m in mentions
        if m.role == "throughput_measured" and isinstance(m.value, float) and _SPEED_WORDS.search(m.text)
    ]  # fmt: skip
    told = [(m, _subjects(mentions, m.start, normalised(p.text))) for m in found]
    if s is not None and len({tuple(of) for _, of in told if of}) > 1:
        found = [m for m, of in told if any(_own(*one, s, p) for one in of)]
    elif s is not None and s.get("model") and len(set(p.models)) > 1:
        # several models, the speed said of one ("Qwen2.5-7B 只有 19 tokens/s，14B 呢"), or of none, where it is the
        # first model named ("Foo-35B … 为什么不到25t/s，比27b的都慢"): the other models' parts do not get it
        first = next((str(m.value) for m in mentions if m.role in ("model", "model_size")), None)
        found = [
            m for m, of in told
            if any(_own(*one, s, p) for one in of if one[0] == "model")
            or (not any(one[0] == "model" for one in of) and first is not None and _own("model", first, s, p))
        ]  # fmt: skip
    return (found[0].text, found[0].value) if found else None


def measured_by_card(p: ParsedQuestion) -> dict[str, tuple[str, float]]:
    """The decode speeds the user measured, by the card each is said of ("A100的tokens/s仅为40.24 … L40 … 50以上"):
    catalog id -> (their words, tokens/s); a speed whose line names no card is none of them."""
    mentions, text = read(p.text).mentions, normalised(p.text)
    out: dict[str, tuple[str, float]] = {}
    for m in mentions:
        if m.role != "throughput_measured" or not isinstance(m.value, float):
            continue
        card = next((value for role, value in _subjects(mentions, m.start, text) if role == "gpu"), None)
        if card and (key := _key("gpu", card)):
            out.setdefault(key, (m.text, m.value))
    return out


def against_bandwidth(rows: list[dict[str, Any]], ratios: list[dict[str, Any]], p: ParsedQuestion, out: Out) -> None:
    """Speeds measured on two of the compared cards (`compare_gpus` rows and ratios to the first) beside their
    memory-bandwidth ratio, which sets one stream's decode speed: the gap follows it (normal) or not (the card is
    not the limit: per-step overhead or a different setup). Judged by `tools.speed.measured.verdict`."""
    seen = measured_by_card(p)
    have = [(row, x) for row, x in zip(rows, ratios, strict=False) if row["id"] in seen]
    if len(have) < 2 or not have[1][1].get("bandwidth") or have[0][0] is not rows[0]:
        return
    (first, _), (other, x) = have[0], have[1]
    (first_text, first_value), (text, value) = seen[first["id"]], seen[other["id"]]
    said = verdict(value / first_value, x["bandwidth"]) if first_value else "very_low"
    key = "measured_cards_bandwidth" if said == "normal" else "measured_cards_not_bandwidth"
    out.add(say(key, out.lang, first=first["name"], first_speed=first_text, gpu=other["name"], speed=text,
                bw=f"{x['bandwidth']:g}×"))  # fmt: skip


def memory_seen(p: ParsedQuestion) -> tuple[str, float] | None:
    """The GPU memory the user saw a run use ("每张卡显存占用几乎32G", "consumed about 60G VRAM"), as (their
    words, GB); a log's allocation figures are not it."""
    for m in read(p.text).mentions:
        if m.role == "log_memory" and isinstance(m.value, float) and used_on_card(normalised(p.text), m.start):
            return m.text, m.value
    return None


def against_seen(r: dict[str, Any], out: Out, seen: tuple[str, float], lead: str) -> None:
    """The memory the user saw in use beside the estimate (a fit output `r`), with its verdict (`seen_verdict`):
    `lead` is the fit's own sentence, said after the verdict."""
    text, value = seen
    said = seen_verdict(value, r["per_gpu_gb"], r["capacity_gb"])
    out.add(say(f"seen_{said}", out.lang, seen=text, need=gb(r["per_gpu_gb"]), lead=lead))


def target_speed(p: ParsedQuestion) -> tuple[str, float] | None:
    """The decode speed the user needs ("need 30 tokens/s", "要达到 5 token/s"), as (their words, tokens/s)."""
    return _figure(p, "speed_target", r"tok|t/s|token|字")


def against_target(r: dict[str, Any], out: Out, target: tuple[str, float]) -> None:
    """The speed the user needs beside the estimate (inference_speed output `r`): met or not, and what raises it."""
    text, value = target
    key = "speed_target_met" if r["decode_tokens_per_s"] >= value else "speed_target_missed"
    out.add(say(key, out.lang, target=text, estimate=f"{r['decode_tokens_per_s']:,.1f}"))


def against_measured(r: dict[str, Any], out: Out, measured: tuple[str, float]) -> None:
    """The user's measured decode speed beside the estimate (inference_speed output `r`): normal, low or high,
    and what usually explains a gap."""
    text, value = measured
    said = verdict(value, r["decode_tokens_per_s"]) if r["decode_tokens_per_s"] else "very_low"
    out.add(say(f"speed_{said}", out.lang, measured=text, estimate=f"{r['decode_tokens_per_s']:,.1f}"))
    if said in ("low", "very_low"):
        out.add(say("speed_low_causes", out.lang))
