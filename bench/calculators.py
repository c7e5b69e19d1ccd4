"""Microseconds per calculator call: median and p95, next to a trivial baseline from the same run.

    .venv/bin/python bench/calculators.py [--repeat 300]
    .venv/bin/python bench/calculators.py --quick     # the CI gate: ratios to the baseline against bench/gate.yaml

Targets (issues 2, 3 and 11): median ≤ 50 µs per calculator call; recommend_gpus over the whole catalog
≤ 20 ms. "Calculator" is the function on an already-validated input model; the `tools.call`
column adds validating a plain dict and dumping the output to JSON (what the API and LLM pay).
Inputs vary between calls (no result caching is measured); what is cached per catalog record, per name
spelling or per distinct assumption text is warm, as in a running server. The baseline is a plain function
doing a few dict operations, so ratios stay comparable on a noisy shared machine.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import registry
from tools.catalog.lookup import gpus, models

#: the planners search the catalog (recommend, plan_system) or a replica's batch (plan_serving) with the calculators
#: inside, so they share recommend's budget; diagnose reruns fit_training / fit_inference on the user's setup and on
#: each fix it proposes (up to three runs), so its budget is a few calculator calls
TARGET_US = {"recommend_gpus": 20_000, "plan_serving": 20_000, "plan_system": 20_000, "diagnose": 500}
#: timed over every input alike (their cases differ up to 10-fold) rather than `repeat` calls
SEARCHES = {"recommend_gpus", "plan_serving", "plan_system"}
DEFAULT_TARGET_US = 50


def _gpu(name: str):
    from tools.catalog.lookup import get_gpu

    return get_gpu(name)


def _inputs() -> dict[str, list[dict]]:
    g = [x.id for x in gpus()][:12]
    m = [x.id for x in models()][:8] + ["70B", "13B"]
    pairs = list(itertools.islice(itertools.cycle(itertools.product(m, g)), 64))
    return {
        "gpu_specs": [{"gpu": gpu} for gpu in g],
        "compare_gpus": [{"gpus": [a, b]} for a, b in zip(g, g[1:])],
        "fit_training": [
            {"model": mo, "gpu": gpu, "method": meth, "n_gpus": n, "grad_checkpointing": ck}
            for (mo, gpu), meth, n, ck in zip(
                pairs,
                itertools.cycle(["full", "lora", "qlora", "freeze"]),
                itertools.cycle([1, 8, 16]),
                itertools.cycle([True, False, None]),
            )
        ],
        "fit_inference": [
            {"model": mo, "gpu": gpu, "batch": b} for (mo, gpu), b in zip(pairs, itertools.cycle([1, 8, 32]))
        ],
        "training_time": [
            {"model": mo, "gpu": gpu, "n_gpus": n, "tokens": 1_000_000_000}
            for (mo, gpu), n in zip(pairs, itertools.cycle([1, 8, 64]))
        ],
        "inference_speed": [
            {"model": mo, "gpu": gpu, "batch": b} for (mo, gpu), b in zip(pairs, itertools.cycle([1, 16]))
        ],
        "run_cost": [
            {"gpu": gpu, "gpu_hours": h, "price_cny_per_hour": 20.0} for gpu, h in zip(g, itertools.cycle([100, 5000]))
        ],
        "rent_vs_buy": [
            {"gpu": gpu, "n_gpus": 8, "hours_per_day": h, "rent_cny_per_hour": 20.0, "purchase_cny": 80000.0}
            for gpu, h in zip(g, itertools.cycle([24, 8]))
        ],
        "recommend_gpus": [  # whole catalog each call; easy and hard cases (full 70B, deadline search, infer)
            {"model": m[0], "workload": "finetune", "tokens": 1_000_000_000},
            {"model": "70B", "workload": "finetune", "method": "full", "tokens": "1B"},
            {"model": m[2], "workload": "finetune", "tokens": "1B", "deadline_hours": 24},
            {"model": m[3], "workload": "infer", "batch": 16},
            {"model": "13B", "workload": "train", "tokens": "2T", "deadline_hours": 500, "budget_cny": 2_000_000},
            {"model": m[1], "workload": "finetune", "tokens": "1B", "china_available": True, "pricing": "buy"},
        ],
        "model_memory": [
            {"model": mo, "method": meth, "n_gpus": n}
            for mo, meth, n in zip(m, itertools.cycle(["full", "lora", "qlora"]), itertools.cycle([1, 8]))
        ],
        "power_draw": [{"gpu": gpu, "n_gpus": n} for gpu, n in zip(g, itertools.cycle([8, 64]))],
        "precision_speedup": [
            {"model": mo, "gpu": gpu, "n_gpus": 8} for mo, gpu in pairs if getattr(_gpu(gpu), "fp8_tflops", None)
        ][:16],
        "diagnose": [  # the kinds of the golden cases (tests/golden/diagnose.yaml): KV pool, ZeRO OOM, TP, slow
            {
                "model": "Llama-3.1-8B",
                "gpu": "RTX 3090",
                "framework": "vllm",
                "max_model_len": 29000,
                "error_kind": "kv_too_small",
            },
            {
                "model": "Qwen2.5-72B",
                "gpu": "A800 80GB",
                "n_gpus": 16,
                "framework": "deepspeed",
                "method": "full",
                "seq_len": 1024,
                "error_kind": "oom",
                "failed_alloc_gib": 16.83,
            },
            {
                "model": "Llama-3.1-8B",
                "gpu": "A100 80GB",
                "n_gpus": 3,
                "framework": "vllm",
                "tp": 3,
                "error_kind": "heads_not_divisible",
            },
            {
                "model": "Qwen2.5-7B",
                "gpu": "A100 80GB",
                "n_gpus": 8,
                "zero_stage": 2,
                "error_kind": "oom",
                "failed_alloc_gib": 3.55,
                "allocated_gib": 70.0,
                "reserved_gib": 72.0,
            },
        ],
        "plan_serving": [  # traffic given three ways, one to three platforms
            {"model": "Qwen3-32B", "gpus": ["H20", "4090"], "daily_users": 5000},
            {"model": "Qwen3-32B", "gpus": ["H20"], "qps": 10, "output_tokens": 500},
            {"model": m[0], "gpus": [g[0], g[1], g[2]], "concurrency": 64},
        ],
        "plan_system": [  # fine-tune, train to a deadline, serve (tests/tools/plan/test_plan_system.py)
            {"job": "finetune", "model": "Qwen2.5-14B", "budget_cny": 2_000_000},
            {"job": "train", "model": "7B", "tokens": "100B", "deadline_hours": 336},
            {"job": "serve", "model": "Qwen3-32B", "concurrency": 200, "platforms": ["H20"]},
        ],
        "plan_cluster": [  # one server, a few, a fabric with several switches (tests/tools/plan/test_plan_cluster.py)
            {"gpu": "H800", "n_gpus": 8},
            {"gpu": "A800", "n_gpus": 24},
            {"gpu": "H800", "n_gpus": 144, "rack_kw": 20},
        ],
    }


def _baseline(args: dict) -> dict:
    out = dict(args)
    out["x"] = sum(len(str(v)) for v in args.values())
    return out


def _time(fn, inputs: list, repeat: int) -> list[float]:
    samples = []
    for i in range(repeat):
        args = inputs[i % len(inputs)]
        t0 = time.perf_counter_ns()
        fn(args)
        samples.append((time.perf_counter_ns() - t0) / 1000)
    return samples


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def quick(rounds: int = 5, repeat: int = 150) -> int:
    """The CI gate: per calculator, its median ÷ the baseline's median, each round measured back to back with
    the baseline; the median of the rounds against `gate.yaml` (exit 1 when one regressed past its margin)."""
    import gate

    conf = gate.limits()["calculators"]
    inputs = _inputs()
    checks = []
    for name in registry.names():  # a calculator with no reference yet is held to the default (the µs target)
        reference = conf["reference"].get(name, conf["default_reference"])
        tool = registry.get(name)
        if not inputs.get(name):
            print(f"  {name:<34} no bench inputs yet (bench/calculators.py _inputs): not gated")
            continue
        calls = [tool.input_model.model_validate(a) for a in inputs[name]]
        for c in calls:
            tool.fn(c)
        n = 4 * len(calls) if name in SEARCHES else repeat  # every case alike (they differ 10-fold)

        def ratios(tool=tool, calls=calls, n=n) -> list[float]:
            out = []
            for _ in range(rounds):
                base = statistics.median(_time(_baseline, inputs["fit_training"], 300))
                out.append(statistics.median(_time(tool.fn, calls, n)) / base)
            return out

        checks.append(gate.judged(name, ratios, reference, conf["margin"]))
    return gate.report("calculators (median ÷ baseline)", checks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="the CI gate: ratios against bench/gate.yaml")
    args = ap.parse_args()
    if args.quick:
        return quick()
    inputs = _inputs()
    base = _time(_baseline, inputs["fit_training"], args.repeat * 3)
    base_med = statistics.median(base)
    print("calculator: the function on a validated input; tools.call adds JSON validation and dumping")
    print(
        f"{'calculator':<16} {'median µs':>10} {'p95 µs':>10} {'× baseline':>11} {'target µs':>10}  ok"
        f"  {'tools.call median µs':>21}"
    )
    print(f"{'baseline':<16} {base_med:>10.1f} {_p95(base):>10.1f} {1:>11.1f} {'':>10}")
    failed = False
    for name in registry.names():
        try:
            tool = registry.get(name)
        except ModuleNotFoundError:
            print(f"{name:<16} not built yet")
            continue
        if not inputs.get(name):
            print(f"{name:<16} no inputs (catalog too small)")
            continue
        calls = [tool.input_model.model_validate(a) for a in inputs[name]]
        for c in calls:  # warm the catalog caches and check every input is valid
            tool.fn(c)
        repeat = max(20, args.repeat // 10) if name in SEARCHES else args.repeat
        samples = _time(tool.fn, calls, repeat)
        via_call = statistics.median(_time(lambda a, v=tool: registry.call(v.name, a), inputs[name], repeat))
        med = statistics.median(samples)
        target = TARGET_US.get(name, DEFAULT_TARGET_US)
        ok = med <= target
        failed |= not ok
        print(
            f"{name:<16} {med:>10.1f} {_p95(samples):>10.1f} {med / base_med:>11.1f} {target:>10}  {'yes' if ok else 'NO ':<3}"
            f"  {via_call:>21.1f}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
