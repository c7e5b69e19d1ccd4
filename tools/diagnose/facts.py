"""Framework facts (tools/data/frameworks.yaml) and the tool's words (words.yaml), loaded once."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from tools.yaml_data import load_yaml

_DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks.yaml"
_WORDS = Path(__file__).resolve().parent / "words.yaml"


@functools.cache
def _facts() -> dict[str, dict[str, dict[str, Any]]]:
    raw = load_yaml(_DATA.read_text(encoding="utf-8"))
    return {fw: {f["id"]: f for f in items} for fw, items in raw.items()}


def fact(framework: str, key: str) -> dict[str, Any]:
    """One fact record: its value or rule and its source."""
    return _facts()[framework][key]


def value(framework: str, key: str) -> Any:
    return fact(framework, key)["value"]


def facts() -> dict[str, dict[str, dict[str, Any]]]:
    return _facts()


@functools.cache
def words() -> dict[str, Any]:
    return load_yaml(_WORDS.read_text(encoding="utf-8"))


class Said(tuple):
    """(English, Chinese) of one arithmetic sentence, and the template it was said from (`template`)."""

    template: str | None = None


#: templates that carry no figure of the asker's setup: what the log or the words name, the usual suspects, and
#: "nothing reproduces the figures"; a cause said with one of these has not earned the lead on its arithmetic
WORDS_ONLY = frozenset({"named", "said", "told", "usual", "unknown"})


def say(template: str, **fields: Any) -> Said:
    """An arithmetic sentence in English and Chinese with its figures filled in; a field that names what the log
    shows in words (words.yaml `what`) is said in each language."""
    t = words()["arithmetic"][template]
    said = words()["what"]
    zh = {k: said[v] if isinstance(v, str) and v in said else v for k, v in fields.items()}
    out = Said((t["en"].format(**fields), t["zh"].format(**zh)))
    out.template = template
    return out


def cause_words(cause: str) -> dict[str, str]:
    return words()["causes"][cause]
