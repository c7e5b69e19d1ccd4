"""The intent classifier: a linear model over character n-grams and jieba words, trained at first use.

Training data is `data/intents.yaml` (labelled questions written for this project, plus the training
four-fifths of `tests/corpus/questions.yaml`, exported by `bench/understanding.py --export`; the held-out
fifth is never in it). Before features are taken, the parser's view of the question replaces what is
specific by what it is: a GPU name becomes "Ⓖ", a model "Ⓜ", digits "0" (`abstract()`), so "Qwen3-14B 的
bf16 权重多大" teaches the model about every model's weights, not about Qwen. Slot flags (a GPU named, a
budget, a concurrency…) are features too.

Model: multinomial logistic regression fitted by a fixed number of passes of stochastic gradient descent
in a fixed order (seeded), so training is deterministic and takes a fraction of a second. `predict()`
returns the intents with their probabilities; the caller applies the confidence threshold.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import jieba
import numpy as np
import yaml

DATA = Path(__file__).parent / "data" / "intents.yaml"
EPOCHS = 50
LEARNING_RATE = 3.0
L2 = 1e-5
SEED = 10

jieba.setLogLevel(60)
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")


@functools.cache
def _cues() -> tuple[tuple[str, re.Pattern[str]], ...]:
    from bot.offline.lexicon import CUE_GROUPS
    from bot.offline.patterns import C

    return tuple((name, C(p)) for name, p in CUE_GROUPS)


def features(text: str, flags: Iterable[str] = ()) -> list[str]:
    """Character 1–3-grams (with boundaries), jieba words and word pairs, cue-word groups (lexicon) and
    slot flags of an abstracted text."""
    t = _SPACE.sub(" ", _DIGITS.sub("0", text.lower())).strip()
    feats = [f"f:{f}" for f in flags]
    feats.extend(f"k:{name}" for name, rx in _cues() if rx.search(text))
    padded = f"^{t}$"
    for n in (2, 3):
        feats.extend("c:" + padded[i : i + n] for i in range(len(padded) - n + 1))
    feats.extend("c:" + ch for ch in t if not ch.isspace())
    words = [w for w in jieba.lcut(t) if w.strip()]
    feats.extend("w:" + w for w in words)
    feats.extend(f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    return feats


#: feature weights by kind: cue-word groups and slot flags carry more than one character n-gram
WEIGHTS = {"k": 3.0, "f": 3.0, "w": 1.5, "b": 1.0, "c": 1.0}


def _weight(feature: str) -> float:
    return WEIGHTS[feature[0]]


class IntentModel:
    def __init__(self, labels: list[str], vocab: dict[str, int], weights: np.ndarray):
        self.labels = labels
        self.vocab = vocab
        self.weights = weights  # (features + 1 bias row) × labels

    @classmethod
    def train(cls, examples: list[tuple[str, list[str], str]]) -> IntentModel:
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
        step = 0
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
                step += 1
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


def load_examples(path: Path = DATA) -> list[tuple[str, str]]:
    """(question, intent) pairs of the training file."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = [(q, intent) for intent, qs in (data.get("examples") or {}).items() for q in qs]
    out += [(row["q"], row["intent"]) for row in data.get("corpus_train") or []]
    return out


@functools.cache
def model(analyse: Callable[[str], tuple[str, list[str]]]) -> IntentModel:
    """The model, trained once per process from the training file, each question seen through `analyse`
    (the parser's view: names masked, slot flags)."""
    rows = []
    for q, intent in load_examples():
        text, flags = analyse(q)
        rows.append((text, flags, intent))
    return IntentModel.train(rows)
