"""`gpu-advisor gpus list|show` and `gpu-advisor models list|show`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.output import JsonOpt, calculate, console, fmt, lang_of, print_json, table, user_errors
from bot.core.settings import Settings
from tools.catalog import user_models
from tools.catalog.architecture import kv_bytes_per_token, kv_layout, param_count
from tools.catalog.hf_config import add_from_config
from tools.catalog.lookup import get_model, gpus, models
from tools.errors import InvalidInput

gpus_app = typer.Typer(
    help="The GPU catalog: dense TFLOPS, memory, bandwidth, interconnect, sources.", no_args_is_help=True
)
models_app = typer.Typer(
    help="The model catalog: architecture from each model's published config.", no_args_is_help=True
)


@gpus_app.command("list")
def gpus_list(
    vendor: Annotated[str | None, typer.Option(help="Only this vendor (nvidia, amd, huawei, ...).")] = None,
    china: Annotated[bool, typer.Option("--china", help="Only cards available in mainland China.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the GPUs in the catalog.

    Example: gpu-advisor gpus list --vendor nvidia
    """
    rows = [g for g in gpus() if (vendor is None or g.vendor == vendor.lower()) and (not china or g.china.available)]
    if as_json:
        print_json([g.model_dump(mode="json") for g in rows])
        return
    console.print(
        table(
            "GPUs (dense tensor TFLOPS)",
            ["GPU", "memory GB", "type", "bandwidth GB/s", "bf16", "fp8", "link GB/s", "TDP W", "China"],
            [
                (
                    g.name,
                    g.memory_gb,
                    g.memory_type,
                    g.bandwidth_gb_s,
                    g.bf16_tflops or g.fp16_tflops,
                    g.fp8_tflops,
                    g.interconnect_gb_s,
                    g.tdp_w,
                    "yes" if g.china.available else "restricted",
                )
                for g in rows
            ],
            caption="Interconnect is the scale-up bandwidth per GPU, bidirectional total.",
        )
    )


@gpus_app.command("show")
def gpus_show(
    name: Annotated[str, typer.Argument(help="GPU name or alias, e.g. 'A100 80G', '昇腾910B'.")],
    as_json: JsonOpt = False,
) -> None:
    """Show one GPU with the source of every figure.

    Example: gpu-advisor gpus show H800
    """
    lang = lang_of(name)
    spec = calculate("gpu_specs", {"gpu": name}, lang, as_json)
    if spec is not None:
        render_gpu(spec, lang)


def render_gpu(spec: dict, lang: str = "en") -> None:
    """A gpu_specs output: the figures, China availability, notes and the source of every figure."""
    fields = [
        "memory_gb",
        "memory_type",
        "memory_reported_gib",
        "bandwidth_gb_s",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "bf16_tflops",
        "fp8_tflops",
        "int8_tops",
        "interconnect_kind",
        "interconnect_gb_s",
        "pcie_gen",
        "tdp_w",
        "form_factor",
        "launch_year",
    ]
    console.print(table(spec["name"], ["field", "value"], [(f, spec[f]) for f in fields]))
    console.print(f"[bold]China:[/] {'available' if spec['china_available'] else 'restricted'} — {spec['china_note']}")
    if spec.get("notes"):
        console.print(f"[bold]Notes:[/] {spec['notes']}")
    src = table(
        "Sources",
        ["source", "as of", "verified", "fields"],
        [(f"{s['title']}\n{s['url']}", s["as_of"], s["verified"], ", ".join(s["fields"])) for s in spec["sources"]],
    )
    console.print(src)


@models_app.command("list")
def models_list(as_json: JsonOpt = False) -> None:
    """List the models in the catalog.

    Example: gpu-advisor models list
    """
    rows = models()
    if as_json:
        print_json([m.model_dump(mode="json") for m in rows])
        return
    console.print(
        table(
            "Models",
            ["model", "params B", "active B", "layers", "hidden", "heads/kv", "attention", "context"],
            [
                (
                    m.name,
                    m.params_b,
                    m.active_params_b,
                    m.n_layers,
                    m.hidden_size,
                    f"{m.n_heads}/{m.n_kv_heads}",
                    m.attention,
                    m.max_context,
                )
                for m in rows
            ],
        )
    )


