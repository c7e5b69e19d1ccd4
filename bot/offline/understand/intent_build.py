"""Build and check the shipped intent model (`data/intent_model.npz`, see `intent_model`).

    .venv/bin/python -m bot.offline.understand.intent_build --build     # train from data/intents.yaml, write the weights
    .venv/bin/python -m bot.offline.understand.intent_build --check     # exit 1 when the shipped weights are stale
    .venv/bin/python -m bot.offline.understand.intent_build --export-corpus
        # write the training four-fifths of tests/corpus/questions.yaml into data/intents.yaml, then --build

`--export-corpus` is the maintenance step after editing the corpus; it used to be `bench/understanding.py
--export`, and moved here because a benchmark only measures: it never rewrites the data it is measured on.

A build is deterministic: the same training file, parser and settings give the same file, byte for byte.
`tests/bot/offline/test_intent_model.py` fails when the shipped weights are stale, so CI catches a change
to the training data, the parser or the features that was not followed by a rebuild.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import yaml

from bot.offline.understand.intent_model import DATA, SHIPPED, IntentModel, fingerprint, rows_digest, training_rows
from bot.offline.understand.parse import analyse

#: the understanding corpus (`rows()`, `held_out()`, `turns()`), in the source checkout
CORPUS = Path(__file__).resolve().parents[3] / "tests" / "corpus" / "corpus.py"


def build(path: Path = SHIPPED, data: Path = DATA) -> IntentModel:
    """Train from the training file and write the weights with what they were built from."""
    rows = training_rows(analyse, data)
    clf = IntentModel.train(rows)
    clf.save(path, {"fingerprint": fingerprint(data.read_bytes()), "rows": rows_digest(rows)})
    return clf


def stale(path: Path = SHIPPED, data: Path = DATA) -> str | None:
    """Why the shipped weights differ from what a build would write now, or None when they do not."""
    if not path.exists():
        return f"{path.name} is missing"
    _, meta = IntentModel.load(path)
    if meta.get("fingerprint") != fingerprint(data.read_bytes()):
        return "the training file or the feature settings changed since the weights were built"
    if meta.get("rows") != rows_digest(training_rows(analyse, data)):
        return "the parser reads the training questions differently since the weights were built"
    return None


def _corpus(path: Path = CORPUS):
    spec = importlib.util.spec_from_file_location("corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export_corpus(data: Path = DATA, corpus: Path = CORPUS) -> int:
    """Replace the `corpus_train:` section of the training file by the training four-fifths of the corpus
    (question, intent), every turn of a dialogue included; the hand-written `examples` above it stay. The
    held-out fifth is never written (`held_out()`: those rows measure the model). Returns the rows written."""
    c = _corpus(corpus)
    train = [{"q": t["q"], "intent": t["intent"]} for r in c.rows() if not c.held_out(r["id"]) for t in c.turns(r)]
    text = data.read_text(encoding="utf-8").split("\ncorpus_train:")[0].rstrip() + "\n"
    text += "corpus_train:\n" + "".join(
        f"  - {yaml.safe_dump(row, allow_unicode=True, default_flow_style=True).strip()}\n" for row in train
    )
    data.write_text(text, encoding="utf-8")
    return len(train)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bot.offline.understand.intent_build",
        description="Build or check the shipped intent model weights.",
    )
    ap.add_argument("--build", action="store_true", help=f"train and write {SHIPPED.name}")
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped weights are stale")
    ap.add_argument(
        "--export-corpus",
        action="store_true",
        help=f"write the corpus's training four-fifths into {DATA.name}, then train and write {SHIPPED.name}",
    )
    args = ap.parse_args(argv)
    if args.export_corpus:
        n = export_corpus()
        print(f"wrote {n} training questions to {DATA.name}")
        args.build = True
    if args.build:
        t0 = time.perf_counter()
        clf = build()
        print(
            f"wrote {SHIPPED.name}: {len(clf.vocab)} features × {len(clf.labels)} intents "
            f"({SHIPPED.stat().st_size // 1024} KiB) in {time.perf_counter() - t0:.1f} s"
        )
        return 0
    if args.check:
        why = stale()
        print(f"stale: {why}" if why else "shipped intent weights are current")
        return 1 if why else 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
