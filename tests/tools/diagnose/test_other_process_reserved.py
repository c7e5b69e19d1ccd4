"""Another process on the card, read from the older PyTorch message ("… free; … reserved in total by PyTorch",
no "this process has"): capacity − free − reserved is memory this process's allocator does not hold; past this
process's own context (a share of the card) it is another process's, and it is the cause only where freeing it
would have covered the request (issue 24: gh-pytorch-40863, gh-yi-249, gh-flagembedding-807)."""

from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def _causes(**kw):
    return diagnose(DiagnoseInput(**kw)).causes


def test_memory_outside_the_allocator_is_another_process():
    # gh-pytorch-40863: 11.17 GiB total, 505.96 MiB allocated, 12.50 MiB free, 530 MiB reserved, 60 MiB asked
    out = _causes(framework="pytorch", error_kind="oom", failed_alloc_gib=0.0586, capacity_gib=11.17,
                  free_gib=0.0122, allocated_gib=0.4941, reserved_gib=0.5176)  # fmt: skip
    top = out[0]
    assert top.cause == "other_process_memory" and top.leads
    assert "10.64 GiB" in top.arithmetic and top.fix.flag == "CUDA_VISIBLE_DEVICES"
    assert "nvidia-smi" in top.explanation


def test_the_own_context_is_not_another_process():
    # deepspeed-3208 / gpt4-llm-16: 0.7 and 2.5 GiB outside the allocator on 14.6 and 79.4 GiB cards
    for cap, free, reserved in ((14.56, 0.2251, 13.65), (79.35, 0.0119, 76.8)):
        out = _causes(framework="pytorch", error_kind="oom", failed_alloc_gib=0.25, capacity_gib=cap, free_gib=free,
                      allocated_gib=reserved - 0.3, reserved_gib=reserved)  # fmt: skip
        assert "other_process_memory" not in [c.cause for c in out]


def test_a_request_larger_than_the_other_processes_memory_is_not_theirs():
    # gh-flagembedding-807: 128 GiB asked on a 31.75 GiB card with 11.1 GiB held elsewhere: not why it failed
    out = _causes(framework="pytorch", error_kind="oom", failed_alloc_gib=128.0, capacity_gib=31.75, free_gib=11.31,
                  allocated_gib=9.33, reserved_gib=9.34)  # fmt: skip
    other = [c for c in out if c.cause == "other_process_memory"]
    assert out[0].cause != "other_process_memory" and not any(c.leads for c in other)


def test_on_a_multi_gpu_job_memory_outside_the_rank_is_checked_not_led_with():
    # gh-yi-249: 8 ranks, GPU 0 has 9.29 GiB reserved and 0.04 GiB free of 44.32: the job's other ranks may hold it
    out = _causes(model="Yi-34B", gpu="L40", n_gpus=8, framework="deepspeed", zero_stage=2, method="lora",
                  error_kind="oom", failed_alloc_gib=0.0957, capacity_gib=44.32, free_gib=0.04, allocated_gib=9.29,
                  reserved_gib=9.29)  # fmt: skip
    other = next(c for c in out if c.cause == "other_process_memory")
    assert out[0].cause != "other_process_memory" and not other.leads and "34.99 GiB" in other.arithmetic
