"""Golden rows of `diagnose` (tests/golden/diagnose.yaml): each reproduces a figure a public thread's error
message or log printed, from the setup the thread states, within the row's tolerance."""

from pathlib import Path

import pytest
import yaml

import tools
from tools.diagnose.context import read_setup
from tools.diagnose.serve import kv_pool, utilization
from tools.schemas.diagnose import DiagnoseInput

ROWS = yaml.safe_load((Path(__file__).parents[2] / "golden" / "diagnose.yaml").read_text(encoding="utf-8"))


def _near(got: float, want: float, tol: float) -> bool:
    return abs(got - want) <= tol * abs(want) + 1e-9


def test_the_golden_rows_cite_public_threads_and_cover_the_frameworks():
    assert {r["framework"] for r in ROWS} >= {"vllm", "deepspeed", "pytorch"}
    for r in ROWS:
        assert r["url"].startswith("https://github.com/") and r["published"] and r["source"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_diagnose_reproduces_the_published_figure(row):
    out = tools.call("diagnose", row["input"])
    want, tol = row["expect"], row["tolerance"]
    first = out["causes"][0]
    if "cause" in want:
        assert first["cause"] == want["cause"], out["causes"]
        assert first["matches_evidence"]
    if "figure_gib" in want:
        assert _near(first["figure_gib"], want["figure_gib"], tol), first
        assert f"{first['figure_gib']:.2f} GiB" in first["arithmetic"]
    if "fix_value" in want:
        assert first["fix"]["value"] == want["fix_value"]
    if "kv_tokens" in want:
        s = read_setup(DiagnoseInput.model_validate(row["input"]))
        got = kv_pool(s, utilization(s), row["input"]["max_model_len"], s.tp)["kv_tokens"]
        assert _near(got, want["kv_tokens"], tol), (got, want["kv_tokens"])
        if first["cause"] == "kv_pool_too_small":
            assert f"{got:,} tokens" in first["arithmetic"]
    if want.get("starts"):
        assert not any(c["cause"] == "kv_pool_too_small" for c in out["causes"])
    if want.get("no_other_process"):
        causes = {c["cause"] for c in out["causes"]}
        assert "other_process_memory" not in causes
        frag = next((c for c in out["causes"] if c["cause"] == "fragmentation"), None)
        assert frag is None or not frag["matches_evidence"]
        if frag is not None:
            assert f"{want['unallocated_gib']:.2f} GiB" in frag["arithmetic"]
