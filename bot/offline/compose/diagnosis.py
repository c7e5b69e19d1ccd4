"""The answer to a pasted log, launch command or config: `diagnose` on what the paste and the question say,
then the cause in one sentence with its figure first, the fix (flag and value) and its cost, what to expect
after it, the other causes by how well they match, and what of the paste was read (or could not be).

Every figure comes from the tool's output (its arithmetic strings, `after_fix`, `estimate`) or the paste.
"""

from __future__ import annotations

import functools
import string
from pathlib import Path
from typing import Any

from bot.core.planner import PlanResult
from bot.offline.compose.answers import stand_in_line
from bot.offline.understand.paste import Paste, read_paste
from bot.offline.understand.paste.setup import diagnose_args, question_model
from bot.offline.understand.request.model import Request
from tools.diagnose.context import OOM_KINDS
from tools.errors import AdvisorError
from tools.yaml_data import load_yaml

TEMPLATES = Path(__file__).resolve().parent.parent / "say" / "templates" / "diagnose.yaml"
#: other causes listed after the first
OTHERS = 3
#: the catalog id prefix of a generic model of a size (a name it lacks, sized by its parameter count)
GENERIC = "generic-"
#: the fix `diagnose` gives a framework bug or version mismatch: the version, not a flag
VERSION_FIX = "the framework version"
#: errors a paste carries that are more than the word "OOM": the diagnosis is the answer
_SPECIFIC = frozenset({"kv_too_small", "no_cache_memory", "heads_not_divisible", "nccl_timeout", "nccl_error",
                       "host_oom", "unsupported_precision", "weights_oom", "too_many_tokens", "crash",
                       "quant_tp_misaligned"})  # fmt: skip
#: troubles described in words that are a diagnosis question by themselves ("多卡反而更慢", "GPU-Util 很低")
_DESCRIBED = frozenset(
    {
        "multi_gpu_slower",
        "low_gpu_util",
        "engine_memory",
        "other_process",
        "logits",
        "cpu_fallback",
        "one_gpu_used",
        "silent_exit",
        "merge_export",
        "slow",
        "serial",
        "uneven_growth",
        "busy_low_power",
        "hang",
    }
)  # fmt: skip  (concurrency alone is a sizing question)
_FIGURES = ("failed_alloc_gib", "capacity_gib", "kv_tokens_reported", "measured_tokens_per_s", "free_gib")


@functools.cache
def _t() -> dict[str, Any]:
    return load_yaml(TEMPLATES.read_text(encoding="utf-8"))


def line(key: str, lang: str, **values: Any) -> str:
    entry = _t()[key]
    return string.Formatter().vformat(entry.get(lang) or entry["en"], (), values)


def pasted(text: str, request: Request) -> Paste | None:
    """The paste, when it makes this a diagnosis: a log with figures or a specific error, or a command / config
    read beside a question that asks why or shows an error."""
    paste = read_paste(text)
    ev = paste.evidence
    has_setup = any(k in paste.read for k in ("command", "deepspeed_json", "yaml", "from_pretrained"))
    if ev.get("error_kind") in _SPECIFIC or any(k in ev for k in _FIGURES):
        return paste
    if has_setup and (ev.get("error_kind") or "diagnose" in request.asks):
        return paste
    if "diagnose" in request.asks and paste.notes:  # a long or broken paste asked about: say what was read
        return paste
    if ev.get("error_kind") or ev.get("symptom") in _DESCRIBED:  # the error or the trouble, in the user's words
        return paste
    # a speed asked beside a described trouble; requests in flight alone ("100 requests concurrently, at low latency")
    # are the load a sizing question states, no trouble, unless the question asks why
    if ("diagnose" in request.asks or "speed" in request.asks) and ev.get("symptom") not in (None, "concurrency"):
        return paste
    if "diagnose" in request.asks and ev.get("symptom") == "concurrency":
        return paste
    # a trouble told in words alone ("8 卡 A800 上 LoRA 72B 跑不起来"): the setup they name is diagnosed
    if paste.trouble and (question_model(request) or paste.setup.get("model")):
        return paste
    return None


def exclusive(paste: Paste) -> bool:
    """An error the memory or speed estimate of the question cannot speak to (the engine refused the setup, NCCL,
    host RAM, precision, a failed merge or export): the diagnosis is the whole answer."""
    return paste.evidence.get("error_kind") in _SPECIFIC or paste.evidence.get("symptom") == "merge_export"


