"""Issue 25 (cause 10): data-center GDDR cards ship with ECC on, and the driver then reports less than the label
(an A10 "24 GB" shows 23028 MiB in nvidia-smi, an L40S "48 GB" 46068 MiB). The usable memory an answer gives is
what the catalog's sourced driver figure says, never the label read in GiB ("usable 25.8 GB" overstated the A10)."""

from __future__ import annotations

import pytest

import tools
from tools.catalog.lookup import get_gpu
from tools.memory.capacity import capacity_bytes
from tools.units import GiB

#: card -> nvidia-smi memory.total in MiB, as the sources in tools/data/gpus.yaml show it
NVIDIA_SMI_MIB = {"A10": 23028, "A10G": 23028, "L4": 23034, "T4": 15360, "L40S": 46068, "L20": 46068, "A40": 46068}


@pytest.mark.parametrize("card", sorted(NVIDIA_SMI_MIB))
def test_ecc_gddr_card_capacity_is_its_reported_figure(card):
    gpu = get_gpu(card)
    assert gpu.memory_reported_gib == pytest.approx(NVIDIA_SMI_MIB[card] / 1024, abs=0.01)
    assert capacity_bytes(gpu) / GiB < gpu.memory_gb * 0.95  # ECC holds back about 1/16
    cited = [s for s in gpu.sources if "memory_reported_gib" in s.fields]
    assert cited and all(s.url.startswith("https://github.com/") and str(s.as_of) == "2026-12-08" for s in cited)


def test_l40_takes_the_total_its_logs_show():
    """No nvidia-smi figure for the L40 was found: PyTorch's total (44.40 GiB, Qwen3-VL issue 2097) is stored,
    not the 48 GiB label (the answer said 51.5 GB usable where the user's log said 44.32 GiB)."""
    assert get_gpu("L40").memory_reported_gib == pytest.approx(44.4)


@pytest.mark.parametrize(("card", "gib"), [("A10", 22.5), ("T4", 15.0), ("L40S", 45.0), ("L40", 44.4), ("A40", 45.0)])
def test_usable_memory_in_the_answer_is_the_reported_gib(card, gib):
    out = tools.call("fit_training", {"model": "Llama-2-7B", "gpu": card, "method": "qlora"})
    assert out["usable_gib"] == gib
    assert out["usable_gb"] == pytest.approx(gib * GiB / 1e9, abs=0.1)


def test_workstation_cards_with_ecc_off_keep_their_label():
    """RTX A6000 and RTX 6000 Ada ship with ECC off: their 48 GB is 48 GiB as before."""
    for card in ("RTX A6000", "RTX 6000 Ada"):
        assert capacity_bytes(get_gpu(card)) == 48 * GiB


@pytest.mark.parametrize(("card", "mib"), [("RTX 5090", 32607), ("RTX PRO 6000D", 85651)])
def test_other_cards_whose_driver_figure_is_below_the_label(card, mib):
    """GDDR7 cards report a little less than their label too (the RTX 5090's "32 GB" is 32607 MiB)."""
    gpu = get_gpu(card)
    assert gpu.memory_reported_gib == pytest.approx(mib / 1024, abs=0.01)
    assert capacity_bytes(gpu) < gpu.memory_gb * GiB
