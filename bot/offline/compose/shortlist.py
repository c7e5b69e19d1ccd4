"""What the three recommendation composers (a job, a serving shortlist, a hardware budget) share: the sourcing
arguments for `recommend_gpus`, its picks with their labels, and how a pick's speed is said."""

from __future__ import annotations

import math
from typing import Any

from bot.offline.say.phrases import say
from bot.offline.say.render import Out, duration
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

LABELS = {
    "zh": {"cheapest": "最省钱", "fastest": "最快", "best_value": "性价比"},
    "en": {"cheapest": "Cheapest", "fastest": "Fastest", "best_value": "Best value"},
}


def sourcing_args(s: dict[str, Any], p: Any = None, out: Out | None = None) -> dict[str, Any]:
    """Only cards sold in China, or only Chinese-made ones (国产: a narrower ask, not the same one). A question
    asked in Chinese is a mainland buyer's: the shortlist holds cards that can be bought there, unless the user
    named a card that cannot (then restricted cards are ranked too, flagged), and the answer says so once."""
    args: dict[str, Any] = {}
    if s.get("china_only") or s.get("domestic_only"):
        args["china_available"] = True
    elif p is not None and out is not None and out.lang == "zh" and not _names_restricted(p):
        args["china_available"] = True
        out.add_last(say("china_default_note", out.lang))
    if s.get("domestic_only"):
        args["domestic"] = True
    if s.get("excluded"):  # ruled-out cards are taken off afterwards (`without_excluded`): rank more to keep five
        args["top_k"] = 10
    return args


def _names_restricted(p: Any) -> bool:
    """The question names a card that cannot be bought in mainland China."""
    for gid in p.gpus:
        try:
            if not get_gpu(gid).china.available:
                return True
        except AdvisorError:
            continue
    return False


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("gpu_id"), a.get("n_gpus"), a.get("precision")) == (
        b.get("gpu_id"),
        b.get("n_gpus"),
        b.get("precision"),
    )


def picks(r: dict[str, Any], out: Out) -> list[tuple[str, dict[str, Any]]]:
    """(label, option) for the cheapest, fastest and best-value picks, one line per distinct option: picks that land
    on the same option share one label ("最省钱、性价比"), and when all three coincide the label says why (the only
    option left, or the cheapest that is also the fastest); none: says why (the first drop reasons)."""
    lang = out.lang
    groups: list[tuple[list[str], dict[str, Any]]] = []
    for k in ("cheapest", "fastest", "best_value"):
        if not r.get(k):
            continue
        twin = next((g for g in groups if _same(g[1], r[k])), None)
        if twin is not None:
            twin[0].append(k)
        else:
            groups.append(([k], r[k]))
    if not groups:
        # the distinct reasons, the priced ones first (an over-budget option is the nearest one; "no price on
        # file" repeated for every unpriced card says nothing more)
        dropped = sorted(
            r.get("dropped", []), key=lambda d: (d.get("reason") == "no_price", d.get("total_cny") or float("inf"))
        )
        sep = "：" if lang == "zh" else ": "
        reasons = list(dict.fromkeys(
            d[f"reason_{lang}"] if d.get("reason") == "no_price" else f"{d['gpu']}{sep}{d[f'reason_{lang}']}"
            for d in dropped
        ))[:3]  # fmt: skip
        reason = ("" if lang == "zh" else " ").join(reasons) or "—"
        out.add(say("recommend_none", lang, reason=reason))
    found = []
    for keys, option in groups:
        names = [LABELS[lang][k] if i == 0 or lang == "zh" else LABELS[lang][k].lower() for i, k in enumerate(keys)]
        label = "、".join(names) if lang == "zh" else " and ".join(names) if len(names) == 2 else ", ".join(names)
        if len(keys) == 3:  # the same option three times: one line that says why
            alone = sum(1 for o in r.get("options") or [] if o.get("fits", True)) <= 1
            why = say("picks_coincide_only" if alone else "picks_coincide_both", lang).strip()
            label = say("picks_coincide_label", lang, labels=label, why=why).strip()
        found.append((label, option))
    return found


def spec_distance(r: dict[str, Any], g: Any) -> float:
    """How far catalog card `g` is from the card `r` (a gpu_specs output) in memory and dense 16-bit compute: the
    sum of the two absolute log ratios, a missing figure counting as 1."""
    mem, tf = r["memory_gb"] or 1, r["bf16_tflops"] or r["fp16_tflops"] or 1
    return abs(math.log((g.memory_gb or 1) / mem)) + abs(math.log((g.bf16_tflops or g.fp16_tflops or 1) / tf))


def pick_gpu(o: dict[str, Any], lang: str) -> str:
    """A pick's card, flagged when it cannot be bought through normal channels in mainland China."""
    if o.get("china_available") is False:
        return o["gpu"] + ("（中国大陆受限）" if lang == "zh" else " (restricted in mainland China)")
    return o["gpu"]


def pick_time(o: dict[str, Any], lang: str) -> str:
    """A pick's run time, else its decode speed; a card with no published figure says so, never "0 token/s"."""
    if o.get("hours"):
        return duration(o["hours"], lang)
    if o.get("tokens_per_s"):
        return f"{o['tokens_per_s']:,.0f} token/s"
    return say("no_speed", lang)


def excluded(s: dict[str, Any], gpu: str) -> bool:
    """Whether the question ruled this card out ("不用 H100", "not NVIDIA"): by catalog id, name or vendor."""
    out = s.get("excluded") or []
    if not out:
        return False
    try:
        g = get_gpu(gpu)
    except AdvisorError:
        return gpu in out
    return g.id in out or g.name in out or gpu in out or g.vendor in out


def allowed(s: dict[str, Any], gpus: list[str] | tuple[str, ...]) -> list[str]:
    """The candidate cards less those the question ruled out."""
    return [g for g in gpus if not excluded(s, g)]


def without_excluded(r: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    """A recommend_gpus output with the ruled-out cards taken off its options and picks: a pick on such a card is
    replaced by the next option of the same kind among those left (cheapest first; fastest by time or speed)."""
    if not s.get("excluded"):
        return r
    options = [o for o in r["options"] if not excluded(s, o["gpu_id"])]
    r = {**r, "options": options}
    for key in ("cheapest", "fastest", "best_value"):
        if r.get(key) and excluded(s, r[key]["gpu_id"]):
            r[key] = None
    if r.get("cheapest") is None and options:
        r["cheapest"] = next((o for o in options if o.get("total_cny") is not None), None)
    if r.get("fastest") is None and options:
        timed = [o for o in options if o.get("hours")]
        fast = [o for o in options if o.get("tokens_per_s")]
        r["fastest"] = (
            min(timed, key=lambda o: o["hours"])
            if timed
            else max(fast, key=lambda o: o["tokens_per_s"])
            if fast
            else None
        )
    return r
