"""The 2026 catalog additions (issue 11 item 7): names resolve in Chinese and English, bins stay apart,
per-GPU figures are per GPU, and a figure no source gave is refused in words, never guessed."""

from __future__ import annotations

import pytest

import tools
from tools.catalog import lookup as catalog
from tools.errors import InvalidInput

#: what a buyer types, in Chinese and in English -> the record it must reach
NAMES = {
    "gb200": ["GB200", "英伟达GB200", "GB200 NVL72", "Grace Blackwell"],
    "gb300": ["GB300", "英伟达GB300", "GB300 NVL72"],
    "mi355x": ["MI355X", "AMD MI355X", "超威MI355X"],
    "mi350x": ["MI350X", "AMD Instinct MI350X", "超威MI350X"],
    "gaudi-3": ["Gaudi 3", "Gaudi3", "Intel Gaudi 3", "英特尔 Gaudi 3", "英特尔Gaudi3"],
    "ascend-910b1": ["910B1", "昇腾910B1", "Ascend 910B1", "华为910B1"],
    "ascend-910b2": ["910B2", "昇腾910B2", "Ascend 910B2", "华为 昇腾 910B2"],
    "ascend-910b3": ["910B3", "昇腾910B3", "Ascend910B3"],
    "ascend-910b4": ["910B4", "昇腾910B4", "Huawei Ascend 910B4"],
    "hygon-k100": ["海光K100", "海光 K100", "Hygon K100", "DCU K100"],
    "hygon-k100-ai": ["海光K100-AI", "海光 K100 AI", "K100_AI", "Hygon K100-AI", "深算二号"],
    "hygon-bw1000": ["海光BW1000", "海光 BW1000", "Hygon BW1000", "深算三号", "BW200"],
    "kunlunxin-p800": ["昆仑芯P800", "昆仑芯 P800", "Kunlunxin P800", "百度昆仑芯P800"],
    "mtt-s5000": ["摩尔线程S5000", "摩尔线程 S5000", "Moore Threads S5000", "MTT S5000"],
    "metax-c500": ["沐曦C500", "沐曦 C500", "MetaX C500", "曦云C500"],
    "metax-c550": ["沐曦 C550", "MetaX C550", "曦云C550"],
}
CASES = [(typed, gpu_id) for gpu_id, typed_names in NAMES.items() for typed in typed_names]
NEW_IDS = sorted(NAMES)
BINS = ["ascend-910b1", "ascend-910b2", "ascend-910b3", "ascend-910b4"]


@pytest.mark.parametrize(("typed", "gpu_id"), CASES)
def test_new_cards_resolve_by_their_chinese_and_english_names(typed, gpu_id):
    assert catalog.get_gpu(typed).id == gpu_id


@pytest.mark.parametrize("gpu_id", NEW_IDS)
def test_every_new_card_has_a_chinese_and_an_english_name(gpu_id):
    rec = catalog.get_gpu(gpu_id)
    names = (rec.name, *rec.aliases)
    assert any(not n.isascii() for n in names), f"{gpu_id}: no Chinese alias"
    assert any(n.isascii() for n in names)


@pytest.mark.parametrize("gpu_id", NEW_IDS)
def test_every_new_figure_is_marked_unverified_unless_a_vendor_document_backs_it(gpu_id):
    """Only the MLCommons system descriptions AMD submitted count as checked; everything else is unverified."""
    rec = catalog.get_gpu(gpu_id)
    checked = {f for src in rec.sources if src.verified for f in src.fields}
    assert checked <= {"memory_gb", "pcie_gen"}
    assert not rec.verified


# --- Ascend 910B bins ----------------------------------------------------------------------------------------


def test_910b_bins_are_separate_records_with_distinct_figures():
    recs = [catalog.get_gpu(b) for b in ("910B1", "910B2", "910B3", "910B4")]
    assert [r.id for r in recs] == BINS
    b1, b2, b3, b4 = recs
    assert (b1.memory_gb, b2.memory_gb, b3.memory_gb, b4.memory_gb) == (64, 64, 64, 32)
    assert b2.fp16_tflops > b3.fp16_tflops > b4.fp16_tflops  # 376 > 313 > 280: higher bin, more AI cores/clock
    assert b4.bandwidth_gb_s < b3.bandwidth_gb_s == b2.bandwidth_gb_s
    for rec in (b2, b3, b4):
        assert rec.int8_tops == pytest.approx(2 * rec.fp16_tflops)
        # BF16 at the FP16 rate, stored (a record without it reads as a card with no BF16 to the diagnosis and specs)
        assert rec.bf16_tflops == rec.fp16_tflops == rec.peak_tflops("bf16")
        said = [s for s in rec.sources if "bf16_tflops" in s.fields]
        assert said and "BF16 at the FP16 rate" in said[0].title and not said[0].verified


