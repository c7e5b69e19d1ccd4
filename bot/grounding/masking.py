"""What looks like a figure but is not one, blanked before numbers are read: code, links, citation markers,
heading and list numbers, product and GPU names with digits ("H800", "CUDA 12.4", "NVIDIA H20 96GB").
A masked GPU name keeps its own filler, so "8×H800" is still read as a count of GPUs."""

from __future__ import annotations

import functools
import re

_NAME, _GPU = "\x01", "\x02"  # fillers: a masked name, a masked GPU name (for "8×H800" counts)
_GPU_TOKEN_RE = re.compile(r"(?:[AHLBVTPKZ]|GB|MI|RTX|GTX|MLU|BR|DCU)[ -]?[0-9]{1,4}[A-Za-z0-9-]*")
_PRODUCTS_GPU = r"RTX|GTX|Ascend|昇腾|Tesla|Radeon|Instinct|Gaudi|Atlas|思元|MLU|海光|DCU|壁仞|摩尔线程|MTT"
_PRODUCTS = (
    r"CUDA|cuDNN|PyTorch|Torch|TensorFlow|JAX|Python|vLLM|SGLang|NCCL|TensorRT(?:-LLM)?|Megatron(?:-LM)?"
    r"|DeepSpeed|Transformers|Ubuntu|CentOS|Linux|Windows|Kubernetes|Docker|Triton|FlashAttention"
    r"|Flash Attention|PCIe(?:[ \t]?Gen)?|Gen|NVLink|NVSwitch|InfiniBand|HBM|GDDR|DDR|ZeRO(?:[ \t]stage)?"
    r"|Llama|LLaMA|Qwen|DeepSeek|GPT|Mistral|Mixtral|Gemma|Yi|GLM|ChatGLM|Baichuan|InternLM|Phi|Falcon"
    r"|Claude|ERNIE|文心|Kimi|MiniMax|Grok|Hopper|Ampere|Blackwell|CANN|ROCm|MindSpore|MindIE|NeMo|oneAPI"
    r"|HCCL|PEFT|Accelerate|bitsandbytes|xFormers|Apex|Horovod|Ollama|TGI|Ray|Driver|driver|驱动|version|版本"
)
_VERSION = r"[ \t]?[vV]?[0-9]+(?:\.[0-9]+)*[A-Za-z]*(?:[ \t](?:Ti|SUPER|Super|Pro|Max))?"


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group())


def _blank_group(m: re.Match) -> str:
    s, e = m.span(1)
    o = m.start()
    g = m.group()
    return g[: s - o] + " " * (e - s) + g[e - o :]


def _name(m: re.Match) -> str:
    tok = m.group()
    if not re.search(r"[0-9]", tok) or re.fullmatch(r"[xX][0-9]+", tok):
        return tok
    return (_GPU if _GPU_TOKEN_RE.fullmatch(tok) else _NAME) * len(tok)


def _if_word_start(fill: str):
    """A fill for patterns that cannot start with a look-behind (kept fast): only at a word start."""

    def sub(m: re.Match) -> str:
        before = m.string[m.start() - 1 : m.start()]
        return m.group() if before and re.match(r"[A-Za-z0-9_]", before) else fill * len(m.group())

    return sub


def _gpu_memory_suffix(m: re.Match) -> str:
    before = m.string[max(0, m.start() - 4) : m.start()]
    if before and (before[-1] in (_NAME, _GPU) or before.endswith(("NVL", "PCIe", "SXM"))):
        return m.group()[0] + _GPU * (len(m.group()) - 1)
    return m.group()


# Every pattern starts with a literal or a character class, never a look-behind: the regex engine
# then skips ahead to candidate characters instead of trying each position (3x faster on long notes).
_MASKS: list[tuple[re.Pattern, object]] = [
    # code, links and citation markers
    (
        re.compile(
            r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]+`|https?://\S+|www\.\S+|\]\([^)\n]*\)"
            r"|\[\^?[0-9]+\]|【[0-9]+】|\[[^\[\]\n]*[:#][^\[\]\n]*\]",
            re.S,
        ),
        _blank,
    ),
    (re.compile(r"^[ \t]*#{1,6}[ \t]+([0-9]+(?:\.[0-9]+)*\.?)", re.M), _blank_group),
    (
        re.compile(r"^[ \t>]*(?:[-*+][ \t]+)?([0-9]{1,3}[.)、．]|[(（][0-9]{1,3}[)）])(?=[ \t]|[^\x00-\x7f])", re.M),
        _blank_group,
    ),
    (
        re.compile(
            r"9(?<![0-9A-Za-z.]9)10[ABC][0-9]?(?![0-9A-Za-z.])|[345](?<![0-9A-Za-z.][345])0[6-9]0(?:D|Ti)?"
            r"(?![0-9A-Za-z.])(?![ \t]*(?:元|块|万|千|%|GB|G\b|小时|h\b|tokens?|张|台|W\b|瓦))"
        ),
        lambda m: _GPU * len(m.group()),
    ),
    (
        re.compile(
            r"[A-Za-z](?<![A-Za-z0-9_\x01\x02][A-Za-z])(?=[A-Za-z0-9_.+-]*[0-9])[A-Za-z0-9_]*"
            r"(?:[.\-+][A-Za-z0-9_]+)*"
        ),
        _name,
    ),
    (re.compile(rf"(?:{_PRODUCTS_GPU})[ \t]?-?{_VERSION}"), _if_word_start(_GPU)),
    (re.compile(rf"(?:{_PRODUCTS}){_VERSION}"), _if_word_start(_NAME)),
    # the memory suffix of a GPU's catalog name: "A100 SXM4 80GB", "H20 96GB", "H100 NVL 94GB"
    (re.compile(r"[ \t][0-9]{2,3}GB(?![A-Za-z0-9/])"), _gpu_memory_suffix),
]


@functools.cache
def _catalog_names() -> re.Pattern | None:
    """GPU catalog names that carry a figure of their own ("NVIDIA H20 96GB", "NVIDIA B200 (HGX, 180GB)")."""
    from tools.catalog.lookup import gpus  # bot may use tools; loaded on first use, not at import

    names = sorted({g.name for g in gpus() if re.search(r"[0-9]", g.name)}, key=len, reverse=True)
    return re.compile("|".join(re.escape(n) for n in names)) if names else None


def mask(text: str) -> str:
    """`text` with every non-figure blanked, same length (positions map back to `text`)."""
    names = _catalog_names()
    if names is not None and ("NVIDIA" in text or "AMD" in text or "Huawei" in text):
        text = names.sub(lambda m: _GPU * len(m.group()), text)
    for pattern, fill in _MASKS:
        text = pattern.sub(fill, text)  # type: ignore[arg-type]
    return text
