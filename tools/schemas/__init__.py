"""Pydantic input and output models of every calculator (the public contract, see DESIGN.md).

One module per tools folder (memory, speed, money, recommend, specs), the shared bases in `common`,
a model given by its shape in `architecture`.
"""

from tools.schemas.common import Assumption, ToolInput, ToolOutput, assume

__all__ = ["Assumption", "ToolInput", "ToolOutput", "assume"]
