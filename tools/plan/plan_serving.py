"""`plan_serving`: from traffic and latency targets to replicas and GPUs per candidate card, and a pick.

Traffic becomes requests in flight at the peak (Little's law over the target request duration):

    peak qps    = daily_users × requests_per_user / 86,400 × peak_factor      (or the qps given)
    in flight C = peak qps × (ttft target + output_tokens / tokens_per_s target)   (or the concurrency given)

Per card and weight precision, for each tensor-parallel size from the fewest GPUs the weights need up to one
node (8): the batch memory allows (`fit_inference`'s max batch at prompt + output tokens) and the largest
batch at which the replica still meets both targets (tools/plan/replica.py). Then

    replicas for memory     = ⌈C / memory batch⌉
    replicas for throughput = ⌈C / target batch⌉
    replicas                = ⌈C × (1 + headroom) / min(memory batch, target batch)⌉,  n_gpus = replicas × tp

and the tensor-parallel size with the fewest GPUs wins. Cost per million output tokens = tp × 元 per
card-hour / (replica output tokens/s × 3,600) × 10⁶, rented (catalog rental mid) and owned
(`rent_vs_buy`'s owned cost per busy card-hour): both at the planned load of the peak.
"""

from __future__ import annotations

import functools
import math

from tools.catalog import price_book
from tools.catalog.lookup import get_gpu, get_model
from tools.catalog.prices import prices_for
from tools.catalog.servers import platforms
from tools.errors import InvalidInput, Unsupported
from tools.memory.fit_inference import default_weight_precision
from tools.money.rent_vs_buy import rent_vs_buy
from tools.plan.replica import (
    SPEED_BATCH_CAP,
    Peak,
    at_peak,
    largest_batch,
    max_batch,
    min_gpus,
    per_million,
    replicas_needed,
    speed_input,
)
from tools.schemas.common import Assumption, assume
from tools.schemas.money import RentVsBuyInput
from tools.schemas.plan import PlanServingInput, PlanServingOutput, ServingCandidate
from tools.speed.inference_speed import step_times

SECONDS_PER_DAY = 86_400
#: a replica stays inside one node (tensor parallelism over NVLink/PCIe); larger models are not planned here
GPUS_PER_NODE = 8


def _traffic(inp: PlanServingInput, a: list[Assumption]) -> tuple[float, float, str]:
    """(requests in flight at the peak, peak qps, which figure it came from)."""
    duration = inp.ttft_s + inp.output_tokens / inp.tokens_per_s_per_user
    a.append(
        assume(
            "request_duration_s",
            round(duration, 3),
            "s",
            note="ttft target + output_tokens / tokens_per_s target: how long a request is in flight (Little's law)",
        )
    )
    if inp.concurrency is not None:
        return float(inp.concurrency), inp.concurrency / duration, "concurrency"
    if inp.qps is not None:
        return inp.qps * duration, inp.qps, "qps"
    assert inp.daily_users is not None  # the input model requires one of the three
    a.append(
        assume("requests_per_user", inp.requests_per_user, "次/天", "requests_per_user" not in inp.model_fields_set)
    )
    a.append(
        assume(
            "peak_factor",
            inp.peak_factor,
            "×",
            "peak_factor" not in inp.model_fields_set,
            note="peak-hour request rate over the day's average rate",
        )
    )
    qps = inp.daily_users * inp.requests_per_user / SECONDS_PER_DAY * inp.peak_factor
    return qps * duration, qps, "daily_users"


@functools.cache
def _prices(gpu_name: str, hours_per_day: float) -> tuple[float | None, float | None, str]:
    """(rental 元 per card-hour, owned 元 per busy card-hour, where the purchase price came from) from the catalog;
    None where no price is on file. A card without a purchase quote in prices.yaml takes the card price of its
    server platform in servers.yaml (the 4090's street price), said in the assumptions. The owned cost per
    card-hour does not depend on how many cards are bought (rent_vs_buy is linear in n)."""
    gpu = get_gpu(gpu_name)
    table = prices_for(gpu)
    quote = table.default("rental") if table else None
    rent = quote.mid_cny if quote else None
    purchase, source = None, "prices.yaml"
    if table is None or table.default("purchase") is None:
        for p in platforms():
            if p.gpu == gpu.id and p.card_price is not None:
                purchase = (p.card_price.low_cny + p.card_price.high_cny) / 2
                source = f"servers.yaml {p.id} card price ({p.card_price.source.cite()})"
                break
    try:
        extra = {"purchase_cny": purchase} if purchase is not None else {}
        owned = rent_vs_buy(
            RentVsBuyInput(gpu=gpu.name, n_gpus=8, hours_per_day=hours_per_day, **extra)
        ).own_cost_per_gpu_hour_cny
    except (Unsupported, InvalidInput):
        owned, source = None, ""
    return rent, owned, source


