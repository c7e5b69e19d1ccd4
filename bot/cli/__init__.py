"""`gpu-advisor`: noun-verb commands over the calculators, the knowledge base and the advisor.

    gpu-advisor gpus list | show NAME
    gpu-advisor models list | show NAME
    gpu-advisor fit train|infer --model 70B --gpu "A100 80GB" ...
    gpu-advisor tools list | NAME ...        every calculator, its options generated from its input model

`gpu-advisor <command> …` imports only the module of that command (a start costs less); `--help`, no
command or an unknown one registers them all. `app` (as tests and other code import it) has them all.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

_app = typer.Typer(
    name="gpu-advisor",
    help="Choose GPUs for AI training and inference; every number comes from code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@_app.callback()
def _root() -> None:
    # a group even when one command is registered (else Typer would run that command as the root)
    pass


#: the registry's tool names (`tools.registry.names()`, which tests compare with this), each a hidden top-level
#: alias of `gpu-advisor tools NAME`; written out so that starting the CLI does not import the registry to learn them
_TOOL_NAMES = (
    "gpu_specs",
    "compare_gpus",
    "fit_training",
    "fit_inference",
    "training_time",
    "inference_speed",
    "run_cost",
    "rent_vs_buy",
    "recommend_gpus",
    "model_memory",
    "power_draw",
    "precision_speedup",
    "diagnose",
    "plan_serving",
    "plan_system",
    "plan_cluster",
)

#: (module, attribute, command-group name or None for top-level commands, the command names it adds)
_SUBCOMMANDS = [
    ("bot.cli.catalog", "gpus_app", "gpus", ("gpus",)),
    ("bot.cli.catalog", "models_app", "models", ("models",)),
    ("bot.cli.fit", "fit_app", "fit", ("fit",)),
    ("bot.cli.speed", "register", None, ("time", "speed")),
    ("bot.cli.cost", "register", None, ("cost", "rent-vs-buy")),
    ("bot.cli.select", "register", None, ("recommend", "proposal")),
    ("bot.cli.kb", "kb_app", "kb", ("kb",)),
    ("bot.cli.advisor", "register", None, ("ask", "chat", "diagnose")),
    ("bot.cli.serve", "register", None, ("serve",)),
    ("bot.cli.keys", "keys_app", "keys", ("keys",)),
    ("bot.cli.wecom", "wecom_app", "wecom", ("wecom",)),
    ("bot.cli.slack", "slack_app", "slack", ("slack",)),
    ("bot.cli.mcp", "register", None, ("mcp",)),
    ("bot.cli.calculators", "tools_app", "tools", ("tools",)),
    ("bot.cli.calculators", "register_aliases", None, _TOOL_NAMES),
    ("bot.cli.settings_table", "register", None, ("settings",)),
    ("bot.cli.sales.prices", "prices_app", "prices", ("prices",)),
]
_registered: set[tuple[str, str]] = set()


def _register(command: str | None = None) -> None:
    """Register the sub-commands (in the table's order), or only the module that adds `command`."""
    for module_name, attr, group, names in _SUBCOMMANDS:
        if (command is not None and command not in names) or (module_name, attr) in _registered:
            continue
        _registered.add((module_name, attr))
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue  # that part of the CLI is not built yet
            raise
        target = getattr(module, attr)
        if group is None:
            target(_app)
        else:
            _app.add_typer(target, name=group)


def __getattr__(name: str) -> Any:
    if name == "app":
        _register()
        return _app
    raise AttributeError(f"module 'bot.cli' has no attribute {name!r}")


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector off while a command loads what it needs (and, for a one-shot command,
    while it answers): a start leaves ~120,000 tracked objects (modules, classes, schemas, compiled
    patterns) and next to nothing to collect, yet the collector keeps examining them as they pile up: a sixth to a
    third of a warm `gpu-advisor ask`'s CPU (bench/README.md). `freeze=True` (a process's start, `main`) then moves what was loaded out
    of later collections' way (`gc.freeze`), for a command that stays up (`chat`, `serve`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def main() -> None:
    args = sys.argv[1:]
    known = {n for *_, names in _SUBCOMMANDS for n in names}
    with collector_paused(freeze=True):
        _register(args[0] if args and args[0] in known else None)
    _app()
