"""Distilled models: a name said with a distil word ("DeepSeek-R1 蒸馏版 32B", "deepseek蒸馏版的qwen-32B") is the
catalog's distilled model of that size and family, never the teacher nor the family's base model."""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.patterns import C as _C
from tools.catalog import lookup as catalog
from tools.catalog.stand_in import read_name

_DISTILL = _C(r"蒸馏|distill")


def distilled_stand_ins(w: Any) -> None:
    """ "deepseek蒸馏版的qwen-32B": a name the catalog lacks, said with a distil word, is the catalog's distilled
    model of its family and size (DeepSeek-R1-Distill-Qwen-32B), not the family's base or coder model."""
    if not _DISTILL.search(w.src):
        return
    for typed, rid in list(w.slots["stand_ins"].items()):
        parts = read_name(typed)
        if parts is None or parts.size_b is None or not parts.family:
            continue
        pupils = [
            m
            for m in catalog.models()
            if "distill" in m.id and parts.family in m.id and abs(m.params_b - parts.size_b) <= 0.15 * parts.size_b
        ]
        if pupils and rid in w.slots["models"]:
            pupil = min(pupils, key=lambda m: abs(m.params_b - parts.size_b)).id
            w.slots["models"][w.slots["models"].index(rid)] = pupil
            w.slots["stand_ins"][typed] = pupil


def distilled(w: Any) -> None:
    """ "DeepSeek-R1 蒸馏版 32B": a model named with a distil word and a bare size is the catalog's distilled
    model of that size (family "<name>-Distill", parameters within 15 %), or a generic model of that size when
    the catalog has none; never the teacher."""
    sizes = [m for m in w.slots["models"] if re.fullmatch(r"\d+(?:\.\d+)?B", m)]
    if not sizes or not _DISTILL.search(w.src):
        return
    for rid in list(w.slots["models"]):
        if rid in sizes:
            continue
        teacher = catalog.get_model(rid)
        want = float(sizes[0][:-1])
        pupils = [
            m
            for m in catalog.models()
            if m.family == f"{teacher.name}-Distill" and abs(m.params_b - want) <= 0.15 * want
        ]
        models = w.slots["models"]
        if pupils:  # the distilled model of that size
            models[models.index(rid)] = min(pupils, key=lambda m: abs(m.params_b - want)).id
            models.remove(sizes[0])
        else:  # a distilled size the catalog lacks: sized as a generic model of that size, never as the teacher
            models.remove(rid)
        return
