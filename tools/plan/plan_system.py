"""`plan_system`: a job (serving target, fine-tuning run, training run) and a budget or a deadline -> complete
machines per server platform (tools/data/servers.yaml): nodes, the fabric between them, power and racks, a bill of
materials with dated price ranges (tools/plan/bom.py), and the cheapest, fastest and best-value options.

Per platform:
  serve:          plan_serving on the platform's card -> GPUs -> nodes = ⌈GPUs / GPUs per node⌉ (a replica must fit
                  in one node). Over budget: the share of the peak the affordable nodes serve is said.
  finetune/train: fit_training -> the fewest GPUs that fit, rounded up to whole nodes; then the node count:
                  with a deadline the fewest nodes whose training_time meets it; with a budget (no deadline) the
                  most nodes whose high-end total stays within it (faster); else the fewest that fit.
Ranking among the options that meet the ask and are priced (middle of each range):
  cheapest = lowest total; fastest = fewest hours (train) or highest tokens/s per user (serve);
  best value = lowest total × hours (train: 元 per unit of speed) or lowest owned 元 per million tokens (serve).
"""

from __future__ import annotations

import functools
import math

from tools.catalog.lookup import get_gpu
from tools.catalog.servers import Platform, platforms
from tools.errors import AdvisorError
from tools.memory.fit_training import fit_training
from tools.plan import bom
from tools.plan.plan_serving import plan_serving
from tools.schemas.common import Assumption, assume
from tools.schemas.memory import FitTrainingInput
from tools.schemas.plan import PlanServingInput, PlanSystemInput, PlanSystemOutput, ServerLine, SystemOption
from tools.schemas.speed import TrainingTimeInput
from tools.speed.training_time import run_hours


def _chosen(inp: PlanSystemInput, skipped: list[str]) -> list[Platform]:
    named = {n.lower() for n in inp.platforms or ()}
    out = []
    for p in platforms():
        gpu = get_gpu(p.gpu)
        asked = not named or p.id in named or any(_names_gpu(n, p.gpu) for n in named)
        if not asked:
            continue
        if inp.domestic and not gpu.domestic:
            skipped.append(f"{p.id}: not a domestic (国产) accelerator")
            continue
        if inp.china_purchasable and not gpu.china.available and not named:
            skipped.append(f"{p.id}: {gpu.name} is not purchasable in mainland China")
            continue
        out.append(p)
    return out


def _names_gpu(name: str, gpu_id: str) -> bool:
    try:
        return get_gpu(name).id == gpu_id
    except AdvisorError:
        return False


def _mid(o: SystemOption) -> float:
    return ((o.total_low_cny or 0) + (o.total_high_cny or 0)) / 2


def _option(inp: PlanSystemInput, p: Platform, nodes: int, unmet: list[str], **extra) -> SystemOption:
    fabric = inp.job != "serve"  # a serving replica stays inside one server: no RDMA fabric between servers
    lines, priced = bom.bill(p, nodes, fabric)
    low, high = bom.totals(lines, priced)
    n_racks, per_rack, too_hot = bom.racks(p, nodes, inp.rack_kw)
    unmet = list(unmet)
    if too_hot:
        unmet.append("rack_power")
    if inp.budget_cny is not None and high is not None and low is not None and low > inp.budget_cny:
        unmet.append("budget")
    gpu = get_gpu(p.gpu)
    return SystemOption(
        label=p.id,
        servers=[ServerLine(platform=p.id, name=p.name, gpu=gpu.name, gpus_per_node=p.gpus_per_node, nodes=nodes)],
        n_gpus=nodes * p.gpus_per_node,
        network=bom.network(p, nodes) if fabric else None,
        power_kw=round(nodes * p.node_kw.value, 2),
        racks=n_racks,
        servers_per_rack=per_rack,
        bom=lines,
        total_low_cny=low,
        total_high_cny=high,
        meets=not unmet,
        unmet=sorted(set(unmet)),
        export_restricted=not gpu.china.available,
        **extra,
    )


def _train(inp: PlanSystemInput, p: Platform, method: str) -> SystemOption:
    gpu = get_gpu(p.gpu)
    fit = fit_training(FitTrainingInput(model=inp.model, gpu=gpu.name, method=method, n_gpus=p.gpus_per_node))
    if fit.min_gpus is None or fit.min_gpus > inp.max_nodes * p.gpus_per_node:
        return _option(
            inp, p, 1, ["fit"], hours=None, capacity=None, note=f"{method} does not fit on {inp.max_nodes} nodes"
        )
    first = max(1, math.ceil(fit.min_gpus / p.gpus_per_node))

    @functools.cache  # the deadline search asks the same node count again; only the run's hours are read
    def hours(nodes: int) -> float:
        return run_hours(
            TrainingTimeInput(
                model=inp.model, gpu=gpu.name, n_gpus=nodes * p.gpus_per_node, tokens=inp.tokens, method=method
            )
        )

    def high(nodes: int) -> float | None:
        return bom.totals(*bom.bill(p, nodes))[1]

    nodes, unmet, note = first, [], ""
    if inp.deadline_hours is not None:
        n = first
        while n <= inp.max_nodes and hours(n) > inp.deadline_hours:
            n = n * 2 if n < 8 else n + 8
        if n > inp.max_nodes:
            unmet.append("deadline")
            nodes = inp.max_nodes
            note = f"{inp.max_nodes} nodes need {hours(inp.max_nodes):.3g} h"
        else:
            nodes = n
    elif inp.budget_cny is not None and high(first) is not None:
        n = first
        while n + 1 <= inp.max_nodes and (high(n + 1) or math.inf) <= inp.budget_cny:
            n += 1
        nodes = n
    return _option(inp, p, nodes, unmet, hours=round(hours(nodes), 3), capacity=None, note=note)


