"""Models a user added (`gpu-advisor models add`, `POST /v1/models`), kept in the data folder, not the package.

The file is `<data dir>/models.yaml`, the same schema as the shipped `tools/data/models.yaml`. The data dir is
the one the bot's settings name (`GPU_ADVISOR_DATA_DIR`, default `~/.local/share/gpu-advisor`); an edge that
reads its settings elsewhere sets it with `use_data_dir`. The catalog loader merges these records with the
shipped ones; when the file changes (another process added a model), every cache built on the catalog is
cleared on the next lookup (`refresh`, which looks at the file at most once a second), so every surface
knows the model at once.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from tools.catalog.records import ModelSpec
from tools.yaml_data import load_yaml

DEFAULT_DATA_DIR = "~/.local/share/gpu-advisor"
FILENAME = "models.yaml"

_dir: Path | None = None
_seen: tuple[int, int] | None = None
_checked = -1.0
#: the file is looked at most once this often (seconds): a lookup runs thousands of times in a plan search
CHECK_EVERY_S = 1.0
_clearers: list[Callable[[], None]] = []
_lock = threading.Lock()


def use_data_dir(path: str | os.PathLike | None) -> None:
    """Read and write user models under `path` (None: back to the environment's setting)."""
    global _dir
    _dir = Path(path).expanduser() if path is not None else None
    refresh(force=True)


def data_dir() -> Path:
    return _dir or Path(os.environ.get("GPU_ADVISOR_DATA_DIR") or DEFAULT_DATA_DIR).expanduser()


def path() -> Path:
    return data_dir() / FILENAME


def on_change(clear: Callable[[], None]) -> None:
    """Register a cache to clear when the user models change."""
    _clearers.append(clear)


def _stamp() -> tuple[int, int]:
    try:
        st = path().stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def refresh(force: bool = False) -> None:
    """Clear every registered catalog cache when the file changed since it was last read."""
    global _seen, _checked
    now = time.monotonic()
    if not force and now - _checked < CHECK_EVERY_S:
        return
    _checked = now
    stamp = _stamp()
    if stamp == _seen and not force:
        return
    with _lock:
        _seen = stamp
        for clear in _clearers:
            clear()


def rows() -> list[dict]:
    """The stored records, as dicts (an unreadable file reads as none: a broken user file never stops the catalog)."""
    try:
        with open(path(), encoding="utf-8") as fh:
            data = load_yaml(fh) or []
    except (OSError, yaml.YAMLError):
        return []
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def load() -> tuple[ModelSpec, ...]:
    out = []
    for row in rows():
        try:
            out.append(ModelSpec.model_validate(row))
        except ValueError:
            continue
    return tuple(out)


def save(spec: ModelSpec, *, replace: bool = False) -> Path:
    """Store `spec`, replacing a user record of the same id when `replace`; returns the file written."""
    kept = [r for r in rows() if r.get("id") != spec.id] if replace else rows()
    kept.append(spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True))
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".yaml.tmp")
    tmp.write_text(
        "# Models added with `gpu-advisor models add`; schema: tools/catalog/model_spec.py ModelSpec.\n"
        + yaml.safe_dump(kept, allow_unicode=True, sort_keys=False),
        encoding="utf-8",
    )
    tmp.replace(target)
    refresh(force=True)
    return target
