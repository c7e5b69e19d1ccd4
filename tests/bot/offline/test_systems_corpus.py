"""The systems corpus (issue 26): real "what should we buy / how many cards for N users" requests, verbatim with
their URL, the held-out fifth frozen, and a judgement of the advisor's answer for every row."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parents[2] / "corpus" / "systems"
ROWS = yaml.safe_load((FOLDER / "requests.yaml").read_text(encoding="utf-8"))
JUDGED = {j["id"]: j for j in yaml.safe_load((FOLDER / "judgements.yaml").read_text(encoding="utf-8"))}
#: frozen with the corpus's first commit (5f72898), before any planner rule was written for it
HELD_OUT = {"gh-llamacookbook-170", "gh-sglang-3640", "gh-deepseekr1-276"}


def test_at_least_forty_real_requests_with_url_text_and_what_a_right_answer_holds():
    assert len(ROWS) >= 40 and len({r["id"] for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r["url"].startswith("http") and r["text"].strip() and r["must"], r["id"]
        assert r["lang"] in ("zh", "en")


def test_the_held_out_fifth_is_the_frozen_one():
    held = {r["id"] for r in ROWS if int(hashlib.sha256(r["id"].encode()).hexdigest(), 16) % 5 == 0}
    assert held == HELD_OUT


def test_every_row_has_a_judgement_of_a_specific_answer():
    assert set(JUDGED) == {r["id"] for r in ROWS}
    for j in JUDGED.values():
        assert isinstance(j["right"], bool) and j["why"] and len(j["digest"]) == 16
