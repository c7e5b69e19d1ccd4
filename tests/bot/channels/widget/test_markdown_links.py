"""The panel's Markdown keeps a link only when it is safe: a proposal's files, linked as paths on this server (no
public URL configured), open against the panel's own origin; any other relative or script link is dropped.
Runs the panel's own module under Node (skipped where Node is not installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).parents[4] / "bot" / "channels" / "widget" / "static" / "markdown.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to run the panel's module")
def test_only_this_servers_proposal_files_resolve_as_relative_links(tmp_path):
    script = tmp_path / "check.mjs"
    script.write_text(
        'globalThis.location = { protocol: "https:", origin: "https://advisor.example.com" };\n'
        f"const {{ safeHref }} = await import({json.dumps(MODULE.as_uri())});\n"
        "console.log(JSON.stringify(["
        '"/v1/proposals/files/ab/proposal.md?expires=1&sig=2", "/v1/ask", "javascript:alert(1)", "https://x.org/a"'
        "].map(safeHref)));\n",
        encoding="utf-8",
    )
    done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        "https://advisor.example.com/v1/proposals/files/ab/proposal.md?expires=1&sig=2",
        None,
        None,
        "https://x.org/a",
    ]
