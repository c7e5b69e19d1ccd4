"""Files an answer links (issue 26: "生成方案" in chat gives the proposal as files): kept in the data folder under
`proposals/<token>/`, one folder per answer, with the conversation they belong to and the day they expire.

A link is `/v1/proposals/files/<token>/<name>?expires=<unix time>&sig=<hmac>`: the signature (HMAC-SHA256 under a
server secret kept in the store, shared by every worker) covers the token, the conversation and the expiry, so a
link opens only that answer's files, only until it expires, and cannot be forged or stretched; the route also
serves a caller whose key may read the conversation, without a signature. Expired folders are removed when the
next files are saved.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import shutil
import time
from pathlib import Path

from tools.catalog import user_models

DIRNAME = "proposals"
LINK_DAYS = 7  # how long a link opens its files
SECRET_NAME = "attachment-links"
TOKEN = re.compile(r"^[0-9a-f]{32}$")
NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,40}\.(md|xlsx|png)$")
MEDIA = {
    "md": "text/markdown; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "png": "image/png",
}


def root() -> Path:
    return user_models.data_dir() / DIRNAME


def save(
    conversation_id: str, files: dict[str, bytes], days: int = LINK_DAYS, now: float | None = None
) -> tuple[str, int]:
    """Store `files` for `conversation_id`; returns (token, expiry as unix time)."""
    now = time.time() if now is None else now
    _sweep(now)
    token = secrets.token_hex(16)
    folder = root() / token
    folder.mkdir(parents=True)
    for name, content in files.items():
        if not NAME.match(name):
            raise ValueError(f"not a file name an answer links: {name!r}")
        (folder / name).write_bytes(content)
    expires = int(now + days * 86400)
    meta = {"conversation_id": conversation_id, "created": int(now), "expires": expires, "files": list(files)}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return token, expires


def meta(token: str) -> dict | None:
    """The folder's record (conversation, expiry, files), or None for a token that names no folder."""
    if not TOKEN.match(token):
        return None
    try:
        return json.loads((root() / token / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read(token: str, name: str, now: float | None = None) -> tuple[dict, bytes, str] | None:
    """(meta, content, media type) of one file while it has not expired; None otherwise."""
    m = meta(token)
    now = time.time() if now is None else now
    if m is None or not NAME.match(name) or name not in m["files"] or m["expires"] < now:
        return None
    try:
        content = (root() / token / name).read_bytes()
    except OSError:
        return None
    return m, content, MEDIA[name.rsplit(".", 1)[1]]


def signature(secret: str, token: str, conversation_id: str, expires: int) -> str:
    msg = f"{token}\n{conversation_id}\n{expires}".encode()
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()[:32]


def link(secret: str, token: str, conversation_id: str, expires: int, name: str, base: str = "") -> str:
    sig = signature(secret, token, conversation_id, expires)
    return f"{base.rstrip('/')}/v1/proposals/files/{token}/{name}?expires={expires}&sig={sig}"


def signed(secret: str, token: str, m: dict, expires: str | None, sig: str | None) -> bool:
    """Whether `sig` and `expires` are the ones this server signed for the token's folder."""
    if not expires or not sig or not expires.isdigit() or int(expires) != m["expires"]:
        return False
    return hmac.compare_digest(sig, signature(secret, token, m["conversation_id"], m["expires"]))


def _sweep(now: float) -> None:
    """Remove the folders whose links have expired."""
    base = root()
    if not base.is_dir():
        return
    for folder in base.iterdir():
        m = meta(folder.name)
        if m is not None and m["expires"] < now:
            shutil.rmtree(folder, ignore_errors=True)
