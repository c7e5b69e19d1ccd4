"""The GPU catalog (tools/data/gpus.yaml): loads, names resolve, every figure is sourced and dense."""

from __future__ import annotations

import pytest

from tools.catalog import lookup as catalog
from tools.catalog.record_base import GPU_FIGURES
from tools.errors import UnknownGpu

GPUS = catalog.gpus()
IDS = [g.id for g in GPUS]

REQUIRED = {
    # what people type -> the record it must resolve to
    "A100": "a100-sxm4-80gb",
    "A100 80G": "a100-sxm4-80gb",
    "a100-80gb": "a100-sxm4-80gb",
    "A100-SXM4-80GB": "a100-sxm4-80gb",
    "A100 40GB": "a100-sxm4-40gb",
    "A100 PCIe": "a100-pcie-80gb",
    "A100 PCIe 40GB": "a100-pcie-40gb",
    "A800": "a800-sxm4-80gb",
    "A800 PCIe": "a800-pcie-80gb",
    "A800 40GB": "a800-pcie-40gb",
    "H100": "h100-sxm5-80gb",
    "H100 PCIe": "h100-pcie-80gb",
    "H100 NVL": "h100-nvl-94gb",
    "H800": "h800-sxm5-80gb",
    "英伟达H800": "h800-sxm5-80gb",
    "H800 PCIe": "h800-pcie-80gb",
    "H20": "h20",
    "H200": "h200-sxm-141gb",
    "H200 NVL": "h200-nvl-141gb",
    "B200": "b200-hgx-180gb",
    "L40S": "l40s",
    "L40": "l40",
    "L20": "l20",
    "L4": "l4",
    "A10": "a10",
    "A30": "a30",
    "A40": "a40",
    "4090": "rtx-4090",
    "RTX 4090": "rtx-4090",
    "4090D": "rtx-4090d",
    "4090 D": "rtx-4090d",
    "RTX4090D": "rtx-4090d",
    "RTX 3090": "rtx-3090",
    "RTX 6000 Ada": "rtx-6000-ada",
    "V100 32GB": "v100-sxm2-32gb",
    "T4": "t4",
    "MI250X": "mi250x",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "910B": "ascend-910b",
    "昇腾910B": "ascend-910b",
    "Ascend 910B": "ascend-910b",
    "华为910B": "ascend-910b",
    "910C": "ascend-910c",
    "MLU370-X8": "mlu370-x8",
    "寒武纪MLU370-X8": "mlu370-x8",
    "MTT S4000": "mtt-s4000",
    "摩尔线程S4000": "mtt-s4000",
    # vendor prefixes in Chinese and English, word order, typos (issue 11)
    "摩尔线程 S4000": "mtt-s4000",
    "Moore Threads S4000": "mtt-s4000",
    "英伟达 H800": "h800-sxm5-80gb",
    "NVIDIA H800": "h800-sxm5-80gb",
    "A100 80GB SXM": "a100-sxm4-80gb",
    "80GB A100 SXM4": "a100-sxm4-80gb",
    "SXM A100 80G": "a100-sxm4-80gb",
    "H100 SMX": "h100-sxm5-80gb",
    "Gefroce RTX 4090": "rtx-4090",
    "华为 昇腾 910B": "ascend-910b",
    "5090": "rtx-5090",
    "5090D V2": "rtx-5090d-v2",
    "RTX PRO 6000": "rtx-pro-6000-blackwell",
    "RTX PRO 6000D": "rtx-pro-6000d",
    "4090 48G": "rtx-4090-48gb",
    "A6000": "rtx-a6000",
    "A10G": "a10g",
    "AWS A10G": "a10g",
    "H20 141G": "h20-141gb",
    "B300": "b300-hgx-288gb",
    "昇腾950PR": "ascend-950pr",
    "950DT": "ascend-950dt",
}

