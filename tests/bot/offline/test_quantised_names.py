"""A quantised checkpoint's name says its weights' precision ('…-AWQ', '…-GPTQ-Int4', '…-FP8'): a diagnosis sizes
the weights the user loads, so it never proposes the quantisation the run already has (issue 25)."""

from __future__ import annotations

from asking import calls, row


def test_an_awq_checkpoint_is_sized_in_4_bit_and_not_told_to_use_awq(advisor):
    t = advisor.ask(row("gh-1catvllm-75"))  # vLLM on one V100 32GB, a '-AWQ' checkpoint, OOM
    diag = calls(t, "diagnose")[0]
    assert diag.input.get("precision") == "int4"
    assert "--quantization=awq" not in t.answer
    assert "50.29 GiB" not in t.answer  # the bf16 weights of a 27B: not what was loaded
    assert "--dtype=half" in t.answer  # its activations are still the checkpoint's bf16: V100 has no bf16 cores


def test_a_qwen15_72b_question_uses_its_own_full_attention_kv(advisor):
    t = advisor.ask(row("gh-qwen-88"))  # Qwen1.5-72B-Chat on 8 A10
    fit = calls(t, "fit_inference")[0]
    assert fit.output["model"].startswith("Qwen1.5-72B") or "Qwen1.5-72B" in t.answer
    assert "2,621,440 B" in t.answer  # 64 KV heads: not Qwen2.5-72B's 327,680 B per token


def test_fsdp_qlora_oom_is_not_answered_with_set_qlora(advisor):
    t = advisor.ask(row("gh-axolotl-1522"))  # axolotl QLoRA + FSDP, Llama-2-70B on 2 x RTX 3090
    assert "finetuning_type=qlora" not in t.answer
    assert "still does not fit" not in t.answer