price_book.on_change(_prices.cache_clear)  # a price book imported since: its prices


def held(inp: PlanServingInput) -> int:
    """The tokens one request keeps in the KV cache: its context window when given, else prompt + output."""
    return max(inp.context_tokens or 0, inp.prompt_tokens + inp.output_tokens)


def _plan_tp(inp: PlanServingInput, model: str, gpu: str, precision: str, tp: int, c: float) -> dict | None:
    """The plan on replicas of `tp` GPUs, or None when one sequence does not fit."""
    context = held(inp)
    mem_b = max_batch(model, gpu, tp, precision, context)
    if mem_b < 1:
        return None
    peaks: dict[int, Peak] = {}
    steps = step_times(speed_input(model, gpu, tp, precision, inp.prompt_tokens, inp.output_tokens, context))

    def peak(b: int) -> Peak:
        if b not in peaks:
            peaks[b] = at_peak(steps, b, inp.output_tokens)
        return peaks[b]

    # a target one request alone already misses is the card's floor, which no count of replicas reaches: it is
    # reported unmet, and the batch is sized on memory and the targets that can be met (the nearest plan)
    one = peak(1)
    unmet = [k for k, miss in (("ttft_s", one.ttft_s > inp.ttft_s),
                               ("tokens_per_s_per_user", one.tokens_per_s_per_user < inp.tokens_per_s_per_user)) if miss]  # fmt: skip

    def ok(b: int) -> bool:
        p = peak(b)
        return ("tokens_per_s_per_user" in unmet or p.tokens_per_s_per_user >= inp.tokens_per_s_per_user) and (
            "ttft_s" in unmet or p.ttft_s <= inp.ttft_s
        )

    lat_b = largest_batch(ok, min(mem_b, SPEED_BATCH_CAP))
    if unmet:
        used, limited = max(lat_b, 1), "latency"
    else:
        used = lat_b
        if lat_b == mem_b:
            limited = "memory"
        elif lat_b >= SPEED_BATCH_CAP:  # the largest batch the speed model takes: counted as a throughput limit
            limited = "throughput"
        else:
            limited = "latency" if peak(lat_b + 1).ttft_s > inp.ttft_s else "throughput"
    replicas = replicas_needed(c, inp.headroom, used)
    # the batch each replica actually runs at the peak (at most `used`, so the targets still hold)
    p = peak(max(1, min(used, math.ceil(c / replicas - 1e-9))))
    return dict(
        tp=tp,
        mem_b=mem_b,
        used=used,
        load=p.batch,
        peak=p,
        unmet=unmet,
        limited=limited,
        replicas=replicas,
        replicas_mem=replicas_needed(c, 0, mem_b),
        replicas_tput=replicas_needed(c, 0, max(lat_b, 1)),
    )


def _no_fit(gpu: str, precision: str, restricted: bool, note: str) -> ServingCandidate:
    """A card on which no replica can be laid out within one node: it meets no target, and the note says why."""
    return ServingCandidate(
        gpu=gpu,
        precision=precision,
        meets_targets=False,
        gpus_per_replica=None,
        batch_per_replica=0,
        max_batch_per_replica=0,
        replicas_for_memory=0,
        replicas_for_throughput=0,
        replicas=0,
        n_gpus=0,
        limited_by="memory",
        ttft_s=None,
        tokens_per_s_per_user=None,
        output_tokens_per_s_per_replica=None,
        prefill_share=None,
        cny_per_million_tokens={"rent": None, "own": None},
        export_restricted=restricted,
        unmet=["fit"],
        note=note,
    )


