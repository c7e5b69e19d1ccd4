"""Several models on the same cards ("A100 80G 同时部署 7B 和 20B 模型", "Qwen3-8B 和 bge-m3 放在一张 4090 上能一起跑吗",
"run the chat model and the embedding model together on one L40S"): each model's own need is answered above
(one part each); whether they fit *together* is the sum, which `fit_together` computes (each model its own engine:
weights, KV cache and one CUDA context each) against what the card gives, and the share of the card each engine
must be held to so that the first to start does not take the whole card. The verdict opens the answer."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, gb
from bot.offline.understand.parse import ParsedQuestion
from tools.errors import AdvisorError

#: the words that put several models on the same cards at once
TOGETHER = re.compile(
    r"同时(?:部署|跑|运行|加载|启动|使用|用|服务|起)|一起(?:跑|部署|运行|放|加载|用|起)|共用|共享(?:一张|显卡|GPU)|"
    r"(?:部署|跑|放|加载|起)在?(?:同)?一张(?:卡|显卡|GPU|gpu)上|同一张(?:卡|显卡|GPU|gpu)|"
    r"一张(?:卡|显卡|GPU|gpu)(?:上)?(?:部署|跑|放|加载)?(?:多个|两个|几个)模型|"
    r"\btogether\b|at the same time|simultaneously|side by side|alongside|co-?locat\w*|"
    r"on the same (?:gpu|card)|share (?:a|one|the) (?:gpu|card)|both (?:models )?(?:on|in|fit) (?:one|a single|the same)",
    re.IGNORECASE,
)
#: the frame slots that say how each model is served (the same for every model)
_SERVING = ("precision", "batch", "context_len")


def asked(text: str, p: ParsedQuestion) -> bool:
    return len(dict.fromkeys(p.models)) >= 2 and bool(TOGETHER.search(text))


def add(text: str, p: ParsedQuestion, run: ToolRun, out: Out, at: int) -> None:
    """The summed fit of the models named, opening the answer (at `at`), on the cards, count and serving settings
    the per-model fits above used; nothing when the question does not put them on the same cards or no model's
    fit was computed."""
    if not asked(text, p):
        return
    fits = [c.input for c in run.calls if c.tool == "fit_inference" and c.id not in run.surveyed]
    if not fits:
        return
    first = fits[0]
    args: dict[str, Any] = {"models": list(dict.fromkeys(p.models))[:8], "gpu": first["gpu"]}
    for key in ("n_gpus", *_SERVING):
        if first.get(key) and not (key == "precision" and first[key] not in ("bf16", "fp16", "fp8", "int8", "int4")):
            args[key] = first[key]
    try:
        r = run("fit_together", args)
    except AdvisorError:
        return  # a model or card the per-model parts above already named as unknown
    lang = out.lang
    sep = "、" if lang == "zh" else ", "
    names = sep.join(localize_name(part["name"], lang) for part in r["parts"])
    needs = sep.join(f"{localize_name(part['name'], lang)} {gb(part['per_gpu_gb'])}" for part in r["parts"])
    shares = sep.join(f"{localize_name(part['name'], lang)} {part['share_fraction']:.2f}" for part in r["parts"])
    key = "together_fits" if r["fits"] else "together_short"
    verdict = say(
        key,
        lang,
        names=names,
        count=r["n_gpus"],
        gpu=r["gpu"],
        total=gb(r["per_gpu_gb"]),
        needs=needs,
        usable=gb(r["usable_gb"]),
        headroom=gb(r["headroom_gb"]),
        shortfall=gb(r["shortfall_gb"]),
    )
    blocks = [verdict]
    if r["fits"]:  # each engine's cap; a sum that does not fit is for the per-model parts' fixes below
        blocks.append(say("together_shares", lang, shares=shares, total=f"{r['share_fraction']:.2f}"))
    out.blocks[at:at] = blocks
