"""ZeRO-3 / FSDP communication in training_time (issue 25): parameters gathered for forward and backward and
gradients reduce-scattered on every micro-step, over the slowest link the shard group crosses."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tools.catalog.lookup import models
from tools.schemas.speed import TrainingTimeInput
from tools.speed.comm import fabrics
from tools.speed.training_time import training_time

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DENSE = sorted(m.name for m in models() if not m.is_moe and 1 <= m.params_b <= 80)
#: fabrics from the slowest node bandwidth to the fastest
FABRICS = [f.id for f in sorted(fabrics(), key=lambda f: f.node_gb_s())]
REL = 1e-9


def _tps(**kw) -> float:
    return training_time(TrainingTimeInput(tokens=10**9, **kw)).tokens_per_s_per_gpu


@SETTINGS
@given(
    model=st.sampled_from(DENSE),
    nodes=st.tuples(st.integers(1, 64), st.integers(1, 64)),
    fabric=st.sampled_from(FABRICS),
    seqs=st.integers(1, 8),
    seq_len=st.sampled_from([1024, 4096]),
)
@example(model="Llama-2-7B", nodes=(1, 2), fabric="ethernet-25g", seqs=1, seq_len=1024)
def test_more_nodes_never_faster_per_step(model, nodes, fabric, seqs, seq_len):
    """Same work per GPU (micro-batch and global batch per GPU fixed): a larger ZeRO-3 group, or one that leaves the
    node for the fabric, never gives a GPU more tokens per second."""
    small, large = sorted(nodes)

    def tps(n_nodes):
        n = 8 * n_nodes
        return _tps(model=model, gpu="A100 SXM4", n_gpus=n, zero_stage=3, micro_batch=1, seq_len=seq_len,
                    global_batch_tokens=n * seqs * seq_len, nodes_fabric=fabric)  # fmt: skip

    assert tps(large) <= tps(small) * (1 + REL)


@SETTINGS
@given(
    model=st.sampled_from(DENSE),
    pair=st.tuples(st.integers(0, len(FABRICS) - 1), st.integers(0, len(FABRICS) - 1)),
    n_nodes=st.integers(2, 32),
    within=st.booleans(),
)
def test_a_slower_fabric_is_never_faster(model, pair, n_nodes, within):
    slow, fast = (FABRICS[i] for i in sorted(pair))
    args = {"model": model, "gpu": "H100 SXM", "n_gpus": 8 * n_nodes, "zero_stage": 3, "micro_batch": 1,
            "shard_within_node": within}  # fmt: skip
    assert _tps(nodes_fabric=slow, **args) <= _tps(nodes_fabric=fast, **args) * (1 + REL)


@SETTINGS
@given(
    model=st.sampled_from(DENSE),
    n=st.sampled_from([2, 4, 8]),
    zero=st.sampled_from([0, 3]),
    micro=st.integers(1, 4),
    seq_len=st.sampled_from([512, 2048, 4096]),
    method=st.sampled_from(["full", "lora"]),
)
@example(model="Llama-2-7B", n=8, zero=3, micro=1, seq_len=1024, method="full")
def test_nvlink_is_never_slower_than_pcie(model, n, zero, micro, seq_len, method):
    """A100 SXM4 (NVLink 600 GB/s) and A100 PCIe 80GB (PCIe 4.0 x16) have the same tensor peak: the NVLink card
    never trains slower, whatever the sharding."""
    args = {"model": model, "n_gpus": n, "zero_stage": zero, "micro_batch": micro, "seq_len": seq_len,
            "method": method}  # fmt: skip
    assert _tps(gpu="A100 PCIe 80GB", **args) <= _tps(gpu="A100 SXM4", **args) * (1 + REL)


@SETTINGS
@given(model=st.sampled_from(DENSE), micro=st.tuples(st.integers(1, 16), st.integers(1, 16)))
def test_smaller_micro_batches_gather_more_often(model, micro):
    """ZeRO-3 gathers the parameters once per micro-step: more micro-steps per optimizer step are never faster."""
    small, large = sorted(micro)
    args = {"model": model, "gpu": "L40S", "n_gpus": 8, "zero_stage": 3, "seq_len": 1024}
    assert _tps(micro_batch=small, **args) <= _tps(micro_batch=large, **args) * (1 + REL)


def test_pcie_box_shows_its_zero3_traffic():
    """7B full fine-tune, ZeRO-3, 8 GPUs, 1,024-token sequences one at a time: on PCIe 4.0 the gathers (3 × 7/8 ×
    13.5 GB at 25.6 GB/s ≈ 1.4 s per micro-step) outlast the compute and the step is mostly communication; on
    NVLink the same traffic hides behind compute. ZeRO-0 sends one all-reduce per optimizer step instead."""
    args = {"model": "Llama-2-7B", "n_gpus": 8, "tokens": 10**9, "seq_len": 1024, "micro_batch": 1}
    pcie = training_time(TrainingTimeInput(gpu="A100 PCIe 80GB", zero_stage=3, **args))
    nvlink = training_time(TrainingTimeInput(gpu="A100 SXM4", zero_stage=3, **args))
    ddp = training_time(TrainingTimeInput(gpu="A100 PCIe 80GB", zero_stage=0, **args))
    assert pcie.comm_share > 0.5 and nvlink.comm_share < 0.1 and ddp.comm_share < 0.05
    assert pcie.tokens_per_s_per_gpu < 0.5 * nvlink.tokens_per_s_per_gpu
    note = next(a for a in pcie.assumptions if a.key == "zero_stage")
    assert "8 data-parallel ranks" in note.note and "26 GB/s" in note.note and not note.default


def test_fsdp_across_slow_ethernet_and_hsdp():
    """Two nodes on 100 GbE: full-shard FSDP rings every gather through the NICs (a few GB/s); HSDP keeps them on
    NVLink and sends one gradient all-reduce across nodes per step, so it is never slower."""
    args = {"model": "Llama-2-7B", "gpu": "A100 SXM4", "n_gpus": 16, "tokens": 10**9, "zero_stage": 3,
            "nodes_fabric": "ethernet-100g"}  # fmt: skip
    full = training_time(TrainingTimeInput(**args))
    hsdp = training_time(TrainingTimeInput(shard_within_node=True, **args))
    assert full.comm_share > 0.2 and hsdp.comm_share < 0.05
    assert hsdp.tokens_per_s_per_gpu > full.tokens_per_s_per_gpu


def test_torchtitan_defaults_to_fsdp_others_to_ddp():
    args = {"model": "Llama-3.1-8B", "gpu": "H100 SXM", "n_gpus": 16, "tokens": 10**9}
    titan = training_time(TrainingTimeInput(framework="torchtitan", **args))
    hf = training_time(TrainingTimeInput(framework="hf", **args))
    z = next(a for a in titan.assumptions if a.key == "zero_stage")
    assert z.value == 3 and z.default and "1 micro-step" in z.note
    assert not any(a.key == "zero_stage" for a in hf.assumptions)