#: datasheet 2:4-sparse headlines that must never be stored as a dense figure
SPARSE_HEADLINES = [
    ("h100-sxm5-80gb", "bf16_tflops", 1979),
    ("h100-sxm5-80gb", "fp16_tflops", 1979),
    ("h100-sxm5-80gb", "tf32_tflops", 989),
    ("h100-sxm5-80gb", "fp8_tflops", 3958),
    ("h100-sxm5-80gb", "int8_tops", 3958),
    ("h800-sxm5-80gb", "bf16_tflops", 1979),
    ("h200-sxm-141gb", "bf16_tflops", 1979),
    ("h100-nvl-94gb", "bf16_tflops", 1671),
    ("h100-pcie-80gb", "bf16_tflops", 1513),
    ("a100-sxm4-80gb", "bf16_tflops", 624),
    ("a100-sxm4-80gb", "tf32_tflops", 312),
    ("a100-sxm4-80gb", "int8_tops", 1248),
    ("a800-sxm4-80gb", "bf16_tflops", 624),
    ("l40s", "bf16_tflops", 733),
    ("l40s", "fp8_tflops", 1466),
    ("l4", "fp16_tflops", 242),
    ("l4", "fp8_tflops", 485),
    ("b200-hgx-180gb", "bf16_tflops", 4500),
    ("mi300x", "bf16_tflops", 2614.9),
    ("rtx-4090", "bf16_tflops", 330.3),
    (
        "rtx-a6000",
        "bf16_tflops",
        309.7,
    ),  # the RTX A6000 datasheet's "309.7 TFLOPS tensor" is 2:4 sparse  # FP16-accumulate rate, not what training gets
    ("gb200", "bf16_tflops", 5000),  # NVIDIA's per-GPU GB200 headline is the sparse 5 PF
    ("gb200", "fp8_tflops", 10000),
    ("gb300", "bf16_tflops", 5000),
    ("gb300", "fp8_tflops", 10000),
]

AMPERE_ON = {"Ampere", "Ada", "Hopper", "Blackwell"}


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_catalog_has_at_least_30_entries():
    assert len(GPUS) >= 30


def test_ids_names_and_aliases_are_unique():
    catalog._gpu_index()  # raises on a name shared by two records
    assert len(set(IDS)) == len(IDS)
    assert len({catalog.normalize(g.name) for g in GPUS}) == len(GPUS)


@pytest.mark.parametrize(("typed", "gpu_id"), sorted(REQUIRED.items()))
def test_what_people_type_resolves(typed, gpu_id):
    assert catalog.get_gpu(typed).id == gpu_id


def test_bare_family_names_say_which_variant_in_notes():
    for typed in ("A100", "A800", "H100", "H800", "H200", "910B", "B200"):
        rec = catalog.get_gpu(typed)
        assert rec.notes and "resolves" in rec.notes, rec.id


def test_unknown_gpu_raises_with_suggestions():
    with pytest.raises(UnknownGpu) as err:
        catalog.get_gpu("A1000 80G")
    assert err.value.suggestions
    assert any("A100" in s for s in err.value.suggestions)
    assert "A1000" in err.value.message("zh")


@pytest.mark.parametrize("gpu", GPUS, ids=IDS)
def test_every_figure_is_covered_by_a_source(gpu):
    covered = {f for src in gpu.sources for f in src.fields}
    missing = [f for f in GPU_FIGURES if getattr(gpu, f) is not None and f not in covered]
    assert not missing, f"{gpu.id}: no source for {missing}"


@pytest.mark.parametrize("gpu", GPUS, ids=IDS)
def test_every_source_has_url_and_date(gpu):
    for src in gpu.sources:
        assert src.url.startswith(("http://", "https://")), src.title
        assert src.as_of.year >= 2020
        assert src.fields
    for alt in gpu.alternatives:
        assert alt.url.startswith(("http://", "https://"))


@pytest.mark.parametrize("gpu", GPUS, ids=IDS)
def test_halved_fields_are_real_figures(gpu):
    for f in gpu.halved_from_sparse:
        assert getattr(gpu, f) is not None, f"{gpu.id}: {f} listed as halved but empty"


