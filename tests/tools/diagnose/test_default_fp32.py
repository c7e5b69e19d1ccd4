"""A model loaded by hand in fp32 (from_pretrained without torch_dtype, read as precision fp32): where its fp32
weights overrun the card and its 16-bit weights would fit, the default dtype is the cause and torch_dtype the fix
(frameworks.yaml transformers.from_pretrained_dtype; issue 24)."""

from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def _causes(**kw):
    return diagnose(DiagnoseInput(**kw)).causes


def test_fp32_weights_over_the_card_where_16_bit_fits_name_the_default_dtype():
    # a 7B loaded by hand in fp32 (from_pretrained without torch_dtype) on a 24 GB card: 28 GB vs 14 GB in 16-bit
    out = _causes(model="Qwen2.5-7B", framework="transformers", workload="infer", precision="fp32",
                  error_kind="oom", capacity_gib=23.65, allocated_gib=22.99, reserved_gib=22.99, free_gib=0.15,
                  failed_alloc_gib=0.17)  # fmt: skip
    top = out[0]
    assert top.cause == "weights_exceed_memory" and top.leads
    assert top.fix.flag == "torch_dtype" and "float16" in str(top.fix.value)
    assert "fp32" in top.arithmetic and "× 4 B" in top.arithmetic and "torch_dtype" in top.explanation


def test_fp32_is_not_named_where_16_bit_would_not_fit_either():
    # a 70B in fp32 on one 80 GB card: the 16-bit weights (~141 GB) do not fit either, so the dtype alone is not why
    out = _causes(model="Llama-3.1-70B", framework="transformers", workload="infer", precision="fp32",
                  error_kind="oom", capacity_gib=79.3)  # fmt: skip
    assert not any(c.fix.flag == "torch_dtype" and "fp32 weights (no torch_dtype)" in c.arithmetic for c in out)
