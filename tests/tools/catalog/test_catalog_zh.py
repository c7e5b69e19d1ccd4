"""The catalog's prose in Chinese: every China note, and every interconnect or memory description that is prose,
has a Chinese version with the same figures; a record without one does not load; gpu_specs gives both."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from tools.catalog import lookup as catalog
from tools.catalog.gpu_spec import GpuSpec
from tools.schemas.specs import GpuSpecsInput
from tools.specs import gpu_specs

GPUS = catalog.gpus()
_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_PROSE = re.compile(r"\b[a-z]{2,}\b")


def _figures(text: str) -> set[str]:
    return set(_FIGURE.findall(text))


def _same_figures(en: str, zh: str) -> None:
    """Every figure of the English text is in the Chinese one; the Chinese may add only month numbers
    ("Oct 2023" is "2023 年 10 月")."""
    missing = _figures(en) - _figures(zh)
    extra = {f for f in _figures(zh) - _figures(en) if not (f.isdigit() and 1 <= int(f) <= 12)}
    assert not missing and not extra, (en, zh, missing, extra)


@pytest.mark.parametrize("gpu", GPUS, ids=[g.id for g in GPUS])
def test_china_note_has_a_chinese_version_with_the_same_figures(gpu):
    assert _CJK.search(gpu.china.note_zh)
    _same_figures(gpu.china.note, gpu.china.note_zh)


@pytest.mark.parametrize("gpu", GPUS, ids=[g.id for g in GPUS])
def test_prose_descriptions_have_a_chinese_version(gpu):
    for text, zh in ((gpu.interconnect.kind, gpu.interconnect.kind_zh), (gpu.memory_type, gpu.memory_type_zh)):
        if _PROSE.search(text):
            assert zh and _CJK.search(zh), (gpu.id, text)
        if zh:
            _same_figures(text, zh)


def _record(gpu_id: str) -> dict:
    return catalog.get_gpu(gpu_id).model_dump()


def test_a_record_with_an_english_note_and_no_chinese_one_does_not_load():
    rec = _record("ascend-910b")
    del rec["china"]["note_zh"]
    with pytest.raises(ValidationError, match="note_zh"):
        GpuSpec.model_validate(rec)


def test_a_chinese_note_in_english_does_not_load():
    rec = _record("h100-sxm5-80gb")
    rec["china"]["note_zh"] = rec["china"]["note"]
    with pytest.raises(ValidationError, match="Chinese"):
        GpuSpec.model_validate(rec)


def test_a_prose_interconnect_or_memory_type_without_chinese_does_not_load():
    rec = _record("ascend-910b")
    rec["interconnect"]["kind_zh"] = None
    with pytest.raises(ValidationError, match="kind_zh"):
        GpuSpec.model_validate(rec)
    rec = _record("hygon-k100")
    rec["memory_type_zh"] = None
    with pytest.raises(ValidationError, match="memory_type_zh"):
        GpuSpec.model_validate(rec)


def test_a_product_name_needs_no_chinese_version():
    rec = _record("h100-sxm5-80gb")
    assert rec["interconnect"] == {
        "kind": "NVLink 4",
        "kind_zh": None,
        "gb_s": 900,
        "convention": "bidirectional total per GPU",
    }
    assert GpuSpec.model_validate(rec).interconnect.kind_for_zh == "NVLink 4"


def test_gpu_specs_gives_the_english_and_the_chinese_text():
    r = gpu_specs(GpuSpecsInput(gpu="910B"))
    assert r.china_note.startswith("Domestic Chinese part (SMIC 7 nm class)")
    assert "美国实体清单" in r.china_note_zh and "2019" in r.china_note_zh
    assert r.interconnect_kind.startswith("HCCS full mesh of 8")
    assert "392 GB/s" in r.interconnect_kind_zh and "全互联" in r.interconnect_kind_zh
    h100 = gpu_specs(GpuSpecsInput(gpu="H100"))
    assert h100.interconnect_kind == h100.interconnect_kind_zh == "NVLink 4"
    assert h100.memory_type == h100.memory_type_zh == "HBM3"
    k100 = gpu_specs(GpuSpecsInput(gpu="K100"))
    assert k100.memory_type_zh == "HBM（所查来源未说明代际）"
