"""Every `gpu-advisor fit …` command a note tells readers to run works, and the corrections' verdicts
agree with the calculator (the knowledge base must not drift from the code it cites)."""

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli import app

DOCS = Path(__file__).parents[2] / "knowledge" / "docs"
COMMAND = re.compile(r"`gpu-advisor (fit (?:train|infer)[^`]*)`")


def _notes():
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        meta = yaml.safe_load(text.split("---", 2)[1])
        yield path.stem, meta, text


COMMANDS = sorted({(doc, m.group(1)) for doc, _, text in _notes() for m in COMMAND.finditer(text)})

#: what each correction note claims for its command (model, gpu, method) -> fits
CLAIMED = {
    ("70B", "H200", "full"): False,
    ("70B", "H100 NVL", "full"): False,
    ("70B", "A100 80GB", "full"): False,
    ("70B", "A100 80GB", "lora"): False,
    ("70B", "A100 80GB", "qlora"): True,
    ("70B", "H200", "qlora"): True,
    ("7B", "A100 40GB", "full"): False,
    ("7B", "A100 80GB", "full"): False,
    ("13B", "A100 80GB", "full"): False,
}


@pytest.mark.parametrize(("doc", "command"), COMMANDS, ids=[f"{d}: {c}" for d, c in COMMANDS])
def test_note_command_runs_and_its_correction_holds(doc, command):
    args = shlex.split(command) + ["--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    opts = dict(zip(args[2::2], args[3::2]))
    key = (opts["--model"], opts["--gpu"], opts.get("--method", "full"))
    if doc.startswith("correction") and key in CLAIMED:
        assert out["fits"] is CLAIMED[key], (doc, out["per_gpu_gb"], out["usable_gb"])


def test_the_corrections_are_all_checked():
    checked = {d for d, c in COMMANDS if d.startswith("correction")}
    corrections = {doc for doc, meta, _ in _notes() if "correction" in meta["topics"] and doc.startswith("correction")}
    assert corrections <= checked
