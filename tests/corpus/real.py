"""The corpus of real people's questions (`tests/corpus/real/*.yaml`): questions asked in public (GitHub issues,
forums), copied verbatim with their URL, the thread's answer in our words, and labels: the mentions (span and
role), the asks, what a correct answer contains (`expect`, for a careful reader) and machine checks (`checks`,
a floor). Used by tests/bot/test_real_corpus.py and bench/understanding.py.

Held out: the rows whose sha256(id) is 0 mod 5, fixed when the corpus was first committed (before any rule
was written from it). Rules are written from the other four fifths only.

A row is *checked right* when every machine check passes. It is *judged right* when a careful reader, reading
the answer as the asker would, wrote so in `judgements.yaml` for this very answer (the answer's digest): a
judgement of an older answer is stale and counts as not judged.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from bot.grounding.numbers import extract_numbers

FOLDER = Path(__file__).parent / "real"
JUDGEMENTS = FOLDER / "judgements.yaml"
#: labels that name the same thing as the reader's roles (a label may be finer than the reader needs)
ROLE_SAME = {
    "samples": "tokens", "tokens_per_sample": "tokens", "gpus_per_node": "gpus_total", "active_params": "model_size",
    "vendor": "gpu", "cloud": "framework", "prompt_len": "context_len", "output_len": "context_len",
    "gpu_memory_utilization": "utilisation", "pp_size": "tp_size",
}  # fmt: skip


@functools.cache
def rows() -> list[dict[str, Any]]:
    out = []
    for path in sorted(FOLDER.glob("*.yaml")):
        if path.name == JUDGEMENTS.name:
            continue
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            row["file"] = path.name
            out.append(row)
    return out


def held_out(row_id: str) -> bool:
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 5 == 0


#: a GitHub issue's address: the repository it was filed in is on the asker's page
_ISSUE = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/")


def source(row: dict[str, Any]) -> str | None:
    """Where the row was asked, as its page shows it: the repository of a GitHub issue ("QwenLM/Qwen3"), passed to
    the advisor as the place (`Advisor.ask(source=…)`) the way a channel in that repository would; None for a forum
    thread (its page names no model's home)."""
    m = _ISSUE.match(row.get("url") or "")
    return m.group(1) if m else None


def digest(answer: str) -> str:
    return hashlib.sha256(answer.encode()).hexdigest()[:16]


@functools.cache
def judgements() -> dict[tuple[str, str], dict[str, Any]]:
    """(row id, answer digest) -> the judgement of that answer (several answers of one row may be judged: this
    planner's and the previous one's)."""
    if not JUDGEMENTS.exists():
        return {}
    return {(j["id"], j["digest"]): j for j in yaml.safe_load(JUDGEMENTS.read_text(encoding="utf-8")) or []}


def judged(row_id: str, answer: str) -> bool | None:
    """True/False as the reader judged this answer; None when no judgement is for this answer."""
    j = judgements().get((row_id, digest(answer)))
    return None if j is None else bool(j["right"])


def lang(row: dict[str, Any]) -> str:
    return row.get("lang") or "en"


def _calls(trace: Any) -> list[Any]:
    return list(trace.tool_calls)


def check(row: dict[str, Any], trace: Any) -> list[str]:
    """The machine checks that fail (empty: checked right)."""
    problems = []
    answer = trace.answer
    low = answer.lower()
    for c in row.get("checks") or []:
        ((kind, arg),) = c.items()
        if kind == "tools_any":
            called = {call.tool for call in _calls(trace)}
            if not called & set(arg):
                problems.append(f"none of {arg} called (called {sorted(called)})")
        elif kind == "text_any":
            if not any(str(a).lower() in low for a in arg):
                problems.append(f"none of {arg} in the answer")
        elif kind == "text_none":
            if hit := [a for a in arg if str(a).lower() in low]:
                problems.append(f"{hit} in the answer")
        elif kind == "fits":
            verdicts = [call.output.get("fits") for call in _calls(trace) if call.tool == arg["tool"]]
            if arg["value"] not in verdicts:
                problems.append(f"{arg['tool']} never says fits={arg['value']} ({verdicts})")
        elif kind == "number":
            want, rel = float(arg["value"]), float(arg.get("rel", 0.05))
            if not any(abs(n.value - want) <= rel * abs(want) for n in extract_numbers(answer)):
                problems.append(f"no figure within {rel:.0%} of {want:g}")
    return problems


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", str(text).lower())


def mention_scores(row: dict[str, Any], request: Any) -> dict[str, int]:
    """Labelled mentions found by the reader (`found`), with the labelled role (`role_right`), and the ones it
    never read (`missed`). A labelled span is found when a reader mention overlaps its text."""
    text = _norm(request.text)
    got = [(_norm(m.text), m.role) for m in request.mentions]
    scores = {"labelled": 0, "found": 0, "role_right": 0, "missed": 0}
    for gold in row.get("mentions") or []:
        span, role = _norm(gold.get("text", "")), gold.get("role", "other")
        if not span or span not in text:
            continue
        scores["labelled"] += 1
        hits = [r for s, r in got if s and (s in span or span in s)]
        if not hits:
            scores["missed"] += 1
            continue
        scores["found"] += 1
        want = ROLE_SAME.get(role, role)
        scores["role_right"] += any(ROLE_SAME.get(r, r) == want for r in hits)
    return scores


def ask_scores(row: dict[str, Any], request: Any) -> dict[str, tuple[int, int]]:
    """Per labelled ask: (1, 1) when the reader found it, (1, 0) when not."""
    found = set(request.asks)
    return {a: (1, int(a in found)) for a in row.get("asks") or []}
