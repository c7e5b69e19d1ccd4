"""Markdown-aware chunking with stable ids.

A note is cut into groups at its `#`/`##` headings; a chunk never spans two groups. Inside a group,
paragraphs (and `###` sub-headings) are packed greedily up to `max_chars`; a paragraph longer than
that is split at sentence ends (。！？； and . ! ? ; before a space), a list at its items, a table at its
rows (with the header row repeated). Each chunk's text starts with its heading path
("Title › Section › Sub-section") so both retrieval legs see the context.

Chunk ids are `<doc_id>#<section-slug>.<ordinal>`: editing one section changes only that section's ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from knowledge.notes import Note, slug

MAX_CHARS = 600
HEADING_SEP = " › "

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?])|(?<=[.;])\s+(?=\S)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class Chunk(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    doc_id: str
    #: heading path below the title, joined by " › " ("" for the text before the first heading)
    section: str
    ordinal: int
    #: heading path line + body; what both retrieval legs index and what a citation quotes
    text: str


@dataclass
class _Group:
    heading: str | None
    #: (sub-heading path inside the group, paragraph text, is a sub-heading); a sub-heading is a paragraph
    paragraphs: list[tuple[tuple[str, ...], str, bool]] = field(default_factory=list)


def _paragraphs(lines: list[str]) -> Iterator[str]:
    buf: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not line.strip():
            if buf:
                yield "\n".join(buf).strip("\n")
                buf = []
            continue
        buf.append(line.rstrip())
    if buf:
        yield "\n".join(buf).strip("\n")


def _groups(note: Note) -> list[_Group]:
    groups = [_Group(None)]
    sub: list[str] = []  # headings of level >= 3 inside the current group
    pending: list[str] = []
    in_fence = False
    first_content = True

    def flush() -> None:
        for p in _paragraphs(pending):
            groups[-1].paragraphs.append((tuple(sub), p, False))
        pending.clear()

    for line in note.body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m is None:
            pending.append(line)
            if line.strip():
                first_content = False
            continue
        level, text = len(m.group(1)), m.group(2).strip()
        flush()
        if level == 1 and first_content and text.strip() == note.title.strip():
            first_content = False
            continue  # the note's title repeated as its first heading
        first_content = False
        if level <= 2:
            groups.append(_Group(text))
            sub = []
        else:
            depth = level - 3
            sub = [*sub[:depth], text]
            groups[-1].paragraphs.append((tuple(sub), text, True))
    flush()
    return [g for g in groups if g.paragraphs]


def _split_long(paragraph: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters: a code block or list is cut at lines, a table at rows (its
    header repeated, a code block's fences too), prose at sentence ends; an over-long unit is cut hard."""
    if len(paragraph) <= limit:
        return [paragraph]
    lines = paragraph.splitlines()
    head: list[str] = []
    tail: list[str] = []
    joiner = "\n"
    if _FENCE.match(lines[0]):
        closed = len(lines) > 1 and bool(_FENCE.match(lines[-1]))
        head, tail, units = (
            [lines[0]],
            [lines[-1] if closed else lines[0].strip()[:3]],
            lines[1 : -1 if closed else None],
        )
    elif len(lines) > 2 and all(ln.lstrip().startswith("|") for ln in lines):
        head, units = lines[:2], lines[2:]
    elif len(lines) > 1 and sum(bool(_LIST_ITEM.match(ln)) for ln in lines) >= len(lines) / 2:
        units = lines
    else:
        joiner = ""
        units = [s for s in _SENTENCE_END.split(paragraph.replace("\n", " ")) if s and s.strip()]
        units = [u if u.endswith(" ") or _ends_cjk(u) else u + " " for u in units]
    budget = max(limit - sum(len(x) + 1 for x in head + tail), limit // 4)

    def wrap(body: str) -> str:
        return "\n".join([*head, body, *tail]) if head or tail else body.strip()

    pieces: list[str] = []
    cur: list[str] = []
    for unit in units:
        while len(unit) > budget:  # one sentence, row or line longer than the budget: cut it hard
            if cur:
                pieces.append(wrap(joiner.join(cur)))
                cur = []
            pieces.append(wrap(unit[:budget]))
            unit = unit[budget:]
        if cur and len(joiner.join([*cur, unit])) > budget:
            pieces.append(wrap(joiner.join(cur)))
            cur = []
        cur.append(unit)
    if cur:
        pieces.append(wrap(joiner.join(cur)))
    return [p for p in pieces if p.strip()]


def _ends_cjk(text: str) -> bool:
    return bool(text) and ("\u3000" <= text[-1] <= "\u9fff" or "\uff00" <= text[-1] <= "\uffef")


def _heading_line(title: str, group: str | None, sub: tuple[str, ...]) -> str:
    return HEADING_SEP.join([title, *([group] if group else []), *sub])


def _pack(note: Note, group: _Group, section_slug: str, max_chars: int) -> list[Chunk]:
    """Pack one group's paragraphs into chunks of at most `max_chars` characters of body."""
    chunks: list[Chunk] = []

    def emit(cur: list[tuple[tuple[str, ...], str, bool]]) -> None:
        if not cur:
            return
        subs = {s for s, _, _ in cur}
        sub = cur[0][0] if len(subs) == 1 else ()
        head = _heading_line(note.title, group.heading, sub)
        body = "\n\n".join(p for _, p, _ in cur)
        ordinal = len(chunks)
        chunks.append(
            Chunk(
                id=f"{note.doc_id}#{section_slug}.{ordinal}",
                doc_id=note.doc_id,
                section=HEADING_SEP.join([*([group.heading] if group.heading else []), *sub]),
                ordinal=ordinal,
                text=f"{head}\n\n{body}",
            )
        )

    cur: list[tuple[tuple[str, ...], str, bool]] = []
    for sub, para, is_heading in group.paragraphs:
        for piece in _split_long(para, max_chars):
            size = sum(len(p) + 2 for _, p, _ in cur) + len(piece)
            if cur and size > max_chars:
                carry = []
                while cur and cur[-1][2]:  # never end a chunk on a dangling sub-heading
                    carry.insert(0, cur.pop())
                emit(cur)
                cur = carry
            cur.append((sub, piece, is_heading))
    if any(not h for _, _, h in cur):
        emit(cur)
    return chunks


def chunk_note(note: Note, max_chars: int = MAX_CHARS) -> list[Chunk]:
    """The note's chunks, in reading order."""
    chunks: list[Chunk] = []
    used_slugs: dict[str, int] = {}
    for group in _groups(note):
        base = slug(group.heading, fallback="section") if group.heading else "intro"
        n = used_slugs.get(base, 0)
        used_slugs[base] = n + 1
        chunks += _pack(note, group, base if n == 0 else f"{base}-{n + 1}", max_chars)
    return chunks
