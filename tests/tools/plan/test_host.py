"""tools/plan/host.py: each server's CPU cores, system RAM and disk, by the sizing rules in tco.yaml `host` (each
with its source), the host RAM a calculator computed where larger, and the size of one checkpoint."""

from __future__ import annotations

import tools
from tools.catalog.prices import host_params
from tools.plan.host import full_checkpoint_bytes, host_side


def test_training_server_cores_ram_and_full_checkpoint():
    h = host_side(8, 80, "train", model="70B")
    assert (h.cores_low, h.cores_high) == (96, 192)  # 12–24 cores per GPU
    assert (h.ram_low_gb, h.ram_high_gb) == (1920, 2560)  # 3–4 × 640 GB of GPU memory
    assert full_checkpoint_bytes() == 14  # 16-bit weight + fp32 master + Adam m, v (no gradient)
    assert h.checkpoint_gb == 980.0


def test_serving_server_floor_and_weights_file():
    h = host_side(2, 24, "infer", model="Llama-2-13B", precision="int4")
    assert (h.cores_low, h.cores_high) == (16, 24)
    assert h.ram_low_gb == h.ram_high_gb == 128  # 2 × 48 GB is under the floor
    assert "int4" in h.checkpoint_note


def test_a_computed_host_need_wins_over_the_rule():
    h = host_side(8, 80, "train", model="70B", need_gb=3000)
    assert h.ram_low_gb == h.ram_high_gb == 3008  # up to the next 64 GB step
    assert h.ram_need_gb == 3000


def test_lora_checkpoint_is_the_base_file():
    assert host_side(1, 80, "train", model="70B", method="lora").checkpoint_gb == 140.0


def test_every_rule_has_a_source():
    assert all(p.sources for p in host_params().values())


def test_plan_cluster_returns_the_host_side_only_when_asked():
    plain = tools.call("plan_cluster", {"gpu": "A100 80GB", "n_gpus": 16})
    assert plain["host"] is None
    asked = tools.call("plan_cluster", {"gpu": "A100 80GB", "n_gpus": 4, "host_workload": "train", "model": "7B"})
    assert asked["host"]["gpus_per_node"] == 4 and asked["host"]["cores_low"] == 48
