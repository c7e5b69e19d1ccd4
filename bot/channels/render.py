"""One canonical answer structure, rendered for each channel.

`Answer.from_trace(trace)` reads the advisor's markdown answer once into parts — the verdict (the
first paragraph), the blocks after it (text and tables, in order), the sources (from the trace's
citations) and the follow-up questions — and each channel renders those parts in its own format:

    render_markdown(answer)          full Markdown (API, widget)
    render_wecom(answer)             WeCom's markdown subset: no tables (a table becomes aligned lines)
    split_utf8(text, limit_bytes)    pieces at line boundaries, each within a byte limit (WeCom: 2,048)

A channel never re-parses the advisor's text itself; it renders these parts.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from bot.core.trace import AnswerTrace
from tools.yaml_data import load_yaml

PHRASES_FILE = Path(__file__).with_name("phrases.yaml")
WECOM_MARKDOWN_BYTES = 2048

_SOURCES_HEADING = re.compile(r"^\s*(\*\*|#+\s*)?(sources|references|参考|来源|参考资料)\s*[:：]?\s*(\*\*)?\s*$", re.I)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@cache
def _phrases() -> dict:
    return load_yaml(PHRASES_FILE.read_text(encoding="utf-8"))


def phrase(key: str, lang: str, **values) -> str:
    """A channel phrase (phrases.yaml) in zh or en, with its {variables} filled in."""
    entry = _phrases()[key][lang if lang in ("zh", "en") else "en"]
    return entry.format(**values) if isinstance(entry, str) else entry


def progress_phrase(tool: str, lang: str) -> str:
    table = phrase("progress", lang)
    return table.get(tool, table["default"])


# ---- the canonical structure ---------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Block:
    kind: Literal["text", "table"]
    text: str = ""
    table: Table | None = None


@dataclass(frozen=True)
class Source:
    title: str
    url: str


@dataclass(frozen=True)
class Answer:
    language: str
    verdict: str
    blocks: tuple[Block, ...] = ()
    sources: tuple[Source, ...] = ()
    follow_ups: tuple[str, ...] = ()
    conversation_id: str | None = None

    @property
    def tables(self) -> list[Table]:
        return [b.table for b in self.blocks if b.table is not None]

    @property
    def notes(self) -> list[str]:
        return [b.text for b in self.blocks if b.kind == "text"]

    @classmethod
    def from_text(cls, text: str, lang: str) -> Answer:
        """A plain notice (an apology, a clear error) in the same structure."""
        return cls(language=lang, verdict=text.strip())

    @classmethod
    def from_trace(cls, trace: AnswerTrace) -> Answer:
        paragraphs = _paragraphs(_without_sources(trace.answer))
        blocks = [_block(p) for p in paragraphs]
        verdict = ""
        if blocks and blocks[0].kind == "text":
            verdict = blocks.pop(0).text
        sources, seen = [], set()
        for c in trace.citations:
            key = (c.title, c.source)
            if key not in seen:
                seen.add(key)
                sources.append(Source(title=c.title, url=c.source))
        return cls(
            language=trace.language,
            verdict=verdict,
            blocks=tuple(blocks),
            sources=tuple(sources),
            follow_ups=tuple(trace.follow_ups),
            conversation_id=trace.conversation_id,
        )


def _without_sources(markdown: str) -> str:
    """The answer without its own sources list (rebuilt from the citations by every renderer)."""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if _SOURCES_HEADING.match(line):
            rest = lines[i + 1 :]
            j = 0
            while j < len(rest) and (
                not rest[j].strip() or rest[j].lstrip().startswith(("-", "*", "[")) or re.match(r"^\s*\d+[.)]", rest[j])
            ):
                j += 1
            return "\n".join(lines[:i] + rest[j:]).strip()
    return markdown.strip()


def _paragraphs(markdown: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", markdown) if p.strip()]


def _cells(line: str) -> tuple[str, ...]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return tuple(c.strip() for c in line.split("|"))


def _block(paragraph: str) -> Block:
    lines = paragraph.splitlines()
    if len(lines) >= 2 and all(ln.lstrip().startswith("|") for ln in lines) and _TABLE_RULE.match(lines[1]):
        header = _cells(lines[0])
        rows = tuple(_cells(ln) for ln in lines[2:])
        return Block(kind="table", table=Table(header=header, rows=rows))
    return Block(kind="text", text=paragraph)


# ---- full Markdown -------------------------------------------------------------------------------


def render_markdown(answer: Answer) -> str:
    parts = [answer.verdict] if answer.verdict else []
    for block in answer.blocks:
        if block.table is not None:
            t = block.table
            lines = ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
            lines += ["| " + " | ".join(r) + " |" for r in t.rows]
            parts.append("\n".join(lines))
        else:
            parts.append(block.text)
    if answer.sources:
        parts.append(
            f"**{phrase('sources', answer.language)}**\n"
            + "\n".join(
                f"- [{i}] [{s.title}]({s.url})" if s.url else f"- [{i}] {s.title}"
                for i, s in enumerate(answer.sources, 1)
            )
        )
    if answer.follow_ups:
        parts.append(f"**{phrase('follow_ups', answer.language)}**\n" + "\n".join(f"- {q}" for q in answer.follow_ups))
    return "\n\n".join(parts)


# ---- WeCom's markdown subset ---------------------------------------------------------------------


def display_width(text: str) -> int:
    """Columns on screen: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _plain(cell: str) -> str:
    return cell.replace("**", "").replace("`", "").strip()


