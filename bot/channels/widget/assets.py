"""The widget's static files: read once from `static/`, served with an ETag and, when accepted, gzipped."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STATIC = Path(__file__).with_name("static")
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
#: what the panel page loads (the loader is served as /widget.js; panel.html is a template)
PANEL_FILES = ("panel.css", "panel.js", "markdown.js", "charts.js", "stream.js", "store.js", "i18n.js")
#: every file /widget/assets/<name> may serve: the shipped ones, listed once at import. A name outside this set is
#: never looked up on disk (a 300-byte name is a 404, not an OS error) and never enters the cache below
SHIPPED = frozenset(p.name for p in STATIC.iterdir() if p.is_file() and p.suffix in TYPES and p.name != "panel.html")


@dataclass(frozen=True)
class Asset:
    name: str
    body: bytes
    gz: bytes
    etag: str
    media_type: str


def asset(name: str) -> Asset | None:
    return _load(name) if name in SHIPPED else None


@cache
def _load(name: str) -> Asset | None:
    """One of the shipped files under static/ (`SHIPPED`); the cache holds at most those."""
    path = STATIC / name
    body = path.read_bytes()
    return Asset(
        name=name,
        body=body,
        gz=gzip.compress(body, 9, mtime=0),
        etag='"' + hashlib.sha256(body).hexdigest()[:16] + '"',
        media_type=TYPES[path.suffix],
    )


@cache
def panel_template() -> str:
    return (STATIC / "panel.html").read_text(encoding="utf-8")


@cache
def version() -> str:
    """One short hash over the panel's files: part of their URLs, so a new release is fetched at once."""
    digest = hashlib.sha256()
    for name in PANEL_FILES:
        item = asset(name)
        digest.update(item.body if item else b"")
    return digest.hexdigest()[:10]


def gzipped_sizes() -> dict[str, int]:
    """Bytes on the wire (gzip) of the loader and of everything the panel page loads."""
    loader = asset("loader.js")
    panel = sum(len(a.gz) for a in (asset(n) for n in PANEL_FILES) if a)
    return {
        "loader": len(loader.gz) if loader else 0,
        "panel": panel + len(gzip.compress(panel_template().encode(), 9)),
    }
