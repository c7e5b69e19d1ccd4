"""The Slack app's own phrases (phrases.yaml next to this file), in zh or en."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tools.yaml_data import load_yaml

_FILE = Path(__file__).with_name("phrases.yaml")


@cache
def _table() -> dict:
    return load_yaml(_FILE.read_text(encoding="utf-8"))


def say(key: str, lang: str, **values: str) -> str:
    return _table()[key][lang if lang in ("zh", "en") else "en"].format(**values)