def _candidate(inp: PlanServingInput, model: str, gpu_name: str, precision: str, c: float) -> ServingCandidate:
    gpu = get_gpu(gpu_name)
    context = held(inp)
    restricted = not gpu.china.available
    heads = get_model(model).n_heads
    first = min_gpus(model, gpu.name, precision, context)
    if first is None or first > GPUS_PER_NODE:
        return _no_fit(gpu.name, precision, restricted,
                       f"one replica needs {first or 'more than any count of'} GPUs: more than one "
                       f"{GPUS_PER_NODE}-GPU node")  # fmt: skip
    plans = []
    tp = first
    while tp <= GPUS_PER_NODE:
        if heads % tp == 0:
            plan = _plan_tp(inp, model, gpu.name, precision, tp, c)
            if plan is not None:
                plans.append(plan)
        tp *= 2
    if not plans:  # no tensor-parallel size from the fewest cards up to a node divides the attention heads
        return _no_fit(gpu.name, precision, restricted,
                       f"one replica needs at least {first} GPUs, and no tensor-parallel size from {first} to "
                       f"{GPUS_PER_NODE} (doubling) divides the model's {heads} attention heads")  # fmt: skip
    meeting = [p for p in plans if not p["unmet"]]
    if meeting:
        best = min(meeting, key=lambda p: (p["replicas"] * p["tp"], p["peak"].ttft_s))
    else:  # the nearest: the fewest targets missed, then the fewest cards, then the fastest first token
        best = min(plans, key=lambda p: (len(p["unmet"]), p["replicas"] * p["tp"], p["peak"].ttft_s))
    p: Peak = best["peak"]
    tp = best["tp"]
    n = best["replicas"] * tp
    unmet = list(best["unmet"])
    note = ""
    if unmet:
        note = (
            f"best on {gpu.name} ({precision}, {tp} GPUs per replica, batch {best['load']}): "
            f"TTFT {p.ttft_s:.3g} s, {p.tokens_per_s_per_user:.3g} tokens/s per user"
        )
    if n > inp.max_gpus:
        unmet.append("max_gpus")
        most = inp.max_gpus // tp * best["used"] / (1 + inp.headroom)
        note = (note + "; " if note else "") + (
            f"{n} GPUs exceed max_gpus {inp.max_gpus}; {inp.max_gpus // tp * tp} GPUs serve about {most:.0f} in flight"
        )
    rent, owned, _ = _prices(gpu.name, inp.hours_per_day)
    limited = best["limited"] if "max_gpus" not in unmet else "capacity"
    return ServingCandidate(
        gpu=gpu.name,
        precision=precision,
        meets_targets=not unmet,
        gpus_per_replica=tp,
        batch_per_replica=best["load"],
        max_batch_per_replica=best["mem_b"],
        replicas_for_memory=best["replicas_mem"],
        replicas_for_throughput=best["replicas_tput"],
        replicas=best["replicas"],
        n_gpus=n,
        limited_by=limited,
        ttft_s=round(p.ttft_s, 4),
        tokens_per_s_per_user=round(p.tokens_per_s_per_user, 2),
        output_tokens_per_s_per_replica=round(p.output_tokens_per_s, 1),
        prefill_share=round(p.prefill_share, 4),
        cny_per_million_tokens={
            "rent": per_million(rent, tp, p.output_tokens_per_s),
            "own": per_million(owned, tp, p.output_tokens_per_s),
        },
        export_restricted=restricted,
        unmet=unmet,
        note=note,
    )


def _precisions(inp: PlanServingInput, model: str, gpu_name: str) -> list[str]:
    if inp.precision is not None:
        return [inp.precision]
    base = default_weight_precision(get_model(model), get_gpu(gpu_name))
    return [base, "int4"] if inp.quantized_variants and base != "int4" else [base]


def _pick(cands: list[ServingCandidate], china: bool | None) -> tuple[str | None, str]:
    """The lowest cost per million output tokens among the cards that meet the targets: owned where every such
    card has an owned cost on file, else rented where every one has a rental price, else the more covered kind;
    without prices, the fewest GPUs. With `china` true, cards not purchasable in mainland China are not picked."""
    ok = [c for c in cands if c.meets_targets and not (china and c.export_restricted)]
    if not ok:
        return None, "none_purchasable_in_china" if any(c.meets_targets for c in cands) else "none_meets_targets"

    def priced(kind: str) -> list[ServingCandidate]:
        return [c for c in ok if getattr(c.cny_per_million_tokens, kind) is not None]

    kinds = sorted(("own", "rent"), key=lambda k: (-len(priced(k)), k != "own"))
    kind = kinds[0]
    if priced(kind):
        best = min(priced(kind), key=lambda c: (getattr(c.cny_per_million_tokens, kind), c.n_gpus))
        return f"{best.gpu} {best.precision}", f"lowest_{kind}_cost"
    best = min(ok, key=lambda c: (c.n_gpus, c.ttft_s or 0))
    return f"{best.gpu} {best.precision}", "fewest_gpus"


