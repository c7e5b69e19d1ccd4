"""A QLoRA run's 4-bit base in a diagnosis: FSDP shards it (FSDP-QLoRA stores the packed weights in bf16), plain
data parallel keeps all of it on every GPU, and a run already QLoRA is never told to switch to QLoRA.

Published figure behind the FSDP case (tests/golden/published.yaml `axolotl-l3-70b-qlora-fsdp-2gpu`, axolotl
examples/llama-3/README.md, 2024-05): QLoRA + FSDP of Llama-3-70B runs on two 24 GB GPUs at about 21 GB each, which
only a sharded base allows (the 4-bit base alone is about 37 GB)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def _run(n_gpus: int = 2, flags: str | None = None, **kw):
    return diagnose(DiagnoseInput(model="Llama-3-70B", gpu="RTX 4090", n_gpus=n_gpus, method="qlora", seq_len=512,
                                  micro_batch=1, error_kind="oom", workload="train", flags=flags, **kw))  # fmt: skip


def test_fsdp_qlora_shards_the_4bit_base_so_weights_are_not_the_cause():
    fsdp = _run(flags="fsdp=full_shard", zero_stage=3)
    ddp = _run()
    assert "weights_exceed_memory" not in {c.cause for c in fsdp.causes}
    # half of a ~37 GB base leaves each of the two cards: the FSDP estimate is far below the unsharded one
    assert fsdp.estimate["per_gpu_gb"] < ddp.estimate["per_gpu_gb"] - 15


def test_bnb_quant_storage_written_in_the_config_is_what_ran():
    """bnb_4bit_quant_storage=bfloat16 under ZeRO-3 shards the base as FSDP does; uint8 (the default) does not."""
    bf16 = _run(flags="bnb_4bit_quant_storage=bfloat16", zero_stage=3)
    uint8 = _run(flags="bnb_4bit_quant_storage=uint8", zero_stage=3)
    assert bf16.estimate["per_gpu_gb"] < uint8.estimate["per_gpu_gb"] - 15


def test_data_parallel_qlora_is_told_to_shard_the_base_not_to_use_qlora():
    out = _run()
    lead = out.causes[0]
    assert lead.cause == "weights_exceed_memory"
    assert (lead.fix.flag, lead.fix.value) == ("bnb_4bit_quant_storage", "bfloat16")
    assert "each of the 2 GPUs holds all of it" in lead.arithmetic
    assert out.after_fix["per_gpu_gb"] < out.estimate["per_gpu_gb"] / 1.5


def test_a_preference_run_counts_its_reference_model_in_the_diagnosis():
    """DPO of a full fine-tune keeps a frozen reference copy: the diagnosis's total names it."""
    sft = diagnose(DiagnoseInput(model="Llama-2-7B", gpu="A100 40GB", method="full", error_kind="oom",
                                 workload="train"))  # fmt: skip
    dpo = diagnose(DiagnoseInput(model="Llama-2-7B", gpu="A100 40GB", method="full", error_kind="oom",
                                 workload="train", preference="dpo"))  # fmt: skip
    assert dpo.estimate["per_gpu_gb"] > sft.estimate["per_gpu_gb"] + 12  # + a 13.5 GB bf16 reference
    assert any("frozen reference/reward models" in c.arithmetic for c in dpo.causes)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 8), fsdp=st.booleans())
def test_qlora_runs_are_never_told_to_switch_to_qlora(n, fsdp):
    out = _run(n, "fsdp=full_shard" if fsdp and n > 1 else None, zero_stage=3 if fsdp and n > 1 else None)
    already = {("finetuning_type", "qlora"), ("load_in_4bit", True)}
    assert not any((c.fix.flag, c.fix.value) in already for c in out.causes), [c.fix for c in out.causes]


def test_one_card_qlora_too_small_for_the_4bit_base_is_sized_in_4_bit():
    """Llama-3-70B QLoRA on one 24 GB card: the cause is its ~41 GiB 4-bit base (not 131 GiB of bf16 weights), and
    what is left is more GPUs (sharding the base) or a bigger card."""
    lead = _run(1).causes[0]
    assert lead.cause == "weights_exceed_memory" and "weights 41." in lead.arithmetic
    assert lead.fix.flag == "n_gpus"


@settings(max_examples=8, deadline=None)
@given(n=st.integers(2, 7))
def test_fsdp_qlora_per_gpu_memory_does_not_grow_with_more_gpus(n):
    small, big = (_run(k, "fsdp=full_shard", zero_stage=3).estimate["per_gpu_gb"] for k in (n, n + 1))
    assert big <= small + 1e-9
