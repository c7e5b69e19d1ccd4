"""Answer templates of the offline planner, in Chinese and English (`bot/offline/templates/answers.yaml`).

`say(key, lang, **vars)` renders one template and fails loudly on a missing variable, so a broken
template is a test failure, never a half-filled answer.
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path

from tools.yaml_data import load_yaml

TEMPLATES = Path(__file__).parent / "templates" / "answers.yaml"
_ONE_GPU = re.compile(r"(?<![\d.,])1 GPUs ")


@functools.cache
def _templates() -> dict[str, dict[str, str]]:
    return load_yaml(TEMPLATES.read_text(encoding="utf-8"))


class _Strict(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(f"template variable {key!r} is missing")


def say(key: str, lang: str, **values) -> str:
    entry = _templates()[key]
    text = entry.get(lang) or entry["en"]
    out = string.Formatter().vformat(text, (), _Strict(values))
    return _ONE_GPU.sub("1 GPU ", out) if lang == "en" else out


def keys() -> list[str]:
    return list(_templates())
