"""fit_training / fit_inference against published measurements, and their user-visible behaviour."""

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools import InvalidInput, UnknownGpu, UnknownModel
from tools.units import GB, GiB

GOLDEN = yaml.safe_load((Path(__file__).parents[2] / "golden" / "memory.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", GOLDEN, ids=[r["id"] for r in GOLDEN])
def test_published_memory(row):
    out = tools.call(row["tool"], row["input"])
    expect = row["expect"]
    generic = any(a["key"] == "model_architecture" for a in out["assumptions"])
    assert generic is row.get("generic", row["input"]["model"][:-1].replace(".", "").isdigit()), (
        "model must resolve as the row says"
    )
    assert row["source"] and row["url"].startswith("http")
    if "fits" in expect:
        assert out["fits"] is expect["fits"], (out["per_gpu_gb"], out["usable_gb"])
    if "verdict_in" in expect:
        assert out["verdict"] in expect["verdict_in"], (out["verdict"], out["margin_gb"], out["uncertainty_gb"])
    if "per_gpu_gb" in expect:
        tol = row["tolerance"]
        assert tol <= 0.15, "every golden memory row within ±15%"
        ours = out[{"allocator_peak": "allocator_peak_gb", "process_total": "process_total_gb"}[row["memory_kind"]]]
        assert ours == pytest.approx(expect["per_gpu_gb"], rel=tol), out["breakdown_gb"]
    if "per_gpu_gb_max" in expect:
        assert out["per_gpu_gb"] <= expect["per_gpu_gb_max"]
    if "per_gpu_gb_min" in expect:
        assert out["per_gpu_gb"] >= expect["per_gpu_gb_min"]


def test_70b_full_on_one_a100_says_why_and_what_would_fit():
    out = tools.call("fit_training", {"model": "70B", "gpu": "A100 80GB", "method": "full"})
    assert out["fits"] is False
    assert out["shortfall_gb"] > 1000
    assert out["bytes_per_param_states"] == 16
    # 16 B/param × 70.1e9 params: weights 2 + gradients 2 + optimizer 12 (master 4 + m 4 + v 4)
    assert out["breakdown_gb"]["optimizer"] == pytest.approx(12 * out["total_params_b"], rel=0.01)
    changes = {s["change"]: s for s in out["suggestions"]}
    assert "qlora" in changes and changes["qlora"]["fits"]
    assert changes["qlora"]["per_gpu_gb"] < out["usable_gb"]
    assert out["min_gpus"] and out["min_gpus"] % 8 == 0 and out["min_gpus_zero_stage"] == 3
    keys = {a["key"] for a in out["assumptions"]}
    assert {"model_architecture", "seq_len", "usable_fraction", "bytes_per_trainable_param", "zero_stage"} <= keys


def test_more_gpus_suggestion_really_fits():
    out = tools.call(
        "fit_training", {"model": "Llama-2-13B", "gpu": "A100 80GB", "method": "full", "grad_checkpointing": True}
    )
    assert not out["fits"]
    n = out["min_gpus"]
    again = tools.call(
        "fit_training",
        {
            "model": "Llama-2-13B",
            "gpu": "A100 80GB",
            "method": "full",
            "grad_checkpointing": True,
            "n_gpus": n,
            "zero_stage": out["min_gpus_zero_stage"],
        },
    )
    assert again["fits"]
    if n > 1:
        fewer = n // 2 if n <= 8 else n - 8
        worse = tools.call(
            "fit_training",
            {
                "model": "Llama-2-13B",
                "gpu": "A100 80GB",
                "method": "full",
                "grad_checkpointing": True,
                "n_gpus": fewer,
                "zero_stage": 3,
            },
        )
        assert not worse["fits"]


def test_zero_stage_defaults_to_lowest_that_fits_and_is_stated():
    out = tools.call(
        "fit_training",
        {"model": "Llama-2-7B", "gpu": "A100 80GB", "method": "full", "n_gpus": 8, "grad_checkpointing": True},
    )
    assert out["fits"] and out["zero_stage"] in (1, 2, 3)
    stated = next(a for a in out["assumptions"] if a["key"] == "zero_stage")
    assert stated["default"] is True and stated["value"] == out["zero_stage"]


def test_offload_needs_host_ram():
    out = tools.call(
        "fit_training",
        {
            "model": "Llama-2-7B",
            "gpu": "RTX 4090",
            "method": "full",
            "offload": "optimizer",
            "zero_stage": 2,
            "grad_checkpointing": True,
        },
    )
    assert out["breakdown_gb"]["optimizer"] == 0
    assert out["host_ram_gb"] >= 12 * 6.7 * 1.5 * 0.95


def test_fp8_training_on_a_card_without_fp8_is_refused():
    with pytest.raises(InvalidInput) as err:
        tools.call("fit_training", {"model": "7B", "gpu": "A100 80GB", "precision": "fp8"})
    assert err.value.field == "precision"
    assert "FP8" in err.value.message("zh")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"n_gpus": 0}, "n_gpus"),
        ({"seq_len": -5}, "seq_len"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"tp": 3, "n_gpus": 3}, "tp"),
        ({"pp": 500, "n_gpus": 500}, "pp"),
        ({"zero_stage": 4}, "zero_stage"),
        ({"method": "dreambooth"}, "method"),
        ({"offload": "optimizer+params", "zero_stage": 2}, "zero_stage"),
        ({"offload": "optimizer", "zero_stage": 0}, "zero_stage"),
        ({"gpus": 8}, "gpus"),
    ],
)
def test_impossible_values_name_the_field(args, field):
    with pytest.raises(InvalidInput) as err:
        tools.call("fit_training", {"model": "Llama-2-7B", "gpu": "A100", **args})
    assert field in (err.value.field or "")
    assert err.value.message("en") and err.value.message("zh")


