"""The diagnose corpus (`tests/corpus/diagnose/*.yaml`, issue 24): real threads in which someone asked why a GPU
job broke or was slow (an OOM log, a start-up error, a launch command, a config), copied verbatim with their
URL, the setup and log figures the thread states, the solution the thread reached (in our words) and its
cause ids (the vocabulary `CAUSES`, shared with the `diagnose` tool). Used by tests/bot/test_diagnose_corpus.py
and bench/diagnose_corpus.py.

Held out: the rows whose sha256(id) is 0 mod 5, frozen when the corpus was first committed (a commit holding
only the data, before any rule or scorer read it). Rules are written from the other four fifths only.

Scoring a trace of the offline advisor's answer to a row's question:
- *top-2*: a cause id of the thread's solution is `causes[0]` or `causes[1]` of a `diagnose` tool call;
- *fits to an OOM*: the row reports an OOM and the answer's verdict is "it fits": its verdict paragraph (the
  first that talks of fitting) says 放得下 / it fits, or, while no `diagnose` call gave a cause, the first fit
  tool call says `fits: true`. Must never happen. *Bare* when that verdict does not even mention the OOM.
"""

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

FOLDER = Path(__file__).parent / "diagnose"

#: the cause ids of issue 24 (the `diagnose` tool may add ids; it must not rename these)
CAUSES = (
    "weights_exceed_memory", "kv_pool_too_small", "memory_utilization_setting", "other_process_memory",
    "tp_not_divisible", "optimizer_states_unsharded", "zero_stage_buffers", "needs_offload",
    "activations_too_large", "logits_memory", "fragmentation", "load_time_peak", "host_ram",
    "precision_unsupported", "p2p_or_interconnect", "communication_bound", "compute_or_config_slow",
    "dataloader_bound", "nccl_timeout_or_env", "batch_or_concurrency_too_high", "version_or_bug",
)  # fmt: skip
#: a thread whose solution no id names: "other:<short text>" (never counted as found)
OTHER = "other:"
#: where a thread may come from: public issue trackers and forums
SOURCES = re.compile(r"^https://(github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+|discuss\.|stackoverflow\.com/|huggingface\.co/|zhuanlan\.zhihu\.com/|blog\.csdn\.net/)")  # fmt: skip
CJK = re.compile(r"[\u4e00-\u9fff]")


