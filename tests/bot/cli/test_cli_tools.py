"""`gpu-advisor tools NAME` and the friendly commands against the calculators' input models: every option that is
an input field has the model's name, default, choices and help, and the commands answer what `tools.call` does."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer
from pydantic_core import PydanticUndefined
from typer.testing import CliRunner

import bot.cli as cli
import tools
from bot.cli.calculators import CLI_ONLY, tool_command
from tools import registry

ROOT = Path(__file__).parents[3]
WIDE = {"COLUMNS": "200"}
runner = CliRunner()

#: friendly command path -> the tool it runs
FRIENDLY = {
    ("fit", "train"): "fit_training",
    ("fit", "infer"): "fit_inference",
    ("time",): "training_time",
    ("speed",): "inference_speed",
    ("cost",): "run_cost",
    ("rent-vs-buy",): "rent_vs_buy",
    ("recommend",): "recommend_gpus",
}
#: friendly parameters named apart from their input field
RENAMED = {
    "checkpointing": "grad_checkpointing",
    "fabric": "nodes_fabric",
    "price": "price_cny_per_hour",
    "fx": "fx_cny_per_usd",
    "rent": "rent_cny_per_hour",
    "purchase": "purchase_cny",
    "electricity": "electricity_cny_per_kwh",
    "hosting": "hosting_cny_per_kw_month",
    "host_share": "host_share_cny_per_gpu",
    "residual": "residual_value_pct",
    "budget": "budget_cny",
    "china": "china_available",
}
#: options of the command line's own, not input fields
OWN = {"as_json", "plot"}


def plain(text: str) -> str:
    """Help text without the boxes and the wrapping, to search for whole phrases."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def literal_choices(annotation) -> tuple:
    """The values of the Literal in a field's annotation (inside Optional), read from Python, not the schema."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        if found := literal_choices(arg):
            return found
    return ()


def assert_option_is_the_field(option, model, field: str) -> None:
    info = model.model_fields[field]
    assert option.help == (info.description or ""), field
    assert option.show_default, field
    if info.default is PydanticUndefined:
        assert option.required, field
    else:
        assert not option.required and option.default == info.default, field
    choices = literal_choices(info.annotation)
    if choices:
        assert option.metavar == "[" + "|".join(choices) + "]", field
    else:
        assert option.metavar is None, field


def friendly_command(path: tuple[str, ...]):
    command = typer.main.get_command(cli.app)
    for part in path:
        command = command.commands[part]
    return command


@pytest.mark.parametrize("name", registry.names())
def test_a_generated_command_has_one_option_per_input_field(name):
    model = registry.get(name).input_model
    options = {p.name: p for p in tool_command(name).params if p.name not in CLI_ONLY}
    assert list(options) == list(model.model_fields)
    for field, option in options.items():
        kebab = field.replace("_", "-")
        assert option.opts == [f"--{kebab}"], field
        if model.model_fields[field].annotation in (bool, bool | None):
            assert option.secondary_opts == [f"--no-{kebab}"], field
        annotation = model.model_fields[field].annotation
        listed = [a for a in typing.get_args(annotation) if a is not type(None)] if annotation is not None else []
        is_list = typing.get_origin(annotation) is list or any(typing.get_origin(a) is list for a in listed)
        assert option.multiple == is_list, field  # an optional list (list[str] | None) is repeatable too
        assert_option_is_the_field(option, model, field)


@pytest.mark.parametrize("path", FRIENDLY, ids=" ".join)
def test_friendly_options_take_default_choices_and_help_from_the_model(path):
    model = registry.get(FRIENDLY[path]).input_model
    for option in friendly_command(path).params:
        if option.name in OWN:
            continue
        field = RENAMED.get(option.name, option.name)
        assert field in model.model_fields, f"{' '.join(path)} {option.opts}: not an input field, not the CLI's own"
        assert_option_is_the_field(option, model, field)


def test_friendly_commands_keep_their_option_names():
    names = {
        path: {o for p in friendly_command(path).params for o in (*p.opts, *p.secondary_opts)} for path in FRIENDLY
    }
    assert {"--zero", "--checkpointing", "--no-checkpointing", "--flash", "--no-flash", "-m", "-g", "-n"} <= names[
        ("fit", "train")
    ]
    assert {"--fabric", "--checkpointing", "-t", "--tokens"} <= names[("time",)]
    assert {"--price", "--fx", "--gpu-hours", "--hours"} <= names[("cost",)]
    assert {"--rent", "--purchase", "--electricity", "--hosting", "--host-share", "--residual", "--plot"} <= names[
        ("rent-vs-buy",)
    ]
    assert {"--budget", "--china", "--top", "--max-gpus", "-w", "--deadline-hours"} <= names[("recommend",)]
    assert "--no-china" not in names[("recommend",)]  # --china is a switch: given means only China-available GPUs


def test_fit_train_checkpointing_help_is_the_models_not_the_stale_copy():
    shown = plain(runner.invoke(cli.app, ["fit", "train", "--help"], env=WIDE).output)
    assert "on for QLoRA only" not in shown
    assert "on for full, LoRA and QLoRA training of models of 7B and more" in shown


@pytest.mark.parametrize("name", registry.names())
def test_help_of_every_tool_shows_its_defaults_and_descriptions(name):
    result = runner.invoke(cli.app, ["tools", name, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    shown = plain(result.output)
    for field, info in registry.get(name).input_model.model_fields.items():
        kebab = field.replace("_", "-")
        assert f"--{kebab}" in shown
        if info.description:
            assert " ".join(info.description.split()) in shown, field
        if info.default is True or info.default is False:
            assert f"[default: {'' if info.default else 'no-'}{kebab}]" in shown, field
        elif info.default not in (None, PydanticUndefined):
            assert f"[default: {info.default}]" in shown, field


def test_fit_training_prints_the_verdict_and_per_gpu_gb_of_the_calculator():
    argv = ["--model", "70B", "--gpu", "A100 80GB", "--method", "full"]
    expected = tools.call("fit_training", {"model": "70B", "gpu": "A100 80GB", "method": "full"})
    result = runner.invoke(cli.app, ["tools", "fit_training", *argv])
    assert result.exit_code == 0, result.output
    assert ("Fits." if expected["fits"] else "Does not fit.") in result.output
    assert f"needs {expected['per_gpu_gb']} GB per GPU" in plain(result.output)
    assert "Per-GPU memory (GB)" in result.output and "Assumptions" in result.output
    for spelling in (["tools", "fit-training"], ["fit_training"]):  # hyphens, and the hidden alias
        assert runner.invoke(cli.app, [*spelling, *argv]).output == result.output


@pytest.mark.parametrize(
    ("name", "argv", "args"),
    [
        (
            "fit_training",
            ["--model", "70B", "--gpu", "A100 80GB", "--method", "full"],
            {"model": "70B", "gpu": "A100 80GB", "method": "full"},
        ),
        (
            "fit_training",
            [
                "--model",
                '{"n_layers": 32, "hidden_size": 4096, "n_kv_heads": 8, "heads_per_kv": 4, "head_dim": 128, '
                '"ffn_size": 14336, "vocab_size": 128256}',
                "--gpu",
                "4090",
                "--method",
                "qlora",
                "--no-flash-attention",
            ],
            {
                "model": {
                    "n_layers": 32,
                    "hidden_size": 4096,
                    "n_kv_heads": 8,
                    "heads_per_kv": 4,
                    "head_dim": 128,
                    "ffn_size": 14336,
                    "vocab_size": 128256,
                },
                "gpu": "4090",
                "method": "qlora",
                "flash_attention": False,
            },
        ),
        (
            "compare_gpus",
            ["--gpus", "H100", "--gpus", "A100 80GB", "--gpus", "910B"],
            {"gpus": ["H100", "A100 80GB", "910B"]},
        ),
        (
            "training_time",
            ["--model", "7B", "--gpu", "H800", "--tokens", "1B", "--n-gpus", "8"],
            {"model": "7B", "gpu": "H800", "tokens": "1B", "n_gpus": 8},
        ),
        (
            "recommend_gpus",
            ["--model", "7B", "--workload", "infer", "--china-available"],
            {"model": "7B", "workload": "infer", "china_available": True},
        ),
        (
            "run_cost",
            ["--gpu", "H800", "--gpu-hours", "100", "--currency", "usd"],
            {"gpu": "H800", "gpu_hours": 100.0, "currency": "USD"},
        ),
        ("model_memory", ["--model", "13B"], {"model": "13B"}),
        ("power_draw", ["--gpu", "H100", "--pue", "1.3"], {"gpu": "H100", "pue": 1.3}),
        ("precision_speedup", ["--model", "8B", "--gpu", "H100"], {"model": "8B", "gpu": "H100"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_json_is_what_tools_call_returns(name, argv, args):
    result = runner.invoke(cli.app, ["tools", name, *argv, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == tools.call(name, args)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--n-gpus", "0"], "error: Invalid n_gpus: Input should be greater than or equal to 1."),
        (["--method", "foo"], "error: Invalid method: Input should be 'full', 'lora', 'qlora' or 'freeze'."),
        (["--gpu", "Z9000"], "error: Unknown GPU 'Z9000'."),
        (["--model", '{"n_layers": 32'], "error: Invalid model: not valid JSON"),
    ],
)
def test_a_wrong_value_is_one_clean_line_and_exit_2(argv, says):
    base = {"--model": "70B", "--gpu": "A100 80GB"}
    base.update(dict(zip(argv[::2], argv[1::2], strict=True)))
    result = runner.invoke(cli.app, ["tools", "fit_training", *[x for kv in base.items() for x in kv]])
    assert result.exit_code == 2
    assert plain(result.output).startswith(says), result.output
    assert "Traceback" not in result.output and "validation error" not in result.output
    assert len(result.output.strip().splitlines()) <= 2  # one line, wrapped at most once


def test_the_error_follows_the_language_typed():
    result = runner.invoke(cli.app, ["tools", "fit_training", "--model", "700亿参数", "--gpu", "A100", "--n-gpus", "0"])
    assert result.exit_code == 2
    assert "字段“n_gpus”的值无效" in result.output


def test_an_unknown_tool_names_the_closest():
    result = runner.invoke(cli.app, ["tools", "fit_trainig", "--model", "70B"])
    assert result.exit_code == 2
    assert "Unknown tool 'fit_trainig'. Did you mean: fit_training" in plain(result.output)
    far = runner.invoke(cli.app, ["tools", "zzz"])
    assert far.exit_code == 2 and all(name in plain(far.output) for name in registry.names())


def test_the_aliases_are_hidden_from_the_root_help_but_answer():
    root = runner.invoke(cli.app, ["--help"], env=WIDE).output
    assert "tools" in root
    shared = {"diagnose"}  # a friendly command of the tool's own name (it reads files, then calls the tool)
    assert not any(re.search(rf"\b{name}\b", root) for name in set(registry.names()) - shared)
    for name in registry.names():
        result = runner.invoke(cli.app, [name, "--help"], env=WIDE)
        assert result.exit_code == 0, result.output
        assert f"Usage: gpu-advisor {name} [OPTIONS]" in result.output
    assert {"rent-vs-buy", "time", "speed", "cost", "recommend"}.isdisjoint(registry.names())


def test_tools_list_names_every_tool_with_its_first_sentence():
    shown = plain(runner.invoke(cli.app, ["tools", "list"], env=WIDE).output)
    assert "fit_training Per-GPU memory of a training or fine-tuning run" in shown
    assert "Use it when" not in shown  # model_memory's advice to the LLM is not the one-line description
    listed = json.loads(runner.invoke(cli.app, ["tools", "list", "--json"]).output)
    assert [t["name"] for t in listed] == registry.names()
    assert all(t["description"] for t in listed)


def test_a_tool_without_a_friendly_renderer_prints_its_fields_and_assumptions():
    expected = tools.call("model_memory", {"model": "7B"})
    result = runner.invoke(cli.app, ["tools", "model_memory", "--model", "7B"], env=WIDE)
    assert result.exit_code == 0, result.output
    shown = plain(result.output)
    # the CLI writes a whole figure without decimals ("7B" is now exactly 7e9 parameters: 14 GB of bf16)
    weights = expected["weights_gb"]
    assert f"weights_gb {int(weights):,}" in shown if weights == int(weights) else f"weights_gb {weights:,.2f}" in shown
    assert "zero_stages" in shown and "per_gpu_gb" in shown and "Assumptions" in shown


def test_running_one_tool_imports_only_its_calculator():
    code = (
        "import sys\nsys.argv = ['gpu-advisor', 'tools', 'model_memory', '--model', '7B', '--json']\n"
        "from bot.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tools.', 'bot.cli.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    assert "tools.memory.model_memory" in loaded
    assert not loaded & {"tools.memory.fit_training", "tools.speed", "tools.money", "tools.recommend", "bot.cli.fit"}