def table_lines(table: Table) -> list[str]:
    """A table as aligned lines: every column padded to its widest cell, in inline code (monospace)."""
    rows = [tuple(_plain(c) for c in table.header)] + [tuple(_plain(c) for c in r) for r in table.rows]
    n = max(len(r) for r in rows)
    rows = [r + ("",) * (n - len(r)) for r in rows]
    widths = [max(display_width(r[i]) for r in rows) for i in range(n)]
    out = []
    for r in rows:
        cells = [c + " " * (widths[i] - display_width(c)) for i, c in enumerate(r)]
        out.append("`" + "  ".join(cells).rstrip() + "`")
    return out


def _wecom_text(text: str) -> str:
    """Lists become bullet lines (WeCom's markdown has no lists); everything else it supports passes."""
    return re.sub(r"^(\s*)[-*]\s+", lambda m: m.group(1) + "• ", text, flags=re.M)


def render_wecom(answer: Answer, follow_ups: bool = True) -> str:
    parts = [_wecom_text(answer.verdict)] if answer.verdict else []
    for block in answer.blocks:
        parts.append("\n".join(table_lines(block.table)) if block.table is not None else _wecom_text(block.text))
    if answer.sources:
        parts.append(
            f"**{phrase('sources', answer.language)}**\n"
            + "\n".join(
                f"[{i}] [{s.title}]({s.url})" if s.url.startswith(("http://", "https://")) else f"[{i}] {s.title}"
                for i, s in enumerate(answer.sources, 1)
            )
        )
    if follow_ups and answer.follow_ups:
        parts.append(f"**{phrase('follow_ups', answer.language)}**\n" + "\n".join(f"• {q}" for q in answer.follow_ups))
    return "\n\n".join(parts)


# ---- splitting -----------------------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _hard_split(line: str, limit: int) -> list[str]:
    """A single line longer than the limit, cut between characters (never inside one)."""
    pieces, current, size = [], [], 0
    for ch in line:
        n = _utf8_len(ch)
        if size + n > limit and current:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(ch)
        size += n
    if current:
        pieces.append("".join(current))
    return pieces


def split_utf8(text: str, limit: int = WECOM_MARKDOWN_BYTES) -> list[str]:
    """Pieces of `text` split at line boundaries, each at most `limit` bytes of UTF-8.

    Blank lines between pieces are dropped at the cut; a line longer than the limit is cut between
    characters. Joining the pieces with newlines gives the text back (up to those blank lines)."""
    if limit < 8:
        raise ValueError("limit too small")
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.split("\n"):
        for part in _hard_split(line, limit) if _utf8_len(line) > limit else [line]:
            extra = _utf8_len(part) + (1 if current else 0)
            if current and size + extra > limit:
                pieces.append("\n".join(current).strip("\n"))
                current, size = [], 0
                extra = _utf8_len(part)
            if not current and not part.strip():
                continue  # no piece starts with a blank line
            current.append(part)
            size += extra
    if current and "\n".join(current).strip():
        pieces.append("\n".join(current).strip("\n"))
    return pieces or [""]


def split_numbered(text: str, lang: str, limit: int = WECOM_MARKDOWN_BYTES) -> list[str]:
    """`split_utf8`, with "(part i/n)" in front of each piece when there is more than one; every piece,
    marker included, stays within `limit` bytes."""
    pieces = split_utf8(text, limit)
    if len(pieces) == 1:
        return pieces
    reserve = _utf8_len(phrase("part", lang, i=999, n=999)) + 1
    pieces = split_utf8(text, limit - reserve)
    n = len(pieces)
    return [phrase("part", lang, i=i, n=n) + "\n" + p for i, p in enumerate(pieces, 1)]
