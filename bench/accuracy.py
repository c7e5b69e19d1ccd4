"""How close the calculators come to published figures they were never fitted to (issue 25).

    .venv/bin/python bench/accuracy.py [--rows | --dev-misses] [--json]

Reads tests/golden/published.yaml, runs every row through the calculator its `kind` names, and prints, for the
held-out fifth (sha256(id) % 5 == 0) and the development rows separately: the share within tolerance (memory
±15%, time and speed ±25%) and the median relative error per kind, and how many published verdicts (fits, OOM,
refused tensor-parallel sizes) come out right. `--rows` lists every row with our figure and the error; `--dev-misses`
only the development rows outside tolerance (what to read when fixing a cause: held-out rows stay unread). Then, when
llm-analysis is installed (the `bench` extra), the same held-out rows through it beside ours (`--no-peer` skips it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
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
        kind_of = row.get("memory_kind")
        gb = (
            out.allocator_peak_gb
            if kind_of == "allocator_peak"
            else out.breakdown_gb["weights"]
            if kind_of == "weights"  # an engine's "loading model weights took" line
            else out.per_gpu_gb
        )
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
        res["added"] = row.get("added")
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
    """Per split: figures within tolerance, median |error|, per kind; verdicts right. Rows added in a later batch
    (`added: <batch>`, both splits) are summarised again on their own line, `fresh <batch>`."""
    out = {}
    splits = [(lambda r: r["held_out"], "held_out"), (lambda r: not r["held_out"], "dev")]
    for batch in sorted({r["added"] for r in results if r.get("added")}):
        splits.append((lambda r, b=batch: r.get("added") == b, f"fresh {batch}"))
    for pick, name in splits:
        part = [r for r in results if pick(r)]
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


# --- the peer: llm-analysis (github.com/cli99/llm-analysis, PyPI `llm-analysis`, the `bench` extra) -------------
# Run on the rows it can express, on the same model shapes and GPU datasheets as ours (built from our catalog
# records, so the two differ in their formulas, not their inputs), twice: with its own defaults (flops and memory
# efficiency 1) and with the efficiencies its README suggests (flops 0.5 training / 0.7 inference, memory 0.9).
PEER_RUNS = {"default": {"train": None, "infer": None, "hbm": None}, "tuned": {"train": 0.5, "infer": 0.7, "hbm": 0.9}}
_PEER_BITS = {"fp8": 8, "int8": 8, "int4": 4}


def _peer_unexpressible(row: dict, spec) -> str | None:
    """Why llm-analysis cannot state this row (None when it can)."""
    if row["kind"] == "refused":
        return "no tensor-parallel divisibility check"
    if row["input"].get("method", "full") != "full":
        return "fine-tuning methods other than full (its README: PEFT not yet supported)"
    if spec.attention == "MLA" or spec.n_shared_experts or spec.n_dense_layers:
        return "MLA attention, shared experts or dense layers beside experts"
    if row["input"].get("offload", "none") != "none" or row["input"].get("optimizer", "adamw") != "adamw":
        return "optimizer offload or 8-bit/paged optimizers"
    return None


def _peer_analysis(row: dict, spec, gpu, effs: dict, training: bool):
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig

    inp = row["input"]
    ffn = (spec.moe_ffn_size or spec.ffn_size) if spec.n_experts else spec.ffn_size
    # its own Llama-2 config writes a gated MLP as two matrices of 1.5 x the intermediate size (same parameters)
    ffn = ffn * 3 // 2 if spec.mlp == "swiglu" else ffn
    model = ModelConfig(
        name=spec.id,
        num_layers=spec.n_layers,
        n_head=spec.n_heads,
        hidden_dim=spec.hidden_size,
        vocab_size=spec.vocab_size,
        max_seq_len=max(spec.max_context or 0, 10_000_000),
        num_key_value_heads=spec.n_kv_heads,
        ffn_embed_dim=ffn,
        expansion_ratio=ffn / spec.hidden_size,
        moe_num_experts=spec.n_experts or 1,
        moe_top_k=spec.experts_per_token or 1,
    )
    low = gpu.fp8_tflops or gpu.int8_tops or 2 * gpu.bf16_tflops
    card = GPUConfig(
        name=gpu.id,
        mem_per_GPU_in_GB=gpu.memory_gb,
        hbm_bandwidth_in_GB_per_sec=gpu.bandwidth_gb_s,
        intra_node_bandwidth_in_GB_per_sec=(gpu.interconnect_gb_s or 64) / 2,
        intra_node_min_message_latency=8e-6,
        peak_fp16_TFLOPS=gpu.bf16_tflops or gpu.fp16_tflops,
        peak_i8_TFLOPS=low,
        peak_i4_TFLOPS=2 * low,
    )
    wbits = _PEER_BITS.get(inp.get("precision") or "bf16", 16)
    abits = 8 if inp.get("precision") == "fp8" else 16
    n, tp, pp = inp.get("n_gpus", 1), inp.get("tp", 1), inp.get("pp", 1)
    par = ParallelismConfig(tp_size=tp, pp_size=pp, dp_size=n // (tp * pp)) if training else ParallelismConfig(n)
    flops = effs["train"] if training else effs["infer"]
    return LLMAnalysis(
        model, card, DtypeConfig(weight_bits=wbits, activation_bits=abits), par, None, None, flops, effs["hbm"]
    )


def _peer_train(row: dict, la) -> tuple[float, float, float]:
    from llm_analysis.analysis import ActivationRecomputation, DSZeRO

    inp = row["input"]
    n, seq = inp.get("n_gpus", 1), inp["seq_len"]
    dp = la.parallelism_config.dp_size
    mb = inp.get("micro_batch") or max(1, inp.get("global_batch_tokens", seq * dp) // (seq * dp))
    recompute = ActivationRecomputation.FULL if inp.get("grad_checkpointing", True) else ActivationRecomputation.NONE
    zero = DSZeRO(inp.get("zero_stage", 3 if n > 1 and la.parallelism_config.tp_size == 1 else 0))
    out = la.training(
        batch_size_per_gpu=mb,
        gradient_accumulation_steps=1,
        seq_len=seq,
        total_num_tokens=int(float(inp.get("tokens", 1e9))),
        activation_recomputation=recompute,
        ds_zero=zero,
        mlp_gated_linear_units=True,
    )
    gb = out["(weight+op_state+grad+act)_memory_per_gpu"] / GB
    tps = mb * seq / out["latency_per_iter"] / (n // dp)
    # MFU as it defines it: model FLOPs (forward + backward, no recompute) over step time x its fp16 peak
    model_flops = la.get_num_flops_fwd_total(mb, seq) + la.get_num_flops_bwd_total(mb, seq)
    mp = la.parallelism_config.tp_size * la.parallelism_config.pp_size
    return gb, tps, model_flops / (out["latency_per_iter"] * mp * la.gpu_config.peak_fp16_TFLOPS * 1e12)


def _peer_infer(row: dict, la) -> dict:
    inp = row["input"]
    kind = row["kind"]
    seq = inp.get("prompt_len") or inp.get("context_len", 4096)
    gen = inp.get("output_len", 1)
    kv = 1 if inp.get("kv_precision") == "fp8" else 2
    return la.inference(
        batch_size_per_gpu=inp.get("batch", 1),
        seq_len=seq if kind != "tpot_ms" else inp["context_len"],
        num_tokens_to_generate=gen,
        kv_cache_dtype_bytes=kv,
    )


def peer_predict(row: dict, effs: dict):
    """llm-analysis's figure for a row, or the reason it cannot state it (a str)."""
    from tools.catalog.lookup import get_gpu, get_model

    spec, gpu = get_model(row["input"]["model"]), get_gpu(row["input"]["gpu"])
    why = _peer_unexpressible(row, spec)
    if why:
        return why
    kind, training = (
        row["kind"],
        row.get("tool", "training_time") == "fit_training" or row["kind"] in ("mfu", "train_tps_gpu"),
    )
    la = _peer_analysis(row, spec, gpu, effs, training)
    if training:
        try:
            gb, tps, mfu = _peer_train(row, la)
        except AssertionError:  # its way of saying the batch does not fit
            return False if kind == "verdict" else "no batch fits"
        if kind == "verdict":
            return (gb <= gpu.memory_gb) is bool(row["fits"])
        if kind == "memory_gb":
            return gb * (row["input"].get("n_gpus", 1) if row.get("per_gpu") is False else 1)
        return tps if kind == "train_tps_gpu" else mfu
    out = _peer_infer(row, la)
    if kind == "ttft_ms":
        return out["prefill_latency"] * 1e3
    if kind == "tpot_ms":
        return out["decode_latency"] * 1e3
    if kind == "batch_out_tps":
        inp = row["input"]
        seconds = out["prefill_latency"] + out["decode_latency"] * inp["output_len"]
        return inp["batch"] * inp["output_len"] / seconds / (inp["n_gpus"] if row.get("per_gpu") else 1)
    act = max(out["prefill_activation_memory_per_gpu"], out["decode_activation_memory_per_gpu"])
    gb = (out["weight_memory_per_gpu"] + out["kv_cache_memory_per_gpu"] + act) / GB
    if kind == "verdict":
        return (gb <= gpu.memory_gb) is bool(row["fits"])
    return gb


