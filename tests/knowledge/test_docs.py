"""The shipped knowledge-base notes (knowledge/docs/*.md) and the retrieval golden set.

Checks what a reader and the retriever rely on: complete front matter, stable ids, cited sources,
`##` sections short enough to chunk, corrections that show their arithmetic and end with a command
that re-checks it, memory arithmetic that is actually right, and golden rows that point at real notes.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "knowledge" / "docs"
GOLDEN = ROOT / "tests" / "golden" / "retrieval.yaml"

REQUIRED_KEYS = ("id", "title", "lang", "topics", "sources", "as_of")
KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
GUIDE_HOST = "idctop.com"
#: body length bounds (characters, front matter excluded) from the knowledge-base brief
MIN_CHARS, MAX_CHARS = 300, 900
#: notes written under another brief, whose length is not bounded here
LENGTH_EXEMPT = {"tco-breakeven"}
CJK = re.compile(r"[\u4e00-\u9fff]")
FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.S)

DOC_PATHS = sorted(DOCS.glob("*.md"))


def _split(path: Path) -> tuple[dict, str]:
    m = FRONT.match(path.read_text(encoding="utf-8"))
    assert m, f"{path.name}: no YAML front matter between '---' lines"
    meta = yaml.safe_load(m.group(1))
    assert isinstance(meta, dict), f"{path.name}: front matter is not a mapping"
    return meta, m.group(2)


def _doc_ids() -> set[str]:
    return {p.stem for p in DOC_PATHS}


def test_there_are_notes() -> None:
    assert len(DOC_PATHS) >= 20


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_front_matter(path: Path) -> None:
    meta, _ = _split(path)
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    assert not missing, f"{path.name}: missing front-matter keys {missing}"
    assert meta["id"] == path.stem, f"{path.name}: id {meta['id']!r} differs from the file name"
    assert KEBAB.match(meta["id"]), f"{path.name}: id is not kebab-case"
    assert isinstance(meta["title"], str) and meta["title"].strip()
    assert meta["lang"] in ("zh", "en")
    assert isinstance(meta["topics"], list) and meta["topics"], f"{path.name}: topics must be a non-empty list"
    assert all(isinstance(t, str) and KEBAB.match(t) for t in meta["topics"]), f"{path.name}: topics not kebab-case"
    assert isinstance(meta["as_of"], dt.date), f"{path.name}: as_of must be a YYYY-MM-DD date"
    sources = meta["sources"]
    assert isinstance(sources, list) and sources, f"{path.name}: sources must be a non-empty list"
    for src in sources:
        assert isinstance(src, dict) and src.get("title") and src.get("url"), f"{path.name}: source needs title and url"
        assert re.match(r"^https?://", src["url"]), f"{path.name}: source url {src['url']!r} is not http(s)"


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_body_is_sectioned_and_sized(path: Path) -> None:
    meta, body = _split(path)
    assert re.search(r"^## \S", body, re.M), f"{path.name}: no '## ' section heading for the chunker"
    if meta["id"] in LENGTH_EXEMPT:
        return
    n = len(body.strip())
    assert MIN_CHARS <= n <= MAX_CHARS, f"{path.name}: body has {n} characters, want {MIN_CHARS}-{MAX_CHARS}"


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_language_matches_text(path: Path) -> None:
    meta, body = _split(path)
    cjk = len(CJK.findall(body))
    if meta["lang"] == "zh":
        assert cjk >= 100, f"{path.name}: marked zh but has only {cjk} Chinese characters"
    else:
        assert cjk < 0.05 * len(body), f"{path.name}: marked en but is mostly Chinese"


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_guide_is_attributed_both_ways(path: Path) -> None:
    """A note that cites the idctop.com guide names it in the text, and one that names it cites it."""
    meta, body = _split(path)
    cited = any(GUIDE_HOST in s["url"] for s in meta["sources"])
    named = GUIDE_HOST in body
    assert cited == named, f"{path.name}: guide cited in sources={cited} but named in text={named}"


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_referenced_notes_exist(path: Path) -> None:
    _, body = _split(path)
    refs = {r for r in re.findall(r"`([^`\s]+)`", body) if KEBAB.match(r) and "-" in r}
    unknown = refs - _doc_ids()
    assert not unknown, f"{path.name}: refers to notes that do not exist: {sorted(unknown)}"


CORRECTIONS = [p for p in DOC_PATHS if "correction" in (_split(p)[0].get("topics") or [])]
FIT_CMD = re.compile(r"`gpu-advisor fit train --model (\S+) --gpu (\"[^\"]+\"|\S+) --method (\S+)`")


def test_corrections_exist() -> None:
    ids = {p.stem for p in CORRECTIONS}
    for want in (
        "correction-h100-nvl-memory",
        "correction-70b-full-training-141gb",
        "correction-7b-full-finetune-40gb",
        "correction-70b-lora-80gb",
    ):
        assert want in ids


@pytest.mark.parametrize("path", [p for p in CORRECTIONS if p.stem not in LENGTH_EXEMPT], ids=lambda p: p.stem)
def test_correction_ends_with_a_recheck_command(path: Path) -> None:
    _, body = _split(path)
    last_section = body.rsplit("\n## ", 1)[-1]
    commands = FIT_CMD.findall(last_section)
    assert commands, f"{path.name}: the last section has no `gpu-advisor fit train ...` command"
    assert all(method in ("full", "lora", "qlora") for _, _, method in commands)
    assert "16" in body and ("×" in body or "x" in body), f"{path.name}: the arithmetic is not written out"


#: "70e9 × 16 B = 1,120 GB", "6.74e9 × 16 = 107.8 GB": parameters × bytes per parameter = GB
MEMORY_PRODUCT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)e9 × (\d+(?:\.\d+)?)(?: B)? = ([\d,]+(?:\.\d+)?) GB")
#: "94 × 0.9 = 84.6": usable memory at the 90% default
USABLE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?) × 0\.9 = (\d+(?:\.\d+)?)")


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.stem)
def test_memory_arithmetic_is_right(path: Path) -> None:
    _, body = _split(path)
    for params_b, bytes_per, result in MEMORY_PRODUCT.findall(body):
        want = float(params_b) * float(bytes_per)
        got = float(result.replace(",", ""))
        assert got == pytest.approx(want, rel=0.01), f"{path.name}: {params_b}e9 × {bytes_per} ≠ {result} GB"
    for cap, usable in USABLE.findall(body):
        assert float(usable) == pytest.approx(float(cap) * 0.9, rel=0.001), f"{path.name}: {cap} × 0.9 ≠ {usable}"


def test_memory_arithmetic_is_present() -> None:
    """The check above must have something to check."""
    hits = sum(len(MEMORY_PRODUCT.findall(_split(p)[1])) for p in DOC_PATHS)
    assert hits >= 15


# --- the retrieval golden set ----------------------------------------------------------------


def _golden() -> list[dict]:
    rows = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    assert isinstance(rows, list)
    return rows


def test_golden_rows_are_well_formed() -> None:
    rows = _golden()
    assert len(rows) >= 45
    for row in rows:
        assert set(row) <= {"q", "lang", "expect", "note"}, row
        assert isinstance(row["q"], str) and row["q"].strip(), row
        assert row["lang"] in ("zh", "en"), row
        assert isinstance(row["expect"], list) and row["expect"], row
        if row["lang"] == "zh":
            assert CJK.search(row["q"]), f"zh row without Chinese: {row['q']!r}"
    queries = [r["q"] for r in rows]
    assert len(queries) == len(set(queries)), "duplicate queries"


def test_golden_is_mostly_chinese() -> None:
    rows = _golden()
    zh = sum(r["lang"] == "zh" for r in rows)
    assert zh / len(rows) >= 0.6
    assert len(rows) - zh >= 10


def test_golden_covers_required_queries() -> None:
    queries = {r["q"] for r in _golden()}
    for q in ("显存", "拆机", "租赁", "H20", "4090D", "910B", "H100 NVL", "A800"):
        assert q in queries, f"missing required query {q!r}"


def test_golden_expectations_name_real_notes() -> None:
    ids = _doc_ids()
    for row in _golden():
        unknown = set(row["expect"]) - ids
        assert not unknown, f"{row['q']!r} expects unknown notes {sorted(unknown)}"


def test_every_note_is_expected_somewhere() -> None:
    expected = {d for r in _golden() for d in r["expect"]}
    unexpected = _doc_ids() - expected
    assert not unexpected, f"notes no golden question points at: {sorted(unexpected)}"
