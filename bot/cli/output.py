"""What the calculator commands share: options made from the input models, rich tables for people, `--json`
for scripts, one clean line for errors."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from typer.models import OptionInfo

from bot.core.language import detect_language
from tools import call, registry
from tools.errors import AdvisorError

console = Console()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]

#: how a field is typed on the command line -> the Python type Typer parses it as
_KIND_TYPES: dict[str, type] = {"text": str, "choice": str, "json": str, "int": int, "float": float, "flag": bool}


@functools.cache
def _properties(model: type[BaseModel]) -> dict[str, dict]:
    return model.model_json_schema()["properties"]


def field_kind(model: type[BaseModel], field: str) -> tuple[str, tuple]:
    """(kind, choices) of a field on the command line: text, choice, json, int, float, flag or list.

    Read from the model's JSON schema, the calculators' published contract, rather than the Python annotation:
    the schema says that a token count is an integer *or* a phrase ('1B') and a model a name *or* its shape,
    where the annotation is `int` with a validator, or a tagged union. Structured values (objects, lists of
    objects) are given as JSON; a list of plain values is a repeatable option.
    """
    info = model.model_fields[field]
    prop = _properties(model)[info.alias or field]
    variants = [v for v in prop.get("anyOf") or prop.get("oneOf") or [prop] if v.get("type") != "null"]
    types: set[str] = set()
    for v in variants:
        t = "object" if "$ref" in v else v.get("type", "object")
        types.update(t if isinstance(t, list) else [t])
    if variants and all("enum" in v or "const" in v for v in variants):
        return "choice", tuple(c for v in variants for c in v.get("enum", [v.get("const")]))
    if "object" in types:
        return "json", ()
    if types == {"array"}:
        items = variants[0].get("items", {})
        return ("list", ()) if items.get("type") in ("string", "integer", "number") else ("json", ())
    if types == {"boolean"}:
        return "flag", ()
    if types == {"integer"}:
        return "int", ()
    if types <= {"integer", "number"}:
        return "float", ()
    return "text", ()


def annotation_of(model: type[BaseModel], field: str) -> Any:
    """The Python type Typer parses the field's option as (`X | None` where the model's default is None)."""
    kind, _ = field_kind(model, field)
    if kind == "list":
        item = _properties(model)[model.model_fields[field].alias or field].get("items", {}).get("type")
        item_type = {"integer": int, "number": float}.get(item, str)
        base: Any = list[item_type]
    else:
        base = _KIND_TYPES[kind]
    info = model.model_fields[field]
    return base | None if not info.is_required() and info.default is None else base


def kebab(field: str) -> str:
    return field.replace("_", "-")


def option_from(model: type[BaseModel], field: str, *decls: str) -> OptionInfo:
    """A `typer.Option` whose default, help and choices are the input model's, so the command line cannot drift
    from the calculator (a copied help text said gradient checkpointing was on for QLoRA only, long after the
    model's default changed). `decls` keep a command's own names (`--zero`, `-n`); by default the option is the
    field in kebab-case, a bool one `--flag/--no-flag`.

    A choice is not refused by the parser: a value outside the list reaches the input model, whose error names
    the field and the allowed values in the user's language (one line, exit code 2), like every other mistake.
    Choices match whatever the case ('usd' is USD).
    """
    info = model.model_fields[field]
    kind, choices = field_kind(model, field)
    if not decls:
        decls = (f"--{kebab(field)}/--no-{kebab(field)}" if kind == "flag" else f"--{kebab(field)}",)
    extra: dict[str, Any] = {}
    if kind == "choice":
        by_case = {str(c).casefold(): c for c in choices}
        extra["metavar"] = "[" + "|".join(str(c) for c in choices) + "]"
        extra["parser"] = lambda value: by_case.get(str(value).casefold(), value)
    default = ... if info.is_required() else info.default
    return typer.Option(default, *decls, help=info.description or "", show_default=True, **extra)


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


def table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None
) -> Table:
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