NVIDIA_TENSOR_DC = [g for g in GPUS if g.vendor == "nvidia" and g.family in AMPERE_ON and g.segment != "consumer"]


@pytest.mark.parametrize("gpu", NVIDIA_TENSOR_DC, ids=[g.id for g in NVIDIA_TENSOR_DC])
def test_nvidia_dense_ratios(gpu):
    """Dense NVIDIA tensor rates keep fixed ratios; a sparse figure in one field breaks them.

    3% tolerance: NVIDIA rounds its headlines (B200 TF32 2.2 PF vs FP16 4.5 PF).
    """
    assert gpu.fp16_tflops == gpu.bf16_tflops
    if gpu.fp16_tflops is None:  # a record whose tensor rates no source gave (PRO 6000D, H20 141GB)
        return
    if gpu.tf32_tflops is not None:
        assert close(gpu.tf32_tflops * 2, gpu.fp16_tflops, 0.03)
    if gpu.fp8_tflops is not None:
        assert close(gpu.fp8_tflops, 2 * gpu.fp16_tflops, 0.03)
    if gpu.int8_tops is None:
        return
    if "Blackwell Ultra" in f"{gpu.name} {gpu.notes}":
        # Blackwell Ultra (B300/GB300) cuts INT8 for FP4: a stored figure must be far below BF16, never the 2x rule
        assert gpu.int8_tops < 0.1 * gpu.bf16_tflops
    else:
        assert close(gpu.int8_tops, 2 * gpu.fp16_tflops, 0.03)


@pytest.mark.parametrize(("gpu_id", "field", "sparse"), SPARSE_HEADLINES)
def test_sparse_headline_not_stored_as_dense(gpu_id, field, sparse):
    value = getattr(catalog.get_gpu(gpu_id), field)
    assert value is not None
    assert not close(value, sparse, 0.01)
    assert close(value, sparse / 2, 0.03)  # NVIDIA's own L40S table: 362.05 dense vs 733 sparse


@pytest.mark.parametrize("gpu", [g for g in GPUS if g.verified], ids=[g.id for g in GPUS if g.verified])
def test_verified_entries_are_complete(gpu):
    assert gpu.memory_gb and gpu.bandwidth_gb_s and gpu.tdp_w
    assert gpu.peak_tflops("bf16")


def test_some_entries_are_verified_and_china_parts_are_marked_unverified():
    assert {"a100-sxm4-80gb", "h100-sxm5-80gb", "a40"} <= {g.id for g in GPUS if g.verified}
    for gpu_id in ("ascend-910b", "ascend-910c", "mlu370-x8", "mtt-s4000", "h20"):
        assert not catalog.get_gpu(gpu_id).verified


def test_h100_nvl_is_94gb_per_gpu():
    assert catalog.get_gpu("H100 NVL").memory_gb == 94
    assert catalog.get_gpu("H200 NVL").memory_gb == 141


@pytest.mark.parametrize(
    "gpu_id", ["a800-sxm4-80gb", "a800-pcie-80gb", "a800-pcie-40gb", "h800-sxm5-80gb", "h800-pcie-80gb"]
)
def test_china_variants_keep_compute_and_cut_nvlink(gpu_id):
    gpu = catalog.get_gpu(gpu_id)
    assert gpu.interconnect_gb_s == 400
    assert gpu.china.note
    twin_name = ("A100" if gpu_id.startswith("a800") else "H100") + (" PCIe" if "pcie" in gpu_id else "")
    twin = catalog.get_gpu(twin_name)
    assert gpu.bf16_tflops == twin.bf16_tflops
    assert gpu.interconnect_gb_s < twin.interconnect_gb_s


def test_geforce_stores_fp32_accumulate_rate():
    rtx = catalog.get_gpu("4090")
    assert rtx.bf16_tflops == pytest.approx(165.2)
    assert rtx.notes and "FP32 accumulate" in rtx.notes
    assert catalog.get_gpu("4090D").bf16_tflops < rtx.bf16_tflops


