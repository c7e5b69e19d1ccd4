"""Recall over the golden questions (`tests/golden/retrieval.yaml`) on the shipped notes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knowledge.config import SHIPPED_DOCS, KnowledgeConfig
from knowledge.notes import BUILTIN, CorpusRoot, load_corpus
from knowledge.retrieval import Retriever

GOLDEN = Path(__file__).parents[1] / "golden" / "retrieval.yaml"
K = 5
MIN_RECALL = 0.95

pytestmark = pytest.mark.skipif(not GOLDEN.exists(), reason="tests/golden/retrieval.yaml is not written yet")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [r for r in yaml.safe_load(GOLDEN.read_text(encoding="utf-8")) or [] if r.get("q")]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    r = Retriever.from_config(KnowledgeConfig(data_dir=tmp_path_factory.mktemp("golden-index")))
    yield r
    r.index.close()


def test_every_golden_row_is_well_formed_and_names_existing_notes(rows):
    known = {n.doc_id for n in load_corpus([CorpusRoot(SHIPPED_DOCS, BUILTIN)])}
    for row in rows:
        assert row.get("lang") in ("zh", "en") and row.get("expect"), row
    unknown = sorted({d for r in rows for d in r["expect"]} - known)
    assert not unknown, f"golden rows expect notes that do not exist: {unknown}"


def test_recall_at_5_over_the_golden_questions(rows, retriever):
    misses = []
    for row in rows:
        got = [p.doc_id for p in retriever.search(row["q"], k=K)]
        if not set(row["expect"]) & set(got):
            misses.append(f"{row['q']!r}: expected one of {row['expect']}, got {got}")
    recall = 1 - len(misses) / len(rows)
    assert recall >= MIN_RECALL, f"recall@{K} {recall:.3f} < {MIN_RECALL}; misses:\n" + "\n".join(misses)
