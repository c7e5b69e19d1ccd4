"""A throw-away PostgreSQL database on the local server for tests, or a clear skip reason."""

from __future__ import annotations

import contextlib
import os
import uuid

import pytest

ADMIN_URL = os.environ.get("GPU_ADVISOR_TEST_PG_URL", "postgresql://127.0.0.1:5432/test")


@contextlib.contextmanager
def temp_database():
    """Yield the URL of a fresh database; dropped afterwards. Skips when no server answers."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as err:
        pytest.skip(
            f"PostgreSQL is not reachable at {ADMIN_URL} ({err.__class__.__name__}); the SQLite default is tested instead"
        )
    name = f"gpu_advisor_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    base = ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
