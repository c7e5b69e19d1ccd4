"""What a number of cards holds, when the question names cards and asks whether one or two are enough, or the
largest model they run ("Is one or two enough?", "1卡4090最多可以推理什么样的模型，2卡，4卡呢", "Would 2H100 be
enough?"): per count, the largest dense model of a size ladder that fits for inference in bf16 and int4 and for
LoRA and QLoRA fine-tuning — `fit_inference` and `fit_training` on generic models of each size (batch 1, their
default sequence): the fewest GPUs each size needs (the calculators' own minimum, with the ZeRO stage or split
that makes it fit), so that a larger count never holds less. The calls are a survey: they size no servers and make no pick.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out
from bot.offline.understand.parse import ParsedQuestion
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

#: the sizes a buyer weighs (dense; generic shapes of the nearest real families), smallest first
LADDER = ("1.5B", "3B", "7B", "14B", "32B", "70B", "110B", "235B", "405B")
#: the words that ask which models cards run ("1卡4090最多可以推理什么样的qwen模型", "what models can 2 H100 run"),
#: asked whatever model the question names
WHICH_MODELS = re.compile(
    r"what (?:other )?(?:models?|sizes?) (?:can|could|will|would)|which models? (?:can|could|will|would|fits?)|"
    r"最多(?:可以|能)?(?:推理|跑|部署|运行|训练|微调)?什么(?:样的)?|能(?:跑|推理|部署|训练|微调)什么(?:样的)?模型",
    re.I,
)
#: the words that ask how large a model cards run ("largest model", "最多能跑多大"): with no model named only (a
#: named model's own fit answers "how large can DeepSeek R1 be deployed")
LARGEST = re.compile(
    r"largest model|biggest model|how (?:big|large) (?:a )?model|最多(?:可以|能)?(?:推理|跑|部署|运行|训练|微调)?多大|能(?:跑|推理|部署)多大",
    re.I,
)
#: the words that ask whether cards are enough ("Is one or two enough?", "2H100 够吗"): what they hold is the answer
#: only when no model is named (with a model, its own fit answers it)
ENOUGH = re.compile(r"\benough\b|够不够|够吗|够用吗|够用不", re.I)
_COUNT = re.compile(
    r"(?<![\d.a-z])(\d{1,2}|one|two|four|eight|一|两|二|四|八)\s*(?:张|块|卡|x\s|×|gpus?\b|cards?\b|(?=h100|a100|4090|h800|a800))",
    re.I,
)
_EITHER = re.compile(r"\b(one|two|1|2) or (two|three|four|2|3|4)\b", re.I)
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "一": 1, "两": 2, "二": 2, "四": 4, "八": 8}
#: (column, tool, extra inputs) per column of the table
COLUMNS = (
    ("infer_bf16", "fit_inference", {"precision": "bf16"}),
    ("infer_int4", "fit_inference", {"precision": "int4"}),
    ("lora", "fit_training", {"method": "lora"}),
    ("qlora", "fit_training", {"method": "qlora", "quant_storage": "bf16"}),
)


def asked(text: str, p: ParsedQuestion) -> bool:
    named = bool(p.models or p.unknown_models)
    return bool(p.gpus) and bool(
        WHICH_MODELS.search(text) or (not named and (LARGEST.search(text) or ENOUGH.search(text)))
    )


def counts(text: str, p: ParsedQuestion) -> list[int]:
    """The counts the question weighs ("one or two", "1卡…2卡，4卡", "2H100"), else one, two, four and eight."""
    found = [int(_WORDS.get(m.group(1).lower(), m.group(1))) for m in _COUNT.finditer(text)]
    for m in _EITHER.finditer(text):  # "is one or two enough"
        found += [int(_WORDS.get(g.lower(), g)) for g in m.groups()]
    if p.n_gpus:
        found.append(p.n_gpus)
    found = sorted({n for n in found if 1 <= n <= 64})
    return found[:4] or [1, 2, 4, 8]


def add(text: str, p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """The table, for each card named (two at most) and each count."""
    if not asked(text, p):
        return
    lang = out.lang
    rows = []
    with run.survey():
        for gpu in list(dict.fromkeys(p.gpus))[:2]:
            name = get_gpu(gpu).name
            needs = [[_need(tool, {"model": size, "gpu": gpu, **extra}, run) for size in LADDER]
                     for _, tool, extra in COLUMNS]  # fmt: skip
            for n in counts(text, p):
                cells = [_largest(column, n) for column in needs]
                rows.append(say("holds_row", lang, n=n, gpu=name, cells=" | ".join(c or "—" for c in cells)))
    if rows:
        out.add("\n".join([say("holds_title", lang), "", say("holds_header", lang), *rows]))


def _need(tool: str, args: dict[str, Any], run: ToolRun) -> int | None:
    """The fewest GPUs the calculator finds for one size (one when it fits one card; None: no count in reach)."""
    try:
        o = run(tool, {**args, "n_gpus": 1})
    except AdvisorError:
        return None
    return 1 if o.get("verdict") == "fits" else o.get("min_gpus")


def _largest(needs: list[int | None], n: int) -> str | None:
    """The largest size of the ladder whose fewest GPUs is at most `n`."""
    return next((LADDER[i] for i in reversed(range(len(LADDER))) if needs[i] and needs[i] <= n), None)
