"""tools/memory/host_memory.py: host RAM by term (loading per rank, reference models, ZeRO offload, an engine
build). Monotone in parameters, ranks and offload (Hypothesis), and DeepSpeed's own estimator reproduced."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.memory.host_memory import HostRun, host_ram

OFFLOADS = ["none", "optimizer", "optimizer+params"]
runs = st.builds(
    HostRun,
    params=st.floats(min_value=1e8, max_value=1e12),
    ranks_per_node=st.integers(1, 16),
    nodes=st.integers(1, 8),
    offload=st.sampled_from(OFFLOADS),
    load_bytes=st.sampled_from([2.0, 4.0]),
    zero_init=st.booleans(),
    reference_models=st.integers(0, 3),
)


@settings(max_examples=80, deadline=None)
@given(run=runs, more=st.floats(min_value=1.0, max_value=10.0))
def test_more_parameters_never_need_less_host_ram(run, more):
    assert host_ram(replace(run, params=run.params * more)).total >= host_ram(run).total


@settings(max_examples=80, deadline=None)
@given(run=runs, extra=st.integers(1, 8))
def test_more_ranks_loading_never_need_less_host_ram(run, extra):
    assert host_ram(replace(run, ranks_per_node=run.ranks_per_node + extra)).total >= host_ram(run).total


@settings(max_examples=80, deadline=None)
@given(run=runs)
def test_offloading_more_never_needs_less_host_ram(run):
    need = [host_ram(replace(run, offload=o)).total for o in OFFLOADS]
    assert need == sorted(need)


@settings(max_examples=60, deadline=None)
@given(run=runs)
def test_zero_init_and_a_smaller_load_dtype_never_need_more(run):
    assert host_ram(replace(run, zero_init=True)).total <= host_ram(replace(run, zero_init=False)).total
    assert host_ram(replace(run, load_bytes=2.0)).total <= host_ram(replace(run, load_bytes=4.0)).total


def test_deepspeed_zero3_offload_estimate_18_bytes_per_parameter_times_1_5():
    # DeepSpeed's estimate_zero3_model_states_mem_needs with zero.Init, offload_param and offload_optimizer on cpu:
    # P × 18 B × 1.5 per node on one node
    p = 72.7e9
    r = host_ram(HostRun(params=p, ranks_per_node=8, offload="optimizer+params", zero_init=True, load_bytes=2))
    assert r.peak_phase == "train"
    assert abs(r.total - p * 18 * 1.5) < 1e3
    assert abs(r.terms["offload_optimizer"] - 16 * p) < 1e3 and abs(r.terms["offload_params"] - 2 * p) < 1e3
    # optimizer only: 16 B; two nodes hold half each
    assert abs(host_ram(replace(r_run := HostRun(params=p, offload="optimizer", zero_init=True), nodes=2)).total
               - p * 16 * 1.5 / 2) < 1e3  # fmt: skip
    assert r_run.offload == "optimizer"


def test_every_rank_loads_its_own_copy_and_a_reference_model_doubles_it():
    r = host_ram(HostRun(params=7e9, ranks_per_node=8, load_bytes=4.0, reference_models=1))
    assert r.terms["load"] == 8 * 7e9 * 4 and r.terms["reference"] == r.terms["load"]
    assert r.total == 2 * 8 * 7e9 * 4 and r.peak_phase == "load"


def test_lora_offload_keeps_only_the_adapters_optimizer_but_the_whole_base_when_params_are_offloaded():
    base = HostRun(params=72e9, trainable=0.2e9, offload="optimizer", zero_init=True, load_bytes=2)
    assert host_ram(base).terms["offload_optimizer"] == 16 * 0.2e9
    both = host_ram(replace(base, offload="optimizer+params"))
    assert both.terms["offload_params"] == 2 * 72e9 and both.total > 150e9


def test_an_engine_build_needs_a_multiple_of_the_16_bit_weights():
    r = host_ram(HostRun(params=7e9, load_bytes=0.0, engine_build_bytes=2.0))
    assert r.peak_phase == "build" and r.total == 3 * 2 * 7e9
