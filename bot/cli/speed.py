"""`gpu-advisor time` (training time) and `gpu-advisor speed` (inference tokens/s).

The options that are input fields take their default and help from the input model (`option_from`).
"""

from __future__ import annotations

import typer

from bot.cli.output import JsonOpt, assumptions_table, calculate, console, lang_of, option_from, table
from tools.schemas.speed import InferenceSpeedInput as Speed
from tools.schemas.speed import TrainingTimeInput as Time


def _num(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")


def time_cmd(
    model: str = option_from(Time, "model", "--model", "-m"),
    gpu: str = option_from(Time, "gpu", "--gpu", "-g"),
    tokens: str = option_from(Time, "tokens", "--tokens", "-t"),
    n_gpus: int = option_from(Time, "n_gpus", "--n-gpus", "-n"),
    method: str = option_from(Time, "method"),
    precision: str = option_from(Time, "precision"),
    seq_len: int = option_from(Time, "seq_len"),
    mfu: float | None = option_from(Time, "mfu"),
    checkpointing: bool | None = option_from(Time, "grad_checkpointing", "--checkpointing/--no-checkpointing"),
    tp: int = option_from(Time, "tp"),
    pp: int = option_from(Time, "pp"),
    fabric: str = option_from(Time, "nodes_fabric", "--fabric"),
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
    lang = lang_of(model + gpu + tokens)
    r = calculate("training_time", args, lang, as_json)
    if r is not None:
        render_time(r, lang)


def render_time(r: dict, lang: str = "en") -> None:
    """A training_time output: hours, days, GPU-hours and MFU with their range, then the assumptions."""
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
    model: str = option_from(Speed, "model", "--model", "-m"),
    gpu: str = option_from(Speed, "gpu", "--gpu", "-g"),
    n_gpus: int = option_from(Speed, "n_gpus", "--n-gpus", "-n"),
    precision: str | None = option_from(Speed, "precision"),
    kv_precision: str = option_from(Speed, "kv_precision"),
    batch: int = option_from(Speed, "batch"),
    context_len: int = option_from(Speed, "context_len"),
    prompt_len: int | None = option_from(Speed, "prompt_len"),
    bandwidth_efficiency: float | None = option_from(Speed, "bandwidth_efficiency"),
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
    lang = lang_of(model + gpu)
    r = calculate("inference_speed", args, lang, as_json)
    if r is not None:
        render_speed(r, lang)


def render_speed(r: dict, lang: str = "en") -> None:
    """An inference_speed output: decode and prefill rates, time to first token, what bounds decode."""
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
