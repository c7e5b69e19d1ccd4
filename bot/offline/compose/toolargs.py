"""Tool arguments from the planner's slots, and small readers of tool outputs, shared by the composers."""

from __future__ import annotations

from typing import Any

from bot.offline.say.render import money, num
from tools.catalog.prices import source_title
from tools.errors import InvalidInput
from tools.money.run_cost import eur_rate, usd_rate


def budget_args(s: dict[str, Any]) -> dict[str, Any]:
    """The budget as recommend_gpus takes it: in 元, or in US dollars (the tool converts, at a rate it states)."""
    if s.get("budget_cny"):
        return {"budget_cny": s["budget_cny"]}
    if s.get("budget_eur"):
        return {"budget_eur": s["budget_eur"]}
    return {"budget_usd": s["budget_usd"]} if s.get("budget_usd") else {}


def budget_text(r: dict[str, Any], lang: str) -> str:
    """The budget a recommend_gpus output was held to, as the user gave it ("$200,000 (1,420,000 元)")."""
    if r.get("budget_eur"):
        return (
            f"€{r['budget_eur']:,.0f}（约 {money(r['budget_cny'], lang)}）"
            if lang == "zh"
            else f"€{r['budget_eur']:,.0f} (about {money(r['budget_cny'], lang)})"
        )
    if r.get("budget_usd"):
        return (
            f"${r['budget_usd']:,.0f}（约 {money(r['budget_cny'], lang)}）"
            if lang == "zh"
            else f"${r['budget_usd']:,.0f} (about {money(r['budget_cny'], lang)})"
        )
    return money(r["budget_cny"], lang)


def n_of(s: dict[str, Any], default: int) -> int:
    """The GPU count the user gave (even an impossible 0, so the calculator can say so), else a default."""
    return default if s.get("n_gpus") is None else s["n_gpus"]


def training_args(s: dict[str, Any]) -> dict[str, Any]:
    method = s.get("method") or "full"
    args: dict[str, Any] = {"model": s["model"], "gpu": s["gpu"], "method": method, "n_gpus": n_of(s, 1)}
    for key in ("precision", "seq_len", "micro_batch", "zero_stage", "tp", "pp", "objective"):
        if s.get(key) is not None:
            args[key] = s[key]
    if args.get("precision") in ("int8", "int4", "nf4", "tf32"):
        args.pop("precision")
    if s.get("grad_checkpointing") is not None:
        args["grad_checkpointing"] = s["grad_checkpointing"]
    if method == "qlora":
        # a 4-bit base is planned in bf16 storage, the setup ZeRO-3 and FSDP shard (FSDP-QLoRA needs it), unless the
        # question names DeepSpeed/ZeRO, whose default is bitsandbytes' uint8 (tools/memory/quant_sharding.py)
        args["quant_storage"] = "uint8" if s.get("sharding") == "deepspeed" else "bf16"
    if s.get("offload"):  # "offload" alone under ZeRO-3 is the shipped ZeRO-3 offload config: optimizer and params
        # (frameworks.yaml `llamafactory.z3_offload_config`)
        both = s["offload"] == "param" or (s["offload"] is True and s.get("zero_stage") == 3)
        args["offload"] = "optimizer+params" if both else "optimizer"
    return args


def run_args(s: dict[str, Any], method: str) -> dict[str, Any]:
    """The training run that `time` and `precision_speedup` both price: model, GPUs, tokens, method, sequence."""
    if s.get("tokens") is None:  # a run with no token count (a part the frame did not fill): asked, not assumed
        raise InvalidInput(
            "How many tokens will the training run see? Give them, e.g. '1B tokens' or '10亿 token'.",
            "训练要跑多少 token？请给出数量，例如“1B token”或“10亿 token”。",
            field="tokens",
        )
    args = {"model": s["model"], "gpu": s["gpu"], "n_gpus": n_of(s, 8), "tokens": int(s["tokens"]), "method": method}
    if s.get("seq_len"):
        args["seq_len"] = s["seq_len"]
    return args


