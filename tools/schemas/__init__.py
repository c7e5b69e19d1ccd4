"""Pydantic input and output models of every calculator (the public contract, see DESIGN.md).

One module per calculator family; this package re-exports them.
"""

from tools.schemas.common import Assumption, ToolInput, ToolOutput, assume

__all__ = ["Assumption", "ToolInput", "ToolOutput", "assume"]