def _serve(inp: PlanSystemInput, p: Platform) -> SystemOption:
    gpu = get_gpu(p.gpu)
    traffic = {k: getattr(inp, k) for k in ("concurrency", "qps", "daily_users") if getattr(inp, k) is not None}
    plan = plan_serving(
        PlanServingInput(
            model=inp.model,
            gpus=[gpu.name],
            prompt_tokens=inp.prompt_tokens,
            output_tokens=inp.output_tokens,
            context_tokens=inp.context_tokens,
            ttft_s=inp.ttft_s,
            tokens_per_s_per_user=inp.tokens_per_s_per_user,
            **traffic,
        )
    )
    fitting = [c for c in plan.candidates if c.gpus_per_replica and c.gpus_per_replica <= p.gpus_per_node]
    if not fitting:
        return _option(inp, p, 1, ["fit"], hours=None, capacity=None, note="one replica does not fit in one server")
    meeting = [c for c in fitting if c.meets_targets]
    best = min(meeting or fitting, key=lambda c: (c.n_gpus, c.ttft_s or 0))
    nodes = max(1, math.ceil(best.n_gpus / p.gpus_per_node))
    unmet = [] if best.meets_targets else ["targets"]
    if nodes > inp.max_nodes:
        unmet.append("max_nodes")
        nodes = inp.max_nodes
    capacity = {
        "concurrency": plan.concurrency,
        "precision": best.precision,
        "gpus_per_replica": best.gpus_per_replica,
        "replicas": best.replicas,
        "ttft_s": best.ttft_s,
        "tokens_per_s_per_user": best.tokens_per_s_per_user,
        "cny_per_million_tokens_own": best.cny_per_million_tokens.own,
        "cny_per_million_tokens_rent": best.cny_per_million_tokens.rent,
    }
    option = _option(inp, p, nodes, unmet, hours=None, capacity=capacity, note=best.note)
    if "budget" in option.unmet and option.total_high_cny:
        per_node = option.total_low_cny / nodes
        afford = math.floor(inp.budget_cny / per_node) if per_node else 0
        share = min(1.0, afford / nodes)
        note = f"the budget buys {afford} of {nodes} servers: about {share:.0%} of the peak ({plan.concurrency * share:.0f} in flight)"
        option = option.model_copy(update={"note": note})
    return option


def _rank(job: str, options: list[SystemOption]) -> tuple[str | None, str | None, str | None, list[str]]:
    ok = [o for o in options if o.meets and o.total_low_cny is not None]
    if not ok:
        return None, None, None, []
    cheapest = min(ok, key=lambda o: (_mid(o), o.servers[0].nodes, o.label))
    if job == "serve":
        fastest = max(ok, key=lambda o: (o.capacity or {}).get("tokens_per_s_per_user") or 0)
        priced = [o for o in ok if (o.capacity or {}).get("cny_per_million_tokens_own") is not None]
        best = min(priced, key=lambda o: o.capacity["cny_per_million_tokens_own"]) if priced else cheapest
    else:
        fastest = min(ok, key=lambda o: (o.hours or math.inf, _mid(o)))
        best = min(ok, key=lambda o: (_mid(o) * (o.hours or math.inf), o.label))
    coincide = []
    if cheapest.label == fastest.label:
        coincide.append("cheapest=fastest")
    if best.label == cheapest.label:
        coincide.append("best_value=cheapest")
    if best.label == fastest.label:
        coincide.append("best_value=fastest")
    if len(ok) == 1:
        coincide.append("only_one_option_meets")
    return cheapest.label, fastest.label, best.label, coincide


def plan_system(inp: PlanSystemInput) -> PlanSystemOutput:
    """Servers and a priced BOM for a job and budget.

    Per server platform: nodes, the fabric when more than one node, power and racks, a BOM with dated price ranges;
    cheapest, fastest and best value."""
    from tools.catalog.lookup import get_model

    model = get_model(inp.model).name
    method = inp.method or ("lora" if inp.job == "finetune" else "full")
    a: list[Assumption] = [
        assume("rack_kw", inp.rack_kw, "kW", "rack_kw" not in inp.model_fields_set, note="power one rack may draw"),
        assume("china_purchasable", inp.china_purchasable, default="china_purchasable" not in inp.model_fields_set),
        assume("price_basis", "cards + host share per GPU", note="server = cards (prices.yaml) + tco.yaml host share"),
    ]
    if inp.job != "serve":
        a += [
            assume("method", method, default=inp.method is None),
            assume(
                "tokens", inp.tokens, "tokens", "tokens" not in inp.model_fields_set, note="the run's training tokens"
            ),
        ]
    skipped: list[str] = []
    options = []
    for p in _chosen(inp, skipped):
        try:
            options.append(_serve(inp, p) if inp.job == "serve" else _train(inp, p, method))
        except AdvisorError as err:
            skipped.append(f"{p.id}: {err.en}")
    cheapest, fastest, best, coincide = _rank(inp.job, options)
    nearest = ""
    if cheapest is None and options:
        priced = [o for o in options if o.total_low_cny is not None and "fit" not in o.unmet]
        if priced:
            o = min(priced, key=_mid)
            nearest = (
                f"{o.label}: {o.servers[0].nodes} × {o.servers[0].name}, {o.total_low_cny:,.0f}–{o.total_high_cny:,.0f} 元"
                + (f"; {o.note}" if o.note else "")
            )
    return PlanSystemOutput.trusted(
        job=inp.job,
        model=model,
        options=[o.model_dump() for o in options],
        cheapest=cheapest,
        fastest=fastest,
        best_value=best,
        coincide=coincide,
        nearest=nearest,
        skipped=skipped,
        assumptions=a,
    )
