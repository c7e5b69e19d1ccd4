"""`gpu-advisor fit train|infer`: will it fit, and if not, what would.

The options that are input fields take their default and help from the input model (`option_from`).
"""

from __future__ import annotations

import typer
from rich.panel import Panel

from bot.cli.output import JsonOpt, assumptions_table, calculate, console, lang_of, option_from, table
from tools.schemas.memory import FitInferenceInput as Infer
from tools.schemas.memory import FitTrainingInput as Train

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
    model: str = option_from(Train, "model", "--model", "-m"),
    gpu: str = option_from(Train, "gpu", "--gpu", "-g"),
    method: str = option_from(Train, "method"),
    n_gpus: int = option_from(Train, "n_gpus", "--n-gpus", "-n"),
    precision: str = option_from(Train, "precision"),
    optimizer: str = option_from(Train, "optimizer"),
    zero_stage: int | None = option_from(Train, "zero_stage", "--zero"),
    offload: str = option_from(Train, "offload"),
    seq_len: int = option_from(Train, "seq_len"),
    micro_batch: int = option_from(Train, "micro_batch"),
    checkpointing: bool | None = option_from(Train, "grad_checkpointing", "--checkpointing/--no-checkpointing"),
    flash_attention: bool = option_from(Train, "flash_attention", "--flash/--no-flash"),
    tp: int = option_from(Train, "tp"),
    pp: int = option_from(Train, "pp"),
    lora_rank: int = option_from(Train, "lora_rank"),
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
        "zero_stage": zero_stage,
        "offload": offload,
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "grad_checkpointing": checkpointing,
        "flash_attention": flash_attention,
        "tp": tp,
        "pp": pp,
        "lora_rank": lora_rank,
    }
    lang = lang_of(model + gpu)
    r = calculate("fit_training", args, lang, as_json)
    if r is not None:
        render_training(r, lang)


def render_training(r: dict, lang: str = "en") -> None:
    """A fit_training output: the verdict, the per-GPU breakdown, why it does not fit and what would."""
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
    model: str = option_from(Infer, "model", "--model", "-m"),
    gpu: str = option_from(Infer, "gpu", "--gpu", "-g"),
    n_gpus: int = option_from(Infer, "n_gpus", "--n-gpus", "-n"),
    precision: str | None = option_from(Infer, "precision"),
    kv_precision: str | None = option_from(Infer, "kv_precision"),
    batch: int = option_from(Infer, "batch"),
    context_len: int | None = option_from(Infer, "context_len"),
    as_json: JsonOpt = False,
) -> None:
    """Memory to serve a model: weights, KV cache, workspace; min GPUs and max batch.

    Example: gpu-advisor fit infer --model Qwen2.5-72B --gpu H20 --n-gpus 2 --batch 16
    """
    args = {
        "model": model,
        "gpu": gpu,
        "n_gpus": n_gpus,
        "precision": precision,
        "kv_precision": kv_precision,
        "batch": batch,
        "context_len": context_len,
    }
    lang = lang_of(model + gpu)
    r = calculate("fit_inference", args, lang, as_json)
    if r is not None:
        render_inference(r, lang)


def render_inference(r: dict, lang: str = "en") -> None:
    """A fit_inference output: the verdict, the breakdown, KV cache, max batch and context, min GPUs."""
    precision = next((a["value"] for a in r["assumptions"] if a["key"] == "precision"), None)
    served = f"Serving {r['model']}" + (f" ({precision})" if precision else "")
    _verdict(r, f"{served} on {r['n_gpus']}× {r['gpu']} at batch {r['batch']} × {r['context_len']} tokens")
    _breakdown(r)
    console.print(
        f"KV cache: {r['kv_cache_bytes_per_token']:,.0f} B per token, {r['kv_cache_gb_per_sequence']} GB per sequence."
    )
    console.print(
        f"Max batch at {r['context_len']} tokens: {r['max_batch']}; max context at batch {r['batch']}: {r['max_context']:,} tokens."
    )
    console.print(f"Min GPUs: {r['min_gpus']}" if r["min_gpus"] else "Does not fit at any GPU count considered.")
    console.print(assumptions_table(r["assumptions"]))
