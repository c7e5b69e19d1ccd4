"""The lexical leg: one tokenizer for Chinese and English, and a BM25 index kept in memory.

Tokens of a text (after NFKC, so full-width ＧＰＵ４０９０ becomes gpu4090, and lowercasing):
- each run of Chinese characters gives its jieba words (stop words dropped) and its character
  bigrams, so "显存" matches whether jieba kept it whole or not (a one-character run gives itself);
- each latin/number run gives one token ("h100", "4090d", "qwen2.5", "80gb"); a number glued to a
  unit ("80gb", "910b") also gives the number and the unit, so "80 GB" and "80GB" meet, and a word
  of three or more letters glued to a number ("rtx4090") also gives both parts.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Sequence

import bm25s
import jieba
import numpy as np

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


@functools.cache
def _jieba() -> jieba.Tokenizer:
    """jieba's dictionary, loaded once per process (about a second the first time)."""
    jieba.setLogLevel(logging.WARNING)
    tk = jieba.Tokenizer()
    tk.initialize()
    for word in _DOMAIN_WORDS:
        tk.add_word(word, freq=20000)
    return tk


def warm_up() -> None:
    """Load the jieba dictionary now rather than on the first query."""
    _jieba()


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _ZH_STOP else [run]
    words = [w for w in _jieba().lcut(run, HMM=False) if w not in _ZH_STOP]
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
