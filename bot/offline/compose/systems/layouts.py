"""What a set of serving cards does beyond one replica's figure (issue 26).

- the other ways to split the same cards ("8 A100, now 2 pods of 4 GPUs": two TP=4 replicas against one TP=8):
  per layout the concurrency each replica's memory holds and the speed at that load, and which layout serves more;
- what more concurrency needs: one more replica of the same cards per step (weights once per replica, KV per
  request), so the cards grow with the concurrency;
- a per-request memory figure read as a share of the card ("单次推理需要 13G，80G 是不是只能 8 个请求"): weights
  are loaded once per replica and each request adds only its KV cache.

Every figure is a tool output (fit_inference, inference_speed) or the question's own.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb
from bot.offline.understand.request.model import Request

#: tensor-parallel sizes one replica may span (one node; heads divide by these in every catalog model)
TP_SIZES = (1, 2, 4, 8)
#: the user speaks of concurrency ("会有并发问题吗", "concurrent users"): a fit then says what more of it needs
CONCURRENCY = re.compile(r"并发|同时|concurren|simultaneous|users", re.IGNORECASE)
#: a memory figure stated per request or per inference run ("单次推理需要13G", "each request uses 13 GB")
_PER_REQUEST = re.compile(
    r"(?:单次|每次|每个|一个|一次|单个)(?:推理|请求|对话|会话|query)|per[- ](?:request|inference|query)|"
    r"each (?:request|inference|query)|a single (?:request|inference)",
    re.IGNORECASE,
)
_GB = re.compile(r"\d+(?:\.\d+)?\s*(?:G|GB|GiB)\b", re.IGNORECASE)


def card_counts(request: Request) -> list[int]:
    """Every card count the question states ("8 A100 … 2 pods with 4 GPU": 8 and 4), largest first."""
    out = set()
    for m in request.mentions:
        if m.role == "gpus_total" and (n := re.match(r"\s*(\d+)", m.text)):  # "8 A100", "4张4090"; not "A100"
            out.add(int(n.group(1)))
    return sorted(out, reverse=True)


def per_request_claim(request: Request) -> str | None:
    """The user's per-request memory figure ("13G" after "单次推理需要"), as written; else None."""
    norm = request.text
    for m in request.mentions:
        if m.role in ("claim", "gpu_memory_gb", "other") and _GB.fullmatch(m.text.strip()):
            if _PER_REQUEST.search(norm[max(0, m.start - 16) : m.start]):
                return m.text.strip()
    return None


def more_line(n: int, gpu: str, max_batch: int, ctx: int, lang: str) -> str:
    """More concurrency than one set of cards holds: one more replica of the same cards per step."""
    return say(
        "capacity_more" if n > 1 else "capacity_more_one",
        lang,
        n=n,
        gpu=gpu,
        max_batch=f"{max_batch:,}",
        ctx=f"{ctx:,}",
    )


def layouts(args: dict[str, Any], total: int, run: ToolRun, out: Out) -> None:
    """The ways `total` cards split into replicas (TP sizes that hold the model), side by side, with the layout
    that serves the most concurrency and throughput named (nothing when only one layout holds the model)."""
    lang = out.lang
    rows = []
    for tp in TP_SIZES:
        if tp > total or total % tp:
            continue
        f = run("fit_inference", {**args, "n_gpus": tp, "batch": 1})
        if not f["fits"] or not f["max_batch"]:
            continue
        s = run("inference_speed", {**args, "n_gpus": tp, "batch": f["max_batch"]})
        rows.append((tp, total // tp, f["max_batch"], s["decode_tokens_per_s"], s["total_tokens_per_s"], f["gpu"]))
    if len(rows) < 2:
        return
    lines = [say("layouts_header", lang, total=total, gpu=rows[0][5], ctx=f"{args.get('context_len') or 4096:,}")]
    for tp, replicas, batch, decode, tps, _ in rows:
        lines.append(
            say(
                "layouts_row",
                lang,
                replicas=replicas,
                tp=tp,
                batch=f"{batch:,}",
                decode=f"{decode:,.1f}",
                tps=f"{tps:,.0f}",
            )
        )
    out.add("\n".join(lines))
    fastest = max(rows, key=lambda r: r[1] * r[4])  # replicas x each replica's tokens/s
    widest = max(rows, key=lambda r: r[1] * r[2])  # replicas x each replica's concurrency
    key = "layouts_verdict_same" if fastest is widest else "layouts_verdict"
    out.add(say(key, lang, total=total, tr=fastest[1], tt=fastest[0], cr=widest[1], ct=widest[0]))


def per_request_correction(s: dict[str, Any], claim: str, gpu: str, run: ToolRun, out: Out) -> None:
    """A per-request memory figure taken as each request's share of the card: the weights are held once per
    replica and each request adds only its KV cache, so one card holds this many at once."""
    args = {"model": s["model"], "gpu": gpu, "n_gpus": 1, "batch": 1}
    if s.get("precision"):
        args["precision"] = s["precision"]
    if s.get("context_len"):
        args["context_len"] = s["context_len"]
    f = run("fit_inference", args)
    if not f["fits"] or not f["max_batch"]:
        return
    kv = f["kv_cache_gb_per_sequence"]
    precision = next((a["value"] for a in f["assumptions"] if a["key"] == "precision"), "bf16")
    out.add(
        say(
            "per_request_memory",
            out.lang,
            claim=claim,
            model=f["model"],
            precision=precision,
            weights=gb(f["breakdown_gb"]["weights"]),
            kv=f"{kv:.2f}" if kv < 1 else f"{kv:.1f}",
            ctx=f"{f['context_len']:,}",
            gpu=f["gpu"],
            max_batch=f"{f['max_batch']:,}",
        )
    )
