"""tools/memory/hybrid.py through fit_inference's host_ram_gb: a CPU+GPU hybrid run's formats against VRAM + RAM,
what sits on the GPU, and the decode bound from the two memories' bandwidths."""

from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.catalog.lookup import get_model
from tools.memory.hybrid import default_host_bandwidth, formats, hybrid_fit, routed_expert_params


def _rows(**kw):
    return {h["format"]: h for h in tools.call("fit_inference", kw)["hybrid"]}


def test_deepseek_r1_on_one_l40_with_640_gb_fits_at_q6_but_not_in_fp8():
    rows = _rows(model="DeepSeek-R1", gpu="L40", host_ram_gb=640)
    assert rows["fp8"]["weights_gb"] == 671.0 and not rows["fp8"]["fits"]  # 671 GB > 46 GB VRAM + 90% of 640
    assert rows["Q6_K"]["fits"] and rows["Q4_K_M"]["fits"]
    assert rows["Q4_K_M"]["decode_tokens_per_s"] > rows["Q6_K"]["decode_tokens_per_s"]


def test_the_routed_experts_are_what_sits_in_ram_for_a_moe_model():
    r1 = get_model("DeepSeek-R1")
    routed, per_token = routed_expert_params(r1)
    assert 640e9 < routed < 660e9 and 19e9 < per_token < 22e9  # 58 MoE layers × 256 (8 per token) × 3·7168·2048
    h = hybrid_fit(r1, "Q4_K_M", 4.85, gpu_room=20e9, ram=512e9, gpu_bandwidth=1e12, host_bandwidth=300e9)
    assert h.on_gpu <= 20e9 and abs(h.on_gpu + h.in_ram - h.weights) < 1e6


def test_without_host_ram_there_is_no_hybrid_part():
    assert tools.call("fit_inference", {"model": "DeepSeek-R1", "gpu": "4090"})["hybrid"] == []


@settings(max_examples=40, deadline=None)
@given(ram=st.floats(32, 2048), more=st.floats(1, 4), room=st.floats(1e9, 200e9))
def test_more_ram_never_unfits_and_fewer_bits_never_decode_slower(ram, more, room):
    m = get_model("DeepSeek-R1")
    kw = {"gpu_room": room, "gpu_bandwidth": 1e12, "host_bandwidth": 300e9}
    for fmt, bits in formats().items():
        small = hybrid_fit(m, fmt, bits, ram=ram * 1e9, **kw)
        big = hybrid_fit(m, fmt, bits, ram=ram * more * 1e9, **kw)
        assert big.fits or not small.fits
    speeds = [
        hybrid_fit(m, f, b, ram=ram * 1e9, **kw).decode_tokens_per_s
        for f, b in sorted(formats().items(), key=lambda x: -x[1])
    ]
    assert speeds == sorted(speeds)


def test_a_desktop_sized_ram_is_read_at_a_desktops_two_channels_and_a_server_sized_one_at_a_socket():
    desktop = tools.call("fit_inference", dict(model="qwen2.5-32b", gpu="rtx-3060-12gb", host_ram_gb=64))
    server = tools.call("fit_inference", dict(model="qwen2.5-32b", gpu="rtx-3060-12gb", host_ram_gb=512))
    assert desktop["host_bandwidth_gb_s"] == 89.6 and server["host_bandwidth_gb_s"] == 307.2  # 2 × 44.8, 8 × 38.4
    q4 = {h["format"]: h for h in desktop["hybrid"]}["Q4_K_M"]
    assert (
        4 <= q4["decode_tokens_per_s"] <= 8
    )  # ~10.8 GB read from RAM per token at 89.6 GB/s (dev gh-ktransformers-210)


@given(st.floats(1, 4096), st.floats(0, 4096))
@settings(max_examples=40, deadline=None)
def test_more_ram_is_never_assumed_slower(ram, more):
    assert default_host_bandwidth(ram + more)[0] >= default_host_bandwidth(ram)[0]


def test_a_card_with_no_published_bandwidth_still_gets_the_split_but_no_decode_bound():
    rows = _rows(model="qwen2.5-72b", gpu="h20-141gb", host_ram_gb=64)  # found by schemathesis: a 500 before
    assert rows and all(r["decode_tokens_per_s"] is None for r in rows.values())
    assert all(abs(r["gpu_gb"] + r["ram_gb"] - r["weights_gb"]) <= 0.2 for r in rows.values())
