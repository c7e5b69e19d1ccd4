"""`gpu-advisor tools <name>`: every calculator in the registry as a command, generated from its input model.

    gpu-advisor tools list
    gpu-advisor tools fit_training --model 70B --gpu "A100 80GB" --method full   (or fit-training)
    gpu-advisor fit_training --help                                             (hidden alias, registry name)

The options are the input model's fields (`--n-gpus` for n_gpus) with the model's defaults, choices and
descriptions (`bot.cli.output.option_from`), so a calculator gains a command, and an option its help, the
moment the model has them: nothing is copied by hand. A structured value (a model given by its shape) is
JSON; a list is a repeatable option. Only what the user typed is sent, so `--json` prints exactly what
`tools.call` returns for those arguments. Where a friendly command has a hand-tuned renderer for the tool,
the output is that; otherwise a table of the output's fields and the assumptions.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from bot.cli.output import (
    JsonOpt,
    annotation_of,
    assumptions_table,
    console,
    field_kind,
    fmt,
    kebab,
    lang_of,
    option_from,
    print_json,
    table,
    user_errors,
)
from tools import registry
from tools.errors import InvalidInput

#: tool -> "module:function" of a friendly command's renderer for its output, imported only when that tool runs
RENDERERS = {
    "gpu_specs": "bot.cli.catalog:render_gpu",
    "fit_training": "bot.cli.fit:render_training",
    "fit_inference": "bot.cli.fit:render_inference",
    "training_time": "bot.cli.speed:render_time",
    "inference_speed": "bot.cli.speed:render_speed",
    "run_cost": "bot.cli.cost:render_cost",
    "rent_vs_buy": "bot.cli.cost:render_rent_vs_buy",
    "recommend_gpus": "bot.cli.select:render",
}
#: parameters of a generated command that are not input fields
CLI_ONLY = ("ctx", "as_json")
#: where a parameter's value came from when the user did not type it
_NOT_GIVEN = ("DEFAULT", "DEFAULT_MAP")


def summary(name: str) -> str:
    """The first sentence of the tool's description, on one line (docstrings wrap it, and some go on to say
    when the LLM should use the tool)."""
    text = " ".join(registry.get(name).description.split())
    return re.split(r"(?<=[.!?]) (?=[A-Z])", text, maxsplit=1)[0]


def _read(model: type, field: str, value: Any) -> Any:
    """The value as the input model takes it: a JSON object or array parsed (a model given by its shape);
    other text as typed, for the model to read (a name, '1B')."""
    if isinstance(value, tuple | list):
        return list(value)
    if field_kind(model, field)[0] != "json" or not isinstance(value, str) or value.lstrip()[:1] not in ("{", "["):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise InvalidInput(
            f"Invalid {field}: not valid JSON ({err.msg} at character {err.pos}).",
            f"字段“{field}”的值不是有效的 JSON（第 {err.pos} 个字符：{err.msg}）。",
            field=field,
        ) from None


def render(name: str, result: dict, lang: str = "en") -> None:
    """The friendly command's renderer for this tool where there is one, else `render_plain`."""
    if name not in RENDERERS:
        render_plain(name, result)
        return
    module, fn = RENDERERS[name].split(":")
    getattr(importlib.import_module(module), fn)(result, lang)


def tool_callback(name: str) -> Callable[..., None]:
    """The command function of one tool: a keyword parameter per input field, typed and documented by
    `option_from`, then `--json`. Typer reads the parameters from `__signature__`."""
    model = registry.get(name).input_model
    fields = list(model.model_fields)
    clash = [f for f in fields if f in CLI_ONLY or kebab(f) in ("json", "help")]
    if clash:  # a developer error: a new field would shadow the command's own options
        raise RuntimeError(f"{name}: input fields {clash} clash with the CLI's own options")

    def command(ctx: typer.Context, as_json: bool = False, **values: Any) -> None:
        given = {}
        for field, value in values.items():
            source = ctx.get_parameter_source(field)
            if source is not None and source.name not in _NOT_GIVEN:
                given[field] = value
        typed = " ".join(str(v) for v in given.values())
        lang = lang_of(typed)
        with user_errors(lang):
            args = {model.model_fields[f].alias or f: _read(model, f, v) for f, v in given.items()}
            result = registry.call(name, args)
        if as_json:
            print_json(result)
            return
        render(name, result, lang)

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("ctx", keyword, annotation=typer.Context)]
    params += [
        inspect.Parameter(f, keyword, default=option_from(model, f), annotation=annotation_of(model, f)) for f in fields
    ]
    params.append(
        inspect.Parameter(
            "as_json",
            keyword,
            default=typer.Option(False, "--json", help="Print the calculator's output as JSON, for scripts."),
            annotation=bool,
        )
    )
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__name__ = name
    return command


