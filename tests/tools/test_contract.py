"""The contract in DESIGN.md: tool names and the output fields every caller relies on."""

import pytest

import tools
from tools import registry

# DESIGN.md, "The main inputs and outputs": tool -> (input fields, output fields)
CONTRACT = {
    "gpu_specs": (
        {"gpu"},
        {"memory_gb", "bandwidth_gb_s", "bf16_tflops", "fp8_tflops", "interconnect_gb_s", "tdp_w", "sources"},
    ),
    "compare_gpus": ({"gpus"}, {"rows"}),
    "fit_training": (
        {
            "model",
            "gpu",
            "method",
            "n_gpus",
            "precision",
            "optimizer",
            "zero_stage",
            "offload",
            "seq_len",
            "micro_batch",
            "grad_checkpointing",
            "flash_attention",
            "tp",
            "pp",
            "lora_rank",
        },
        {"fits", "per_gpu_gb", "capacity_gb", "usable_gb", "breakdown_gb", "min_gpus", "suggestions", "assumptions"},
    ),
    "fit_inference": (
        {"model", "gpu", "n_gpus", "precision", "kv_precision", "batch", "context_len"},
        {"fits", "per_gpu_gb", "capacity_gb", "usable_gb", "breakdown_gb", "min_gpus", "max_batch", "assumptions"},
    ),
    "training_time": (
        {"model", "gpu", "n_gpus", "tokens", "method", "mfu"},
        {"total_flops", "hours", "days", "gpu_hours", "mfu", "tokens_per_s", "assumptions"},
    ),
    "inference_speed": (
        {"model", "gpu", "n_gpus", "precision", "batch", "context_len"},
        {"decode_tokens_per_s", "total_tokens_per_s", "prefill_tokens_per_s", "bound", "assumptions"},
    ),
    "run_cost": (
        {"gpu", "gpu_hours", "hours", "n_gpus", "price_cny_per_hour"},
        {"total_cny", "low_cny", "high_cny", "price_cny_per_hour", "assumptions"},
    ),
    "rent_vs_buy": (
        {"gpu", "n_gpus", "hours_per_day", "months"},
        {"rent_total_cny", "own_total_cny", "breakeven_months", "cheaper", "assumptions"},
    ),
    "diagnose": (
        {
            "model",
            "gpu",
            "n_gpus",
            "framework",
            "tp",
            "pp",
            "precision",
            "max_model_len",
            "micro_batch",
            "flags",
            "failed_alloc_gb",
            "error_kind",
            "measured_tokens_per_s",
        },
        {"causes", "after_fix", "unread", "assumptions"},
    ),
    "recommend_gpus": (
        {"model", "workload", "method", "tokens", "budget_cny", "deadline_hours", "china_available"},
        {"options", "assumptions"},
    ),
}


#: calculators added after DESIGN.md's nine (issue 10: quantities that need no GPU), locked the same way
ADDED = {
    "model_memory": (
        {"model", "precision", "kv_precision", "context_len", "batch", "method", "n_gpus", "seq_len"},
        {
            "params_b",
            "weights_gb",
            "weights_by_precision_gb",
            "kv_cache_bytes_per_token",
            "kv_cache_gb_per_request",
            "kv_cache_gb",
            "model_states_gb",
            "zero_stages",
            "activations_gb",
            "training_total_gb",
            "assumptions",
        },
    ),
    "power_draw": (
        {"gpu", "n_gpus", "hours_per_day", "pue", "electricity_cny_per_kwh"},
        {"server_kw", "rack_kw", "total_kw", "kwh_per_year", "electricity_cny_per_year", "assumptions"},
    ),
    "precision_speedup": (
        {"model", "gpu", "n_gpus", "tokens", "precision", "baseline"},
        {"baseline", "faster", "speedup", "peak_ratio", "assumptions"},
    ),
    # DESIGN.md's table (issue 26); the per-candidate fields are locked in tests/tools/plan
    "plan_serving": (
        {
            "model",
            "gpus",
            "concurrency",
            "qps",
            "daily_users",
            "requests_per_user",
            "peak_factor",
            "prompt_tokens",
            "output_tokens",
            "ttft_s",
            "tokens_per_s_per_user",
            "precision",
        },
        {"candidates", "pick", "assumptions"},
    ),
    "plan_system": (
        {"job", "model", "budget_cny", "deadline_hours", "china_purchasable", "rack_kw"},
        {"options", "cheapest", "fastest", "best_value", "assumptions"},
    ),
    "plan_cluster": (
        {"gpu", "n_gpus", "rack_kw"},
        {"nodes", "gpus_per_node", "network", "node_kw", "power_kw", "racks", "bom", "total_low_cny", "assumptions"},
    ),
}


