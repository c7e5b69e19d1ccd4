"""Retrieval benchmark over the shipped notes and `tests/golden/retrieval.yaml`.

    .venv/bin/python bench/retrieval.py [--rounds 5] [--k 5]

Builds a fresh embedded index of `knowledge/docs` in a temporary folder (build time), runs every golden
question through the hybrid retriever and through each leg alone, and prints recall@k (a hit: any
expected doc id among the top k passages), MRR (first expected doc among the top 10), the misses, and
query latency (median, p95) next to a trivial baseline timed in the same run: a plain Python
substring count over the chunk texts.

The retriever runs as a fresh process would: jieba's words read from the word store beside the index
(`knowledge.lexicon`), not the whole dictionary; the tokens of every chunk and question are checked to be
the same as the whole dictionary gives, and both load times are printed.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from knowledge import lexical, lexicon  # noqa: E402
from knowledge.config import KnowledgeConfig  # noqa: E402
from knowledge.index import KnowledgeIndex  # noqa: E402
from knowledge.retrieval import Retriever  # noqa: E402

GOLDEN = ROOT / "tests" / "golden" / "retrieval.yaml"


def load_golden(path: Path = GOLDEN) -> list[dict]:
    return [row for row in yaml.safe_load(path.read_text(encoding="utf-8")) or [] if row.get("q")]


def evaluate(search, rows: list[dict], k: int) -> tuple[float, float, list[tuple[dict, list[str]]]]:
    """(recall@k, MRR@10, misses as (row, top-k doc ids))."""
    hits, rr, misses = 0, 0.0, []
    for row in rows:
        docs = [p.doc_id for p in search(row["q"], 10)]
        expect = set(row["expect"])
        if expect & set(docs[:k]):
            hits += 1
        else:
            misses.append((row, docs[:k]))
        rank = next((i for i, d in enumerate(docs, 1) if d in expect), None)
        rr += 1.0 / rank if rank else 0.0
    return hits / len(rows), rr / len(rows), misses


class SubstringBaseline:
    """Count occurrences of the query's whitespace-separated terms in each chunk; top k by count."""

    def __init__(self, chunks):
        self.chunks = [(c, c.text.lower()) for c in chunks]

    def search(self, query: str, k: int):
        terms = query.lower().split()
        scored = [(sum(text.count(t) for t in terms), c) for c, text in self.chunks]
        scored = [x for x in scored if x[0] > 0]
        scored.sort(key=lambda x: -x[0])
        return [c for _, c in scored[:k]]


def timed(fn, queries: list[str], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - t) * 1000)
    return times


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="timing rounds over all questions")
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    if not GOLDEN.exists():
        print(f"no golden file at {GOLDEN}")
        return 1
    rows = load_golden()

    t = time.perf_counter()
    full = lexical._full()
    jieba_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        config = KnowledgeConfig(data_dir=Path(tmp))
        t = time.perf_counter()
        report = KnowledgeIndex(config).sync()  # writes the word store beside the index
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        store = lexicon.open_store(config.data_dir, lexical.dictionary_key())
        store_s = time.perf_counter() - t
        if store is None:
            print("the sync wrote no word store")
            return 1
        lexical._active = store  # as in the next process
        t = time.perf_counter()
        retriever = Retriever(KnowledgeIndex(config))
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        Retriever(KnowledgeIndex(config))
        reload_s = time.perf_counter() - t
        print(f"corpus: {report.docs} notes, {report.added} chunks ({config.docs_dir})")
        print(
            f"build: {build_s:.2f} s (chunk + embed + upsert); jieba's whole dictionary {jieba_s:.2f} s, "
            f"the word store {store_s * 1000:.1f} ms; retriever load {load_s:.2f} s (notes cut through the store), "
            f"{reload_s:.2f} s with the token cache"
        )
        texts = [c.text for c in retriever._chunks] + [r["q"] for r in rows]
        runs = [run for t in texts for run in re.findall(lexical._CJK_RUN, lexical.normalize(t))]
        same = sum(store.lcut(run, HMM=False) == full.lcut(run, HMM=False) for run in runs)
        print(f"jieba words from the store = from the whole dictionary: {same} of {len(runs)} runs of Chinese")

        doc_ids = {c.doc_id for c in retriever._chunks}
        unknown = sorted({d for r in rows for d in r["expect"]} - doc_ids)
        if unknown:
            print(f"warning: golden rows expect doc ids not in the corpus: {', '.join(unknown)}")

        legs = {
            "hybrid": retriever,
            "lexical only": Retriever(retriever.index, dense_weight=0.0),
            "dense only": Retriever(retriever.index, lexical_weight=0.0),
        }
        print(f"\n{len(rows)} golden questions")
        results = {}
        for name, r in legs.items():
            recall, mrr, misses = evaluate(lambda q, n, r=r: r.search(q, k=n), rows, args.k)
            results[name] = (recall, mrr, misses)
            print(f"  {name:13s} recall@{args.k} {recall:.3f}   MRR {mrr:.3f}")
        baseline = SubstringBaseline(retriever._chunks)
        recall, mrr, _ = evaluate(baseline.search, rows, args.k)
        print(f"  {'substring':13s} recall@{args.k} {recall:.3f}   MRR {mrr:.3f}  (baseline)")

        misses = results["hybrid"][2]
        print(f"\nmisses (hybrid): {len(misses)}")
        for row, got in misses:
            print(f"  {row['q']!r}: expected {row['expect']}, top {args.k}: {got}")

        queries = [r["q"] for r in rows]
        ours = timed(lambda q: retriever.search(q, k=args.k, use_cache=False), queries, args.rounds)
        base = timed(lambda q: baseline.search(q, args.k), queries, args.rounds)
        m, p = statistics.median(ours), pct(ours, 95)
        bm, bp = statistics.median(base), pct(base, 95)
        print(
            f"\nlatency over {len(ours)} queries (ms): hybrid median {m:.2f}, p95 {p:.2f}; "
            f"substring baseline median {bm:.3f}, p95 {bp:.3f}; ratio {m / bm:.1f}x median, {p / bp:.1f}x p95"
        )
        retriever.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
