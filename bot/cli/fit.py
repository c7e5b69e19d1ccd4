"""`gpu-advisor fit train|infer`: will it fit, and if not, what would."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.panel import Panel

from bot.cli.output import GpuOpt, JsonOpt, ModelOpt, NGpusOpt, assumptions_table, calculate, console, lang_of, table

fit_app = typer.Typer(
    help="GPU memory: does a training run or a served model fit, and what would.", no_args_is_help=True
)


def _breakdown(result: dict) -> None:
    rows = [(k.replace("_", " "), v) for k, v in result["breakdown_gb"].items() if v]
    rows.append(("total per GPU", result["per_gpu_gb"]))
    console.print(
        table(
            "Per-GPU memory (GB)",
            ["component", "GB"],
            rows,
            caption=f"usable {result['usable_gb']} GB of {result['capacity_gb']} GB",
        )
    )


def _verdict(result: dict, what: str) -> None:
    if result["fits"]:
        console.print(
            Panel(
                f"[bold green]Fits.[/] {what} needs {result['per_gpu_gb']} GB per GPU; "
                f"{result['usable_gb']} GB usable ({result['headroom_gb']} GB to spare).",
                expand=False,
            )
        )
    else:
        console.print(
            Panel(
                f"[bold red]Does not fit.[/] {what} needs {result['per_gpu_gb']} GB per GPU, "
                f"{result['shortfall_gb']} GB more than the {result['usable_gb']} GB usable.",
                expand=False,
            )
        )


@fit_app.command("train")
def fit_train(
    model: ModelOpt,
    gpu: GpuOpt,
    method: Annotated[str, typer.Option(help="full | lora | qlora | freeze")] = "full",
    n_gpus: NGpusOpt = 1,
    precision: Annotated[str, typer.Option(help="bf16 | fp16 | fp8 | fp32")] = "bf16",
    optimizer: Annotated[str, typer.Option(help="adamw | adamw8bit | sgd | adafactor")] = "adamw",
    zero_stage: Annotated[
        int | None, typer.Option("--zero", help="ZeRO stage 0–3 (default: lowest that fits).")
    ] = None,
    offload: Annotated[str, typer.Option(help="none | optimizer | optimizer+params")] = "none",
    seq_len: Annotated[int, typer.Option(help="Tokens per sequence.")] = 2048,
    micro_batch: Annotated[int, typer.Option(help="Sequences per GPU per step.")] = 1,
    checkpointing: Annotated[
        bool | None,
        typer.Option("--checkpointing/--no-checkpointing", help="Gradient checkpointing (default: on for QLoRA only)."),
    ] = None,
    flash_attention: Annotated[bool, typer.Option("--flash/--no-flash", help="Flash attention.")] = True,
    tp: Annotated[int, typer.Option(help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline stages.")] = 1,
    lora_rank: Annotated[int, typer.Option(help="LoRA rank.")] = 16,
    as_json: JsonOpt = False,
) -> None:
    """Memory of a training or fine-tuning run, per GPU, and what would make it fit.

    Example: gpu-advisor fit train --model 70B --gpu "A100 80GB" --method full
    """
    args = {
        "model": model,
        "gpu": gpu,
        "method": method,
        "n_gpus": n_gpus,
        "precision": precision,
        "optimizer": optimizer,
        "offload": offload,
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "grad_checkpointing": checkpointing,
        "flash_attention": flash_attention,
        "tp": tp,
        "pp": pp,
        "lora_rank": lora_rank,
    }
    if zero_stage is not None:
        args["zero_stage"] = zero_stage
    r = calculate("fit_training", args, lang_of(model + gpu), as_json)
    if r is None:
        return
    what = f"{r['method']} training of {r['model']} on {r['n_gpus']}× {r['gpu']} (ZeRO-{r['zero_stage']})"
    _verdict(r, what)
    _breakdown(r)
    if r["host_ram_gb"]:
        console.print(f"Host RAM for offload: about {r['host_ram_gb']} GB per node.")
    if not r["fits"]:
        why = max((k for k in r["breakdown_gb"]), key=lambda k: r["breakdown_gb"][k])
        console.print(
            f"[bold]Why:[/] the largest part is {why.replace('_', ' ')} "
            f"({r['breakdown_gb'][why]} GB per GPU); model states take {r['bytes_per_param_states']:g} bytes "
            f"per trainable parameter × {r['trainable_params_b']:g} B parameters."
        )
        if r["suggestions"]:
            console.print(
                table(
                    "What would fit",
                    ["change", "GPUs", "GPU", "GB per GPU"],
                    [(s["description_en"], s["n_gpus"], s["gpu"], s["per_gpu_gb"]) for s in r["suggestions"]],
                )
            )
        else:
            console.print("No single change makes it fit on this card; see min GPUs below.")
    if r["min_gpus"]:
        console.print(
            f"Minimum: {r['min_gpus']} × {r['gpu']} with ZeRO-{r['min_gpus_zero_stage']} for this method and settings."
        )
    else:
        console.print("It does not fit at any GPU count with these settings (activations alone exceed one card).")
    console.print(assumptions_table(r["assumptions"]))


@fit_app.command("infer")
def fit_infer(
    model: ModelOpt,
    gpu: GpuOpt,
    n_gpus: NGpusOpt = 1,
    precision: Annotated[str, typer.Option(help="Weights: bf16 | fp16 | fp8 | int8 | int4 | nf4")] = "bf16",
    kv_precision: Annotated[str | None, typer.Option(help="KV cache: bf16 | fp16 | fp8 | int8")] = None,
    batch: Annotated[int, typer.Option(help="Concurrent sequences.")] = 1,
    context_len: Annotated[
        int | None, typer.Option(help="Tokens per sequence (default 4096 or the model's maximum).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory to serve a model: weights, KV cache, workspace; min GPUs and max batch.

    Example: gpu-advisor fit infer --model Qwen2.5-72B --gpu H20 --n-gpus 2 --batch 16
    """
    args = {"model": model, "gpu": gpu, "n_gpus": n_gpus, "precision": precision, "batch": batch}
    if kv_precision:
        args["kv_precision"] = kv_precision
    if context_len:
        args["context_len"] = context_len
    r = calculate("fit_inference", args, lang_of(model + gpu), as_json)
    if r is None:
        return
    _verdict(
        r,
        f"Serving {r['model']} ({precision}) on {r['n_gpus']}× {r['gpu']} at batch {r['batch']} × {r['context_len']} tokens",
    )
    _breakdown(r)
    console.print(
        f"KV cache: {r['kv_cache_bytes_per_token']:,.0f} B per token, {r['kv_cache_gb_per_sequence']} GB per sequence."
    )
    console.print(
        f"Max batch at {r['context_len']} tokens: {r['max_batch']}; max context at batch {r['batch']}: {r['max_context']:,} tokens."
    )
    console.print(f"Min GPUs: {r['min_gpus']}" if r["min_gpus"] else "Does not fit at any GPU count considered.")
    console.print(assumptions_table(r["assumptions"]))
