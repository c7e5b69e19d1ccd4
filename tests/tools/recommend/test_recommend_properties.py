"""Properties of recommend_gpus over the catalogs (Hypothesis): filters only ever remove, and every option fits.

Options are compared with top_k = 100 (every option that passes), since top_k only trims what is shown.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.memory.fit_inference import fit_inference
from tools.memory.fit_training import fit_training
from tools.recommend.recommend_gpus import recommend_gpus
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.schemas.recommend import RecommendInput

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODELS = ["Qwen2.5-7B", "Llama-2-13B", "Qwen2.5-32B", "Llama-3-70B", "Mixtral-8x7B", "7B", "70B"]

training = st.fixed_dictionaries(
    {
        "model": st.sampled_from(MODELS),
        "workload": st.sampled_from(["train", "finetune"]),
        "method": st.sampled_from([None, "full", "lora", "qlora"]),
        "tokens": st.integers(10**8, 10**11),
        "seq_len": st.sampled_from([1024, 2048, 4096]),
        "china_available": st.sampled_from([None, True]),
        "pricing": st.sampled_from(["rent", "buy"]),
        "max_gpus": st.sampled_from([8, 64, 1024]),
    }
)
inference = st.fixed_dictionaries(
    {
        "model": st.sampled_from(MODELS),
        "workload": st.just("infer"),
        "batch": st.integers(1, 64),
        "context_len": st.sampled_from([2048, 8192, 32768]),
        "precision": st.sampled_from(["bf16", "fp8", "int4"]),
        "china_available": st.sampled_from([None, True]),
        "pricing": st.sampled_from(["rent", "buy"]),
    }
)
jobs = st.one_of(training, inference)


def run(args: dict, **more):
    clean = {k: v for k, v in {**args, **more}.items() if v is not None}
    return recommend_gpus(RecommendInput(**clean, top_k=100))


def gpu_ids(out) -> set[str]:
    return {o.gpu_id for o in out.options}


@SETTINGS
@given(args=jobs, budgets=st.tuples(st.floats(1e2, 1e8), st.floats(1e2, 1e8)))
def test_larger_budget_never_removes_options(args, budgets):
    small, large = sorted(budgets)
    assert gpu_ids(run(args, budget_cny=small)) <= gpu_ids(run(args, budget_cny=large))


@SETTINGS
@given(
    args=training,
    deadlines=st.tuples(st.floats(1, 5000), st.floats(1, 5000)),
    budget=st.one_of(st.none(), st.floats(1e3, 1e7)),
)
def test_later_deadline_never_removes_options(args, deadlines, budget):
    early, late = sorted(deadlines)
    a = run(args, deadline_hours=early, budget_cny=budget)
    b = run(args, deadline_hours=late, budget_cny=budget)
    assert gpu_ids(a) <= gpu_ids(b)
    for o in a.options:
        assert o.hours <= early * (1 + 1e-3)


@SETTINGS
@given(args=jobs, budget=st.one_of(st.none(), st.floats(1e3, 1e7)), deadline=st.one_of(st.none(), st.floats(1, 5000)))
def test_every_option_fits_and_passes_the_filters(args, budget, deadline):
    out = run(args, budget_cny=budget, deadline_hours=deadline)
    inp = RecommendInput(**{k: v for k, v in args.items() if v is not None})
    for o in out.options:
        if inp.workload == "infer":
            fit = fit_inference(
                FitInferenceInput(
                    model=inp.model,
                    gpu=o.gpu_id,
                    n_gpus=o.n_gpus,
                    precision=inp.precision,
                    batch=inp.batch,
                    context_len=inp.context_len,
                )
            )
        else:
            fit = fit_training(
                FitTrainingInput(
                    model=inp.model,
                    gpu=o.gpu_id,
                    method=inp.resolved_method,
                    n_gpus=o.n_gpus,
                    seq_len=inp.seq_len,
                    grad_checkpointing=True,
                    zero_stage=o.zero_stage,
                )
            )
            if deadline is not None:
                assert o.hours <= deadline * (1 + 1e-3)
        assert fit.fits and o.fits and o.per_gpu_gb == fit.per_gpu_gb
        assert o.n_gpus <= inp.max_gpus
        if budget is not None:
            assert o.total_cny is not None and o.total_cny <= budget * (1 + 1e-6)
        if inp.china_available:
            assert o.china_available
    named = gpu_ids(out) | {d.gpu_id for d in out.dropped}
    assert len(named) == len(out.options) + out.more_options + len(out.dropped)  # every GPU accounted for once


@SETTINGS
@given(args=jobs)
def test_picks_are_the_extremes(args):
    out = run(args)
    priced = [o for o in out.options if o.total_cny is not None]
    if priced:
        assert out.cheapest is not None
        assert all(out.cheapest.total_cny <= o.total_cny for o in priced)
    if args["workload"] == "infer":
        timed = [o for o in out.options if o.tokens_per_s is not None]
        assert all(out.fastest.tokens_per_s >= o.tokens_per_s for o in timed)
    elif out.options:
        assert all(out.fastest.hours <= o.hours for o in out.options)
