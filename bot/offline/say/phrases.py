"""Answer templates of the offline planner, in Chinese and English (`bot/offline/say/templates/answers.yaml`).

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
#: the serving-capacity and system answers (issue 26), kept in their own file
SYSTEM_TEMPLATES = TEMPLATES.with_name("systems.yaml")
_ONE_GPU = re.compile(r"(?<![\d.,])1 GPUs ")
_GENERIC = re.compile(r"\bgeneric (dense|MoE) (?=\S)")
_GENERIC_ZH = {"dense": "通用稠密 ", "MoE": "通用 MoE "}


@functools.cache
def _templates() -> dict[str, dict[str, str]]:
    base = load_yaml(TEMPLATES.read_text(encoding="utf-8"))
    extra = load_yaml(SYSTEM_TEMPLATES.read_text(encoding="utf-8"))
    clash = set(base) & set(extra)
    if clash:
        raise ValueError(f"template keys defined twice: {sorted(clash)}")
    return {**base, **extra}


class _Strict(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(f"template variable {key!r} is missing")


def say(key: str, lang: str, **values) -> str:
    entry = _templates()[key]
    text = entry.get(lang) or entry["en"]
    if lang == "zh":
        values = {k: localize_name(v, lang) if isinstance(v, str) else v for k, v in values.items()}
    out = string.Formatter().vformat(text, (), _Strict(values))
    return _ONE_GPU.sub("1 GPU ", out) if lang == "en" else out


def localize_name(name: str, lang: str) -> str:
    """A tool's name for a generic model ("generic dense 70B") as a Chinese reader says it ("通用稠密 70B")."""
    return _GENERIC.sub(lambda m: _GENERIC_ZH[m.group(1)], name) if lang == "zh" else name


def keys() -> list[str]:
    return list(_templates())
