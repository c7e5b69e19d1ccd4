"""Output for the CLI: rich tables for people, `--json` for scripts, one clean line for errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from bot.core.language import detect_language
from tools import call, registry
from tools.errors import AdvisorError

console = Console()

# options shared by the calculator commands
ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="Model name or size: 'Llama-3-70B', 'Qwen2.5-7B', '70B', '700亿参数'.")
]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="GPU name or alias: 'A100 80GB', 'H800', '4090D', '910B'.")]
NGpusOpt = Annotated[int, typer.Option("--n-gpus", "-n", help="Number of GPUs.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def given_options(args: dict, model: type) -> dict:
    """Only the options the user set or changed, so the output can tell given values from defaults."""
    fields = model.model_fields
    return {k: v for k, v in args.items() if v is not None and (fields[k].is_required() or v != fields[k].default)}


err_console = Console(stderr=True)


lang_of = detect_language  # the language of what the user typed, for one-line errors


@contextmanager
def user_errors(lang: str = "en"):
    """Turn an `AdvisorError` into one line on stderr and exit code 2; never a stack trace."""
    try:
        yield
    except AdvisorError as err:
        err_console.print(f"[bold red]error:[/] {err.message(lang)}", highlight=False)
        raise typer.Exit(2) from None


def print_json(data: Any) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> Table:
    t = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*(fmt(v) for v in row))
    return t


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def assumptions_table(assumptions: Iterable[Any]) -> Table:
    rows = []
    for a in assumptions:
        a = a if isinstance(a, dict) else a.model_dump()
        value = f"{fmt(a['value'])} {a.get('unit') or ''}".strip()
        rows.append((a["key"], value, "default" if a.get("default") else "given", a.get("note", "")))
    t = table("Assumptions", ["assumption", "value", "", "note"], rows)
    t.columns[3].justify = "left"
    return t


def calculate(name: str, args: dict, lang: str, as_json: bool = False) -> dict | None:
    """Run calculator `name` on the options the user gave: an error is one clean line; with --json the
    output is printed here and None returned; otherwise the output comes back to be rendered."""
    with user_errors(lang):
        result = call(name, given_options(args, registry.get(name).input_model))
    if as_json:
        print_json(result)
        return None
    return result