def plan_serving(inp: PlanServingInput) -> PlanServingOutput:
    """GPUs per card to serve peak traffic, and a pick.

    Per candidate card (int4 variants included): the batch memory and targets allow, replicas, TTFT and tokens/s at
    the peak, cost per million output tokens rented and owned."""
    model = get_model(inp.model).name
    a: list[Assumption] = []
    c, qps, source = _traffic(inp, a)
    names = inp.gpus
    a += [
        assume("prompt_tokens", inp.prompt_tokens, "tokens", "prompt_tokens" not in inp.model_fields_set),
        assume("output_tokens", inp.output_tokens, "tokens", "output_tokens" not in inp.model_fields_set),
        *(
            [
                assume(
                    "context_tokens",
                    held(inp),
                    "tokens",
                    False,
                    note="KV cache held per request; prefill is the prompt only (earlier turns prefix-cached)",
                )
            ]
            if inp.context_tokens
            else []
        ),
        assume("ttft_s", inp.ttft_s, "s", "ttft_s" not in inp.model_fields_set, note="target at the peak"),
        assume(
            "tokens_per_s_per_user",
            inp.tokens_per_s_per_user,
            "tokens/s",
            "tokens_per_s_per_user" not in inp.model_fields_set,
        ),
        assume(
            "headroom", inp.headroom, "", "headroom" not in inp.model_fields_set, note="spare capacity above the peak"
        ),
        assume(
            "hours_per_day",
            inp.hours_per_day,
            "h",
            "hours_per_day" not in inp.model_fields_set,
            note="busy hours a day of owned cards (owned cost per token)",
        ),
        assume(
            "queueing",
            "M/D/1 prefill queue, continuous batching",
            note="prefill and decode share each replica; cost per token is at the planned peak load",
        ),
    ]
    if inp.precision is None and inp.quantized_variants:
        a.append(
            assume(
                "int4_variant",
                "AWQ/GPTQ",
                note="int4 assumes a published AWQ/GPTQ checkpoint of the model (official for Qwen2.5/Qwen3)",
            )
        )
    cands: list[ServingCandidate] = []
    for name in dict.fromkeys(get_gpu(n).name for n in names):
        for prec in _precisions(inp, model, name):
            try:
                cands.append(_candidate(inp, model, name, prec, c))
            except Unsupported as err:  # e.g. fp8 on a card without FP8, or no bandwidth figure
                a.append(assume(f"skipped.{name}.{prec}", err.en))
    for name in dict.fromkeys(c.gpu for c in cands):
        priced_from = _prices(name, inp.hours_per_day)[2]
        if priced_from.startswith("servers.yaml"):
            a.append(assume(f"purchase_price.{name}", "street price", note=f"owned cost priced from {priced_from}"))
    pick, reason = _pick(cands, inp.china_purchasable)
    unmet = sorted({u for cand in cands for u in cand.unmet} if pick is None else set())
    nearest = ""
    if pick is None and cands:
        fitting = [cd for cd in cands if cd.ttft_s is not None]
        if fitting:
            best = min(fitting, key=lambda cd: (len(cd.unmet), cd.ttft_s or 0))
            nearest = best.note or f"{best.gpu} {best.precision}"
    return PlanServingOutput.trusted(
        model=model,
        concurrency=round(c, 2),
        qps=round(qps, 4),
        traffic_source=source,
        prompt_tokens=inp.prompt_tokens,
        output_tokens=inp.output_tokens,
        context_tokens=held(inp) if inp.context_tokens else None,
        ttft_s=inp.ttft_s,
        tokens_per_s_per_user=inp.tokens_per_s_per_user,
        headroom=inp.headroom,
        candidates=[cd.model_dump() for cd in cands],
        pick=pick,
        pick_reason=reason,
        unmet=unmet,
        nearest=nearest,
        assumptions=a,
    )
