"""The calculators' error tree.

    AdvisorError                 base: every error a user can cause
     ├── UnknownName             a name that is not in a catalog
     │    ├── UnknownGpu
     │    └── UnknownModel
     └── InvalidInput            a value that is impossible (0 GPUs, TP not dividing heads, ...)

"Does not fit" is never an error: it is a result with `fits=False`. Each error carries a one-line
message in English and Chinese (`message(lang)`), so every edge (CLI, HTTP, LLM tool) can show it
in the user's language without a stack trace.
"""

from __future__ import annotations


class AdvisorError(Exception):
    """Base class: something the user sent that the calculators cannot use."""

    def __init__(self, en: str, zh: str | None = None, *, field: str | None = None):
        super().__init__(en)
        self.en = en
        self.zh = zh or en
        self.field = field

    def message(self, lang: str = "en") -> str:
        return self.zh if lang == "zh" else self.en


class UnknownName(AdvisorError):
    kind_en = "name"
    kind_zh = "名称"

    def __init__(self, name: str, suggestions: list[str]):
        self.name = name
        self.suggestions = suggestions
        near_en = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        near_zh = f" 您是否指：{'、'.join(suggestions)}？" if suggestions else ""
        super().__init__(
            f"Unknown {self.kind_en} {name!r}.{near_en}",
            f"未知的{self.kind_zh}“{name}”。{near_zh}",
            field=self.kind_en.lower(),  # the input field: "gpu" or "model"
        )


class UnknownGpu(UnknownName):
    kind_en = "GPU"
    kind_zh = "GPU 型号"


class UnknownModel(UnknownName):
    kind_en = "model"
    kind_zh = "模型"


class InvalidInput(AdvisorError):
    """An impossible value; `field` names the input that is wrong."""
