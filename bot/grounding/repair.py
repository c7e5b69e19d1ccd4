"""What to do with figures that have no source once the model's repair round is spent: the answer without
the sentences, list items and table rows that hold them (the report for the repair round itself is the
quality gate's, `bot.answer.gate`)."""

from __future__ import annotations

import re

from bot.grounding.check import GroundingResult

__all__ = ["drop_ungrounded_sentences"]

_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=[.;；])(?=\s)")
_LIST_ITEM = re.compile(r"^\s*(?:>\s*)*(?:[-*+]|[0-9]{1,3}[.)、])\s|^\s*#{1,6}\s")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")


def _spans(answer: str, result: GroundingResult) -> list[tuple[int, int]]:
    spans = []
    for u in result.ungrounded:
        start, end = u.start, u.end
        if answer[start:end] != u.text:  # a result computed on another text: find the figure by its text
            start = answer.find(u.text)
            if start < 0:
                continue
            end = start + len(u.text)
        spans.append((start, end))
    return spans


def _balanced(line: str) -> str:
    for mark in ("**", "`"):
        if line.count(mark) % 2:
            line = line.replace(mark, "")
    return line


def _drop_sentences(line: str, offset: int, spans: list[tuple[int, int]]) -> str:
    kept, pos = [], 0
    for piece in _SENTENCE_END.split(line):
        start, end = offset + pos, offset + pos + len(piece)
        pos += len(piece)
        if not any(s < end and e > start for s, e in spans):
            kept.append(piece)
    text = "".join(kept)
    return _balanced(text) if text.strip() else ""


def drop_ungrounded_sentences(answer: str, result: GroundingResult) -> str:
    """`answer` without the sentences, list items and table rows that hold an ungrounded figure.

    Sentences end at 。！？ (zh) and . ! ? ; followed by a space (en). A list item or heading with
    an ungrounded figure goes whole; a table keeps its header (a figure there becomes "—") and loses
    the rows; a table left without rows goes whole. Code blocks are never touched, emphasis and
    code marks left unbalanced are removed, and runs of blank lines are closed up.
    """
    spans = _spans(answer, result)
    if not spans:
        return answer
    lines = answer.splitlines(keepends=True)
    out: list[str | None] = []
    offset, in_code, table_start = 0, False, -1
    table_rows = table_dropped = 0
    for i, raw in enumerate(lines):
        line = raw.rstrip("\n")
        newline = raw[len(line) :]
        start, end = offset, offset + len(line)
        offset += len(raw)
        hits = [(s, e) for s, e in spans if s < end and e > start]
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        is_table = not in_code and line.lstrip().startswith("|")
        if is_table and table_start < 0:
            table_start, table_rows, table_dropped = len(out), 0, 0
        elif not is_table and table_start >= 0:
            if table_rows and table_rows == table_dropped:
                out[table_start:] = [None] * (len(out) - table_start)
            table_start = -1
        if in_code or not hits:
            out.append(raw)
            if is_table and len(out) - table_start > 2:
                table_rows += 1
            continue
        if is_table:
            is_header = i + 1 < len(lines) and bool(_TABLE_SEP.match(lines[i + 1]))
            if is_header or _TABLE_SEP.match(line):
                for s, e in sorted(hits, reverse=True):
                    line = line[: max(s, start) - start] + "—" + line[min(e, end) - start :]
                out.append(line + newline)
            else:
                out.append(None)
                table_rows += 1
                table_dropped += 1
        elif _LIST_ITEM.match(line):
            out.append(None)
        else:
            text = _drop_sentences(line, start, hits)
            out.append(text + newline if text else None)
    if table_start >= 0 and table_rows and table_rows == table_dropped:
        out[table_start:] = [None] * (len(out) - table_start)
    text = "".join(x for x in out if x is not None)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + ("\n" if answer.endswith("\n") else "")