def plan(text: str, paste: Paste, request: Request, run, lang: str) -> tuple[PlanResult, str]:
    """The diagnosis, in two parts: what may open the answer (a cause it earned, with its fix and what to expect
    after it) and what goes below the estimate (causes that are things to check, and what of the paste was read).
    When no cause earned the lead, the first part holds at most the stand-in line and the answer opens with the
    estimate or verdict for what was asked."""
    args, unknown = diagnose_args(paste, request)
    pasted = {**paste.setup, **paste.evidence}
    if "used_gb" not in args:  # the memory said, set against the weights, explained nothing: it was not used
        pasted.pop("used_gb", None)
    offered: dict[str, Any] = {"pasted": pasted}
    out = None
    if paste.anything or paste.evidence or paste.trouble:  # a trouble told in words: the setup the question states
        try:
            out = run("diagnose", args)
        except AdvisorError:
            args = {k: v for k, v in args.items() if k not in ("model", "gpu")}
            out = run("diagnose", args)
    if out is not None:
        _estimate(args, out, run)
    speed = args.get("measured_tokens_per_s", paste.evidence.get("measured_tokens_per_s"))  # (the slow card's)
    measured = next(
        (m.text for m in request.mentions if m.role == "throughput_measured" and m.value == speed), None
    )  # the user's words for the figure the diagnosis compares
    head, below = render(out, paste, args, unknown, lang, measured)
    p = request.parsed
    # which model an unknown name was computed on, said first: above a cause that leads, or above the whole
    # diagnosis when it is the answer (otherwise the estimate that opens the answer says it)
    first = head if head else below if exclusive(paste) else None
    said = False
    for typed, value in p.stand_ins.items() if first is not None else ():
        if value == args.get("model") and typed in p.unknown_models:
            first.insert(0, stand_in_line(typed, value, lang, p.stand_in_basis.get(typed)))
            said = True
    written = paste.setup.get("model")  # a name in the paste the catalog sizes only as a generic model of its size
    if first is not None and not said and written and str(args.get("model", "")).startswith(GENERIC):
        size = args["model"].removeprefix(GENERIC).upper()
        first.insert(0, line("generic_model", lang, name=str(written).rstrip("/").rsplit("/", 1)[-1], size=size))
    result = PlanResult(answer="\n\n".join(b for b in head if b), language=lang, tool_calls=run.calls,
                        citations=run.citations, follow_ups=[], state={}, offered=offered)  # fmt: skip
    return result, "\n\n".join(b for b in below if b)


def render(
    out: dict[str, Any] | None,
    paste: Paste,
    args: dict,
    unknown: dict[str, str],
    lang: str,
    measured: str | None = None,
) -> tuple[list[str], list[str]]:
    """The answer's blocks from a diagnose output (None: nothing could be diagnosed) and the paste it read: those
    that lead the answer, and those that go below the estimate."""
    if out is None:
        return [line("nothing_read", lang)], _read_notes(paste, out, unknown, args, lang)
    causes = shown(out)
    if causes and causes[0]["leads"]:
        head = [line("measured_lead", lang, measured=measured)] if measured and paste.evidence.get(
            "measured_tokens_per_s") else []  # fmt: skip
        head = head or _timed(paste, lang)
        head += _answer(out, causes, lang, paste)
        return head + _read_notes(paste, out, unknown, args, lang), []
    est = out.get("estimate") or {}
    head = []
    if out.get("contradicts_estimate") and est:  # an OOM the estimate does not reproduce: the log wins, said first
        head.append(line("oom_unexplained", lang, need=f"{est['per_gpu_gb']:g}", usable=f"{est['usable_gb']:g}",
                         at=_at(est, lang)))  # fmt: skip
    elif paste.evidence.get("error_kind") in OOM_KINDS:  # an OOM and no figure to compare: still the log wins
        head.append(line("oom_unpinned", lang))
    return head, _timed(paste, lang) + _to_check(out, causes, lang, paste) + _read_notes(
        paste, out, unknown, args, lang
    )


def _timed(paste: Paste, lang: str) -> list[str]:
    """The speed worked out from an output and the time it took ("max_tokens 512 … 3分钟才返回"), in its words."""
    if not (timed := paste.evidence.get("timed_output")):
        return []
    basis = "timed_cap" if timed["cap"] else "timed_characters" if timed["characters"] else "timed_counted"
    rate = f"{paste.evidence['measured_tokens_per_s']:g}"
    said = {"tokens": f"“{timed['tokens']}”", "time": f"“{timed['time']}”"}
    return [line("timed_lead", lang, rate=rate, basis=line(basis, lang), **said)]


