"""Reading notes from disk: the shipped markdown notes and a user's own .md / .txt files.

A shipped note starts with YAML front matter (id, title, lang, topics, sources [{title, url}], as_of).
A user's file may have none: its doc id then comes from the file name, its title from the first
heading (.md) or first line (.txt), and its language from the share of Chinese characters.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from knowledge.errors import BadNote

#: origin label of the notes shipped with the package
BUILTIN = "builtin"
SUFFIXES = (".md", ".txt")
#: a note larger than this is not a note (a log, a dump): refused, naming the file
MAX_NOTE_BYTES = 1_000_000
#: notes per folder; a folder with more is not a note folder (a home directory, a source tree)
MAX_NOTES_PER_FOLDER = 5000

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_LETTER = re.compile(r"[A-Za-z]")


class Note(BaseModel):
    """One document, ready to be chunked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    title: str
    lang: Literal["zh", "en"]
    topics: tuple[str, ...] = ()
    #: the first source URL of a note, or the file path of a user's document
    source: str
    as_of: str | None = None
    body: str
    kind: Literal["md", "txt"]
    path: str
    origin: str
    #: sha256 of the file's bytes
    content_hash: str


@dataclass(frozen=True)
class CorpusRoot:
    """A folder (or single file) of notes, and the origin label its chunks carry in the index."""

    path: Path
    origin: str

    @classmethod
    def user(cls, path: Path) -> CorpusRoot:
        resolved = path.expanduser().resolve()
        return cls(resolved, str(resolved))


def detect_lang(text: str) -> Literal["zh", "en"]:
    """ "zh" when Chinese characters are at least half as many as latin letters."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_LATIN_LETTER.findall(text))
    return "zh" if cjk and cjk * 2 >= latin else "en"


def slug(text: str, fallback: str = "doc", limit: int = 48) -> str:
    """Lowercase word characters (CJK kept) joined by '-'."""
    s = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    return s[:limit].strip("-_") or fallback


def split_front_matter(text: str) -> tuple[dict, str]:
    """(front matter as a dict, body). A file without front matter gives ({}, text)."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text
    data = yaml.safe_load(m.group(1)) or {}
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return data, text[m.end() :]


def _read_text(path: Path) -> tuple[str, str]:
    with path.open("rb") as fh:  # never more than the cap, whatever the file claims to be
        raw = fh.read(MAX_NOTE_BYTES + 1)
    if len(raw) > MAX_NOTE_BYTES:
        raise BadNote(
            f"{path}: larger than {MAX_NOTE_BYTES:,} bytes; a note should be a page of text, not a dump. Skipped.",
            f"{path}：超过 {MAX_NOTE_BYTES:,} 字节；笔记应是一页文字，而不是数据转储。已跳过。",
            field="path",
        )
    if b"\x00" in raw[:8192]:
        raise BadNote(
            f"{path}: a binary file, not text; only .md and .txt notes are indexed. Skipped.",
            f"{path}：是二进制文件而不是文本；只索引 .md 和 .txt 笔记。已跳过。",
            field="path",
        )
    digest = hashlib.sha256(raw).hexdigest()
    for encoding in ("utf-8-sig", "gb18030"):  # price sheets from Windows machines are often GBK
        try:
            return raw.decode(encoding), digest
        except UnicodeDecodeError:
            continue
    raise BadNote(
        f"{path}: not UTF-8 or GB18030 text; save it as UTF-8 and index again.",
        f"{path}：不是 UTF-8 或 GB18030 文本；请另存为 UTF-8 后重新索引。",
        field="path",
    )


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        m = re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    return None


def _source_of(meta: dict, path: Path) -> str:
    for src in meta.get("sources") or []:
        url = src.get("url") if isinstance(src, dict) else src
        if url:
            return str(url)
    return str(path)


def load_note(path: Path, origin: str) -> Note:
    text, digest = _read_text(path)
    kind = "txt" if path.suffix.lower() == ".txt" else "md"
    try:
        meta, body = split_front_matter(text) if kind == "md" else ({}, text)
    except (yaml.YAMLError, ValueError) as err:
        raise BadNote(
            f"{path}: the front matter is not valid YAML ({err}); fix it and index again.",
            f"{path}：front matter 不是有效的 YAML（{err}）；请修正后重新索引。",
            field="front_matter",
        ) from None
    if kind == "txt":
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        title = first[:120] or path.stem
    else:
        title = str(meta.get("title") or _first_heading(body) or path.stem)
    lang = meta.get("lang")
    if lang not in ("zh", "en"):
        lang = detect_lang(title + "\n" + body)
    topics = meta.get("topics") or []
    if isinstance(topics, str):
        topics = [topics]
    as_of = meta.get("as_of")
    if isinstance(as_of, dt.date):
        as_of = as_of.isoformat()
    return Note(
        doc_id=str(meta.get("id") or slug(path.stem)),
        title=title,
        lang=lang,
        topics=tuple(str(t) for t in topics),
        source=_source_of(meta, path),
        as_of=str(as_of) if as_of else None,
        body=body,
        kind=kind,
        path=str(path),
        origin=origin,
        content_hash=digest,
    )


