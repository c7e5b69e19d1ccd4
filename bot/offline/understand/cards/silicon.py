"""Cards of one silicon: a card sold under another name (the A800 for the A100, `same_silicon_as` in the
catalog) computes the same memory, bandwidth and rates, so a question naming both varies no card."""

from __future__ import annotations

from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError


def chips(gpus: list[str]) -> list[str]:
    """The cards named, one per silicon: a card sold under another name (A800 for A100, `same_silicon_as`) computes
    the same memory, bandwidth and rates, so it is no second card to vary."""
    out: list[str] = []
    for g in gpus:
        try:
            chip = get_gpu(g).same_silicon_as or g
        except AdvisorError:
            chip = g
        if chip not in out:
            out.append(chip)
    return out
