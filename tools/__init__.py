"""Deterministic calculators: catalogs, memory fit, speed, cost and GPU selection.

`tools` imports nothing from `bot` or `knowledge` and can be used as a library on its own::

    import tools
    tools.call("fit_training", {"model": "70B", "gpu": "A100 80GB", "method": "full"})
"""

from tools.errors import AdvisorError, InvalidInput, UnknownGpu, UnknownModel
from tools.registry import call, names

__all__ = ["AdvisorError", "InvalidInput", "UnknownGpu", "UnknownModel", "call", "names"]
