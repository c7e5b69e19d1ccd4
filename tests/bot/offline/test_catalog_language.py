"""What a Chinese user sees of the catalog's prose: a zh specs or availability answer shows the Chinese China note,
interconnect and memory descriptions (no English sentence outside product names), an en answer the English ones;
the recommend answer's "not in China" reason likewise. Every figure stays grounded."""

import re

import pytest

from tools.catalog import lookup as catalog

#: product names (catalog names and aliases, longest first): English words a Chinese answer may hold
_NAMES = sorted({n for g in catalog.gpus() for n in (g.name, *g.aliases)}, key=len, reverse=True)
_WORD = r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z'’-]*(?![A-Za-z0-9_])"
_RUN = re.compile(rf"{_WORD}(?:[ ,;:]+{_WORD}){{3,}}")

#: export-restricted NVIDIA, China-market NVIDIA, domestic Ascend and Hygon, consumer RTX, grey-market RTX
CARDS = ["H100", "H20", "910B", "K100", "BW1000", "RTX 4090", "RTX 4090 D", "4090 48G", "P800", "A800"]


def english_runs(text: str) -> list[str]:
    """Runs of four or more English words, product names left out."""
    for name in _NAMES:
        text = text.replace(name, " ")
    return _RUN.findall(text)


def test_the_detector_sees_an_english_note():
    assert english_runs("中国供货：可采购，国产芯片；Huawei has been on the US Entity List since 2019。")
    assert not english_runs("**NVIDIA GeForce RTX 4090 D**：互联 64 GB/s（PCIe 4.0 x16（无 NVLink））")


def _specs_line(trace, gpu) -> str:
    """The answer's paragraph about `gpu` (the specs line, not the cited knowledge passages below it)."""
    line = next(p for p in trace.answer.split("\n\n") if gpu.name in p)
    return re.sub(r" \[\d+\]", "", line)  # a citation marker on one of its sentences is not its prose


@pytest.mark.parametrize("card", CARDS)
def test_zh_specs_answer_has_no_english_catalog_prose(advisor, card):
    gpu = catalog.get_gpu(card)
    t = advisor.ask(f"{card} 的参数")
    assert t.language == "zh" and t.ungrounded == [], t.answer
    line = _specs_line(t, gpu)
    assert english_runs(line) == [], line
    assert gpu.china.note_zh.rstrip("。") in line
    assert gpu.china.note.rstrip(".") not in line
    assert gpu.interconnect.kind_for_zh in line and (gpu.memory_type_zh or gpu.memory_type) in line


@pytest.mark.parametrize("card", CARDS)
def test_zh_availability_answer_has_no_english_catalog_prose(advisor, card):
    t = advisor.ask(f"{card} 在国内能买到吗")
    assert t.language == "zh" and t.ungrounded == [], t.answer
    assert english_runs(t.answer) == [], t.answer
    assert catalog.get_gpu(card).china.note.rstrip(".") not in t.answer


@pytest.mark.parametrize("card", CARDS)
def test_en_specs_answer_keeps_the_english_note(advisor, card):
    gpu = catalog.get_gpu(card)
    t = advisor.ask(f"specs of the {card}")
    assert t.language == "en" and t.ungrounded == [], t.answer
    line = _specs_line(t, gpu)
    assert gpu.china.note.rstrip(".") in line and gpu.interconnect.kind in line and gpu.memory_type in line
    assert gpu.china.note_zh.rstrip("。") not in line


def test_zh_recommend_says_why_a_card_is_out_in_chinese(advisor):
    t = advisor.ask("国内能买到的卡，训练 7B 推荐什么")
    assert t.ungrounded == [], t.answer
    out = [line for line in t.answer.splitlines() if "中国大陆无法正常采购" in line]
    assert out, t.answer
    a100 = catalog.get_gpu("A100")
    assert a100.china.note_zh in t.answer and a100.china.note not in t.answer
    dropped = [c for c in t.tool_calls if c.tool == "recommend_gpus"][-1].output["dropped"]
    first = next(d for d in dropped if d["reason"] == "not_in_china")
    assert first["reason_en"].endswith(catalog.get_gpu(first["gpu_id"]).china.note)
    assert first["reason_zh"].endswith(catalog.get_gpu(first["gpu_id"]).china.note_zh)
