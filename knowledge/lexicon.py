"""What the lexical leg keeps beside the index, so a fresh process does not load jieba's whole dictionary.

jieba segments a run of Chinese by a shortest path over the dictionary words that occur in it; with
HMM off (and for the HMM's "is this a word?" check) it reads the dictionary only at substrings of the
run. So a tokenizer that, before cutting a run, looks up the run's substrings (up to the longest word)
in a word store cuts exactly as one with the whole dictionary in memory: the same words for any text,
a question's words included, not only the words of the indexed notes.

- The word store: `<data dir>/jieba-words.sqlite3`, jieba's words with their frequencies (the
  project's domain words added as `jieba.add_word` adds them) and the dictionary's total, about 6 MB. Written once from a loaded dictionary (a third of a second); a store written for
  another jieba, dictionary or domain-word list is ignored and written again.
- The token cache: `<data dir>/lexical-tokens.json`, the tokens of every indexed chunk by its content
  hash, valid for one tokenizer (the lexical rules' source, jieba, the Unicode tables), so a retriever
  does not tokenize the unchanged notes again. A chunk that is new or changed is tokenized at load.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

log = logging.getLogger("gpu_advisor.knowledge")


def _import_jieba() -> ModuleType:
    """jieba, imported with `pkg_resources` hidden: jieba uses it only to open its own files and falls back
    to a plain open() without it, and importing it costs about 0.1 s of every start (and a deprecation
    warning). Nothing changes where it is already imported."""
    if "jieba" in sys.modules or "pkg_resources" in sys.modules:
        import jieba

        return jieba
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes `import pkg_resources` fail
    try:
        import jieba
    finally:
        sys.modules.pop("pkg_resources", None)
    return jieba


jieba = _import_jieba()

STORE_FILE = "jieba-words.sqlite3"
TOKENS_FILE = "lexical-tokens.json"
_BATCH = 500
_ABSENT_MAX = 100_000


class StoreTokenizer(jieba.Tokenizer):
    """A jieba tokenizer whose dictionary entries are read from the word store as sentences need them.

    `FREQ` only ever holds entries of the whole dictionary with their exact values (a word with its
    frequency, a prefix of a word with 0), and before a sentence is cut it holds every entry that is
    a substring of it; `total` is the whole dictionary's. jieba reads nothing else, so the cut is the
    same as with the whole dictionary."""

    def __init__(self, connection: sqlite3.Connection, total: int, longest: int):
        super().__init__()
        self.FREQ = {}
        self.total = total
        self.initialized = True  # never load jieba's own dictionary
        self._connection = connection
        self._longest = longest
        self._fill_lock = threading.Lock()
        #: substrings looked up and found to be no entry (the store is read-only), so each question does not ask
        #: SQLite about them again; emptied when it reaches `_ABSENT_MAX` (a few MB) so a long-lived server stays small
        self._absent: set[str] = set()

    def get_DAG(self, sentence: str) -> dict[int, list[int]]:
        self._fill(sentence)
        return super().get_DAG(sentence)

    def _fill(self, sentence: str) -> None:
        freq, n, longest = self.FREQ, len(sentence), self._longest
        absent = self._absent
        todo = [
            w
            for w in {sentence[i:j] for i in range(n) for j in range(i + 1, min(n, i + longest) + 1)}
            if w not in freq and w not in absent
        ]
        if not todo:
            return
        with self._fill_lock:
            found: list[tuple[str, int]] = []
            for start in range(0, len(todo), _BATCH):
                part = todo[start : start + _BATCH]
                found += self._connection.execute(
                    f"SELECT word, freq FROM words WHERE word IN ({','.join('?' * len(part))})", part
                ).fetchall()
            for word, f in found:  # words first: a prefix that is itself a word keeps its frequency
                freq[word] = f
            for word, _ in found:
                for end in range(1, len(word)):
                    freq.setdefault(word[:end], 0)
            if len(absent) > _ABSENT_MAX:
                absent.clear()
            absent.update(w for w in todo if w not in freq)


def open_store(data_dir: Path, key: str) -> StoreTokenizer | None:
    """A tokenizer over the word store in `data_dir`; None when there is none or it was written for another key."""
    path = data_dir / STORE_FILE
    if not path.is_file():
        return None
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        meta = dict(connection.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("key") != key:
            connection.close()
            return None
        return StoreTokenizer(connection, int(meta["total"]), int(meta["longest"]))
    except (sqlite3.Error, KeyError, ValueError) as err:
        log.info("knowledge: the word store at %s cannot be read (%s); using jieba's dictionary", path, err)
        return None


def write_store(data_dir: Path, tokenizer: jieba.Tokenizer, key: str) -> bool:
    """Write the Chinese words of a loaded tokenizer (`FREQ`, `total`) as the word store; False when the
    folder is not writable (the next process then loads the whole dictionary again)."""
    words = sorted((w, f) for w, f in tokenizer.FREQ.items() if f > 0)  # entries of 0 are prefixes
    tmp = None
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".jieba-words-", suffix=".tmp")
        os.close(fd)
        connection = sqlite3.connect(tmp)
        try:
            connection.execute("PRAGMA journal_mode=OFF")
            connection.execute("PRAGMA synchronous=OFF")
            connection.execute("CREATE TABLE words (word TEXT PRIMARY KEY, freq INTEGER NOT NULL) WITHOUT ROWID")
            connection.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            connection.executemany("INSERT INTO words VALUES (?, ?)", words)
            longest = max((len(w) for w, _ in words), default=1)
            connection.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("key", key), ("total", str(tokenizer.total)), ("longest", str(longest))],
            )
            connection.commit()
        finally:
            connection.close()
        os.chmod(tmp, 0o644)  # as readable as the index beside it (mkstemp makes it private)
        os.replace(tmp, data_dir / STORE_FILE)
        return True
    except (OSError, sqlite3.Error) as err:
        log.info("knowledge: could not write the word store in %s (%s)", data_dir, err)
        if tmp:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        return False


def read_tokens(data_dir: Path, key: str) -> dict[str, list[str]]:
    """Cached tokens by chunk hash, or {} when there is no cache for this tokenizer."""
    try:
        data = json.loads((data_dir / TOKENS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("tokens"), dict):
        return {}
    return {h: t.split(" ") if t else [] for h, t in data["tokens"].items() if isinstance(t, str)}


def write_tokens(data_dir: Path, key: str, tokens: dict[str, list[str]]) -> None:
    """Replace the token cache (tokens hold no spaces: they come from runs of CJK or of [a-z0-9.])."""
    text = json.dumps({"key": key, "tokens": {h: " ".join(t) for h, t in tokens.items()}}, ensure_ascii=False)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".lexical-tokens-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, data_dir / TOKENS_FILE)
    except OSError as err:
        log.info("knowledge: could not write the token cache in %s (%s)", data_dir, err)
        if tmp:
            with contextlib.suppress(OSError):
                os.remove(tmp)
