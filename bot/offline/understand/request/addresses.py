"""Web addresses in a question. An address is not prose: its digits (issue numbers, percent-encoded anchors,
asset ids) are no figures of the question, and its words are no cards. One part of it does name something:
the repository or model the address points at — "github.com/baichuan-inc/Baichuan2#…",
"huggingface.co/Qwen/Qwen2.5-72B-Instruct", "modelscope.cn/models/ZhipuAI/glm-4-9b-chat" — which is the model
a user means when they paste a link and ask "why does this OOM?".

    >>> text = "看 https://huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/README.md#%E5%BF%AB 要多少显存"
    >>> [text[s:e] for s, e in addresses(text)]
    ['https://huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/README.md#%E5%BF%AB']
    >>> start, end = addresses(text)[0]
    >>> text[slice(*named_part(text, start, end))]
    'Qwen2.5-72B-Instruct'
"""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"https?://[^\s\"'<>）)，。、]{1,500}", re.IGNORECASE)
#: hosts whose path is <owner>/<repository or model>, and the path words to skip before the owner
_CODE_HOSTS = re.compile(
    r"https?://(?:www\.)?(?:github\.com|gitee\.com|huggingface\.co|hf-mirror\.com|modelscope\.cn|www\.modelscope\.cn)"
    r"/(?:models/)?[\w.-]+/([\w.-]{2,80})",
    re.IGNORECASE,
)


def addresses(text: str) -> list[tuple[int, int]]:
    """(start, end) of every web address in `text`."""
    return [m.span() for m in _ADDRESS.finditer(text)]


def named_part(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) of the repository or model name in the address text[start:end], on a code or model host;
    None elsewhere (a blog, an image, a search page)."""
    m = _CODE_HOSTS.match(text, start, end)
    if not m:
        return None
    s, e = m.span(1)
    while e > s and text[e - 1] == ".":  # "…/Baichuan2." at the end of a sentence
        e -= 1
    return (s, e) if re.search(r"[a-z]", text[s:e], re.IGNORECASE) else None