def timing_args(s: dict[str, Any], method: str) -> dict[str, Any]:
    """The run `training_time` prices, with the sharding the user said (`sharding_args`)."""
    return {**run_args(s, method), **sharding_args(s)}


def sharding_args(s: dict[str, Any]) -> dict[str, Any]:
    """The ZeRO stage and micro-batch the user said, as `training_time` takes them: ZeRO-3 / FSDP gathers the
    parameters on every micro-step (tools/speed/comm.py), so both change the time. FSDP's default, FULL_SHARD,
    moves ZeRO-3's traffic."""
    args = {k: s[k] for k in ("zero_stage", "micro_batch") if s.get(k) is not None}
    if s.get("sharding") == "fsdp" and "zero_stage" not in args:
        args["zero_stage"] = 3
    return args


def is_inference(s: dict[str, Any]) -> bool:
    return s.get("workload") == "infer"


def serving_extra(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in ("batch", "context_len") if s.get(k)}


def serving_args(s: dict[str, Any]) -> dict[str, Any]:
    """fit_inference / inference_speed arguments; the weight precision only when the user named one
    (the calculators default to the model's published precision)."""
    args: dict[str, Any] = {"model": s["model"], "gpu": s["gpu"], "n_gpus": n_of(s, 1), **serving_extra(s)}
    if s.get("precision") in ("bf16", "fp16", "fp8", "int8", "int4", "nf4"):
        args["precision"] = "int4" if s["precision"] == "nf4" else s["precision"]
    if s.get("kv_precision"):  # "w/ fp8 kv cache": the cache's own precision
        args["kv_precision"] = s["kv_precision"]
    return args


def assumed(r: dict[str, Any], key: str) -> Any:
    return next(a["value"] for a in r["assumptions"] if a["key"] == key)


def short_source(text: str, lang: str) -> str:
    """A price source as an answer in `lang` names it (tools/catalog/prices.source_title)."""
    return source_title(text, lang)


def on_pick(slots: dict[str, Any], p: Any, run: Any) -> dict[str, Any]:
    """The slots the further parts of a recommendation are answered on: the card and count it picked ("€1,000 …
    at 5 tokens/s or more": the speed of the 2 × RTX 4060 Ti recommended, not of a default card), where the user
    named no card or count of their own."""
    recs = [c for c in run.calls if c.tool == "recommend_gpus" and c.id not in run.surveyed]
    if len(recs) != 1 or p.gpus or p.n_gpus:  # several models recommended for: each its own pick, none for all
        return slots
    best = recs[0].output.get("best_value") or next(iter(recs[0].output.get("options") or []), None)
    if not best:
        return slots
    return {**slots, "gpu": best["gpu_id"], "n_gpus": int(best["n_gpus"])}


#: a budget in another currency: its slot and currency, and how it is written (sign, Chinese name, English sign)
_FOREIGN = (("budget_usd", "USD"), ("budget_eur", "EUR"))
_SIGN = {"USD": ("$", "美元", "$"), "EUR": ("€", "欧元", "€")}


def foreign_budget(s: dict[str, Any]) -> tuple[float, str] | None:
    """The budget in dollars or euros as the user gave it, (amount, currency), where no budget in 元 was given."""
    return None if s.get("budget_cny") else next(((s[k], c) for k, c in _FOREIGN if s.get(k)), None)


def rate(currency: str) -> float:
    """元 per unit of `currency` at the dated default (tco.yaml: fx_cny_per_usd, fx.fx_cny_per_eur)."""
    return (eur_rate if currency == "EUR" else usd_rate)()[0]


def budget_said(given: tuple[float, str] | None, budget_cny: float, lang: str) -> str:
    """The budget as the user gave it: in 元, or in dollars or euros with the 元 it was planned at and the rate."""
    cny = money(budget_cny, lang)
    if not given:
        return cny
    amount, cur = given
    sign, zh, en = _SIGN[cur]
    r = num(rate(cur), 2)
    return (
        f"{sign}{amount:,.0f}（按 {r} 元/{zh}约 {cny}）"
        if lang == "zh"
        else f"{sign}{amount:,.0f} (about {cny} at {r} CNY/{en})"
    )