class Thread(BaseModel):
    """One row: what a thread states, never more (setup and evidence hold only figures the asker gave)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{5,80}$")
    url: str
    lang: Literal["zh", "en"]
    framework: str = Field(min_length=2)
    question: str = Field(min_length=10, max_length=4000)  # the advisor's own limit on a question
    setup: dict[str, Any]
    evidence: dict[str, Any]
    solution: str = Field(min_length=20)
    solution_causes: list[str] = Field(min_length=1)
    reported_oom: bool
    source_of_solution: str = Field(min_length=3)

    @field_validator("url")
    @classmethod
    def _public_thread(cls, url: str) -> str:
        if not SOURCES.match(url):
            raise ValueError(f"not a public thread URL: {url}")
        return url

    @field_validator("solution_causes")
    @classmethod
    def _known_causes(cls, causes: list[str]) -> list[str]:
        for c in causes:
            if c not in CAUSES and not (c.startswith(OTHER) and len(c) > len(OTHER) + 2):
                raise ValueError(f"unknown cause id {c!r}")
        if len(set(causes)) != len(causes):
            raise ValueError(f"a cause id twice: {causes}")
        return causes


@functools.cache
def rows() -> tuple[Thread, ...]:
    out = []
    for path in sorted(FOLDER.glob("*.yaml")):
        for raw in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            out.append(Thread.model_validate(raw))
    return tuple(out)


def held_out(row_id: str) -> bool:
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 5 == 0


def split(row: Thread) -> str:
    return "held-out" if held_out(row.id) else "dev"


# --- reading an answer trace ---------------------------------------------------------------------------------
def _calls(trace: Any) -> list[Any]:
    return list(getattr(trace, "tool_calls", None) or [])


def diagnosed(trace: Any) -> list[str]:
    """The cause ids of the first `diagnose` call that gave any, in its order (empty: none)."""
    for call in _calls(trace):
        if call.tool != "diagnose":
            continue
        ids = [c.get("cause") for c in (call.output or {}).get("causes") or [] if isinstance(c, dict)]
        if ids := [i for i in ids if isinstance(i, str)]:
            return ids
    return []


def top2(row: Thread, trace: Any) -> bool:
    return bool(set(diagnosed(trace)[:2]) & set(row.solution_causes))


def _fit_verdict(value: Any) -> bool | None:
    """What a tool output says of fitting (`fits`, or `verdict` "fits"), nested outputs searched; None: nothing."""
    if isinstance(value, dict):
        if isinstance(value.get("fits"), bool):
            return value["fits"]
        if isinstance(value.get("verdict"), str):
            return value["verdict"] == "fits"
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            if (found := _fit_verdict(v)) is not None:
                return found
    return None


def primary_fit(trace: Any) -> bool | None:
    """The verdict of the first fit tool call (later calls price the suggested changes, not the asker's setup)."""
    for call in _calls(trace):
        if call.tool != "diagnose" and (found := _fit_verdict(call.output)) is not None:
            return found
    return None


#: words of an answer that say "it fits" (a negation right before does not count)
FITS_WORDS = re.compile(r"(?<![不没])(放得下|装得下|能放下|可以放下)|(?<!not )(?<!n't )(?<!never )\b(it )?(fits|will fit)\b", re.I)  # fmt: skip
#: a paragraph that gives a fit verdict at all (either way)
FIT_TALK = re.compile(r"\bfit|放得下|放不下|能放下|装得下|装不下", re.I)
#: the answer takes the reported OOM as evidence ("but you have seen an OOM: what you measured wins")
TRUSTS_OOM = re.compile(r"\bOOM\b|out of memory|measured|you have seen|实测|已经遇到|显存不足|爆显存", re.I)


#: "whether a model fits" (what the advisor can do) is no verdict
WHETHER = re.compile(r"\bwhether\b[^.;:]*|是否[^。；：]*")


def fits_text(answer: str) -> list[str]:
    """The phrases of `answer` that say it fits (empty: none)."""
    return [m.group(0) for m in FITS_WORDS.finditer(WHETHER.sub(" ", answer or ""))]


def verdict_paragraph(answer: str, opening: bool = False) -> str:
    """The answer's verdict: the first paragraph that talks of fitting (lines further down that say "fits" price
    the suggested changes; a note in brackets first, such as which card was assumed, is no verdict). `opening`:
    the first paragraph whatever it says (an answer that leads with a diagnosed cause)."""
    paragraphs = [p.strip() for p in (answer or "").split("\n\n")]
    paragraphs = [p for p in paragraphs if p and p[0] not in "(（"]
    if opening:
        return paragraphs[0] if paragraphs else ""
    return next((p for p in paragraphs if FIT_TALK.search(WHETHER.sub(" ", p))), "")


def answered_fits(trace: Any) -> bool:
    """The answer's verdict is "it fits": its verdict paragraph says so, or (when no diagnose call gave a cause)
    the first fit tool call says fits. With a diagnosed cause the verdict is the opening paragraph ("after the
    change it fits" further down is what to expect after the fix)."""
    if diagnosed(trace):
        return bool(fits_text(verdict_paragraph(getattr(trace, "answer", ""), opening=True)))
    return bool(fits_text(verdict_paragraph(getattr(trace, "answer", "")))) or primary_fit(trace) is True


def bare_fits(trace: Any) -> bool:
    """Answered "it fits" without taking the reported OOM as evidence (the verdict paragraph never mentions it)."""
    para = verdict_paragraph(getattr(trace, "answer", ""), opening=bool(diagnosed(trace)))
    return answered_fits(trace) and not TRUSTS_OOM.search(para)


def verdict(row: Thread, trace: Any | None) -> dict[str, Any]:
    """One row's result: the diagnose causes given, top-2 hit, and whether a reported OOM was answered "fits"."""
    causes = diagnosed(trace) if trace is not None else []
    fits = trace is not None and answered_fits(trace)
    bare = trace is not None and bare_fits(trace)
    return {
        "id": row.id, "split": split(row), "want": list(row.solution_causes), "got": causes[:2],
        "top2": trace is not None and top2(row, trace), "oom": row.reported_oom,
        "fits_to_oom": row.reported_oom and fits, "bare_fits_to_oom": row.reported_oom and bare, "tools": [c.tool for c in _calls(trace)] if trace else [],
    }  # fmt: skip


def score(verdicts: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Per split (and "all"): rows, the top-2 share, reported-OOM rows and the share of them answered "fits"."""
    out: dict[str, dict[str, float | int]] = {}
    for name in ("held-out", "dev", "all"):
        part = [v for v in verdicts if name == "all" or v["split"] == name]
        ooms = [v for v in part if v["oom"]]
        out[name] = {
            "rows": len(part),
            "top2": sum(v["top2"] for v in part) / len(part) if part else 0.0,
            "oom_rows": len(ooms),
            "fits_to_oom": sum(v["fits_to_oom"] for v in ooms) / len(ooms) if ooms else 0.0,
            "bare_fits_to_oom": sum(v["bare_fits_to_oom"] for v in ooms) / len(ooms) if ooms else 0.0,
        }
    return out


#: the held-out fifth as committed (ids and their solution causes): a change is a visible, deliberate act.
#: d77bbcb472ee25b1: the first 103 threads (16 held out); 8438c3a30b86f985: with the second batch
#: (fresh_2026.yaml, 30 threads, 7 of them held out), frozen in the commit that added that data alone;
#: 8752131dba68b23a: with the third batch (fresh_dec.yaml, 28 threads, 6 of them held out), the same way;
#: 74d16d246de55bfe: with the fourth batch (fresh_s10.yaml, 20 threads, 2 of them held out), the same way
FROZEN_HELD_OUT = "74d16d246de55bfe"


def held_out_digest() -> str:
    held = sorted((r.id, r.solution_causes) for r in rows() if held_out(r.id))
    return hashlib.sha256(json.dumps(held).encode()).hexdigest()[:16]
