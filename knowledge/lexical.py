"""The lexical leg: one tokenizer for Chinese and English, and a BM25 index kept in memory.

Tokens of a text (after NFKC, so full-width ＧＰＵ４０９０ becomes gpu4090, and lowercasing):
- each run of Chinese characters gives its jieba words (stop words dropped) and its character
  bigrams, so "显存" matches whether jieba kept it whole or not (a one-character run gives itself);
- each latin/number run gives one token ("h100", "4090d", "qwen2.5", "80gb"); a number glued to a
  unit ("80gb", "910b") also gives the number and the unit, so "80 GB" and "80GB" meet, and a word
  of three or more letters glued to a number ("rtx4090") also gives both parts.

jieba's dictionary is one per process: read sentence by sentence from the word store beside the index
(`warm_up(data_dir)`; see `knowledge.lexicon`), or loaded whole (about a second) when there is no store
yet or a lot of text to cut; the words are the same either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from knowledge.lexicon import StoreTokenizer, jieba, open_store, read_tokens, write_store, write_tokens

_CJK_RUN = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
_TOKEN = re.compile(rf"(?P<cjk>{_CJK_RUN})|(?P<latin>[a-z0-9]+(?:\.[0-9]+)*)")
_NUMBER_UNIT = re.compile(r"^(\d+(?:\.\d+)?)([a-z]{2,})$|^(\d+(?:\.\d+)?)[a-z]$")
_NAME_NUMBER = re.compile(r"^([a-z]{3,})(\d[\d.]*[a-z]*)$")

_ZH_STOP = frozenset(
    "的 了 是 在 和 与 及 或 也 就 都 而 吗 呢 吧 啊 呀 嘛 我 你 您 他 她 它 我们 你们 他们 这 那 这个 那个 这些 那些 "
    "有 个 之 为 对 于 把 被 让 从 到 着 过 要 会 能 可以 可 还 又 很 更 最 该 用 上 下 中 里 些 一 一个 一些 "
    "多少 什么 怎么 怎样 如何 哪个 哪些 哪 吗 么 是否 请问 请 以及 如果 因为 所以 但是 但 并 等 等等".split()
)
_EN_STOP = frozenset(
    "a an the and or of to in on for with by at as is are was were be been being it its this that these those "
    "do does did can could should would will shall may might i we you he she they my our your what which who "
    "how why when where than then there here so if not no from into about per vs".split()
)
#: domain words jieba's dictionary lacks or splits
_DOMAIN_WORDS = (
    "显存 算力 昇腾 寒武纪 海光 沐曦 壁仞 摩尔线程 天数智芯 燧原 国产卡 互联 带宽 推理 训练 微调 全参 全量微调 "
    "量化 租赁 整机 机架 功耗 散热 集群 多卡 单卡 算力卡 卡间 张量并行 流水线并行 数据并行 混合精度 "
    "吞吐 时延 首字 上下文 长上下文 稀疏 稠密 出口管制 禁售 特供 显存带宽 显存容量"
).split()


#: the frequency `add_word` gives each domain word
_DOMAIN_FREQ = 20000
#: chunks' characters to tokenize at once above which jieba's whole dictionary is loaded (the word
#: store costs about 16 µs per character, the dictionary about a second)
BULK_CHARS = 50_000

_active: jieba.Tokenizer | None = None
_lock = threading.Lock()


@functools.cache
def _full() -> jieba.Tokenizer:
    """jieba's whole dictionary plus the domain words, loaded once per process (about a second)."""
    jieba.setLogLevel(logging.WARNING)
    tk = jieba.Tokenizer()
    tk.initialize()
    for word in _DOMAIN_WORDS:
        tk.add_word(word, freq=_DOMAIN_FREQ)
    return tk


