"""The memory the user says a model takes, set against its weights at each precision (issue 24): a figure that is
the weights at 4 bytes a parameter says it was loaded in fp32, and the fix is loading it in 16-bit; a figure it
does not explain is not handed over as used. A card without bf16 under a serving engine is fixed with the engine's
own --dtype, not a trainer's fp16 flag. Texts are development rows of the real corpus."""

from bot.offline.understand.paste import read_paste
from tests.support.asking import ask, row
from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def test_the_memory_said_is_read_but_a_machine_size_is_not():
    assert read_paste(row("gh-chatglm3-558")).evidence["used_gb"] == 27  # "内存直接就占了27个G"
    assert "used_gb" not in read_paste("我使用的是mac mini 32GB内存的电脑").evidence


def test_only_the_fp32_figure_is_a_dtype_cause():
    def first(used):
        return diagnose(DiagnoseInput(model="chatglm3-6b", workload="infer", symptom="slow", used_gb=used)).causes[0]

    fp32 = first(27)  # 6.24B × 4 B = 25 GB
    assert fp32.cause == "loaded_in_fp32" and fp32.leads and fp32.fix.flag == "torch_dtype"
    assert "12.5 GB" in fp32.arithmetic  # the same weights in 16-bit
    assert first(13).cause != "loaded_in_fp32"  # the 16-bit weights: nothing wrong with the dtype


def test_the_answer_says_fp32_with_its_figures(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-chatglm3-558"))
    head = t.answer.split("---")[0]
    assert (
        head.startswith("**原因：您看到的 27 GB ≈ 6.24B 参数 × 4 B = 25.0 GB") and "torch_dtype=torch.float16" in head
    )


def test_a_card_without_bf16_under_vllm_is_fixed_with_the_engines_dtype():
    out = diagnose(DiagnoseInput(gpu="V100", framework="vllm", error_kind="unsupported_precision", unsupported="bf16"))
    assert (out.causes[0].fix.flag, out.causes[0].fix.value) == ("--dtype", "half")
    trainer = diagnose(DiagnoseInput(gpu="V100", workload="train", error_kind="unsupported_precision",
                                     unsupported="bf16"))  # fmt: skip
    assert trainer.causes[0].fix.flag == "fp16"
