"""How close the calculators come to published figures they were never fitted to (issue 25).

    .venv/bin/python bench/accuracy.py [--rows] [--json]

Reads tests/golden/published.yaml, runs every row through the calculator its `kind` names, and prints, for the
held-out fifth (sha256(id) % 5 == 0) and the development rows separately: the share within tolerance (memory
±15%, time and speed ±25%) and the median relative error per kind, and how many published verdicts (fits, OOM,
refused tensor-parallel sizes) come out right. `--rows` lists every row with our figure and the error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml
from pydantic import ValidationError

from tools.errors import AdvisorError
from tools.memory.fit_inference import fit_inference
from tools.memory.fit_training import fit_training
from tools.schemas.memory import FitInferenceInput, FitTrainingInput
from tools.schemas.speed import InferenceSpeedInput, TrainingTimeInput
from tools.speed.inference_speed import inference_speed
from tools.speed.training_time import training_time
from tools.units import GB, GiB

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "golden" / "published.yaml"
#: the figures of the calculators at the corpus freeze on the same rows ("before"), printed beside today's
BASELINE = Path(__file__).resolve().parent / "accuracy_baseline.json"
FIGURES = ("memory_gb", "train_tps_gpu", "mfu", "tpot_ms", "ttft_ms", "batch_out_tps")


def held_out(row_id: str) -> bool:
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 5 == 0


def load() -> list[dict]:
    return yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["rows"]


def _memory_tool(row: dict):
    inp = row["input"]
    if row.get("tool") == "fit_inference":
        return fit_inference(FitInferenceInput(**inp))
    return fit_training(FitTrainingInput(**inp))


def predict(row: dict):
    """Our figure for a row (a number, or True/False for a verdict row)."""
    kind, inp = row["kind"], dict(row["input"])
    if kind == "refused":
        try:
            (
                fit_inference(FitInferenceInput(**inp))
                if row["tool"] == "fit_inference"
                else inference_speed(InferenceSpeedInput(**inp))
            )
        except (AdvisorError, ValidationError):
            return True
        return False
    if kind == "verdict":
        out = _memory_tool(row)
        return out.verdict != "does not fit" if row["fits"] else out.verdict == "does not fit"
    if kind == "memory_gb":
        out = _memory_tool(row)
        gb = out.allocator_peak_gb if row.get("memory_kind") == "allocator_peak" else out.per_gpu_gb
        return gb * (out.n_gpus if row.get("per_gpu") is False else 1)
    if kind in ("train_tps_gpu", "mfu"):
        out = training_time(TrainingTimeInput(**inp))
        return out.tokens_per_s_per_gpu if kind == "train_tps_gpu" else out.mfu
    if kind == "tpot_ms":
        return inference_speed(InferenceSpeedInput(**inp)).tpot_ms
    if kind == "ttft_ms":
        return inference_speed(InferenceSpeedInput(**inp, context_len=inp["prompt_len"])).ttft_s * 1e3
    if kind == "batch_out_tps":
        out_len = inp.pop("output_len")
        out = inference_speed(InferenceSpeedInput(**inp, context_len=inp["prompt_len"] + out_len // 2))
        # a static batch: prefill of every prompt, then out_len decode steps at the mean context
        seconds = out.batch * inp["prompt_len"] / out.prefill_tokens_per_s + out_len * out.tpot_ms / 1e3
        return out.batch * out_len / seconds / (inp["n_gpus"] if row.get("per_gpu") else 1)
    raise ValueError(kind)


def published(row: dict) -> float:
    value = float(row["published"])
    return value * GiB / GB if row.get("unit") == "GiB" else value


def evaluate(rows: list[dict] | None = None) -> list[dict]:
    """One result per row: split, kind, ours, published, relative error, within tolerance (or verdict right)."""
    results = []
    for row in rows if rows is not None else load():
        res = {"id": row["id"], "kind": row["kind"], "held_out": held_out(row["id"]), "src": row["src"]}
        try:
            ours = predict(row)
        except (AdvisorError, ValidationError, ValueError) as exc:
            res.update(ours=None, ok=False, error=str(exc).splitlines()[0][:120])
            results.append(res)
            continue
        if row["kind"] in ("verdict", "refused"):
            res.update(ours=ours, ok=bool(ours))
        else:
            pub = published(row)
            err = (ours - pub) / pub
            res.update(ours=round(ours, 4), published=pub, error=err, ok=abs(err) <= row["tolerance"])
        results.append(res)
    return results


def summary(results: list[dict]) -> dict:
    """Per split: figures within tolerance, median |error|, per kind; verdicts right."""
    out = {}
    for split, name in ((True, "held_out"), (False, "dev")):
        part = [r for r in results if r["held_out"] is split]
        figs = [r for r in part if r["kind"] in FIGURES]
        errs = [abs(r["error"]) for r in figs if isinstance(r.get("error"), float)]
        verdicts = [r for r in part if r["kind"] in ("verdict", "refused")]
        kinds = {}
        for k in FIGURES:
            rs = [r for r in figs if r["kind"] == k]
            if rs:
                e = [abs(r["error"]) for r in rs if isinstance(r.get("error"), float)]
                kinds[k] = {
                    "n": len(rs),
                    "within": sum(r["ok"] for r in rs),
                    "median_error": round(statistics.median(e), 3) if e else None,
                }
        out[name] = {
            "figures": len(figs),
            "within": sum(r["ok"] for r in figs),
            "within_share": round(sum(r["ok"] for r in figs) / len(figs), 3) if figs else None,
            "median_error": round(statistics.median(errs), 3) if errs else None,
            "verdicts": len(verdicts),
            "verdicts_right": sum(r["ok"] for r in verdicts),
            "by_kind": kinds,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="list every row")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    results = evaluate()
    s = summary(results)
    if args.json:
        print(json.dumps(s, indent=1))
        return
    if args.rows:
        for r in sorted(results, key=lambda r: (not r["held_out"], r["kind"], r["id"])):
            fig = r.get("published", "")
            err = f"{r['error']:+.1%}" if isinstance(r.get("error"), float) else r.get("error", "")
            mark = "ok " if r["ok"] else "MISS"
            print(
                f"{'H' if r['held_out'] else 'D'} {mark} {r['kind']:13} {r['id']:42} ours={r['ours']} pub={fig} {err}"
            )
    before = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else None
    for name, part in s.items():
        print(
            f"{name:8}: {part['within']}/{part['figures']} figures within tolerance ({part['within_share']:.0%}), "
            f"median error {part['median_error']:.1%}; verdicts right {part['verdicts_right']}/{part['verdicts']}"
        )
        if before and name in before["summary"]:
            b = before["summary"][name]
            print(
                f"  before (commit {before['commit']}): {b['within']}/{b['figures']} within ({b['within_share']:.0%}), "
                f"median error {b['median_error']:.1%}; verdicts right {b['verdicts_right']}/{b['verdicts']}"
            )
        for k, v in part["by_kind"].items():
            med = f"{v['median_error']:.1%}" if v["median_error"] is not None else "n/a"
            print(f"    {k:14} {v['within']}/{v['n']} within, median error {med}")


if __name__ == "__main__":
    main()
