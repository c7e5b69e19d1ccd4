"""Configs in a paste: DeepSpeed JSON (stage, offload, micro-batch, accumulation, buckets, bf16/fp16) with `json`,
LLaMA-Factory and other trainers' YAML with `yaml.safe_load`, and Hugging Face `from_pretrained(...)` calls with
`ast` (device_map, load_in_4bit, torch_dtype). A block that looks like a config but does not parse is reported."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import yaml

from bot.offline.understand.paste.keys import apply

#: the largest config block parsed (a real DeepSpeed or LLaMA-Factory config is a few KB)
MAX_CONFIG_CHARS = 50_000
_JSON_BLOCK = re.compile(r"\{[^{}]*(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}[^{}]*)*\}", re.S)
_DS_KEY = re.compile(r'"(?:zero_optimization|train_micro_batch_size_per_gpu|offload_optimizer)"')
#: keyed lines whose keys are this share distinct or fewer are a log's prefixes, not a config's keys
LOG_PREFIX_SHARE = 0.6
_YAML_LINE = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*:\s*\S", re.M)
_FROM_PRETRAINED = re.compile(r"\w+\.from_pretrained\((?:[^()]|\([^()]*\))*\)", re.S)


def read_json(text: str, setup: dict[str, Any], flags: dict[str, str], notes: list[str]) -> bool:
    """A DeepSpeed JSON config: True when one was read."""
    found = False
    for block in _JSON_BLOCK.findall(text):
        if len(block) > MAX_CONFIG_CHARS or ("zero_optimization" not in block and "train_micro_batch" not in block):
            continue
        try:
            cfg = json.loads(block)
        except json.JSONDecodeError:
            notes.append("bad_json")
            continue
        found = True
        _deepspeed(cfg, setup, flags)
    if not found and "bad_json" not in notes and _DS_KEY.search(text):
        notes.append("bad_json")  # a DeepSpeed config cut off before its closing brace
    return found


def _deepspeed(cfg: dict[str, Any], setup: dict[str, Any], flags: dict[str, str]) -> None:
    setup.setdefault("framework", "deepspeed")
    zero = cfg.get("zero_optimization") or {}
    if isinstance(zero.get("stage"), int):
        setup.setdefault("zero_stage", zero["stage"])
    params = (zero.get("offload_param") or {}).get("device", "none")
    optim = (zero.get("offload_optimizer") or {}).get("device", "none")
    if params not in ("none", None) and optim not in ("none", None):
        setup.setdefault("offload", "optimizer+params")
    elif optim not in ("none", None):
        setup.setdefault("offload", "optimizer")
    for key, val in zero.items():
        if key not in ("stage", "offload_param", "offload_optimizer") and not isinstance(val, dict):
            flags.setdefault(key, str(val))
    for key in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        if isinstance(cfg.get(key), int):
            apply(key, cfg[key], setup, flags)
    for prec in ("bf16", "fp16"):
        if isinstance(cfg.get(prec), dict) and cfg[prec].get("enabled") is True:
            setup.setdefault("precision", prec)


def read_yaml(text: str, setup: dict[str, Any], flags: dict[str, str], notes: list[str]) -> bool:
    """A trainer's YAML (LLaMA-Factory style): True when one was read."""
    lines = [ln for ln in text.splitlines() if _YAML_LINE.match(ln) or ln.strip().startswith("#") or not ln.strip()]
    keyed = [ln for ln in lines if _YAML_LINE.match(ln)]
    if len(keyed) < 3:
        return False
    keys = [ln.split(":", 1)[0].strip() for ln in keyed]
    if len(set(keys)) < LOG_PREFIX_SHARE * len(keys):  # a log repeats its source prefix ("llm_load_tensors: …")
        return False  # on line after line; a config names each key once
    block = "\n".join(lines)[:MAX_CONFIG_CHARS]
    try:
        cfg = yaml.safe_load(block)
    except yaml.YAMLError:
        notes.append("bad_yaml")
        return False
    if not isinstance(cfg, dict):
        return False
    for key, val in cfg.items():
        if isinstance(val, dict | list):
            continue
        apply(str(key), val, setup, flags)
    if "stage" in cfg or "finetuning_type" in cfg or "cutoff_len" in cfg:
        setup.setdefault("framework", "llamafactory")
    return True


def read_from_pretrained(text: str, setup: dict[str, Any], flags: dict[str, str]) -> bool:
    found = False
    for call in _FROM_PRETRAINED.findall(text):
        try:
            node = ast.parse(call.strip(), mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(node, ast.Call):
            continue
        found = True
        setup.setdefault("framework", "transformers")
        if node.args and isinstance(node.args[0], ast.Constant):
            apply("model", node.args[0].value, setup, flags)
        for kw in node.keywords:
            try:
                val = ast.literal_eval(kw.value)
            except ValueError:
                val = ast.unparse(kw.value)
            apply(kw.arg or "", val, setup, flags)
    return found
