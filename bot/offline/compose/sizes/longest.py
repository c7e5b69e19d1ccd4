"""The longest training sequence the cards hold, when a question asks for it ("最大训练长度", "max_length 最多设多少",
"what is the maximum sequence length I can train"): the fit the answer made (model, card, count, method, ZeRO,
micro-batch) is tried again at longer sequences until it no longer fits, and the longest that fits is said with
its memory per card. Weights and optimizer states do not grow with the sequence; activations and logits do, so
the length is what the activations leave room for (sequence parallelism splits them across cards).

Every figure is `fit_training`'s; the probes are a survey (`ToolRun.survey`), the length said is one call of its own.
"""

from __future__ import annotations

from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, method_label, usable
from bot.offline.understand.patterns import C
from tools.errors import AdvisorError
from tools.memory.search import bisect

#: the words that ask for the longest sequence a training run holds
ASKED = C(
    r"最大(?:的)?(?:训练|序列|输入|上下文)长度|(?:训练|序列)长度最(?:大|长)(?:能|可以)?|(?:最长|最大)(?:能|可以)(?:训|支持|设|开)(?:到)?多"
    r"|(?:max_length|max_seq_len(?:gth)?|cutoff_len|model_max_length)\s*(?:最大|最多|最长)?(?:能|可以)?(?:设|开|调)(?:到|成|为)?多"
    r"|max(?:imum)? (?:training |sequence |seq |context |input )?length (?:i|we|you|one) (?:can|could) (?:train|fine-?tune|use)"
    r"|(?:longest|maximum|max) (?:training )?(?:sequence|context)(?: length)? (?:that )?(?:fits|i can train|we can train|for training)"
    r"|how long (?:a|of a) (?:sequence|context) can (?:i|we) (?:train|fine-?tune)"
)
#: the sequence lengths tried: doubling from the run's own up to this, then bisected to this step
LONGEST = 1 << 20
STEP = 256


def asked(text: str) -> bool:
    return bool(ASKED.search(text))


def _fit(run: ToolRun) -> Any | None:
    """The first training fit of the answer that holds (the run the answer leads with), not a survey's row."""
    return next(
        (
            c
            for c in run.calls
            if c.tool == "fit_training" and c.id not in run.surveyed and (c.output or {}).get("fits")
        ),
        None,
    )


def _seq(call: Any) -> int:
    said = {a["key"]: a["value"] for a in call.output.get("assumptions", [])}
    return int(call.input.get("seq_len") or said.get("seq_len") or 2048)


def add(text: str, run: ToolRun, out: Out) -> None:
    """Say the longest sequence the fitted run holds, when the question asks for it."""
    if not asked(text) or (call := _fit(run)) is None:
        return
    args: dict[str, Any] = {k: v for k, v in call.input.items() if k != "seq_len"}
    args["zero_stage"] = call.output["zero_stage"]
    first = _seq(call)

    def fits(steps: int) -> bool:
        try:
            return bool(run("fit_training", {**args, "seq_len": steps * STEP})["fits"])
        except AdvisorError:
            return False

    lo = max(first // STEP, 1)
    with run.survey():
        hi = lo * 2
        while hi * STEP <= LONGEST and fits(hi):
            lo, hi = hi, hi * 2
        best = bisect(fits, lo, min(hi, LONGEST // STEP + 1)) if hi * STEP <= LONGEST else lo
    try:
        r = run("fit_training", {**args, "seq_len": best * STEP})
    except AdvisorError:
        return
    if not r["fits"]:
        return
    key = "longest_seq_capped" if best * STEP >= LONGEST else "longest_seq"
    out.add(
        say(
            key,
            out.lang,
            seq=f"{best * STEP:,}",
            n=r["n_gpus"],
            gpu=r["gpu"],
            model=r["model"],
            method_label=method_label(r["method"], out.lang),
            zero=r["zero_stage"],
            need=gb(r["per_gpu_gb"]),
            usable=usable(r, out.lang),
        )
    )
