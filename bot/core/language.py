"""Which language to answer in: one rule for the parser, the advisor, the agent, the API and the CLI.

Han characters decide over Latin technical terms: in "A100 跑 Llama-3-70B 的 LoRA 够吗" or "vLLM
max-model-len 32k 最大并发多少" the Latin words are product names and jargon, not the language the
person writes in, so they do not count. Full-width punctuation ("？", "，", "。") is typed with a Chinese
input method: beside Han characters it makes the text Chinese, alone it does not (in public threads people
who write English with a Chinese input method want English: "can I train and inference？"). Otherwise the
text is Chinese when its Han characters are at least as many as its ordinary English words ("How long to train Llama-3-70B on 8 H800, 预算 30万?" is
English: five English words against two Han characters; the 万 of "30万" is part of a number).
"""

from __future__ import annotations

import re

from bot.grounding.numerals import MAGNITUDES

_NUMBER_UNIT = re.compile(rf"(?<=[\d.])\s?(?:{'|'.join(MAGNITUDES)})")
#: Han characters (CJK unified ideographs, extension A and the compatibility block), as a character class body
HAN_CHARS = "\u3400-\u9fff\uf900-\ufaff"
_HAN = re.compile(f"[{HAN_CHARS}]")
#: full-width punctuation a Chinese input method produces (read on the raw text, before any NFKC folding)
_ZH_PUNCT = re.compile(r"[\u3001\u3002\u300c-\u300f\u3010\u3011\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f\u201c\u201d]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:['’][a-z]+)?")
#: Latin words people keep in English inside a Chinese sentence (jargon, product and model names)
JARGON = frozenset(
    """
gpu gpus cpu cpus npu vram hbm memory ram card cards lora qlora full fine tune tuning finetune sft rlhf dpo ppo
pretrain pretraining train training inference infer serving serve deploy deployment batch size seq len length
context ctx max min model models token tokens tflops fp bf int awq gptq gguf quant quantized quantization zero
stage offload deepspeed megatron fsdp vllm sglang tensorrt trt llm llms moe kv cache server servers node nodes
cluster rent renting buy budget price cost nvlink infiniband ib roce pcie sxm nvl nvidia amd intel huawei ascend
cuda cann rocm llama qwen deepseek mistral mixtral chatglm glm yi baichuan gemma phi internlm instruct chat base
api benchmark throughput latency ttft tpot tps qps checkpointing checkpoint gradient gradients flash attention
speedup rack kw kwh idc tco pue h100 a100 mi300x gb tb ok hi rtx tesla instinct gaudi mlu docker k8s kubernetes
ollama transformers pytorch torch jax optimizer adam adamw mfu hfu flops dense sparse bench demo poc
""".split()
)


#: a line someone pasted rather than wrote: a log or trace line, a command, a config entry, a fenced block's body
_PASTED = re.compile(
    r"^\s*(?:File \"|Traceback|\[?(?:INFO|WARNING|ERROR|DEBUG)\b|\[rank\d*\]|\w*(?:Error|Exception)\b|torch\.|"
    r"(?:python3?|torchrun|deepspeed|accelerate|vllm|llamafactory-cli|CUDA_VISIBLE_DEVICES|export)\b|--?[a-z][\w-]*\b|"
    r"[\w.]+\s*[:=]\s*\S+\s*$|\|)"
)
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)


#: code inside a line: indentation, `backticks`, snake_case names, calls, a progress bar
_CODE = re.compile(r"^\s{2,}\S|`[^`\n]+`|\b[a-z]+_[a-z_]+\b|\w\(|%\|")


def _pasted(line: str) -> bool:
    """A line someone pasted: it looks like a log, a command, a config or code and carries no Han character (a
    line in Chinese is the person's own, even when it starts with "vllm")."""
    return not _HAN.search(line) and bool(_PASTED.match(line) or _CODE.search(line))


def prose(text: str) -> str:
    """The lines the person wrote: pasted logs, commands, configs and fenced blocks left out (when anything is
    left), so a long English trace does not decide the language of a Chinese question."""
    kept = [line for line in _FENCE.sub("\n", text).splitlines() if line.strip() and not _pasted(line)]
    return "\n".join(kept) if kept else text


def detect_language(text: str) -> str:
    """ "zh" or "en" for the answer, by the rule above, on what the person wrote (`prose`)."""
    text = prose(text or "")
    han = len(_HAN.findall(_NUMBER_UNIT.sub(" ", text)))
    if not han:  # full-width marks alone are an input method's, not a language ("can I train and inference？")
        return "en"
    if _ZH_PUNCT.search(text):
        return "zh"
    words = [w for w in _WORD.findall(text) if not (w.lower() in JARGON or w.isupper() or any(c.isdigit() for c in w))]
    return "zh" if han >= len(words) else "en"
