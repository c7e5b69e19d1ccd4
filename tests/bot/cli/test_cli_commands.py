"""The command table: `--help` lists every command, and `gpu-advisor <command>` loads only that command's module."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import bot.cli as cli
from tools import registry

ROOT = Path(__file__).parents[3]
NAMES = [n for *_, names in cli._SUBCOMMANDS for n in names]
MODULES = {m for m, *_ in cli._SUBCOMMANDS}


@pytest.mark.parametrize(("module_name", "attr", "group", "names"), cli._SUBCOMMANDS)
def test_the_table_names_the_commands_each_module_adds(module_name, attr, group, names):
    target = getattr(importlib.import_module(module_name), attr)
    if group is not None:
        assert isinstance(target, typer.Typer) and names == (group,)
        return
    probe = typer.Typer()
    target(probe)
    assert tuple(c.name for c in probe.registered_commands) == names


#: friendly commands named as their tool is in the registry (`gpu-advisor diagnose` reads files, then calls it)
SHARED = {"diagnose"}


def test_help_lists_every_command_but_the_hidden_tool_aliases():
    result = CliRunner().invoke(cli.app, ["--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    commands = result.output[result.output.index("Commands") :]
    listed = re.findall(r"^│ ([a-z_-]+) ", commands, re.M)
    assert sorted(listed) == sorted((set(NAMES) - set(registry.names())) | SHARED)
    assert "tools" in listed and not set(listed) & (set(registry.names()) - SHARED)


def test_the_table_names_every_registry_tool_as_an_alias():
    assert cli._TOOL_NAMES == tuple(registry.names())
    hidden = {c.name for c in cli.app.registered_commands if c.hidden}
    assert hidden == set(registry.names()) - SHARED  # a friendly command of the tool's own name is its alias


@pytest.mark.parametrize(
    ("argv", "module", "shows"),
    [
        (["ask", "--help"], "bot.cli.advisor", "Ask the advisor one question"),
        (["mcp", "--help"], "bot.cli.mcp", "MCP"),  # a module adding a single command is still a sub-command
        (["tools", "--help"], "bot.cli.calculators", "fit_training"),
        (["fit_training", "--help"], "bot.cli.calculators", "Per-GPU memory"),  # a hidden alias
    ],
)
def test_a_command_loads_only_its_own_module(argv, module, shows):
    code = (
        "import sys\nsys.argv = ['gpu-advisor', *sys.argv[1:]]\nfrom bot.cli import main\ntry:\n    main()\n"
        "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('bot.cli.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "120"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert shows in done.stdout and f"Usage: gpu-advisor {argv[0]} [OPTIONS]" in done.stdout
    loaded = set(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    assert loaded & MODULES == {module}