def test_910b_bins_show_bf16_in_their_specs():
    for name, rate in (("910B2", 376), ("910B3", 313), ("910B4", 280)):
        assert tools.call("gpu_specs", {"gpu": name})["bf16_tflops"] == rate


def test_910b1_compute_is_empty_and_speed_is_refused_in_words():
    b1 = catalog.get_gpu("910B1")
    assert b1.fp16_tflops is None and b1.bandwidth_gb_s is None
    with pytest.raises(InvalidInput) as err:
        tools.call("inference_speed", {"model": "Qwen2.5-7B", "gpu": "910B1"})
    assert "no published" in err.value.message("en")


def test_bare_910b_names_its_bins_and_keeps_both_power_figures():
    rec = catalog.get_gpu("910B")
    assert rec.id == "ascend-910b"
    assert all(b in rec.notes for b in ("910B1", "910B2", "910B3", "910B4"))
    assert rec.tdp_w == 400  # the 910B's own maximum; 310 W is the 2019 Ascend 910's
    kept = {alt.value for alt in rec.alternatives if alt.field == "tdp_w"}
    assert {310, 350} <= kept
    assert all("Ascend 910" in alt.note and "not used" in alt.note for alt in rec.alternatives if alt.field == "tdp_w")
    assert rec.bandwidth_gb_s == 1600
    assert 1200 in {alt.value for alt in rec.alternatives if alt.field == "bandwidth_gb_s"}
    assert (
        "280" in rec.notes and "910B4" in rec.notes
    )  # says which bin the 280 TFLOPS figure matches, and why it is kept


# --- Grace-Blackwell ------------------------------------------------------------------------------------------


def test_gb200_figures_are_per_gpu_and_say_how_they_relate_to_b200():
    gb200, b200 = catalog.get_gpu("GB200"), catalog.get_gpu("B200")
    assert gb200.id != b200.id
    assert gb200.memory_gb == 186  # one GPU of the superchip, not the superchip's 372 GB
    assert gb200.bf16_tflops == 2500 and gb200.bf16_tflops > b200.bf16_tflops  # 1,200 W vs 1,000 W
    assert gb200.tdp_w == 1200 and b200.tdp_w == 1000
    assert "B200" in gb200.notes and "per GPU" in gb200.notes
    assert 192 in {alt.value for alt in gb200.alternatives if alt.field == "memory_gb"}


def test_gb300_is_its_own_record_and_its_int8_is_cut():
    gb300, b300 = catalog.get_gpu("GB300"), catalog.get_gpu("B300")
    assert gb300.id == "gb300" and b300.id == "b300-hgx-288gb"
    assert gb300.memory_gb == 288
    assert gb300.int8_tops is not None and gb300.int8_tops < 0.1 * gb300.bf16_tflops
    assert b300.int8_tops is None  # sources disagree for the HGX part: left empty, not forced to 2x


# --- AMD CDNA4 and Gaudi 3 -------------------------------------------------------------------------------------


def test_mi350_series_share_memory_and_the_liquid_part_is_faster():
    mi355x, mi350x = catalog.get_gpu("MI355X"), catalog.get_gpu("MI350X")
    assert mi355x.memory_gb == mi350x.memory_gb == 288
    assert mi355x.fp8_tflops == pytest.approx(2 * mi355x.bf16_tflops, rel=0.01)
    assert 0.9 < mi350x.bf16_tflops / mi355x.bf16_tflops < 0.95  # 2.2 vs 2.4 GHz
    assert mi355x.tdp_w > mi350x.tdp_w
    assert not mi355x.domestic and not mi355x.china.available


def test_gaudi3_fp8_equals_bf16_and_fp16_is_refused_not_guessed():
    g3 = catalog.get_gpu("Gaudi 3")
    assert g3.bf16_tflops == g3.fp8_tflops == 1835  # Intel's MME: FP8 is not 2x BF16 on Gaudi 3
    assert g3.memory_gb == 128 and g3.tdp_w == 900
    assert 600 in {alt.value for alt in g3.alternatives if alt.field == "tdp_w"}  # the PCIe card
    assert g3.fp16_tflops is None and g3.peak_tflops("fp16") is None
    assert g3.vendor == "intel" and not g3.domestic and not g3.china.available


