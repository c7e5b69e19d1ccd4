"""Which training term `diagnose` names first when the totals overrun the card: the largest one, and its
per-token neighbour beside it when that is large too (micro-batch and sequence length shrink both)."""

from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def test_a_long_batch_is_named_before_the_weights_that_would_fit_alone():
    out = diagnose(DiagnoseInput(model="qwen2.5-14b", gpu="A100 40GB", n_gpus=4, framework="llamafactory",
                                 method="lora", seq_len=8192, micro_batch=8, error_kind="oom"))  # fmt: skip
    top2 = [c.cause for c in out.causes[:2]]
    assert set(top2) == {"logits_memory", "activations_too_large"}
    assert out.causes[0].fix.flag == "per_device_train_batch_size" and out.causes[0].fix.value == 1


def test_weights_that_crowd_the_card_still_come_first_when_they_are_the_largest_term():
    out = diagnose(DiagnoseInput(model="qwen2.5-32b", gpu="RTX 4090", n_gpus=1, framework="llamafactory",
                                 method="lora", seq_len=1024, micro_batch=1, error_kind="oom"))  # fmt: skip
    assert out.causes[0].cause == "weights_exceed_memory"


def test_a_run_told_slow_is_running_so_memory_is_not_why():
    """A run the user says is slow is running: a default setup that would not fit (70B full training on 8 A100s,
    no ZeRO) is contradicted by the evidence, so no memory cause leads a slowness diagnosis."""
    from tools.registry import call

    out = call("diagnose", {"model": "Llama-3.1-70B", "gpu": "A100 80GB", "n_gpus": 8, "workload": "train",
                            "symptom": "slow"})  # fmt: skip
    memory = {"weights_exceed_memory", "optimizer_states_unsharded", "needs_offload", "activations_too_large"}
    assert out["causes"] and not memory & {c["cause"] for c in out["causes"]}, out["causes"]
