"""The speed asked of a setup that cannot hold the model ("Can I run Qwen2.5-32B on two RTX 3090s, and how many
tokens per second?"): the fit says no, and the speed is given for the setups that do hold it, the two a user
can choose between: the same cards with quantised weights (int8, else int4: the first that fits), and the
fewest cards that hold it at the precision asked. Each is `fit_inference` then `inference_speed` on it; a
setup the calculators refuse is left out, and with none left nothing is said (the fit's own answer stands).
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out
from tools.errors import AdvisorError

#: bytes per weight of each precision: a quantised option is one with fewer bytes than the precision asked
_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
#: a setup that runs part of the model on the CPU on purpose (llama.cpp, KTransformers, offload): the cards it
#: has are the setup, and more or lighter cards are no answer to its speed
HYBRID = re.compile(r"offload|卸载|llama\.cpp|llamacpp|ollama|ktransformers|cpu_infer|gguf", re.IGNORECASE)
#: the fewest cards are a setup to offer up to this many (beyond it the answer's servers block speaks)
_MAX_CARDS = 16


def unsaid(part: Out, out: Out) -> None:
    """The blocks of `part` that `out` has not said yet (an earlier part of this answer gave the same fit)."""
    out.blocks.extend(b for b in part.blocks if b not in out.blocks)
    out.tail.extend(b for b in part.tail if b not in out.tail)


def _precision(fit: dict[str, Any], args: dict[str, Any]) -> str:
    given = args.get("precision")
    return given or next((a["value"] for a in fit["assumptions"] if a["key"] == "precision"), "bf16")


def _options(fit: dict[str, Any], args: dict[str, Any], run: ToolRun) -> list[dict[str, Any]]:
    asked = _precision(fit, args)
    out = []
    for q in ("int8", "int4"):  # the cards the user has, with lighter weights
        if _BYTES[q] >= _BYTES.get(asked, 2.0):
            continue
        try:
            if run("fit_inference", {**args, "precision": q})["fits"]:
                out.append({**args, "precision": q})
                break
        except AdvisorError:
            continue
    least = fit.get("min_gpus")
    if least and least != args.get("n_gpus") and least <= _MAX_CARDS:  # more of the same cards, as asked
        out.append({**args, "n_gpus": least})
    return out


def speed(fit: dict[str, Any], args: dict[str, Any], run: ToolRun, out: Out, text: str = "") -> None:
    """One line with the speed of each setup that holds the model, after the fit that says the asked one does not
    (`text`: the question; a CPU+GPU setup is answered by the hybrid rows of the fit, not here)."""
    if HYBRID.search(text):
        return
    lines = []
    for option in _options(fit, args, run):
        try:
            r = run("inference_speed", option)
        except AdvisorError:
            continue
        lines.append(
            say(
                "working_speed_line",
                out.lang,
                precision=r["precision"],
                n=r["n_gpus"],
                gpu=r["gpu"],
                decode=f"{r['decode_tokens_per_s']:,.1f}",
                total=f"{r['total_tokens_per_s']:,.0f}",
            )
        )
    if lines:
        sep = "；" if out.lang == "zh" else "; "
        out.add(say("working_speed", out.lang, model=fit["model"], lines=sep.join(lines)))
