"""The calculators' error tree.

    AdvisorError                 base: every error a user can cause
     ├── UnknownName             a name that is not in a catalog
     │    ├── UnknownGpu
     │    ├── UnknownModel
     │    └── UnknownFabric      a `nodes_fabric` that is not in tools/data/network.yaml
     └── InvalidInput            a value that is impossible (0 GPUs, a token count of "lots", ...)
          └── Unsupported        a well-formed request the named GPU or model cannot serve: what the
                                 catalog says about it rules it out (no FP8 tensor cores, no price on
                                 file, tp not dividing its heads); the JSON schema cannot know it

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

    def __init__(self, name: str, suggestions: list[str], why: tuple[str, str] = ("", "")):
        """`why` (English, Chinese): a sentence saying why the name is not one we know, after the first."""
        self.name = name
        self.suggestions = suggestions
        near_en = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        near_zh = f" 您是否指：{'、'.join(suggestions)}？" if suggestions else ""
        super().__init__(
            f"Unknown {self.kind_en} {name!r}.{' ' + why[0] if why[0] else ''}{near_en}",
            f"未知的{self.kind_zh}“{name}”。{why[1]}{near_zh}",
            field=self.kind_en.lower(),  # the input field: "gpu" or "model"
        )


class UnknownGpu(UnknownName):
    kind_en = "GPU"
    kind_zh = "GPU 型号"


class UnknownModel(UnknownName):
    kind_en = "model"
    kind_zh = "模型"


class UnknownFabric(UnknownName):
    kind_en = "nodes_fabric"
    kind_zh = "节点间网络（nodes_fabric）"


class InvalidInput(AdvisorError):
    """An impossible value; `field` names the input that is wrong."""


class Unsupported(InvalidInput):
    """A combination ruled out by the catalog record of the GPU or model named (or the architecture given):
    a schema-valid request that this GPU or model cannot serve. `field` names the input to change."""
