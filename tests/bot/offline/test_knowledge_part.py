"""A part asked in words beside the figures ("是单卡的大小，还是多张加起来的", "KV cache 的大小是哪里控制的", "why is LoRA
slower than full") is answered by the note that answers it, cited on that sentence, in the order asked; a message
with no such part gets no note beside its figures, and a note that is off topic is never shown."""

from __future__ import annotations

import re

from asking import ask, calls, row

from bot.offline.understand.request.asks import knowledge_clauses


def _part(answer: str) -> str:
    m = re.search(r"\*\*(?:您问的“|You asked \").*?\n", answer)
    assert m, answer
    return m.group(0)


def test_per_card_or_summed_is_answered_summed_beside_the_fit(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-qwen3vl-340"))
    part = _part(t.answer)
    assert "多张卡加起来" in part and re.search(r"\[\d\]\s*$", part)
    assert calls(t, "fit_inference")  # the figures are still there


def test_what_sets_the_kv_cache_leads_when_asked_first(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-xinference-1115"))
    part = _part(t.answer)
    assert "gpu_memory_utilization" in part
    assert t.answer.index(part) < t.answer.index("放不下")  # asked first, answered first


def test_lora_slower_than_full_is_explained_not_sized_only(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-minimind-88"))
    assert "更耗时并不少见" in _part(t.answer)


def test_in_english_the_english_note_answers(advisor, caplog):
    (t,) = ask(advisor, caplog, "Is the 140 GB in the model card per GPU or total across GPUs? I have 2x A100 80GB.")
    assert "summed over all cards" in _part(t.answer)


def test_a_figures_only_question_has_no_part_and_cites_nothing_extra(advisor, caplog):
    text = "Qwen2.5-72B 推理，4 张 A100 80GB 够吗？"
    assert knowledge_clauses(text) == []
    (t,) = ask(advisor, caplog, text)
    assert "您问的“" not in t.answer


def test_a_part_no_note_speaks_to_adds_nothing(advisor, caplog):
    text = "机房湿度的大小是哪里控制的？4 张 4090 能跑 Qwen2.5-7B 推理吗"
    assert knowledge_clauses(text) == ["机房湿度的大小是哪里控制的？"]  # the part is read …
    (t,) = ask(advisor, caplog, text)
    assert "您问的“" not in t.answer  # … and no note is on topic, so none is shown
