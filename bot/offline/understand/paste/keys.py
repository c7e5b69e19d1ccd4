"""What each flag or config key means to `diagnose`: the input field it sets and how its value reads.

One table for launch-command flags (vLLM, SGLang, torchrun, deepspeed, accelerate, Hugging Face / LLaMA-Factory
training scripts) and YAML/JSON keys, written without dashes (`max_model_len` for `--max-model-len`). A key not
here is kept as a flag, so the tool can say it was read but not understood.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def _int(v: Any) -> int | None:
    try:
        return int(float(str(v).replace("_", "")))
    except ValueError:
        return None


def _float(v: Any) -> float | None:
    try:
        return float(str(v))
    except ValueError:
        return None


def _bool(v: Any) -> bool:
    return str(v).strip().lower() not in ("false", "0", "no", "none", "off", "disable", "disabled")


def _dtype(v: Any) -> str | None:
    v = str(v).lower().removeprefix("torch.")
    return {"half": "fp16", "float16": "fp16", "fp16": "fp16", "bfloat16": "bf16", "bf16": "bf16",
            "float32": "fp32", "float": "fp32", "fp32": "fp32", "fp8": "fp8"}.get(v)  # fmt: skip


def _quant(v: Any) -> str | None:
    v = str(v).lower()
    if v in ("awq", "gptq", "awq_marlin", "gptq_marlin", "marlin", "int4", "w4a16"):
        return "int4"
    if v in ("bitsandbytes", "bnb", "nf4"):
        return "nf4"
    return "fp8" if v.startswith("fp8") else "int8" if v in ("int8", "w8a8", "smoothquant") else None


def _stage_of(v: Any) -> int | None:
    """A DeepSpeed config file name ('ds_z3_config.json', 'zero2.json') says its stage."""
    if m := re.search(r"(?:z|zero|stage)[_-]?([0-3])", str(v).lower()):
        return int(m.group(1))
    return None


def _devices(v: Any) -> int | None:
    items = [x for x in re.split(r"[,\s]+", str(v)) if x.strip() != ""]
    return len(items) or None


#: key -> (diagnose field, reader)
KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model": ("model", str), "model_path": ("model", str), "model_name_or_path": ("model", str),
    "tensor_parallel_size": ("tp", _int), "tp": ("tp", _int), "tp_size": ("tp", _int),
    "pipeline_parallel_size": ("pp", _int), "pp": ("pp", _int), "pp_size": ("pp", _int),
    "gpu_memory_utilization": ("gpu_memory_utilization", _float),
    "gpu_memory_utilisation": ("gpu_memory_utilization", _float),
    "vllm_gpu_util": ("gpu_memory_utilization", _float), "mem_fraction_static": ("gpu_memory_utilization", _float),
    "max_model_len": ("max_model_len", _int), "context_length": ("max_model_len", _int),
    "vllm_maxlen": ("max_model_len", _int),
    "max_num_seqs": ("max_num_seqs", _int), "max_running_requests": ("max_num_seqs", _int),
    "max_num_batched_tokens": ("max_num_batched_tokens", _int),
    "enforce_eager": ("enforce_eager", _bool), "vllm_enforce_eager": ("enforce_eager", _bool),
    # text-generation-webui: the layers it puts on the GPU (the rest run on the CPU), and GPTQ's weight width
    "pre_layer": ("layers_on_gpu", _int), "wbits": ("precision", lambda v: {"4": "int4", "8": "int8"}.get(str(v))),
    "dtype": ("precision", _dtype), "torch_dtype": ("precision", _dtype), "infer_dtype": ("precision", _dtype),
    "quantization": ("precision", _quant), "kv_cache_dtype": ("kv_precision", _dtype),
    "nproc_per_node": ("n_gpus", _int), "num_gpus": ("n_gpus", _int), "num_processes": ("n_gpus", _int),
    "cuda_visible_devices": ("n_gpus", _devices),
    # the same list on Ascend (NPU_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES) and on AMD (HIP_, ROCR_)
    "npu_visible_devices": ("n_gpus", _devices), "ascend_rt_visible_devices": ("n_gpus", _devices),
    "ascend_visible_devices": ("n_gpus", _devices), "hip_visible_devices": ("n_gpus", _devices),
    "rocr_visible_devices": ("n_gpus", _devices),
    "per_device_train_batch_size": ("micro_batch", _int), "train_micro_batch_size_per_gpu": ("micro_batch", _int),
    "micro_batch_size": ("micro_batch", _int),
    "gradient_accumulation_steps": ("grad_accum", _int),
    "cutoff_len": ("seq_len", _int), "max_seq_length": ("seq_len", _int), "model_max_length": ("seq_len", _int),
    "max_length": ("seq_len", _int), "seq_length": ("seq_len", _int), "sequence_len": ("seq_len", _int),
    "gradient_checkpointing": ("grad_checkpointing", _bool),
    "disable_gradient_checkpointing": ("grad_checkpointing", lambda v: not _bool(v)),
    "bf16": ("precision", lambda v: "bf16" if _bool(v) else None),
    "fp16": ("precision", lambda v: "fp16" if _bool(v) else None),
    "pure_bf16": ("precision", lambda v: "bf16" if _bool(v) else None),
    "deepspeed": ("zero_stage", _stage_of),
    "finetuning_type": ("method", lambda v: str(v).lower() if str(v).lower() in ("full", "lora", "freeze") else None),
    "nccl_p2p_disable": ("p2p", lambda v: not _bool(v)),
}  # fmt: skip


def norm(key: str) -> str:
    return key.strip().lstrip("-").replace("-", "_").lower()


def apply(key: str, val: Any, setup: dict[str, Any], flags: dict[str, str]) -> None:
    """Set the field the key means (the first value read wins), or keep it as a flag."""
    k = norm(key)
    if k in ("quantization_bit", "load_in_4bit") and _bool(val) and str(val) not in ("8",):
        setup.setdefault("method_quant", "qlora" if k == "quantization_bit" else "nf4")
        flags.setdefault(k, str(val))
        return
    if k in KEYS:
        field, reader = KEYS[k]
        got = reader(val)
        if got is not None:
            setup.setdefault(field, got)
        return
    flags.setdefault(k, str(val))
