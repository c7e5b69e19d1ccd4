"""The intent classifier: a linear model over character n-grams, cue words and slot flags, shipped trained.

Training data is `data/intents.yaml` (labelled questions written for this project, plus the training
four-fifths of `tests/corpus/questions.yaml`, exported by `python -m bot.offline.understand.intent_build
--export-corpus`; the held-out fifth is never in it). Before features are taken, the parser's view of the
question replaces what is specific by what it is: a GPU name becomes "Ⓖ", a model "Ⓜ", digits "0"
(`abstract()`), so "Qwen3-14B 的 bf16 权重多大" teaches the model about every model's weights, not about
Qwen. Slot flags (a GPU named, a budget, a concurrency…) are features too. (jieba words were features
once; five-fold cross-validation on the training data scored the same without them, and their dictionary
cost a second at start.)

Model: multinomial logistic regression fitted by a fixed number of passes of stochastic gradient descent
in a fixed order (seeded), so training is deterministic. `predict()` returns the intents with their
probabilities; the caller applies the confidence threshold.

The fitted model is a build artefact, `data/intent_model.npz` (vocabulary, labels, float32 weights), keyed
by a fingerprint of the training file and of everything that shapes the features (hyper-parameters, feature
weights, cue-word groups, `FEATURES_VERSION`). A fresh process loads it in milliseconds instead of training
for seconds; when the fingerprint does not match, it trains in process and logs why. Rebuild after changing
the training data, the parser or the features:

    .venv/bin/python -m bot.offline.understand.intent_build --build     # rewrite data/intent_model.npz
    .venv/bin/python -m bot.offline.understand.intent_build --check     # exit 1 when the shipped weights are stale

`GPU_ADVISOR_TRAIN_INTENTS=1` ignores the shipped weights and trains (the cold-start baseline of
`bench/advisor.py`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import os
import re
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from tools.yaml_data import load_yaml

log = logging.getLogger("gpu_advisor.offline")

DATA = Path(__file__).parent / "data" / "intents.yaml"
SHIPPED = Path(__file__).parent / "data" / "intent_model.npz"
FORCE_TRAIN = "GPU_ADVISOR_TRAIN_INTENTS"
#: bump when `features()` changes in a way the fingerprint cannot see (its code rather than its data)
FEATURES_VERSION = 2
EPOCHS = 50
LEARNING_RATE = 3.0
L2 = 1e-5
SEED = 10

_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")

Analyse = Callable[[str], tuple[str, list[str]]]
Row = tuple[str, list[str], str]  # (abstracted text, slot flags, intent)


@functools.cache
def _cues() -> tuple[tuple[str, re.Pattern[str]], ...]:
    from bot.offline.understand.lexicon import CUE_GROUPS
    from bot.offline.understand.patterns import C

    return tuple((name, C(p)) for name, p in CUE_GROUPS)


def features(text: str, flags: Iterable[str] = ()) -> list[str]:
    """Slot flags, cue-word groups (lexicon) and character 1–3-grams (with boundaries) of an abstracted text."""
    t = _SPACE.sub(" ", _DIGITS.sub("0", text.lower())).strip()
    feats = [f"f:{f}" for f in flags]
    feats.extend(f"k:{name}" for name, rx in _cues() if rx.search(text))
    padded = f"^{t}$"
    for n in (2, 3):
        feats.extend("c:" + padded[i : i + n] for i in range(len(padded) - n + 1))
    feats.extend("c:" + ch for ch in t if not ch.isspace())
    return feats


#: feature weights by kind: cue-word groups and slot flags carry more than one character n-gram
WEIGHTS = {"k": 3.0, "f": 3.0, "c": 1.0}


def _weight(feature: str) -> float:
    return WEIGHTS[feature[0]]


class IntentModel:
    def __init__(self, labels: list[str], vocab: dict[str, int], weights: np.ndarray):
        self.labels = labels
        self.vocab = vocab
        #: (features + 1 bias row) × labels; float32 whether trained here or loaded, so both answer alike
        self.weights = np.asarray(weights, dtype=np.float32)

    @classmethod
    def train(cls, examples: list[Row]) -> IntentModel:
        """examples: (abstracted text, slot flags, intent)."""
        labels = sorted({y for _, _, y in examples})
        vocab: dict[str, int] = {}
        rows = []
        for text, flags, _ in examples:
            feats = dict.fromkeys(features(text, flags))
            idx = np.fromiter((vocab.setdefault(f, len(vocab)) for f in feats), dtype=np.int64)
            rows.append((idx, np.array([_weight(f) for f in feats])))
        bias = len(vocab)
        w = np.zeros((bias + 1, len(labels)))
        y = np.array([labels.index(lab) for _, _, lab in examples])
        order = np.random.default_rng(SEED).permutation(len(examples))
        for epoch in range(EPOCHS):
            lr = LEARNING_RATE / (1 + epoch)
            for i in order:
                idx, val = rows[i]
                idx = np.append(idx, bias)
                val = np.append(val, 1.0)
                val = val / np.linalg.norm(val)
                z = val @ w[idx]
                p = np.exp(z - z.max())
                p /= p.sum()
                p[y[i]] -= 1.0
                w[idx] -= lr * (np.outer(val, p) + L2 * w[idx])
        return cls(labels, vocab, w)

    def predict(self, text: str, flags: Iterable[str] = ()) -> list[tuple[str, float]]:
        feats = [f for f in dict.fromkeys(features(text, flags)) if f in self.vocab]
        idx = [self.vocab[f] for f in feats] + [len(self.vocab)]
        val = np.array([_weight(f) for f in feats] + [1.0])
        z = (val / np.linalg.norm(val)) @ self.weights[idx]
        p = np.exp(z - z.max())
        p /= p.sum()
        ranked = sorted(zip(self.labels, p.tolist(), strict=True), key=lambda x: -x[1])
        return ranked

    # --- the shipped artefact ---------------------------------------------------------------------

    def save(self, path: Path, meta: dict[str, str]) -> None:
        """An .npz written byte for byte the same for the same model (fixed member dates and order)."""
        vocab = sorted(self.vocab, key=self.vocab.__getitem__)
        arrays = {
            "labels": np.array(self.labels),
            "vocab": np.array(vocab),
            "weights": self.weights,
            "meta": np.array(json.dumps(meta, sort_keys=True)),
        }
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, arr in arrays.items():
                buf = io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, buf.getvalue())

    @classmethod
    def load(cls, path: Path) -> tuple[IntentModel, dict[str, str]]:
        with np.load(path, allow_pickle=False) as z:
            vocab = {f: i for i, f in enumerate(z["vocab"].tolist())}
            return cls(z["labels"].tolist(), vocab, z["weights"]), json.loads(z["meta"].item())


def load_examples(path: Path = DATA) -> list[tuple[str, str]]:
    """(question, intent) pairs of the training file."""
    data = load_yaml(path.read_text(encoding="utf-8"))
    out = [(q, intent) for intent, qs in (data.get("examples") or {}).items() for q in qs]
    out += [(row["q"], row["intent"]) for row in data.get("corpus_train") or []]
    return out


def training_rows(analyse: Analyse, path: Path = DATA) -> list[Row]:
    """The training questions as the model sees them: through `analyse` (the parser's view: names masked,
    slot flags)."""
    return [(*analyse(q), intent) for q, intent in load_examples(path)]


def fingerprint(data: bytes) -> str:
    """What the shipped weights were built from and can be checked against cheaply at start: the training
    file's bytes and every setting that shapes features or fitting. (The parser's view of the questions is
    checked by `rows_digest`, in the tests and by `intent_build --check`: it costs a parse of every question.)"""
    from bot.offline.understand.lexicon import CUE_GROUPS

    settings = {
        "features": FEATURES_VERSION,
        "weights": WEIGHTS,
        "cues": CUE_GROUPS,
        "epochs": EPOCHS,
        "learning_rate": LEARNING_RATE,
        "l2": L2,
        "seed": SEED,
    }
    h = hashlib.sha256(data)
    h.update(json.dumps(settings, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


def rows_digest(rows: list[Row]) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def shipped(path: Path = SHIPPED, data: Path = DATA) -> IntentModel | None:
    """The shipped model when it was built from today's training file and settings, else None (logged)."""
    if not path.exists():
        log.warning("no shipped intent weights (%s); training the intent model in process", path.name)
        return None
    try:
        clf, meta = IntentModel.load(path)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        log.warning("shipped intent weights unreadable (%s); training the intent model in process", err)
        return None
    if meta.get("fingerprint") != fingerprint(data.read_bytes()):
        log.warning(
            "shipped intent weights are stale (training data or features changed); training in process. "
            "Rebuild: python -m bot.offline.understand.intent_build --build"
        )
        return None
    return clf


@functools.cache
def model(analyse: Analyse) -> IntentModel:
    """The model: the shipped weights when they are current, else trained once per process from the training
    file, each question seen through `analyse`."""
    if os.environ.get(FORCE_TRAIN):
        log.info("%s is set: training the intent model in process", FORCE_TRAIN)
    elif (clf := shipped()) is not None:
        return clf
    return IntentModel.train(training_rows(analyse))
