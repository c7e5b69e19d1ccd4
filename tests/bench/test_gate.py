"""The benchmark gate in CI (issue 28): `bench/load.py --quick` and `bench/calculators.py --quick` measure
/v1/ask against /healthz and every calculator against a trivial function in the same run, and fail when a
ratio regressed past its margin in bench/gate.yaml. Marked slow (a server process, about 30 s): the fast lane
leaves it out, `.ci/run`'s full `pytest` runs it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _gate(script: str, timeout: int, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(("script", "timeout"), [("calculators.py", 120), ("load.py", 240)])
def test_no_ratio_regressed(script, timeout):
    done = _gate(script, timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "gate: passed" in done.stdout


def test_limits_are_ratios_with_margins():
    """Every reference names a registered calculator (a renamed one would silently fall back to the default)."""
    from tools import registry

    limits = yaml.safe_load((ROOT / "bench" / "gate.yaml").read_text(encoding="utf-8"))
    assert set(limits["calculators"]["reference"]) <= set(registry.names())
    assert limits["calculators"]["margin"] > 1 and limits["load"]["ask_throughput_share"]["margin"] > 1


def test_every_registered_tool_is_measured_and_gated():
    """A registered tool without bench inputs would print "not gated" and slip past the gate; every one has inputs
    (each valid for its input model) and a reference of its own in gate.yaml."""
    import importlib.util

    from tools import registry

    spec = importlib.util.spec_from_file_location("bench_calculators", ROOT / "bench" / "calculators.py")
    calculators = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calculators)
    inputs = calculators._inputs()
    limits = yaml.safe_load((ROOT / "bench" / "gate.yaml").read_text(encoding="utf-8"))
    for name in registry.names():
        assert inputs.get(name), f"{name}: no inputs in bench/calculators.py"
        tool = registry.get(name)
        for args in inputs[name]:
            tool.fn(tool.input_model.model_validate(args))
        assert name in limits["calculators"]["reference"], f"{name}: no reference in bench/gate.yaml"


def test_a_regression_fails_the_gate(tmp_path):
    """A limit a calculator cannot meet (a hundredth of its ratio today) fails the run, naming what regressed."""
    limits = yaml.safe_load((ROOT / "bench" / "gate.yaml").read_text(encoding="utf-8"))
    limits["calculators"]["reference"]["fit_training"] = 0.8  # the others keep today's references
    strict = tmp_path / "gate.yaml"
    strict.write_text(yaml.safe_dump(limits), encoding="utf-8")
    done = _gate("calculators.py", 120, {"BENCH_GATE_LIMITS": str(strict)})
    assert done.returncode == 1, done.stdout
    assert done.stdout.rstrip().endswith("gate: FAILED: fit_training"), done.stdout