def test_reported_memory_is_gib():
    assert catalog.get_gpu("A100").memory_reported_gib == 80
    assert catalog.get_gpu("H100").memory_reported_gib == pytest.approx(81559 / 1024, abs=0.01)
    assert catalog.get_gpu("H200").memory_reported_gib == pytest.approx(143771 / 1024, abs=0.01)


def test_mi250x_exposes_two_devices():
    assert catalog.get_gpu("MI250X").devices_per_package == 2


SAME_SILICON = [g for g in GPUS if g.same_silicon_as]


@pytest.mark.parametrize("gpu", SAME_SILICON, ids=[g.id for g in SAME_SILICON])
def test_same_silicon_under_a_china_name_gets_the_same_capacity(gpu):
    """A800/H800/4090 D are the A100/H100/4090 under another name: the memory calculators must see the same card."""
    from tools.memory.fit_training import capacity_bytes

    parent = catalog.get_gpu(gpu.same_silicon_as)
    assert capacity_bytes(gpu) == capacity_bytes(parent)
    assert (gpu.memory_gb, gpu.memory_reported_gib, gpu.bandwidth_gb_s) == (
        parent.memory_gb,
        parent.memory_reported_gib,
        parent.bandwidth_gb_s,
    )
    if gpu.vendor == "nvidia" and gpu.segment == "datacenter":  # A800/H800: the same tensor rates, less NVLink
        assert (gpu.bf16_tflops, gpu.fp8_tflops, gpu.int8_tops) == (
            parent.bf16_tflops,
            parent.fp8_tflops,
            parent.int8_tops,
        )


def test_a_china_name_never_loses_a_close_call_its_parent_wins():
    import tools

    args = {"model": "Llama-2-70B", "method": "full", "n_gpus": 16, "seq_len": 2048, "zero_stage": 3}
    a100 = tools.call("fit_training", {**args, "gpu": "A100 80GB"})
    a800 = tools.call("fit_training", {**args, "gpu": "A800 80GB"})
    assert (a800["verdict"], a800["capacity_gb"], a800["margin_gb"]) == (
        a100["verdict"],
        a100["capacity_gb"],
        a100["margin_gb"],
    )


def test_domestic_is_the_vendor_not_availability():
    assert catalog.get_gpu("910B").domestic and catalog.get_gpu("910B").china.available
    assert not catalog.get_gpu("H20").domestic and catalog.get_gpu("H20").china.available
    assert not catalog.get_gpu("H100").domestic and not catalog.get_gpu("H100").china.available


@pytest.mark.parametrize("typed", ["RTX 4050", "H8000", "A1000", "MI400X"])
def test_a_different_number_is_never_corrected_into_a_catalog_part(typed):
    """A typo fix may change letters, never the model number: '4050' must not become the 4090 (nor the 4060)."""
    with pytest.raises(UnknownGpu) as err:
        catalog.get_gpu(typed)
    assert err.value.suggestions  # still lists the closest names


def test_unknown_domestic_name_lists_the_closest():
    with pytest.raises(UnknownGpu) as err:
        catalog.get_gpu("海光 Z100")  # an older DCU the catalog does not carry
    assert err.value.suggestions and "Z100" in err.value.message("zh")


def test_a10g_is_its_own_record_not_the_a10():
    """AWS's A10G shares the A10's 24 GB and 600 GB/s but not its tensor rates (no NVIDIA datasheet: unverified)."""
    a10g, a10 = catalog.get_gpu("A10G"), catalog.get_gpu("A10")
    assert a10g.id == "a10g" and a10.id == "a10"
    assert (a10g.memory_gb, a10g.bandwidth_gb_s) == (a10.memory_gb, a10.bandwidth_gb_s) == (24, 600)
    assert a10g.bf16_tflops < a10.bf16_tflops
    assert not a10g.verified
    assert 125 in {alt.value for alt in a10g.alternatives if alt.field == "fp16_tflops"}