def test_gaudi3_compares_with_h100_without_error():
    out = tools.call("compare_gpus", {"gpus": ["英特尔 Gaudi 3", "H100"]})
    rows = {r["id"]: r for r in out["rows"]}
    assert rows["gaudi-3"]["bf16_tflops"] > rows["h100-sxm5-80gb"]["bf16_tflops"]
    assert rows["gaudi-3"]["memory_gb"] > rows["h100-sxm5-80gb"]["memory_gb"]


# --- domestic parts ---------------------------------------------------------------------------------------------

DOMESTIC_NEW = [
    i for i in NEW_IDS if catalog.get_gpu(i).vendor in ("huawei", "hygon", "kunlunxin", "moore-threads", "metax")
]


@pytest.mark.parametrize("gpu_id", DOMESTIC_NEW)
def test_domestic_parts_are_domestic_and_available(gpu_id):
    rec = catalog.get_gpu(gpu_id)
    assert rec.domestic and rec.china.available


@pytest.mark.parametrize("gpu_id", ["gb200", "gb300", "mi350x", "mi355x", "gaudi-3"])
def test_imported_parts_are_not_domestic(gpu_id):
    rec = catalog.get_gpu(gpu_id)
    assert not rec.domestic and not rec.china.available and "licence" in rec.china.note


def test_k100_ai_is_faster_than_k100_and_bw1000_faster_still():
    k100, k100ai, bw = (catalog.get_gpu(n) for n in ("海光K100", "海光K100-AI", "海光BW1000"))
    assert k100.peak_tflops("fp16") < k100ai.peak_tflops("fp16") < bw.peak_tflops("fp16")
    assert k100.memory_gb == k100ai.memory_gb == bw.memory_gb == 64


def test_k100_fits_are_answered_and_its_missing_bandwidth_is_said_not_guessed():
    fit = tools.call("fit_inference", {"model": "70B", "gpu": "海光K100"})
    assert fit["fits"] is False and fit["min_gpus"] >= 3  # 139 GB of bf16 weights on 64 GB cards
    with pytest.raises(InvalidInput) as err:
        tools.call("inference_speed", {"model": "70B", "gpu": "海光K100", "n_gpus": 4})
    assert "没有公开" in err.value.message("zh") and "no published" in err.value.message("en")


@pytest.mark.parametrize("typed", ["昆仑芯P800", "沐曦C500", "沐曦 C550"])
def test_cards_with_memory_only_still_answer_fit_questions(typed):
    rec = catalog.get_gpu(typed)
    assert rec.bandwidth_gb_s is None and rec.peak_tflops("bf16") is None
    fit = tools.call("fit_inference", {"model": "Qwen2.5-7B", "gpu": typed})
    assert fit["fits"] is True and fit["capacity_gb"] >= rec.memory_gb  # P800: 96 GiB reported = 103 GB


def test_p800_reports_what_its_driver_shows():
    p800 = catalog.get_gpu("P800")
    assert p800.memory_gb == 96 and p800.memory_reported_gib == 96  # xpu_smi: 98304 MiB
    assert p800.tdp_w == 400


def test_s5000_publishes_fp8_only_so_bf16_training_time_is_refused():
    s5000 = catalog.get_gpu("S5000")
    assert s5000.fp8_tflops == 1000 and s5000.peak_tflops("bf16") is None
    assert {920, 1024} <= {alt.value for alt in s5000.alternatives if alt.field == "fp8_tflops"}


def test_names_without_a_citable_figure_stay_unknown_and_list_the_closest():
    """Cambricon MLU590 and Enflame cards have no citable figure: not in the catalog, never invented."""
    for typed in ("寒武纪 MLU590", "燧原 S60"):
        with pytest.raises(tools.UnknownGpu) as err:
            catalog.get_gpu(typed)
        assert err.value.suggestions


# --- availability notes current to late 2026 ----------------------------------------------------------------


def test_export_notes_are_current():
    assert "January 2026" in catalog.get_gpu("H200").china.note
    assert "case by case" in catalog.get_gpu("H200").china.note
    assert "August 2025" in catalog.get_gpu("H20").china.note
    assert "case-by-case" in catalog.get_gpu("MI325X").china.note
    assert "August 2025" in catalog.get_gpu("H20 141G").china.note
