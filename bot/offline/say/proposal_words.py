"""The words of the proposal and its charts, in Chinese and English (`templates/proposal.yaml`)."""

from __future__ import annotations

import functools
from pathlib import Path

from tools.yaml_data import load_yaml

TEMPLATES = Path(__file__).parent / "templates" / "proposal.yaml"


@functools.cache
def words() -> dict:
    return load_yaml(TEMPLATES.read_text(encoding="utf-8"))


def w(key: str, lang: str, **values) -> str:
    """The template `key` in `lang` (zh or en), filled with `values`."""
    return words()[key]["en" if lang == "en" else "zh"].format(**values)
