"""`gpu-advisor time` (training time) and `gpu-advisor speed` (inference tokens/s)."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.cli.output import GpuOpt, JsonOpt, ModelOpt, NGpusOpt, assumptions_table, calculate, console, lang_of, table


def _num(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")


def time_cmd(
    model: ModelOpt,
    gpu: GpuOpt,
    tokens: Annotated[str, typer.Option("--tokens", "-t", help="Training tokens: '1B', '2T', '10亿', 2000000000.")],
    n_gpus: NGpusOpt = 1,
    method: Annotated[str, typer.Option(help="full | lora | qlora | freeze")] = "full",
    precision: Annotated[str, typer.Option(help="bf16 | fp16 | fp8 | tf32 | fp32")] = "bf16",
    seq_len: Annotated[int, typer.Option(help="Tokens per sequence.")] = 4096,
    mfu: Annotated[float | None, typer.Option(help="Use this MFU instead of the calibrated default.")] = None,
    checkpointing: Annotated[bool, typer.Option("--checkpointing/--no-checkpointing", help="Full recompute.")] = False,
    tp: Annotated[int, typer.Option(help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline stages.")] = 1,
    fabric: Annotated[
        str, typer.Option("--fabric", help="Between nodes: ib-ndr | ib-hdr | roce | ethernet-100g")
    ] = "ib-ndr",
    as_json: JsonOpt = False,
) -> None:
    """Training or fine-tuning time, GPU-hours and MFU, with a low–high range.

    Example: gpu-advisor time --model 7B --gpu H800 --n-gpus 8 --tokens 1B
    """
    args = {
        "model": model,
        "gpu": gpu,
        "tokens": tokens,
        "n_gpus": n_gpus,
        "method": method,
        "precision": precision,
        "seq_len": seq_len,
        "mfu": mfu,
        "grad_checkpointing": checkpointing,
        "tp": tp,
        "pp": pp,
        "nodes_fabric": fabric,
    }
    r = calculate("training_time", args, lang_of(model + gpu + tokens), as_json)
    if r is None:
        return
    title = f"{r['method']} training of {r['model']} on {r['n_gpus']}× {r['gpu']}, {r['tokens']:,} tokens"
    rows = [
        ("wall-clock hours", _num(r["hours"]), _num(r["hours_low"]), _num(r["hours_high"])),
        ("days", _num(r["days"]), _num(r["hours_low"] / 24), _num(r["hours_high"] / 24)),
        ("GPU-hours", _num(r["gpu_hours"]), _num(r["gpu_hours_low"]), _num(r["gpu_hours_high"])),
        ("MFU", _num(r["mfu"], 2), _num(r["mfu_high"], 2), _num(r["mfu_low"], 2)),
        ("tokens/s (all GPUs)", _num(r["tokens_per_s"]), None, None),
        ("communication share of step", _num(r["comm_share"], 2), None, None),
        ("FLOPs per token", f"{r['flops_per_token']:.3g}", None, None),
        ("total FLOPs", f"{r['total_flops']:.3g}", None, None),
    ]
    console.print(table(title, ["", "estimate", "fast end", "slow end"], rows))
    console.print(assumptions_table(r["assumptions"]))


def speed_cmd(
    model: ModelOpt,
    gpu: GpuOpt,
    n_gpus: Annotated[int, typer.Option("--n-gpus", "-n", help="GPUs per replica (tensor parallel).")] = 1,
    precision: Annotated[str, typer.Option(help="Weights: bf16 | fp16 | fp8 | int8 | int4")] = "bf16",
    kv_precision: Annotated[str, typer.Option(help="KV cache: bf16 | fp8 | int8")] = "bf16",
    batch: Annotated[int, typer.Option(help="Sequences decoded together.")] = 1,
    context_len: Annotated[int, typer.Option(help="Average KV length per decode step.")] = 4096,
    prompt_len: Annotated[int | None, typer.Option(help="Prompt tokens for time to first token.")] = None,
    bandwidth_efficiency: Annotated[float | None, typer.Option(help="Achieved share of memory bandwidth.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Inference speed: decode tokens/s per sequence and in total, prefill, time to first token.

    Example: gpu-advisor speed --model Llama-2-7B --gpu "A100 80GB"
    """
    args = {
        "model": model,
        "gpu": gpu,
        "n_gpus": n_gpus,
        "precision": precision,
        "kv_precision": kv_precision,
        "batch": batch,
        "context_len": context_len,
        "prompt_len": prompt_len,
        "bandwidth_efficiency": bandwidth_efficiency,
    }
    r = calculate("inference_speed", args, lang_of(model + gpu), as_json)
    if r is None:
        return
    title = f"{r['model']} ({r['precision']}) on {r['n_gpus']}× {r['gpu']}, batch {r['batch']}, context {r['context_len']:,}"
    rows = [
        ("decode tokens/s per sequence", _num(r["decode_tokens_per_s"])),
        ("decode tokens/s, whole batch", _num(r["total_tokens_per_s"])),
        ("time per output token (ms)", _num(r["tpot_ms"])),
        ("prefill tokens/s", _num(r["prefill_tokens_per_s"])),
        (f"time to first token (s), {r['prompt_len']:,}-token prompt", _num(r["ttft_s"])),
        ("decode is bound by", r["bound"]),
        ("bytes read per step per GPU (GB)", _num(r["bytes_per_step_gb"])),
    ]
    console.print(table(title, ["", "value"], rows))
    console.print(assumptions_table(r["assumptions"]))


def register(app: typer.Typer) -> None:
    app.command("time")(time_cmd)
    app.command("speed")(speed_cmd)
