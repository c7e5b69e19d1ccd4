"""Prompts live in `bot/llm/prompts/*.md`; `render(name, **vars)` fills their `$variables`.

    render("system_zh", state="模型 Qwen2.5-7B，GPU A100 80GB")

Placeholders use `string.Template` syntax (`$name` or `${name}`; `$$` is a literal dollar), so the
braces of JSON examples in a prompt need no escaping. A placeholder without a value, or a value
the prompt does not use, is a `PromptError`: a prompt never goes out half-filled.
"""

from __future__ import annotations

import functools
import string
from pathlib import Path

PROMPTS_DIR = Path(__file__).with_name("prompts")

__all__ = ["PromptError", "names", "render"]


class PromptError(KeyError):
    """A prompt that does not exist, or whose variables do not match the values given."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def names() -> list[str]:
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.md"))


@functools.cache
def _template(name: str) -> string.Template:
    path = PROMPTS_DIR / f"{name}.md"
    if not path.is_file():
        raise PromptError(f"no prompt {name!r} in {PROMPTS_DIR} (known: {', '.join(names())})")
    return string.Template(path.read_text(encoding="utf-8"))


def variables(name: str) -> set[str]:
    """The placeholders a prompt uses."""
    return set(_template(name).get_identifiers())


def render(name: str, **values: object) -> str:
    """The prompt `name` with every `$variable` replaced by `str(value)`."""
    template = _template(name)
    wanted = variables(name)
    missing = sorted(wanted - values.keys())
    if missing:
        raise PromptError(f"prompt {name!r} needs {', '.join(missing)}")
    unused = sorted(values.keys() - wanted)
    if unused:
        raise PromptError(f"prompt {name!r} has no variable {', '.join(unused)}")
    return template.substitute({k: str(v) for k, v in values.items()}).strip() + "\n"
