"""A question that needs a model's size but names none is answered on the stated default (7B), and this module
adds one line with the same answer for other sizes, computed by the same calculator on the same inputs with
only the model changed ("14B：每卡约 … · 72B：…"), then one short question for the model.

Which figure is the answer's headline depends on the intent: the memory per GPU and the count for a fit, the
hours for a run's time, tokens/s for a speed, the weights or training total for a model's memory. The first
call of the headline calculator on the default model is the one re-run; nothing is said when there is none (a
shortlist, whose picks already span the cards).
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, duration, gb, num
from tools.errors import AdvisorError

#: the sizes the line gives beside the default, smallest first (a common small, mid and large dense size)
SIZES = ("7B", "14B", "72B")
#: intent -> (the calculators whose first call on the default is re-run, the output field said)
HEADLINE: dict[str, tuple[tuple[str, ...], str]] = {
    "fit": (("fit_training", "fit_inference"), "per_gpu_gb"),
    "min_gpus": (("fit_training", "fit_inference"), "min_gpus"),
    "time": (("training_time",), "hours"),
    "speed": (("inference_speed",), "decode_tokens_per_s"),
    "serving_capacity": (("fit_inference",), "max_batch"),
    "weights": (("model_memory",), "weights_gb"),
    "train_memory": (("model_memory",), "training_total_gb"),
    "zero_states": (("model_memory",), "model_states_gb"),
    "kv_cache": (("model_memory",), "kv_cache_gb"),
}


#: what a setting saves ("梯度检查点能省多少显存", "how much memory does LoRA save"): a question about the
#: technique, whose answer is not one model's figure
_SAVES = re.compile(
    r"(?:能|可以)?(?:省|节省|节约|减少)(?:下)?多少|how much (?:\w+ ){0,3}(?:does|can|will|would) .{0,40}\bsave", re.I
)


def applies(intent: str, text: str) -> bool:
    """Whether a question of this intent with no model is answered on the default with the sizes line."""
    return (intent in HEADLINE or intent == "recommend_serving") and not _SAVES.search(text)


def ask(out: Out, name: str | None = None) -> None:
    """The one question for the model, after the answer on the default (for the size of `name`, when the model
    was named but its size is unknown)."""
    out.add(say("sizes_ask_size", out.lang, name=name) if name else say("sizes_ask", out.lang))


def add(intent: str, default: str, run: ToolRun, since: int, out: Out) -> None:
    """The sizes line, when the intent has a headline calculator that ran on `default` after call `since`."""
    tools, field = HEADLINE.get(intent, ((), ""))
    first = next(
        (
            c
            for c in run.calls[since:]
            if c.tool in tools and isinstance(c.input, dict) and c.input.get("model") == default
        ),
        None,
    )
    items = []
    if first is not None:
        for size in SIZES:
            try:  # another size's row is a survey: it sizes no servers of the answer's own job
                with run.survey():
                    output = first.output if size == default else run(first.tool, {**first.input, "model": size})
            except AdvisorError:
                continue  # a size the calculator refuses on these inputs is left out, not guessed
            if output.get(field) is not None:
                items.append(_item(size, field, output, out.lang))
    if len(items) >= 2:
        out.add(say("sizes_line", out.lang, items=("；" if out.lang == "zh" else "; ").join(items)))


def _item(size: str, field: str, output: dict[str, Any], lang: str) -> str:
    value = output[field]
    if field == "per_gpu_gb":
        n, least = output.get("n_gpus") or 1, output.get("min_gpus")
        if output.get("fits"):
            return say("sizes_fit", lang, size=size, gb=gb(value), n=n)
        if least:
            return say("sizes_short", lang, size=size, gb=gb(value), n=n, least=least)
        return say("sizes_none", lang, size=size, gb=gb(value), n=n)
    if field == "min_gpus":
        return say("sizes_count", lang, size=size, n=value, s="" if value == 1 else "s")
    if field == "hours":
        return say("sizes_value", lang, size=size, value=duration(value, lang))
    if field == "decode_tokens_per_s":
        return say("sizes_value", lang, size=size, value=f"{num(value)} token/s")
    if field == "max_batch":  # none at all: the weights alone do not fit on these cards
        n = output.get("n_gpus") or 1
        return (
            say("sizes_batch", lang, size=size, value=f"{value:,.0f}")
            if value
            else say("sizes_none_batch", lang, size=size, n=n)
        )
    return say("sizes_value", lang, size=size, value=gb(value))
