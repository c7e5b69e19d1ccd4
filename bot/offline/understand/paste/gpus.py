"""What a paste says of the GPUs beside its errors: memory the asker calls 内存 that is the GPU's, the CUDA
runtime's own out-of-memory error, a base loaded in 8 or 4 bits, and how many GPUs the launch or the words name."""

from __future__ import annotations

import re
from typing import Any


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


#: the CUDA runtime's own out-of-memory error (PyTorch's allocator says "CUDA out of memory. Tried to allocate")
_RUNTIME_OOM = _rx(r"cuda error:\s*out of memory|cudaErrorMemoryAllocation")
_GGML = _rx(r"ggml|llama\.cpp|llama_|ollama|gguf")
#: the GPU's memory called 内存 ("CUDA内存不足", "GPU的内存情况", "显卡内存", "卡的内存"): the asker's 内存 is then 显存
_GPU_NEICUN = _rx(r"(?:cuda|gpu|npu|显卡)\s*(?:的|上的?)?\s*内存|卡(?:的|上的?)内存|每张卡[^，,。.\n]{0,12}内存")
#: 内存 that stays host RAM whatever else the text calls it ("主机内存", "服务器内存", "CPU 内存")
_NEICUN = re.compile(r"(?<!主机)(?<!系统)(?<!服务器)(?<!物理)(?<!电脑)(?<!机器)(?<!cpu)(?<!CPU)(?<!cpu )(?<!CPU )内存")


def gpu_words(text: str) -> str:
    """The text with 内存 read as 显存 where the asker calls the GPU's memory 内存 (nanodet: "出现了CUDA内存不足"):
    a GPU out of memory then, not the host's."""
    return _NEICUN.sub("显存", text) if _GPU_NEICUN.search(text) else text


#: the model loaded in 8 or 4 bits for training ("模型开启了8bit", "load_in_8bit=True", "loaded in 4-bit")
_BASE_BITS = _rx(
    r"(?:开启|开了|用了|使用|启用|打开|改用|加载|load(?:ed|ing)?(?: it| the model)? in|with)\s*了?\s*([48])\s*-?\s*(?:bit|位)|"
    r"load_in_([48])bit\s*[=:]\s*true"
)
#: how many GPUs ran, where a paste or its words say it: "CUDA_VISIBLE_DEVICES=1,2,3", "when using 4 or more GPUs",
#: "用了 4 张卡"
_VISIBLE = _rx(r"CUDA_VISIBLE_DEVICES\s*=\s*['\"]?(\d+(?:\s*,\s*\d+)+)")
_USING = _rx(r"(?:using|with|on|across|用了?|使用了?)\s*(\d{1,2})\s*(?:or more\s+)?(?:gpus|cards|npus|张卡|块卡|卡)")


def gpu_facts(text: str, ev: dict[str, Any]) -> None:
    """The runtime's own OOM, the base's bits and the GPU count, into the evidence `ev`."""
    # the runtime's refusal, not the caching allocator's (ggml prints it for every OOM)
    if _RUNTIME_OOM.search(text) and "failed_alloc_gib" not in ev and not _GGML.search(text):
        ev["cuda_runtime_oom"] = True
    if m := _BASE_BITS.search(text):  # the base weights loaded in 8 or 4 bits (bitsandbytes): said, or set
        ev["base_bits"] = int(next(g for g in m.groups() if g))
    if m := _VISIBLE.search(text):  # the devices the launch makes visible ran it
        ev.setdefault("n_gpus", len(m.group(1).split(",")))
    elif (m := _USING.search(text)) and int(m.group(1)) > 1:  # said in words: below what the question's reading says
        ev["gpus_said"] = int(m.group(1))
