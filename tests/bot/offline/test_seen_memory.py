"""Memory a run was seen using ("每张卡显存占用几乎32G，是否正常？"): read as what nvidia-smi showed on the card, never as
the card's size or the host's RAM, and judged against the estimate first, with the figures deciding it (development
rows of tests/corpus/real/)."""

from __future__ import annotations

import pytest
from asking import row

from bot.offline.understand.request.reader import read
from tools.memory.verdict import seen_verdict


@pytest.mark.parametrize(
    ("row_id", "said"),
    [
        ("gh-llamafactory-169", "32G"),  # "两卡v100，每张卡显存占用几乎32G全部拉满，是否正常？"
        ("gh-llamafactory-5977", "13G"),  # "每张卡只占用了13G内存。这正常吗？": the card's memory, not the host's
        ("gh-qlora-33", "60G"),  # "it actually comsumed about 60G VRAM"
    ],
)
def test_memory_seen_in_use_is_neither_the_card_nor_host_ram(row_id, said):
    roles = {m.text: m.role for m in read(row(row_id)).mentions}
    assert roles[said] == "log_memory", roles


def test_host_ram_in_use_stays_host_ram():
    assert [m.role for m in read("8卡机器内存占用了300G").mentions if m.text == "300G"] == ["ram_gb"]


def test_a_full_card_under_a_small_job_is_called_normal_first(advisor):
    answer = advisor.ask(row("gh-llamafactory-169")).answer
    verdict = answer.index("**正常：**")
    assert verdict < answer.index("**放得下。**"), answer
    assert "“32G”" in answer[verdict : verdict + 200] and "缓存分配器" in answer


def test_a_reading_above_the_card_is_said_to_be_a_larger_cards(advisor):
    answer = advisor.ask(row("gh-qlora-33")).answer  # 65B QLoRA on 48 GB, "consumed about 60G"
    assert "not the “60G” you saw" in answer and "caching allocator" in answer, answer


@pytest.mark.parametrize(
    ("seen", "need", "capacity", "said"),
    [
        (32, 15.3, 34.4, "cached"),
        (60, 43.4, 51.5, "larger_card"),
        (16, 15.3, 34.4, "as_estimated"),
        (5, 15.3, 34.4, "below"),
    ],
)
def test_seen_verdict(seen, need, capacity, said):
    assert seen_verdict(seen, need, capacity) == said
