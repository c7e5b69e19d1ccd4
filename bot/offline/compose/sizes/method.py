"""A question that asks how the figures are worked out ("how to calculate", "is there any empirical way", "key
figures or guidelines that could help estimate", "怎么算", "估算方法"): after the answer, the steps that produce
its own figures, so the asker can redo them for another model or card.

- training: memory -> GPUs (each method's memory per GPU at its fewest GPUs, from the fits the answer made), then
  time from tokens and MFU (FLOPs per token x tokens / (GPUs x peak x MFU)), GPU-hours, and rented cost —
  `training_time` and `run_cost` re-run on each fit's model, card and count;
- serving: weights + KV cache per request -> the fewest GPUs, the requests in flight that memory holds, and how a
  load turns into replicas (`plan_serving` does that from users or QPS).

Every figure is a tool output; the token count of a training run is the question's, else the stated default.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, count, duration, gb, method_label, money, num, pct, rate
from tools.errors import AdvisorError

#: the words that ask for the method, not only the figure
ASKED = re.compile(
    r"how (?:to|do (?:i|we|you|one)|can (?:i|we|one)|should (?:i|we|one)|would (?:i|we|one)) "
    r"(?:calculate|estimate|determine|work out|figure out|compute)\b|how (?:is|are) (?:it|this|that|they) calculated|"
    r"empirical(?:ly)? (?:way|method|formula|rule)|rule of thumb|key figures|guidelines?\b.{0,24}\bestimat|"
    r"(?:怎么|如何|怎样)(?:计算|估算|推算|算出)|(?:是|要)?怎么算的|(?:计算|估算)(?:方法|公式)",
    re.I,
)
#: the token count a training run's time is worked on when the question gives none
DEFAULT_TOKENS = 1_000_000_000


def asked(text: str) -> bool:
    return bool(ASKED.search(text))


def add(text: str, slots: dict[str, Any], run: ToolRun, since: int, out: Out) -> None:
    """The method, worked on the fits made after call `since` (not a survey's rows)."""
    if not asked(text):
        return
    fits = [
        c
        for c in run.calls[since:]
        if c.tool in ("fit_training", "fit_inference") and c.id not in run.surveyed and c.output.get("fits")
    ]
    if not fits:
        return
    if fits[-1].tool == "fit_training":
        _training(fits, slots, run, out)
    else:
        _serving(fits[-1], out)


def _training(fits: list, slots: dict[str, Any], run: ToolRun, out: Out) -> None:
    lang = out.lang
    last: dict[tuple[str, str], Any] = {}  # the job's fit per model and method: the last one that fits
    for c in fits:
        if c.tool == "fit_training":
            last[(c.input.get("model"), c.output.get("method"))] = c
    tokens = int(slots.get("tokens") or DEFAULT_TOKENS)
    rows, price = [], None
    for (model, method), c in last.items():
        o = c.output
        args = {"model": model, "gpu": c.input["gpu"], "n_gpus": o["n_gpus"], "tokens": tokens, "method": method}
        if slots.get("seq_len"):
            args["seq_len"] = slots["seq_len"]
        try:
            t = run("training_time", args)
            cost = run("run_cost", {"gpu": c.input["gpu"], "gpu_hours": t["gpu_hours"]})
            price = next((a["value"] for a in cost["assumptions"] if a["key"] == "price_cny_per_hour"), price)
            spent = money(cost["total_cny"], lang)
        except AdvisorError:
            continue
        rows.append(
            say(
                "method_train_row",
                lang,
                method=method_label(method, lang).strip(),
                n=o["n_gpus"],
                gpu=o["gpu"],
                need=gb(o["per_gpu_gb"]),
                usable=gb(o["usable_gb"]),
                flops=f"{t['total_flops']:.2e}",
                mfu=pct(t["mfu"]),
                hours=duration(t["hours"], lang),
                gpu_hours=num(t["gpu_hours"]),
                cost=spent,
            )
        )
    if not rows:
        return
    model = fits[-1].output["model"]
    text = [
        say("method_title", lang, model=model, tokens=count(tokens)),
        say("method_train_memory", lang),
        say("method_train_time", lang),
        say("method_train_cost", lang, price=rate(price, lang) if price else "—"),
        "",
        say("method_train_header", lang),
        *rows,
    ]
    out.add("\n".join(text))


def _serving(c, out: Out) -> None:
    lang = out.lang
    o = c.output
    kv = o.get("kv_cache_bytes_per_token")
    lines = [
        say("method_title_serve", lang, model=o["model"]),
        say(
            "method_serve_memory",
            lang,
            weights=gb(o["breakdown_gb"]["weights"]),
            kv=f"{kv:,.0f}" if kv else "—",
            seq=gb(o["kv_cache_gb_per_sequence"]),
            ctx=f"{o['context_len']:,}",
            usable=gb(o["usable_gb"]),
            n=o["n_gpus"],
            gpu=o["gpu"],
        ),
        say("method_serve_batch", lang, batch=o["max_batch"], n=o["n_gpus"], ctx=f"{o['context_len']:,}"),
        say("method_serve_load", lang),
    ]
    out.add("\n".join(lines))