@functools.cache
def dictionary_key() -> str:
    """What the word store depends on: jieba's version and dictionary file, the domain words."""
    try:
        size = os.stat(Path(jieba.__file__).with_name("dict.txt")).st_size
    except OSError:
        size = -1
    parts = ["store-1", jieba.__version__, str(size), str(_DOMAIN_FREQ), " ".join(_DOMAIN_WORDS)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


@functools.cache
def tokens_key() -> str:
    """What `tokenize()` depends on: these rules (this file), jieba's dictionary, the Unicode tables."""
    try:
        source = Path(__file__).read_bytes()
    except OSError:
        source = b"?"
    parts = [hashlib.sha256(source).hexdigest(), dictionary_key(), unicodedata.unidata_version]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _jieba() -> jieba.Tokenizer:
    return _active or _use(None)


def _use(data_dir: Path | None) -> jieba.Tokenizer:
    global _active
    with _lock:
        if _active is None and data_dir is not None:
            _active = open_store(data_dir, dictionary_key())
        if _active is None:
            _active = _full()
            if data_dir is not None:  # the store was missing or stale: write it for the next process
                write_store(data_dir, _active, dictionary_key())
        return _active


def warm_up(data_dir: Path | None = None) -> None:
    """Make the tokenizer ready: from the word store in `data_dir` when it is there and current
    (milliseconds), else by loading jieba's whole dictionary (about a second) and writing the store."""
    _use(data_dir)


def bulk(chars: int) -> None:
    """About to tokenize this many characters: above `BULK_CHARS`, load the whole dictionary once rather
    than reading the word store sentence by sentence. Either way the tokens are the same."""
    global _active
    if chars > BULK_CHARS and isinstance(_active, StoreTokenizer):
        full = _full()
        with _lock:
            _active = full


def settle(data_dir: Path | None) -> None:
    """The bulk cutting is over: go back to the word store in `data_dir` (when it is there and current) and let
    jieba's whole dictionary go, about 60 MB that a process would otherwise keep for its whole life (a server
    started on a fresh data folder, or a worker reading its chunks from a Chroma server for the first time).
    The tokens are the same either way."""
    global _active
    if data_dir is None or isinstance(_active, StoreTokenizer):
        return
    with _lock:
        store = open_store(data_dir, dictionary_key())
        if store is not None:
            _active = store
            _full.cache_clear()
            _trim()


def remember_tokens(data_dir: Path, texts: Sequence[tuple[str, str]]) -> None:
    """Add the tokens of these (content hash, text) chunks to the token cache beside the index: the index job
    has just cut them (with the whole dictionary), and a worker that reads them back from a Chroma server then
    finds their tokens instead of loading the dictionary to cut them again."""
    key = tokens_key()
    known = read_tokens(data_dir, key)
    known.update((h, tokenize(text)) for h, text in texts if h and h not in known)
    write_tokens(data_dir, key, known)


def _trim() -> None:
    """Hand the heap that the dictionary's words held back to the system (glibc's `malloc_trim`: about 30 MB a
    freed dictionary leaves resident otherwise); nothing where there is no such call."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).malloc_trim(0)


def segment(run: str, hmm: bool = False) -> list[str]:
    """jieba's words of a run of Chinese characters (the project's one dictionary, domain words included)."""
    return _jieba().lcut(run, HMM=hmm)


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _ZH_STOP else [run]
    words = [w for w in segment(run) if w not in _ZH_STOP]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return words + bigrams


def _latin_tokens(tok: str) -> list[str]:
    if tok in _EN_STOP:
        return []
    out = [tok]
    m = _NUMBER_UNIT.match(tok)
    if m:
        if m.group(1):
            out += [m.group(1), m.group(2)]
        else:
            out.append(m.group(3))
    m = _NAME_NUMBER.match(tok)
    if m and len(m.group(2)) >= 2:  # "rtx4090" -> rtx, 4090; "h100" stays whole
        out += [m.group(1), m.group(2)]
    return out


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def tokenize(text: str) -> list[str]:
    """Lexical tokens of a text (see the module docstring)."""
    out: list[str] = []
    for m in _TOKEN.finditer(normalize(text)):
        if m.group("cjk"):
            out += _cjk_tokens(m.group("cjk"))
        else:
            out += _latin_tokens(m.group("latin"))
    return out


class LexicalIndex:
    """BM25 (Lucene variant) over pre-tokenized documents, held in memory."""

    def __init__(self, docs_tokens: Sequence[list[str]], k1: float = 1.2, b: float = 0.75):
        self.size = len(docs_tokens)
        self._bm25: bm25s.BM25 | None = None
        if self.size:
            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index([list(t) or [""] for t in docs_tokens], show_progress=False)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        """One BM25 score per document (0 where no token matches)."""
        if self._bm25 is None or not query_tokens:
            return np.zeros(self.size, dtype=np.float32)
        return self._bm25.get_scores(query_tokens)
