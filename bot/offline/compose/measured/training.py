"""A training run's speed the asker measured ("48.47s/it", "1.93it/s", "step_time": 2.98, "only 20 TFLOPS",
"1500 Tokens/GPU/s", train_samples_per_second = 0.394), judged on the setup the answer sized: "is this normal?"
gets a verdict on THEIR figure, put first.

The figure is converted into the estimate's unit by `training_time` itself (given `measured` and its unit; the
conversion and the verdict band are `tools.speed.measured`'s): a step holds micro-batch × accumulation × GPUs ×
sequence length tokens (global_batch_tokens), each setting the asker left out said as assumed; a sample holds one
sequence; TFLOPS per GPU are model FLOPs. The line gives their figure in tokens/s and the MFU it implies beside
the estimate's, with normal / slow / very slow / faster than the estimate; a slow run gets the causes its setup
shows (a GRPO/PPO step's generation, LoRA's backward through the whole model, ZeRO-3 or offload traffic, a tiny
micro-batch, checkpointing's extra forward, a card that was assumed), each from the settings, none invented.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.evidence import reported_oom
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb
from bot.offline.understand.request.model import Request
from bot.offline.understand.request.reader import normalised
from tools.diagnose.facts import words
from tools.errors import AdvisorError

#: the unit written at (or just before) a training figure -> training_time's measured_unit; ms per step scaled
_AFTER = (
    (
        re.compile(r"^\s*(?:s|秒|sec\w*)\s*/\s*(?:it|iter\w*|step|步)|^\s*(?:秒|s|sec\w*)\s*(?:一步|每步)", re.I),
        "s_per_step",
    ),
    (re.compile(r"^\s*(?:steps?|its?|iter\w*)\s*(?:per|/|每)\s*(?:min\w*|分钟)", re.I), "steps_per_min"),
    (re.compile(r"^\s*(?:it|iter\w*|steps?)\s*/\s*s|^\s*steps?\s*per\s*sec", re.I), "steps_per_s"),
    (re.compile(r"^\s*samples?\s*(?:/|per)\s*s", re.I), "samples_per_s"),
    (
        re.compile(r"^\s*tokens?\s*(?:/|per)\s*gpu|^\s*tokens?\s*/\s*s\s*(?:/|per)\s*(?:gpu|卡)", re.I),
        "tokens_per_s_per_gpu",
    ),
    (re.compile(r"^\s*tflop[^\s,;，。)）]*", re.I), "tflops_per_gpu"),
    (re.compile(r"^\s*(?:tokens?/s|tok/s|tokens? per second)", re.I), "tokens_per_s"),
)
_BEFORE = (
    (re.compile(r"(?:step_time|time_per_step)[\"']?\s*[:=]\s*$", re.I), "s_per_step"),
    (re.compile(r"elapsed time per iteration \(ms\)\s*:\s*$", re.I), "ms_per_step"),
    (re.compile(r"steps_per_second\s*[:=]\s*$", re.I), "steps_per_s"),
    (re.compile(r"samples_per_second\s*[:=]\s*$", re.I), "samples_per_s"),
    (re.compile(r"tokens_per_second\s*[:=]\s*$", re.I), "tokens_per_s"),
    (re.compile(r"tflop\S*\s*[:=]\s*$", re.I), "tflops_per_gpu"),
    (re.compile(r"(?:一步|每步|step|per step)\S{0,4}\s*$", re.I), "s_per_step"),
)
#: a figure said of someone else's run, to compare with: the words of its clause before it
_REFERENCE = re.compile(r"readme|官方|论文|paper|reported|benchmark|其它|其他|别人|别的|\bothers?\b|\byour\b|理论|预期|"
                        r"expected|should", re.I)  # fmt: skip
_SENTENCE = re.compile(r"[。！？!?]|\.\s")
_OWN = re.compile(r"\bme\b|\bmy\b|\bi\b|\bonly\b|\bwe\b|\bour\b|我|只有|仅|才", re.I)
_CLAUSE = re.compile(r"[，,;；。！？!?\n]|\bhowever\b|\bbut\b")
_RL = re.compile(r"(?<![a-z])(?:grpo|ppo)(?![a-z])|rlhf_type\s+(?:grpo|ppo)", re.I)
#: a speed asked about ("训练速度", "is it slow", "step time"), not a memory or a cost
_SPEED_ASKED = re.compile(r"速度|太慢|很慢|慢|耗时|speed|slow|step time|per step|throughput|吞吐", re.I)
_MINUTES = re.compile(r"^\s*(?:分钟|min)", re.I)
#: the training jobs an answer sizes; the call of the setup asked is the first one outside a survey
_TRAINING_CALLS = ("training_time", "fit_training")
_SETUP_KEYS = ("model", "gpu", "n_gpus", "method", "precision", "seq_len", "micro_batch", "zero_stage", "tp", "pp",
               "grad_checkpointing", "framework", "lora_rank")  # fmt: skip
_VERDICT_WORDS = {"normal", "slow", "very_slow", "faster"}


def figure(request: Request) -> tuple[str, str, float] | None:
    """The training speed the asker measured: (their words, training_time's unit, the value in that unit); the first
    one said that is not a reference to compare with ("the README's 420.5 … only 296.5 for me": the 296.5)."""
    text, found = normalised(request.text), None
    for m in request.mentions:
        if m.role != "throughput_measured" or not isinstance(m.value, float) or m.value <= 0:
            continue
        if _reference(text, m.start):
            continue  # "the README's 420.5", "其它模型可以达到 3300": a figure to compare with, not theirs
        after, before = text[m.end : m.end + 24], text[max(0, m.start - 48) : m.start]
        written = m.text[len(re.match(r"[\d,.]*", m.text).group(0)) :] + after
        hit = next(((rx.search(written), u) for rx, u in _AFTER if rx.search(written)), None)
        digits = len(m.text) - len(written) + len(after)
        unit, shown = (hit[1], (m.text + after)[: digits + hit[0].end()].strip()) if hit else (None, m.text.strip())
        if unit is None and (key := next(((rx, u) for rx, u in _BEFORE if rx.search(before)), None)):
            unit, shown = key[1], re.sub(r"[\"']", "", before[key[0].search(before).start() :] + m.text).strip()
        if unit is None:
            continue
        value = m.value
        if unit == "ms_per_step":
            unit, value = "s_per_step", value / 1000
        elif unit == "steps_per_min":
            unit, value = "s_per_step", 60 / value
        elif unit == "s_per_step" and _MINUTES.search(written):
            value *= 60
        return shown, unit, value
    return found


def _reference(text: str, at: int) -> bool:
    """The figure at `at` is someone else's: its clause names a reference, or its sentence does and the clause does
    not say it is the asker's own ("for me", "only", "我", "只有")."""
    sentence = _SENTENCE.split(text[text.rfind("\n", 0, at) + 1 : at])[-1]
    clause = _CLAUSE.split(sentence)[-1]
    return bool(_REFERENCE.search(clause) or (_REFERENCE.search(sentence) and not _OWN.search(clause)))


def _setup(run: ToolRun) -> dict[str, Any] | None:
    """The training setup the answer sized: its first training call outside a survey (later ones are variants:
    other sizes, other methods)."""
    for c in run.calls:
        if c.tool in _TRAINING_CALLS and c.id not in run.surveyed:
            return c.input
    return None


def _given(request: Request, role: str) -> float | None:
    return next(
        (m.value for m in request.mentions if m.role == role and isinstance(m.value, float) and m.value > 0), None
    )


def add(request: Request, run: ToolRun, out: Out, at: int) -> bool:
    """Their measured training speed judged on the setup sized, inserted at `at` (with the causes when slow)."""
    if (setup := _setup(run)) is None:
        return False
    seen = figure(request)
    if _rl(setup, request) and (seen or _SPEED_ASKED.search(request.text)) and not reported_oom(request.parsed):
        # a GRPO/PPO step is generation first: its time is not a fine-tuning step's tokens, so no tokens/s verdict
        head = say("train_rl_figure", out.lang, measured=seen[0]) if seen else say("train_rl_no_figure", out.lang)
        out.blocks[at:at] = [head + " " + say("train_cause_rl", out.lang)]
        return True
    if seen is None or len({m.text.lower() for m in request.mentions if m.role == "method"}) > 1:
        return False  # no figure, or several methods compared: which run the figure is of is not said
    shown, unit, value = seen
    if unit == "tokens_per_s" and any(c.tool == "inference_speed" for c in run.calls):
        return False  # a decode speed: the serving answer's own verdict says it
    args = {k: setup[k] for k in _SETUP_KEYS if setup.get(k) is not None}
    if args.get("method") not in (None, "full", "lora", "qlora", "freeze"):
        args.pop("method")
    n, tp, pp = int(args.get("n_gpus", 1)), int(args.get("tp", 1)), int(args.get("pp", 1))
    micro = int(args.get("micro_batch") or _given(request, "micro_batch") or 1)
    accum = int(_given(request, "grad_accum") or 1)
    seq = int(args.get("seq_len") or _given(request, "seq_len") or 4096)
    assumed = [k for k, v in (("micro_batch", args.get("micro_batch") or _given(request, "micro_batch")),
                              ("grad_accum", _given(request, "grad_accum")),
                              ("seq_len", args.get("seq_len") or _given(request, "seq_len"))) if not v]  # fmt: skip
    dp = max(1, n // (tp * pp))
    step_tokens = micro * accum * dp * seq
    args |= {"seq_len": seq, "micro_batch": micro, "global_batch_tokens": step_tokens, "n_gpus": n,
             "tokens": max(int(setup.get("tokens") or 0), step_tokens * 100), "measured": value, "measured_unit": unit}  # fmt: skip
    try:
        r = run("training_time", args)
    except AdvisorError:
        return False
    if r.get("measured_verdict") not in _VERDICT_WORDS:
        return False
    lang = out.lang
    how = say(
        "train_speed_step", lang, micro=micro, accum=accum, gpus=dp, seq=f"{seq:,}", tokens=f"{r['step_tokens']:,}"
    )
    joiner = "、" if lang == "zh" else ", "
    keys = joiner.join(say(f"train_speed_key_{k}", lang) for k in assumed)
    how += say("train_speed_assumed", lang, keys=keys) if assumed else say("train_speed_given", lang)
    settled = not assumed or unit not in ("s_per_step", "steps_per_s", "samples_per_s")
    line = say(
        f"train_speed_{r['measured_verdict']}" if settled else _unknown(r), lang, measured=shown,
        word=say(f"train_word_{r['measured_verdict']}", lang),
        tps=f"{r['measured_tokens_per_s']:,.0f}", per_gpu=f"{r['measured_tokens_per_s_per_gpu']:,.0f}",
        mfu=_pct(r["measured_mfu"]), step=f"{r['measured_seconds_per_step']:,.2f}",
        est_tps=f"{r['tokens_per_s']:,.0f}", est_mfu=_pct(r["mfu"]), est_step=f"{r['seconds_per_step']:,.2f}",
        peak=f"{r['peak_tflops']:,.0f}", gpu=r["gpu"], n=r["n_gpus"], model=r["model"],
    )  # fmt: skip
    blocks = [line]
    if unit in ("s_per_step", "steps_per_s", "samples_per_s"):
        blocks[0] += ("" if lang == "zh" else " ") + how
        if assumed:  # the verdict rests on settings not given: the step (or sample) that would make it normal
            key = "train_speed_yardstick_sample" if unit == "samples_per_s" else "train_speed_yardstick"
            blocks.append(say(key, lang, normal=f"{r['normal_tokens']:,}", est_tps=f"{r['tokens_per_s']:,.0f}"))
    if r["measured_verdict"] in ("slow", "very_slow"):
        blocks += _causes(setup, r, request, micro, lang, run)
    out.blocks[at:at] = blocks
    return True


def _unknown(r: dict[str, Any]) -> str:
    """The lead for a step whose tokens were assumed: over the card's peak, the step holds fewer than assumed."""
    return "train_speed_unknown_over" if r["measured_mfu"] > 1 else "train_speed_unknown"


def _pct(f: float) -> str:
    return f"{f * 100:.1f}%" if f < 0.1 else f"{f * 100:.0f}%"


def without_unmeasured(text: str, lang: str) -> str:
    """A diagnosis's lines less its "slower than you expect, with no speed measured" suspect, once the speed the
    asker measured has been judged (`add`)."""
    told = words()["cause_variants"]["slow_told"]["zh" if lang == "zh" else "en"]
    return "\n".join(line for line in text.split("\n") if not line.lstrip("- ").startswith(told))


def _rl(setup: dict[str, Any], request: Request) -> bool:
    """A GRPO/PPO run: each step generates its completions before it trains."""
    return setup.get("objective") in ("grpo", "ppo") or bool(_RL.search(request.text))


def _not_fitting(run: ToolRun, r: dict[str, Any]) -> dict[str, Any] | None:
    """The fit of the run judged (its model, card and count) when it does not fit the cards."""
    for c in reversed(run.calls):
        o = c.output
        if c.tool == "fit_training" and c.id not in run.surveyed and o.get("fits") is False:
            if (o.get("model"), o.get("gpu"), o.get("n_gpus")) == (r["model"], r["gpu"], r["n_gpus"]):
                return o
    return None


def _causes(
    setup: dict[str, Any], r: dict[str, Any], request: Request, micro: int, lang: str, run: ToolRun
) -> list[str]:
    """The causes of a slow run that its own settings show, most often the cause first."""
    keys = []
    if _rl(setup, request):
        keys.append("train_cause_rl")
    if r["method"] in ("lora", "qlora"):
        keys.append(f"train_cause_{r['method']}")
    if setup.get("offload"):
        keys.append("train_cause_offload")
    if (setup.get("zero_stage") or 0) >= 3:
        keys.append("train_cause_zero3")
    if micro <= 2 and (setup.get("micro_batch") or _given(request, "micro_batch")):
        keys.append("train_cause_micro")
    if any(m.role == "checkpointing" and m.value for m in request.mentions):  # said or set by the asker
        keys.append("train_cause_checkpointing")
    if not any(m.role == "gpu" for m in request.mentions):
        keys.append("train_cause_card_assumed")
    lines = [say(k, lang, gpu=r["gpu"]) for k in keys]
    if (tight := _not_fitting(run, r)) is not None:  # states that do not fit: offload or recompute is forced
        lines.insert(0, say("train_cause_no_fit", lang, need=gb(tight["per_gpu_gb"]), usable=gb(tight["usable_gb"])))
    return [say("train_causes_header", lang) + "\n" + "\n".join(f"- {x}" for x in lines)] if lines else []