def note_files(root: Path, skipped: list[str] | None = None) -> list[Path]:
    """The .md and .txt files under a folder (or the file itself), sorted; hidden files, `_*` and README skipped.

    Only regular files inside the folder are returned: a symlink that leads out of it (to /etc/passwd,
    /proc/self/environ, another user's files) is not followed, and devices, pipes and sockets are
    skipped; each such file is named in `skipped`."""
    skipped = skipped if skipped is not None else []
    if root.is_file():
        return [root] if root.suffix.lower() in SUFFIXES and _regular(root, root.parent, skipped) else []
    if not root.is_dir():
        return []
    base = root.resolve()
    files = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel = Path(folder).relative_to(root).parts
        if any(part.startswith((".", "_")) for part in rel):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not d.startswith((".", "_")) and _inside(Path(folder) / d, base, skipped)]
        for name in names:
            p = Path(folder) / name
            if name.startswith((".", "_")) or p.suffix.lower() not in SUFFIXES or p.stem.lower() == "readme":
                continue
            if _regular(p, base, skipped):
                files.append(p)
    return sorted(files)


def _inside(path: Path, base: Path, skipped: list[str]) -> bool:
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        skipped.append(f"{path}: a broken or looping link; skipped.")
        return False
    if target != base and base not in target.parents:
        skipped.append(f"{path}: a link that leads out of {base} (to {target}); not followed.")
        return False
    return True


def _regular(path: Path, base: Path, skipped: list[str]) -> bool:
    if not _inside(path, base, skipped):
        return False
    try:
        mode = path.stat().st_mode
    except OSError as err:
        skipped.append(f"{path}: cannot be read ({err.strerror}); skipped.")
        return False
    if not stat.S_ISREG(mode):
        skipped.append(f"{path}: not a regular file (a device, pipe or socket); skipped.")
        return False
    return True


def load_corpus(
    roots: Sequence[CorpusRoot], skipped: list[str] | None = None, lenient: bool | None = None
) -> list[Note]:
    """Every note under the roots; a doc id used twice is an error naming both files.

    With `skipped` (a list to fill), a bad file in a user's folder (binary, too large, not UTF-8,
    broken front matter, a duplicate id, over the per-folder count) is left out and named there
    instead of stopping the whole corpus: how a server starts with a folder someone else wrote into.
    The shipped notes are always strict."""
    notes: list[Note] = []
    seen: dict[str, str] = {}
    lenient = skipped is not None if lenient is None else lenient
    skipped = skipped if skipped is not None else []
    for root in roots:
        paths = note_files(root.path, skipped)
        if len(paths) > MAX_NOTES_PER_FOLDER:
            message = (
                f"{root.path}: {len(paths)} files, more than the {MAX_NOTES_PER_FOLDER} notes a folder may hold; "
                f"only the first {MAX_NOTES_PER_FOLDER} are indexed."
            )
            if not lenient:
                raise BadNote(
                    message,
                    f"{root.path}：有 {len(paths)} 个文件，超过每个文件夹 {MAX_NOTES_PER_FOLDER} "
                    "篇笔记的上限；请只索引笔记所在的文件夹。",
                    field="path",
                )
            skipped.append(message)
            paths = paths[:MAX_NOTES_PER_FOLDER]
        for path in paths:
            try:
                note = load_note(path, root.origin)
                if note.doc_id in seen:
                    raise BadNote(
                        f"Two documents share the id {note.doc_id!r}: {seen[note.doc_id]} and {path}; rename one.",
                        f"两个文档使用了同一个 id“{note.doc_id}”：{seen[note.doc_id]} 和 {path}；请重命名其中一个。",
                        field="id",
                    )
            except BadNote as err:
                if not lenient or root.origin == BUILTIN:
                    raise
                skipped.append(err.message("en"))
                continue
            except OSError as err:
                if not lenient or root.origin == BUILTIN:
                    raise BadNote(
                        f"{path}: cannot be read ({err.strerror}).",
                        f"{path}：无法读取（{err.strerror}）。",
                        field="path",
                    ) from None
                skipped.append(f"{path}: cannot be read ({err.strerror}); skipped.")
                continue
            seen[note.doc_id] = str(path)
            notes.append(note)
    return notes