def _help(name: str) -> str:
    tool = registry.get(name)
    return f"{inspect.cleandoc(tool.description)}\n\nThe options are the fields of {tool.input_model.__name__}."


@functools.cache
def tool_command(name: str) -> Any:
    """The click command of one tool, built the first time it is named (so a run imports one calculator)."""
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    one.command(name, help=_help(name))(tool_callback(name))
    return typer.main.get_command(one)


def _unknown(name: str) -> None:
    """An unknown tool name: one line naming the closest tools (all of them when none is close), exit 2."""
    names = registry.names()
    near = difflib.get_close_matches(name.replace("-", "_"), names, n=3, cutoff=0.5)
    with user_errors(lang_of(name)):
        if near:
            raise InvalidInput(
                f"Unknown tool {name!r}. Did you mean: {', '.join(near)}?",
                f"未知的工具“{name}”。您是否指：{'、'.join(near)}？",
                field="name",
            )
        raise InvalidInput(
            f"Unknown tool {name!r}; the tools are: {', '.join(names)}.",
            f"未知的工具“{name}”；可用工具：{'、'.join(names)}。",
            field="name",
        )


class ToolsGroup(TyperGroup):
    """The `tools` group: `list`, then the registry's tools, each built only when named, under its registry
    name with underscores or hyphens; an unknown name gets the closest ones."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *registry.names()]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name.replace("-", "_") in registry.names():
            command = tool_command(cmd_name.replace("-", "_"))
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            _unknown(args[0])
        return super().resolve_command(ctx, args)


tools_app = typer.Typer(
    cls=ToolsGroup,
    help="Every calculator as a command, its options generated from its input model.",
    no_args_is_help=True,
)


@tools_app.command("list")
def tools_list(as_json: JsonOpt = False) -> None:
    """List the calculators: the name to give `gpu-advisor tools NAME` and what each one answers.

    Example: gpu-advisor tools list
    """
    rows = [(name, summary(name)) for name in registry.names()]
    if as_json:
        print_json([{"name": n, "description": d} for n, d in rows])
        return
    t = table("Calculators (gpu-advisor tools NAME --help)", ["tool", "what it answers"], rows)
    t.columns[1].justify = "left"
    console.print(t)


def register_aliases(app: typer.Typer) -> None:
    """Each tool also as a hidden top-level command under its exact registry name (`gpu-advisor fit_training`),
    the name the API, MCP and the LLM use; none clashes with a friendly command (`rent-vs-buy` has hyphens)."""
    taken = {c.name for c in app.registered_commands}  # a friendly command of that very name (`diagnose`) is it
    for name in registry.names():
        if name not in taken:
            app.command(name, hidden=True, help=_help(name))(tool_callback(name))


# the plain renderer: for tools no friendly command renders


def _cell(value: Any) -> str:
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(fmt(v) for v in value) or "—"
    if isinstance(value, dict | list):
        return f"{len(value)} item(s), see --json"
    return fmt(value)


def _label(record: dict, i: int) -> str:
    for key in ("name", "gpu", "precision", "stage"):
        if key in record:
            return fmt(record[key])
    return str(i + 1)


def render_plain(name: str, r: dict) -> None:
    """The output's top-level fields as a table; a nested record as its own table, a list of records as one
    with a column per record; then the assumptions. Headings are lines of their own, as a table's title
    would wrap to the table's width."""
    fields = {k: v for k, v in r.items() if k != "assumptions"}
    is_records = lambda v: isinstance(v, list) and v and all(isinstance(x, dict) for x in v)  # noqa: E731
    flat = [(k, _cell(v)) for k, v in fields.items() if not isinstance(v, dict) and not is_records(v)]
    console.print(f"[bold]{name}[/]: {escape(summary(name))}", highlight=False)
    if flat:
        console.print(table(None, ["field", "value"], flat))
    for key, value in fields.items():
        if isinstance(value, dict):
            console.print(f"[bold]{key}[/]", highlight=False)
            console.print(table(None, ["", "value"], [(k, _cell(v)) for k, v in value.items()]))
        elif is_records(value):
            keys = list(dict.fromkeys(k for rec in value for k in rec))
            columns = ["", *(_label(rec, i) for i, rec in enumerate(value))]
            console.print(f"[bold]{key}[/]", highlight=False)
            console.print(table(None, columns, [(k, *(_cell(rec.get(k)) for rec in value)) for k in keys]))
    console.print(assumptions_table(r.get("assumptions", [])))