def test_unknown_names_list_closest():
    with pytest.raises(UnknownGpu) as err:
        tools.call("fit_training", {"model": "7B", "gpu": "A1000 80GB"})
    assert any("A100" in s for s in err.value.suggestions)
    assert "A1000 80GB" in err.value.message("zh")
    with pytest.raises(UnknownModel) as err:
        tools.call("fit_inference", {"model": "Lama-2-chat", "gpu": "A100"})
    assert err.value.suggestions


def test_inference_min_gpus_and_max_batch_agree():
    out = tools.call("fit_inference", {"model": "Llama-2-70B", "gpu": "A100 80GB", "batch": 8, "context_len": 4096})
    assert out["fits"] is False and out["min_gpus"] >= 2
    again = tools.call(
        "fit_inference",
        {"model": "Llama-2-70B", "gpu": "A100 80GB", "n_gpus": out["min_gpus"], "batch": 8, "context_len": 4096},
    )
    assert again["fits"] and again["max_batch"] >= 8
    over = tools.call(
        "fit_inference",
        {
            "model": "Llama-2-70B",
            "gpu": "A100 80GB",
            "n_gpus": out["min_gpus"],
            "batch": again["max_batch"] + 1,
            "context_len": 4096,
        },
    )
    assert not over["fits"]


def test_kv_cache_follows_the_config():
    # Llama-2-7B: 2 (K and V) × 32 layers × 32 KV heads × 128 dims × 2 bytes = 524,288 B per token
    out = tools.call("fit_inference", {"model": "Llama-2-7B", "gpu": "A100", "context_len": 4096})
    assert out["kv_cache_bytes_per_token"] == 524_288
    assert out["breakdown_gb"]["kv_cache"] == pytest.approx(524_288 * 4096 / 1e9, rel=1e-3)
    fp8 = tools.call(
        "fit_inference", {"model": "Llama-2-7B", "gpu": "H100", "context_len": 4096, "kv_precision": "fp8"}
    )
    assert fp8["kv_cache_bytes_per_token"] == 262_144


def test_generic_model_is_said_in_assumptions():
    out = tools.call("fit_inference", {"model": "a 37B model", "gpu": "A100"})
    first = out["assumptions"][0]
    assert first["key"] == "model_architecture" and "37B" in first["value"]


def test_zero2_holds_the_fp32_gradient_partition_real_runs_oom_on():
    """LLaMA-Factory issue 1221 (2023-10): full fine-tune of LLaMA-7B on 8 × V100 32GB with the README's ZeRO-2
    config OOMs in the optimizer step with 28.28 GiB already allocated (asking 3.14 GiB = one fp32 partition,
    6.7B × 4 B / 8); ZeRO-3 runs. Issue 25, cause 7: the fp32 gradient partition and the reduce/all-gather buckets."""
    args = {"model": "LLaMA-7B", "gpu": "V100 32GB", "n_gpus": 8, "method": "full", "precision": "fp16"}
    z2 = tools.call("fit_training", args | {"zero_stage": 2, "micro_batch": 1, "seq_len": 1024})
    states = sum(z2["breakdown_gb"][k] for k in ("weights", "gradients", "optimizer"))
    assert states == pytest.approx(28.28 * GiB / GB, rel=0.05)
    assert z2["verdict"] != "fits"
    z3 = tools.call("fit_training", args | {"zero_stage": 3, "micro_batch": 1, "seq_len": 1024})
    assert z3["verdict"] == "fits"


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([2, 4, 8, 16, 32]), model=st.sampled_from(["Llama-2-7B", "Qwen2.5-14B", "13B"]))
def test_zero2_gradients_include_the_fp32_partition(n, model):
    """ZeRO-1/2 with a master copy keep 4 bytes per trainable parameter / d of fp32 gradients: never less."""
    out = tools.call("fit_training", {"model": model, "gpu": "H100", "n_gpus": n, "zero_stage": 2})
    assert out["breakdown_gb"]["gradients"] >= out["trainable_params_b"] * 1e9 * 4 / n / GB - 0.01


def test_similar_nvidia_cards_get_the_same_capacity():
    """Issue 25 (cause 10): NVIDIA's '24 GB' cards gave 25.8 GB (RTX 4090, 23.99 GiB as reported) or 24 GB (A10,
    L4, RTX 3090: the vendor figure read as decimal, 7% apart). NVIDIA sizes are binary; what remains between them is
    what drivers report where a source shows it (RTX 3090 23.58 GiB in vLLM issue 10517, RTX 4090 23.99 GiB): < 2.5%."""
    from tools.catalog.lookup import get_gpu
    from tools.memory.capacity import capacity_bytes

    caps = [capacity_bytes(get_gpu(g)) / GB for g in ("RTX 4090", "RTX 3090", "A30")]
    assert max(caps) / min(caps) < 1.025
    # data-center GDDR cards run with ECC on, which holds back 1/16 of the memory: they report less, alike
    ecc = [capacity_bytes(get_gpu(g)) / GB for g in ("A10", "A10G", "L4")]
    assert max(ecc) / min(ecc) < 1.001 and max(ecc) < min(caps) * 0.96
