"""The GPUs a pasted launch command or a stated layout sets: the parallel degrees ("tensor_parallelism=2,
pipeline_parallelism=8"; their product is the run's GPUs), else the tensor-parallel size, or processes per node ×
nodes (`torchrun --nproc_per_node 8 --nnodes 2`)."""

from __future__ import annotations

from bot.offline.understand.names import _C
from bot.offline.understand.work import Work

_LAUNCH = (
    _C(r"--(?:tensor[-_]parallel[-_]size|tp[-_]size|tp)[=\s]+(\d+)"),
    _C(r"--nproc[-_]per[-_]node[=\s]+(\d+)|nproc_per_node\s*[=:]\s*(\d+)"),
)
_NNODES = _C(r"--nnodes[=\s]+(\d+)")
#: the parallel degrees a run is set to ("tensor_parallelism=2, pipeline_parallelism=8"): their product is its GPUs
_DEGREE = {
    kind: _C(rf"(?<![a-z])(?:--)?(?:{words})(?:[-_\s]size)?(?:[-_\s]degree)?\s*[=:\s]\s*(\d+)")
    for kind, words in (
        ("tp", r"tensor[-_\s]?parallel(?:ism)?|tp"),
        ("pp", r"pipeline[-_\s]?parallel(?:ism)?|pp"),
        ("dp", r"data[-_\s]?parallel(?:ism)?|dp"),
    )
}


def parallel_degrees(text: str) -> dict[str, int]:
    """The tensor and pipeline (and data) parallel degrees a question sets ("tensor_parallelism=2
    pipeline_parallelism=8"), when both of the first two are given; {} otherwise."""
    found = {k: int(m.group(1)) for k, rx in _DEGREE.items() if (m := rx.search(text.lower()))}
    return found if "tp" in found and "pp" in found else {}


def launch_counts(w: Work) -> None:
    """The GPUs of a pasted launch command: tensor × pipeline (× data) parallel degrees when both of the first two
    are set, else tensor-parallel size, or processes per node × nodes."""
    found = {k: m for k, rx in _DEGREE.items() if (m := rx.search(w.t))}
    if "tp" in found and "pp" in found:
        total = 1
        for m in found.values():
            total *= int(m.group(1))
        w.put("n_gpus", total, found["tp"])
        for kind, m in found.items():  # every degree is a factor of that count: all of them used
            if kind != "tp":
                w.note("n_gpus", m.start(), m.end())
                w.mask(m.start(), m.end())
        return
    for rx in _LAUNCH:
        if m := rx.search(w.t):
            per_node = int(m.group(1) or m.group(2))
            nodes = _NNODES.search(w.t)
            total = per_node * int(nodes.group(1)) if nodes and rx is _LAUNCH[1] else per_node
            w.put("n_gpus", total, m)
            return