@models_app.command("show")
def models_show(
    name: Annotated[str, typer.Argument(help="Model name or size, e.g. 'Qwen2.5-72B', '70B'.")],
    as_json: JsonOpt = False,
) -> None:
    """Show one model's architecture, parameter count and KV cache per token.

    Example: gpu-advisor models show DeepSeek-V3
    """
    with user_errors(lang_of(name)):
        m = get_model(name)
    p = param_count(m)
    kv = kv_bytes_per_token(m, 2.0)
    if as_json:
        print_json(
            {
                **m.model_dump(mode="json"),
                "computed_params": p.total,
                "computed_active_params": p.active,
                "kv_cache_bytes_per_token_bf16": kv,
            }
        )
        return
    fields = [
        "family",
        "org",
        "n_layers",
        "hidden_size",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "ffn_size",
        "vocab_size",
        "params_b",
        "active_params_b",
        "n_experts",
        "experts_per_token",
        "attention",
        "kv_lora_rank",
        "max_context",
    ]
    rows = [(f, getattr(m, f)) for f in fields if getattr(m, f) is not None]
    rows += [("computed params B", round(p.total / 1e9, 2)), ("KV cache per token (bf16)", f"{fmt(kv)} B")]
    layout = kv_layout(m)
    if m.n_window_layers:  # the figure above holds within the window; beyond it only the full layers grow
        rows += [
            (
                f"{m.window_kind or 'sliding'}-window layers",
                f"{m.n_window_layers} of {m.n_layers} ({m.attention_window:,} tokens)",
            ),
            ("KV cache per token beyond the window (bf16)", f"{fmt(layout.full * 2.0)} B"),
        ]
    if m.n_linear_layers:
        rows += [
            ("linear-attention layers", f"{m.n_linear_layers} of {m.n_layers} (no KV cache)"),
            ("linear-attention state per sequence (bf16)", f"{fmt(layout.state * 2.0)} B"),
        ]
    console.print(table(m.name, ["field", "value"], rows))
    if m.notes:
        console.print(f"[bold]Notes:[/] {m.notes}")
    for s in m.sources:
        console.print(f"[dim]source:[/] {s.title} — {s.url} ({s.as_of})")


@models_app.command("add")
def models_add(
    config: Annotated[Path, typer.Option("--config", help="The model's Hugging Face config.json.")],
    name: Annotated[str | None, typer.Option(help="The name to know it by (else the config's _name_or_path).")] = None,
    source: Annotated[
        str | None, typer.Option(help="Where the config comes from (its URL), kept as its source.")
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a model added before under this name.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add a model from its config.json: stored in the data folder, known at once to fit, time, speed, recommend.

    Example: gpu-advisor models add --config config.json --name acme/Shenzhen-MoE-30B
    """
    lang = lang_of(name or "")
    with user_errors(lang):
        cfg = read_config(config)
        user_models.use_data_dir(Settings().data_dir)
        m = add_from_config(cfg, name=name, source_url=source, replace=replace)
    if as_json:
        print_json(m.model_dump(mode="json"))
        return
    active = (
        f", {m.active_params_b}B active ({m.n_experts} experts, {m.experts_per_token} per token)" if m.is_moe else ""
    )
    console.print(
        f"Added [bold]{m.name}[/] (id {m.id}): {m.params_b}B parameters{active}, {m.n_layers} layers, "
        f"{m.attention}, context {m.max_context:,}; counts computed from the config's shape.\n"
        f"Stored in {user_models.path()}. Try: gpu-advisor fit infer --model {m.id} --gpu H100",
        highlight=False,
    )


def read_config(path: Path) -> object:
    """The parsed config.json, or a message saying why it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInput(
            f"Cannot read {path}: {err.strerror or err}.", f"无法读取 {path}：{err.strerror or err}。"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidInput(
            f"{path} is not JSON (line {err.lineno}, column {err.colno}: {err.msg}).",
            f"{path} 不是有效的 JSON（第 {err.lineno} 行第 {err.colno} 列：{err.msg}）。",
        ) from None
