"""Several models on the same cards ("A100 80G 同时部署 7B 和 20B 模型", "Qwen3-8B 和 bge-m3 放在一张 4090 上能一起跑吗",
"run the chat model and the embedding model together on one L40S"): each model's own need is answered above
(one part each); whether they fit *together* is the sum, which `fit_inference` computes given the others `alongside` (its
`shared`; each model its own engine:
weights, KV cache and one CUDA context each) against what the card gives, and the share of the card each engine
must be held to so that the first to start does not take the whole card. The verdict opens the answer."""

from __future__ import annotations

import re

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, gb
from bot.offline.understand.parse import ParsedQuestion
from tools.catalog.lookup import get_gpu
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
    first, models = fits[0], list(dict.fromkeys(p.models))[:8]
    args = {k: v for k, v in first.items() if k != "alongside"} | {"model": models[0], "alongside": models[1:]}
    try:
        with run.survey():  # a sum for this line: no other part reads it as another model's own fit
            r = run("fit_inference", args)["shared"]
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
        count=first.get("n_gpus", 1),
        gpu=get_gpu(first["gpu"]).name,
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
