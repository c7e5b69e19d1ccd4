"""The how/why parts asked beside a sizing that recur in public questions (does serving memory grow with
concurrency, why vLLM and transformers disagree, how to load a model offline, can it run on the CPU, how to force
Ollama onto the GPU, how much data a domain fine-tune needs) are answered by the note that holds most of the part's
words, quoted under the part and cited, instead of "not answered here"; a sizing question with no such part keeps
its figures as the lead."""

from __future__ import annotations

import re

from asking import ask, calls, row

from bot.offline.say.render import said_once


def _part(answer: str) -> str:
    m = re.search(r"\*\*(?:您问的“|You asked \").*?\n", answer)
    assert m, answer
    return m.group(0)


def _answered(answer: str, *words: str) -> None:
    part = _part(answer)
    assert all(w in part for w in words), part
    assert re.search(r"\[\d\]\s*$", part), part  # cited
    assert "Not answered here" not in answer and "这次没有答到" not in answer


def test_memory_against_concurrency_is_the_preallocated_pool(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-lmdeploy-905"))
    _answered(t.answer, "并发越高也不会再多用显存")


def test_memory_against_concurrency_in_other_words(advisor, caplog):
    (t,) = ask(advisor, caplog, "用 vLLM 在 2 张 A100 80GB 上部署 Qwen2.5-72B。请问并发越高，模型使用的显存会越多吗？")
    _answered(t.answer, "KV 缓存池")


def test_why_vllm_and_transformers_differ(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-vllm-2652"))
    _answered(t.answer, "sampling defaults")


def test_loading_offline_from_a_local_path(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-qlora-81"))
    _answered(t.answer, "local-dir")
    assert calls(t, "fit_training")  # the sizing is still answered


def test_running_on_the_cpu(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-mistralinference-34"))
    _answered(t.answer, "CPU alone")


def test_forcing_ollama_onto_the_gpu(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-ollama-6008"))
    _answered(t.answer, "num_gpu")


def test_data_for_a_domain_fine_tune(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-flagembedding-196"))
    _answered(t.answer, "LIMA")


def test_a_sizing_question_keeps_its_figures_as_the_lead(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-flagembedding-489"))
    assert t.answer.startswith("**It fits.**"), t.answer[:300]
    assert "Shared GPU memory" not in t.answer


def test_a_paragraph_said_again_with_a_citation_marker_is_still_a_repeat():
    line = "常见原因：跨 PCIe 而非 NVLink 做张量并行、部分层卸载到 CPU。"
    text = said_once([line + " [1]", "中间一段：估算单路解码更快。", line])
    assert text.count("常见原因") == 1