def _peer_or_reason(row: dict, effs: dict):
    try:
        return peer_predict(row, effs)
    except (AssertionError, ValueError, ZeroDivisionError) as exc:  # its own checks on a setup it refuses
        return f"llm-analysis refused it: {str(exc).splitlines()[0][:80]}"


def peer_compare(results: list[dict], held_only: bool = True) -> dict | str:
    """Per kind: ours and the peer (each run) within tolerance and median error on the rows it can express."""
    try:
        import llm_analysis  # noqa: F401
    except ImportError:
        return "llm-analysis is not installed (pip install -e '.[bench]' --no-deps llm-analysis fire): no peer column"
    logging.getLogger("__name__").setLevel(logging.ERROR)  # the name its logger is registered under
    rows = {r["id"]: r for r in load()}
    table, skipped = {}, {}
    for res in results:
        if held_only and not res["held_out"]:
            continue
        row = rows[res["id"]]
        peers = {name: _peer_or_reason(row, effs) for name, effs in PEER_RUNS.items()}
        if isinstance(peers["default"], str):
            skipped[res["id"]] = peers["default"]
            continue
        entry = table.setdefault(res["kind"], [])
        if res["kind"] in ("verdict", "refused"):
            entry.append({"ours": res["ok"], **{n: bool(v) for n, v in peers.items()}, "tol": None, "pub": None})
        else:
            entry.append({"ours": res.get("ours"), **peers, "tol": row["tolerance"], "pub": res.get("published")})
    return {"by_kind": table, "skipped": skipped}


