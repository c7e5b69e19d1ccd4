"""API keys kept in the store's `api_keys` table, hashed.

A key is `gpa_` + 32 random bytes (url-safe base64); only its SHA-256 is stored, so a key is shown
once, when it is created. A fast hash is enough here: the keys are random, not passwords.

    create(store, "sales-team")  -> (KeyInfo, "gpa_…")
    create(store, "ops", admin=True)  an admin key: reads every principal's conversations
    verify(store, "gpa_…")       -> KeyInfo | None   (None for unknown or revoked keys)
    revoke(store, key_id)        -> bool
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, exists, insert, or_, select, update

from bot.core.store import Store
from bot.core.store_schema import api_keys, widget_keys

PREFIX = "gpa_"


@dataclass(frozen=True)
class KeyInfo:
    id: str
    name: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None
    admin: bool = False

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _info(row) -> KeyInfo:
    return KeyInfo(
        id=row["id"],
        name=row["name"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
        admin=bool(row.get("admin")),
    )


# ---- one table of keys: secret and publishable keys differ only in their prefix and extra columns ----------


def _new(
    store: Store, table: Table, prefix: str, random_bytes: int, name: str, **columns: Any
) -> tuple[str, str, str, dt.datetime]:
    """Insert a new key named `name` into `table`: (id, name, key, created_at). Only the key's hash is stored."""
    name = name.strip()
    if not name or len(name) > 128:
        raise ValueError("a key name is 1 to 128 characters")
    key_id, key, created = secrets.token_hex(6), prefix + secrets.token_urlsafe(random_bytes), dt.datetime.now(dt.UTC)
    with store.engine.begin() as conn:
        conn.execute(insert(table).values(id=key_id, name=name, key_hash=hash_key(key), created_at=created, **columns))
    return key_id, name, key, created


def _rows(store: Store, table: Table) -> list:
    with store.engine.connect() as conn:
        return list(conn.execute(select(table).order_by(table.c.created_at)).mappings().all())


def _revoke(store: Store, table: Table, key_id: str) -> bool:
    with store.engine.begin() as conn:
        res = conn.execute(
            update(table)
            .where(table.c.id == key_id, table.c.revoked_at.is_(None))
            .values(revoked_at=dt.datetime.now(dt.UTC))
        )
    return res.rowcount > 0


def _active_row(store: Store, table: Table, key: str):
    """The row of the active key `key` in `table`, or None (unknown or revoked)."""
    with store.engine.connect() as conn:
        row = conn.execute(select(table).where(table.c.key_hash == hash_key(key))).mappings().first()
    return None if row is None or row["revoked_at"] is not None else row


def create(store: Store, name: str, admin: bool = False) -> tuple[KeyInfo, str]:
    """A new key named `name`; returns its record and the key itself (not stored, shown once).
    An admin key may read every conversation (`GET /v1/conversations/{id}`), whoever started it."""
    key_id, name, key, created = _new(store, api_keys, PREFIX, 32, name, admin=admin)
    return KeyInfo(id=key_id, name=name, created_at=created, admin=admin), key


def list_keys(store: Store) -> list[KeyInfo]:
    return [_info(r) for r in _rows(store, api_keys)]


def revoke(store: Store, key_id: str) -> bool:
    """Revoke the key `key_id`; False when there is no such active key."""
    return _revoke(store, api_keys, key_id)


def verify(store: Store, key: str) -> KeyInfo | None:
    """The active key record matching `key`, or None."""
    row = _active_row(store, api_keys, key)
    return None if row is None else _info(row)


# ---- publishable widget keys ------------------------------------------------------------------------
# `pk_` + 24 random bytes. A publishable key sits in a public page, so it is no secret: it only opens the
# widget's routes (the panel, /v1/ask/stream and /v1/feedback), only from the browser origins listed
# with it, and those calls are rate limited per client address. A secret key (`gpa_…`) is refused there.

WIDGET_PREFIX = "pk_"


@dataclass(frozen=True)
class WidgetKeyInfo:
    id: str
    name: str
    origins: tuple[str, ...]
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None
    kind: str = "widget"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _widget_info(row) -> WidgetKeyInfo:
    return WidgetKeyInfo(
        id=row["id"],
        name=row["name"],
        origins=tuple(row["origins"] or ()),
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


def create_widget(store: Store, name: str, origins: list[str]) -> tuple[WidgetKeyInfo, str]:
    """A publishable key for the web widget, usable from `origins` only; ValueError names a bad origin."""
    from bot.channels.widget.origins import normalize_origin

    listed = tuple(dict.fromkeys(normalize_origin(o) for o in origins))
    if not listed:
        raise ValueError("a widget key needs at least one --origin, e.g. --origin https://shop.example.com")
    key_id, name, key, created = _new(store, widget_keys, WIDGET_PREFIX, 24, name, origins=list(listed))
    return WidgetKeyInfo(id=key_id, name=name, origins=listed, created_at=created), key


def verify_widget(store: Store, key: str) -> WidgetKeyInfo | None:
    """The active publishable key matching `key`, or None (unknown, revoked, or not a `pk_` key)."""
    row = _active_row(store, widget_keys, key) if key.startswith(WIDGET_PREFIX) else None
    return None if row is None else _widget_info(row)


def list_widget_keys(store: Store) -> list[WidgetKeyInfo]:
    return [_widget_info(r) for r in _rows(store, widget_keys)]


def revoke_widget(store: Store, key_id: str) -> bool:
    return _revoke(store, widget_keys, key_id)


#: either kind of key ever created, in one statement built once (an open API asks on every request)
_ANY_KEY = select(or_(exists(select(api_keys.c.id)), exists(select(widget_keys.c.id))))


def any_key(store: Store) -> bool:
    """Whether a secret or a publishable key was ever created: then the API is no longer open to callers without a
    key (revoked ones count: revoking the last key does not open the API)."""
    with store.engine.connect() as conn:
        return bool(conn.execute(_ANY_KEY).scalar())
