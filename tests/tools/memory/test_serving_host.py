"""tools/memory/serving_host.py: the host RAM a serving engine needs on one node, by term and by loader, and the
disk its checkpoint takes. Each documented figure reproduced (golden rows, with their frameworks.yaml rule), more
parameters never need less (Hypothesis), and fit_inference's `host_ram` given a loader."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.memory.serving_host import GIB, ServeHost, serving_host_ram
from tools.units import GB

W70 = 140e9  # a 70B checkpoint in bf16, bytes

#: (rule, setup, term, bytes expected): each the figure its source documents
GOLDEN = [
    # vLLM --swap-space: 4 GiB per GPU by default (unsloth's engine-argument page; vLLM's help: per GPU)
    ("vllm.swap_space", ServeHost(W70, gpus_per_node=8), "swap_space", 8 * 4 * GIB),
    ("vllm.swap_space", ServeHost(W70, gpus_per_node=1), "swap_space", 4 * GIB),
    # --cpu-offload-gb is per GPU, 0 by default; 10 on each of 2 GPUs pins 20 GB of weights in host RAM
    ("vllm.cpu_offload_gb", ServeHost(W70, gpus_per_node=2), "cpu_offload", 0.0),
    ("vllm.cpu_offload_gb", ServeHost(W70, gpus_per_node=2, cpu_offload_gb=10), "cpu_offload", 20 * GB),
    # safetensors through mmap: one copy of the node's share in the page cache, shared by the workers
    ("vllm.weight_loading", ServeHost(W70, gpus_per_node=8), "checkpoint", W70),
    ("vllm.weight_loading", ServeHost(W70, gpus_per_node=8, nodes=2), "checkpoint", W70 / 2),
    # transformers big_models page: random model + state dict, two copies; low_cpu_mem_usage: not more than 1x
    ("transformers.load_copies", ServeHost(W70, loader="hf", low_cpu_mem_usage=False), "load", 2 * W70),
    ("transformers.load_copies", ServeHost(W70, loader="hf"), "load", W70),
    # llama.cpp mmap: the whole GGUF file stays mapped (llama-cpp-python PR 2147; the larger of the two sources)
    ("llamacpp.mmap", ServeHost(20e9, gpus_per_node=2, loader="llamacpp"), "mapped_file", 20e9),
]


@pytest.mark.parametrize(("rule", "setup", "term", "expected"), GOLDEN)
def test_each_documented_figure_is_reproduced(rule, setup, term, expected):
    from tools.memory.host_memory import _rules

    assert rule in _rules()  # the rule is a record of frameworks.yaml
    assert serving_host_ram(setup).terms[term] == pytest.approx(expected)


def test_every_rule_carries_its_source_and_date():
    from tools.memory.host_memory import _rules

    for rule in {g[0] for g in GOLDEN}:
        source = _rules()[rule]["source"]
        assert source["url"].startswith("https://") and source["as_of"] and source["version"]


def test_vllm_needs_the_larger_of_loading_and_serving():
    r = serving_host_ram(ServeHost(W70, gpus_per_node=8))
    assert r.phases == {"load": W70, "serve": 32 * GIB} and r.total == W70 and r.peak_phase == "load"
    small = serving_host_ram(ServeHost(2e9, gpus_per_node=8))  # a 1B model: the swap space outweighs the load
    assert small.peak_phase == "serve" and small.total == 32 * GIB


def test_the_disk_is_the_whole_checkpoint_whatever_the_node_holds():
    assert serving_host_ram(ServeHost(W70, gpus_per_node=8, nodes=2)).disk == W70


setups = st.builds(
    ServeHost,
    checkpoint_bytes=st.floats(min_value=1e8, max_value=3e12),
    gpus_per_node=st.integers(1, 8),
    nodes=st.integers(1, 4),
    loader=st.sampled_from(["vllm", "hf", "llamacpp"]),
    cpu_offload_gb=st.one_of(st.none(), st.floats(0, 200)),
    low_cpu_mem_usage=st.booleans(),
)


@settings(max_examples=100, deadline=None)
@given(s=setups, more=st.floats(min_value=1.0, max_value=10.0))
def test_more_parameters_never_need_less_host_ram(s, more):
    bigger = replace(s, checkpoint_bytes=s.checkpoint_bytes * more)
    assert serving_host_ram(bigger).total >= serving_host_ram(s).total
    assert serving_host_ram(bigger).disk >= serving_host_ram(s).disk


@settings(max_examples=30, deadline=None)
@given(size=st.sampled_from(["7B", "14B", "32B", "70B", "110B"]), loader=st.sampled_from(["vllm", "hf", "llamacpp"]))
def test_fit_inference_host_ram_grows_with_the_model(size, loader):
    sizes = ["7B", "14B", "32B", "70B", "110B"]
    bigger = sizes[min(len(sizes) - 1, sizes.index(size) + 1)]
    one = tools.call("fit_inference", {"model": size, "gpu": "H100", "n_gpus": 8, "loader": loader})["host_ram"]
    two = tools.call("fit_inference", {"model": bigger, "gpu": "H100", "n_gpus": 8, "loader": loader})["host_ram"]
    assert two["per_node_gb"] >= one["per_node_gb"]


def test_fit_inference_says_host_ram_only_given_a_loader():
    plain = tools.call("fit_inference", {"model": "Qwen2.5-72B", "gpu": "A100 80GB", "n_gpus": 2})
    assert plain["host_ram"] is None
    r = tools.call("fit_inference", {"model": "Qwen2.5-72B", "gpu": "A100 80GB", "n_gpus": 16, "loader": "vllm"})
    h = r["host_ram"]
    assert h["nodes"] == 2 and h["gpus_per_node"] == 8
    assert h["terms_gb"]["checkpoint"] == pytest.approx(h["disk_gb"] / 2, abs=0.1)
    assert h["terms_gb"]["swap_space"] == pytest.approx(8 * 4 * GIB / GB, abs=0.1)