def _score(entries: list[dict], who: str) -> tuple[int, float | None]:
    if entries[0]["pub"] is None:
        return sum(bool(e[who]) for e in entries), None
    errs = [abs(e[who] - e["pub"]) / e["pub"] if isinstance(e[who], float) else None for e in entries]
    within = sum(err is not None and err <= e["tol"] for err, e in zip(errs, entries))
    known = [x for x in errs if x is not None]
    return within, (statistics.median(known) if known else None)


def print_peer(cmp: dict | str) -> None:
    if isinstance(cmp, str):
        print(cmp)
        return
    print("held-out, side by side with llm-analysis (same shapes and datasheets; default = its efficiency 1,")
    print("tuned = its README's 0.5 training / 0.7 inference flops, 0.9 memory), on the rows it can express:")
    closer = total = 0
    for kind, entries in cmp["by_kind"].items():
        cols = []
        for who in ("ours", "default", "tuned"):
            within, med = _score(entries, who)
            cols.append(f"{who} {within}/{len(entries)}" + (f" med {med:.1%}" if med is not None else " right"))
        print(f"    {kind:14} " + " | ".join(cols))
        for e in entries:
            total += 1
            if e["pub"] is None:
                closer += bool(e["ours"]) and not e["tuned"]
            elif isinstance(e["tuned"], float) and isinstance(e["ours"], float):
                closer += abs(e["ours"] - e["pub"]) < abs(e["tuned"] - e["pub"])
            else:
                closer += isinstance(e["ours"], float)
    print(f"  closer than the tuned peer on {closer} of {total} held-out rows it can express")
    for rid, why in sorted(cmp["skipped"].items()):
        print(f"  not expressible in llm-analysis: {rid} ({why})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="list every row")
    ap.add_argument("--dev-misses", action="store_true", help="list the development rows outside tolerance only")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--no-peer", action="store_true", help="leave out the llm-analysis comparison")
    args = ap.parse_args()
    results = evaluate()
    s = summary(results)
    if args.json:
        print(json.dumps(s, indent=1))
        return
    if args.rows or args.dev_misses:
        shown = [r for r in results if not (r["held_out"] or r["ok"])] if args.dev_misses else results
        for r in sorted(shown, key=lambda r: (not r["held_out"], r["kind"], r["id"])):
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
    if not args.no_peer:
        print_peer(peer_compare(results))


if __name__ == "__main__":
    main()