#: causes a speed fix answers: listed only when the measured speed is below what the setup gives
SPEED_CAUSES = frozenset({"compute_or_config_slow", "communication_bound", "p2p_or_interconnect"})


def shown(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The causes the answer says: no speed fix where the measured speed is what the setup gives (the diagnosis
    decided that, tools/speed/measured.py), and no "framework bug" where nothing failed."""
    normal = (out.get("speed") or {}).get("verdict") in ("normal", "high")
    failed = out["causes"][0]["leads"] or any(c["matches_evidence"] for c in out["causes"])
    return [
        c for c in out["causes"]
        if not (normal and c["cause"] in SPEED_CAUSES) and not (_version_only(c) and not failed and not c["leads"])
    ]  # fmt: skip


def _estimate(args: dict[str, Any], out: dict[str, Any], run) -> None:
    """The calculator the diagnosis compared the evidence with, called in the open so the answer's trace shows it:
    fit_training for a training setup, inference_speed for a measured speed, fit_inference for serving memory."""
    if not (args.get("model") and args.get("gpu")) or args.get("error_kind") == "crash":
        return  # (a crash inside a kernel is no memory or speed question)
    base = {"model": args["model"], "gpu": args["gpu"]}
    if out.get("workload") == "train":
        keys = ("n_gpus", "method", "zero_stage", "offload", "seq_len", "micro_batch", "grad_checkpointing", "pp")
        call = ("fit_training", {**base, **{k: args[k] for k in keys if k in args}})
        if args.get("precision") in ("fp32", "bf16", "fp16", "fp8"):
            call[1]["precision"] = args["precision"]
    elif out.get("workload") == "infer":
        n = args.get("tp") or args.get("n_gpus", 1)
        extra = {"precision": args["precision"]} if args.get("precision") else {}
        if args.get("measured_tokens_per_s"):
            call = ("inference_speed", {**base, "n_gpus": min(n, 64), **extra})
        else:
            ctx = {"context_len": args["max_model_len"]} if args.get("max_model_len") else {}
            call = ("fit_inference", {**base, "n_gpus": n, **extra, **ctx})
    else:
        return
    try:
        run(*call)
    except AdvisorError:
        pass


def _zh(lang: str) -> bool:
    return lang == "zh"


def _answer(out: dict[str, Any], causes: list[dict[str, Any]], lang: str, paste: Paste) -> list[str]:
    """The cause that earned the lead, its fix and what to expect after it, then the others."""
    zh = _zh(lang)
    first = causes[0]
    blocks = []
    ev = paste.evidence
    if not (ev.get("error_kind") or ev.get("measured_tokens_per_s") or ev.get("symptom") or ev.get("layers_total")):
        blocks.append(line("told_only" if paste.trouble and not paste.anything else "no_error", lang))
    arith = first["arithmetic_zh" if zh else "arithmetic"]
    blocks.append(
        line("cause_first", lang, arithmetic=arith, explanation=first["explanation_zh" if zh else "explanation"])
    )
    est = out.get("estimate") or {}
    if out.get("contradicts_estimate") and est:
        key = "contradicts" if first["matches_evidence"] else "contradicts_unmatched"
        blocks.append(line(key, lang, need=f"{est['per_gpu_gb']:g}", usable=f"{est['usable_gb']:g}", at=_at(est, lang)))
    fix = first["fix"]
    if _version_only(first):  # no flag to set: the version is what to change
        blocks.append(line("fix_version", lang))
    elif fix["flag"] == SERVER_FIX:  # another server to run, said in words
        blocks.append(line(f"fix_server_{fix['value']}", lang, cost=first["cost_zh" if zh else "cost"]))
    elif fix["flag"]:  # (none: what it would set is already so, or this framework has no such knob)
        cost = first["cost_zh" if zh else "cost"]
        blocks.append(line("fix", lang, setting=_setting(fix["flag"], fix["value"]), cost=cost))
    after = _after(out.get("after_fix") or {}, lang)
    if after:
        blocks.append(after)
    rest = causes[1 : 1 + OTHERS]
    if rest:
        blocks.append(line("others_header", lang) + "\n" + "\n".join(_item(c, lang) for c in rest))
    return blocks


def _item(c: dict[str, Any], lang: str) -> str:
    zh = _zh(lang)
    key = "other_version" if _version_only(c) else "other_line" if c["fix"]["flag"] else "other_noflag"
    if c["fix"]["flag"] == SERVER_FIX:
        key = f"other_server_{c['fix']['value']}"
    return line(key, lang, explanation=c["explanation_zh" if zh else "explanation"],
                arithmetic=c["arithmetic_zh" if zh else "arithmetic"],
                setting=_setting(c["fix"]["flag"], c["fix"]["value"]))  # fmt: skip


def _at(est: dict[str, Any], lang: str) -> str:
    """The length a serving estimate was made at (the engine's max_model_len), so the figure is never read against
    the estimate below it at another length."""
    key = "engine_length_set" if est.get("context_set") else "engine_length"
    return line(key, lang, n=f"{est['context_len']:,}") if est.get("context_len") else ""


def _setting(flag: str, value: Any) -> str:
    """A flag as it is typed: `--key=value`, `key=value`, and a short flag with its value after a space (`-ngl 99`:
    llama.cpp reads no '=' there)."""
    sep = " " if flag.startswith("-") and not flag.startswith("--") else "="
    return f"{flag}{sep}{_value(value)}"


def _to_check(out: dict[str, Any], causes: list[dict[str, Any]], lang: str, paste: Paste) -> list[str]:
    """No cause earned the lead: the likely causes of such a run, below the estimate, as things to check."""
    if not causes:
        return []
    ev = paste.evidence
    key = "to_check_failed" if ev.get("error_kind") else "to_check"
    if not (ev.get("error_kind") or ev.get("measured_tokens_per_s") or ev.get("symptom") or ev.get("layers_total")):
        key = "told_only" if paste.trouble and not paste.anything else "no_error"  # nothing failed in a log
    items = [_item(c, lang) for c in causes[: 1 + OTHERS]]
    return [line(key, lang) + "\n" + "\n".join(items)]


#: the fix of requests served one at a time: another server, not a flag (tools/diagnose/named.py)
SERVER_FIX = "server"


def _version_only(cause: dict[str, Any]) -> bool:
    """A framework bug or version with nothing to set but the version (a runtime's short estimate has a flag)."""
    return cause["cause"] == "version_or_bug" and cause["fix"]["flag"] == VERSION_FIX


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _after(a: dict[str, Any], lang: str) -> str:
    if not a:
        return ""
    starts = line("starts_yes" if a.get("starts") else "starts_no", lang)
    if "pp" in a:
        text = line("after_pp", lang, pp=a["pp"], weights=f"{a['weights_gib_per_gpu']:g}", tokens=f"{a['kv_tokens']:,}",
                    starts=starts)  # fmt: skip
    elif "tp" in a and "kv_tokens" in a:
        text = line("after_tp", lang, tp=a["tp"], weights=f"{a['weights_gib_per_gpu']:g}", tokens=f"{a['kv_tokens']:,}",
                    starts=starts)  # fmt: skip
    elif "kv_tokens" in a:
        text = line("after_pool", lang, pool=f"{a['kv_pool_gib']:g}", tokens=f"{a['kv_tokens']:,}",
                    length=f"{a['max_model_len']:,}", starts=starts)  # fmt: skip
    elif "per_gpu_gb" in a:
        verdict = {"fits": "verdict_fits", "tight": "verdict_tight"}.get(a.get("verdict"), "verdict_no")
        text = line("after_train", lang, need=f"{a['per_gpu_gb']:g}", usable=f"{a['usable_gb']:g}",
                    verdict=line(verdict, lang))  # fmt: skip
    elif "reclaimable_gib" in a:
        text = line("after_frag", lang, gib=f"{a['reclaimable_gib']:g}",
                    covers=line("covers_yes" if a.get("covers_request") else "covers_no", lang))  # fmt: skip
    else:
        return ""
    return text + (line("also_needed", lang) if a.get("also") else "")


def _read_notes(paste: Paste, out: dict[str, Any] | None, unknown: dict[str, str], args: dict, lang: str) -> list[str]:
    sep = "、" if _zh(lang) else ", "
    items = _t()["read_items"]
    blocks = []
    seen = [items[k][lang] for k in dict.fromkeys(paste.read) if k in items]
    if seen:
        blocks.append(line("read_what", lang, items=sep.join(seen)))
    if out and out.get("unread"):
        blocks.append(line("unread", lang, items=sep.join(f"`{f}`" for f in out["unread"][:12])))
    for note in dict.fromkeys(paste.notes):
        blocks.append(line(note, lang))
    if "model" in unknown:
        blocks.append(line("unknown_model", lang, name=unknown["model"]))
    missing = [line(f"need_{k}", lang) for k in ("model", "gpu") if k not in args]
    if out is not None and missing and "model" not in unknown:
        blocks.append(line("need_setup", lang, items=sep.join(missing)))
    return blocks
