"""One canonical answer structure, rendered for WeCom within its byte limits."""

from __future__ import annotations

import re

import pytest

from bot.channels.render import Answer, display_width, render_markdown, render_wecom, split_numbered, split_utf8

Q_FIT = "8 张 H800 全参微调 Qwen2.5-7B 放得下吗"  # an answer with a passage that supports one of its sentences


@pytest.fixture
def fit_answer(advisor) -> Answer:
    return Answer.from_trace(advisor.ask(Q_FIT))


def test_the_canonical_structure_of_a_real_answer(fit_answer):
    a = fit_answer
    assert a.language == "zh" and a.verdict.startswith("**放得下。**")
    [table] = a.tables
    assert table.header == ("组成", "每卡显存")
    total = [r for r in table.rows if r[0] == "**合计**"]  # the figure itself is fit_training's (tests/tools)
    assert len(total) == 1 and re.fullmatch(r"\*\*\d+(\.\d)? GB\*\*", total[0][1])
    assert any(n.startswith("**假设：**") for n in a.notes)
    assert a.sources and len({(s.title, s.url) for s in a.sources}) == len(a.sources)
    assert not any("参考：" in n for n in a.notes)  # the sources live in `sources`, once
    assert a.follow_ups and a.follow_ups[0].endswith("？")


def test_wecom_markdown_has_no_tables_and_keeps_every_figure(fit_answer):
    text = render_wecom(fit_answer)
    assert "|---" not in text and "| " not in text
    table_lines = [ln for ln in text.splitlines() if ln.startswith("`")]
    total = next(r[1] for r in fit_answer.tables[0].rows if r[0] == "**合计**").strip("*")
    assert table_lines[0].startswith("`组成") and any("合计" in ln and total in ln for ln in table_lines)
    # the second column starts at the same screen column on every line (CJK characters are two wide)
    starts = {display_width(re.match(r"(.*?\S {2,})\S", ln[1:]).group(1)) for ln in table_lines}
    assert len(starts) == 1
    for row in fit_answer.tables[0].rows:
        assert row[1].replace("**", "") in text
    assert "**参考：**" in text and "[1] [" in text
    assert "**你还可以问：**" in text and f"• {fit_answer.follow_ups[0]}" in text
    assert "\n- " not in text  # lists become bullet lines


def test_markdown_rendering_keeps_the_table(fit_answer):
    md = render_markdown(fit_answer)
    assert "| 组成 | 每卡显存 |" in md and "|---|---|" in md and md.startswith("**放得下。**")


def test_a_9000_character_answer_splits_within_2048_bytes_at_line_boundaries():
    lines = [f"第 {i} 行：8 张 H800 上全参微调 7B 模型，每卡显存约 50.6 GB，余量 21.4 GB。" for i in range(200)]
    text = "\n".join(lines)
    assert len(text) >= 9000
    pieces = split_utf8(text, 2048)
    assert len(pieces) > 4
    assert all(len(p.encode("utf-8")) <= 2048 for p in pieces)
    assert [ln for p in pieces for ln in p.split("\n")] == lines  # whole lines, in order, none lost


def test_numbered_pieces_stay_within_the_limit_with_their_marker():
    text = "\n".join(["显存" * 300] * 10)  # lines of 1,800 bytes
    pieces = split_numbered(text, "zh", 2048)
    assert all(len(p.encode("utf-8")) <= 2048 for p in pieces)
    assert pieces[0].startswith(f"（第 1/{len(pieces)} 部分）")


def test_a_line_longer_than_the_limit_is_cut_between_characters():
    line = "显" * 1000  # 3,000 bytes, no newline
    pieces = split_utf8(line, 2048)
    assert [len(p.encode()) for p in pieces] == [2046, 954] and "".join(pieces) == line
    assert split_utf8("short") == ["short"]


def test_a_notice_has_the_same_structure():
    a = Answer.from_text("抱歉，请稍后重试。", "zh")
    assert render_wecom(a) == "抱歉，请稍后重试。" and a.tables == [] and a.sources == ()