def test_the_nine_calculators_are_registered_by_their_contract_names():
    assert set(CONTRACT) <= set(registry.names())
    assert set(registry.names()) == set(CONTRACT) | set(ADDED)
    assert {"call", "names", "AdvisorError", "InvalidInput", "UnknownGpu", "UnknownModel"} <= set(tools.__all__)


def test_contract_fields_exist():
    for name, (inputs, outputs) in {**CONTRACT, **ADDED}.items():
        tool = registry.get(name)
        assert inputs <= set(tool.input_model.model_fields), (name, inputs - set(tool.input_model.model_fields))
        assert outputs <= set(tool.output_model.model_fields), (name, outputs - set(tool.output_model.model_fields))
        assert tool.description, f"{name} needs a docstring: it is the tool's description for the LLM and the API"


def test_recommend_options_carry_the_contract_fields():
    out = tools.call("recommend_gpus", {"model": "Qwen2.5-7B", "workload": "finetune", "tokens": "1B"})
    assert out["options"]
    assert {"gpu", "n_gpus", "fits", "hours", "total_cny"} <= set(out["options"][0])


TRUSTED = {
    "fit_training": [
        {"model": "Llama-2-70B", "gpu": "A100 80GB", "method": "full"},
        {"model": "Qwen2.5-7B", "gpu": "4090", "method": "qlora", "n_gpus": 2},
    ],
    "fit_inference": [
        {"model": "Qwen2.5-72B", "gpu": "H20", "n_gpus": 4, "batch": 8},
        {"model": "Qwen3-8B", "gpu": "4090", "alongside": ["BGE-M3", "7B"]},
    ],
    "training_time": [{"model": "DeepSeek-V3", "gpu": "H800", "n_gpus": 2048, "tokens": "14.8T", "precision": "fp8"}],
    "rent_vs_buy": [{"gpu": "H800", "n_gpus": 8, "hours_per_day": 20, "months": 24, "currency": "USD"}],
    "diagnose": [
        {
            "model": "Llama-3.1-8B",
            "gpu": "3090",
            "framework": "vllm",
            "max_model_len": 29000,
            "error_kind": "kv_too_small",
        },
        {
            "model": "Qwen2.5-7B",
            "gpu": "A100 80GB",
            "n_gpus": 8,
            "zero_stage": 2,
            "error_kind": "oom",
            "failed_alloc_gib": 3.55,
            "allocated_gib": 70.0,
            "reserved_gib": 72.0,
        },
    ],
    "plan_serving": [{"model": "Qwen3-32B", "gpus": ["H20", "4090"], "daily_users": 5000}],
    "plan_system": [{"job": "train", "model": "7B", "tokens": "100B", "deadline_hours": 336}],
    "plan_cluster": [{"gpu": "H800", "n_gpus": 144}, {"gpu": "V100", "n_gpus": 40}, {"gpu": "A800", "n_gpus": 8}],
}


@pytest.mark.parametrize(("name", "args"), [(n, a) for n, rows in TRUSTED.items() for a in rows])
def test_outputs_built_without_revalidation_still_match_their_models(name, args):
    """Hot-path outputs skip pydantic validation (ToolOutput.trusted); the real values must still validate."""
    from tools import registry

    tool = registry.get(name)
    out = tool.fn(tool.input_model.model_validate(args))
    again = tool.output_model.model_validate(out.model_dump(), strict=True)
    assert again.model_dump() == out.model_dump()
