"""`gpu-advisor`: noun-verb commands over the calculators, the knowledge base and the advisor.

    gpu-advisor gpus list | show NAME
    gpu-advisor models list | show NAME
    gpu-advisor fit train|infer --model 70B --gpu "A100 80GB" ...
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="gpu-advisor",
    help="Choose GPUs for AI training and inference; every number comes from code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: (module, attribute, command-group name or None for top-level commands)
_SUBCOMMANDS = [
    ("bot.cli.catalog", "gpus_app", "gpus"),
    ("bot.cli.catalog", "models_app", "models"),
    ("bot.cli.fit", "fit_app", "fit"),
    ("bot.cli.speed", "register", None),  # time, speed
    ("bot.cli.cost", "register", None),  # cost, rent-vs-buy
    ("bot.cli.select", "register", None),  # recommend
    ("bot.cli.kb", "kb_app", "kb"),
    ("bot.cli.advisor", "register", None),
    ("bot.cli.serve", "register", None),  # serve
    ("bot.cli.keys", "keys_app", "keys"),
    ("bot.cli.wecom", "wecom_app", "wecom"),
    ("bot.cli.slack", "slack_app", "slack"),
    ("bot.cli.mcp", "register", None),  # mcp (stdio)
]


def _register() -> None:
    for module_name, attr, group in _SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue  # that part of the CLI is not built yet
            raise
        target = getattr(module, attr)
        if group is None:
            target(app)
        else:
            app.add_typer(target, name=group)


_register()


def main() -> None:
    app()
