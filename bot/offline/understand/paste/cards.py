"""Several GPUs in one process, and one of them fills: the user names a card whose memory climbs while the others
stay ("0卡的显存突然飙升，其他卡不动"), or says a layer split filled the cards ("device map fills up GPUs"): the
sign of a model split by layers (transformers' device_map, ChatGLM's load_model_on_gpus), tools/diagnose/split.py."""

from __future__ import annotations

import re

#: one card named whose memory climbs ("0卡的显存突然飙升", "其中一张卡显存一直在涨", "GPU 1 keeps growing")
_CARD_RISES = re.compile(
    r"(?:[0-9]\s*号?\s*(?:卡|gpu)|(?:卡|gpu|cuda)\s*:?\s*[0-9](?![0-9])|第[一二三四五六七八0-9]\s*张(?:显)?卡|(?:其中)?一张(?:显)?卡|"
    r"(?:the )?first gpu|one (?:of the )?gpus?)[^。.\n]{0,16}?"
    r"(?:飙升|暴涨|猛涨|一直(?:在)?(?:涨|增加|上升|往上)|持续(?:上涨|增加|增长)|继续(?:往上)?(?:加|涨)|往上(?:加|涨)|涨到(?:顶|满)|"
    r"keeps? (?:growing|increasing|rising|climbing)|grows?\b|spikes?\b|fills? up)",
    re.IGNORECASE,
)
#: the other cards said to stay as they were (or two cards named by index)
_OTHERS_STAY = re.compile(
    r"(?:其他|其它|其余|另一|另外一?)\s*(?:张|块|个)?\s*(?:显)?卡|(?:the )?other gpus?|the rest of the gpus|(?<![0-9.])0\s*卡[\s\S]{0,80}(?<![0-9.])1\s*卡|"
    r"(?<![0-9.])1\s*卡[\s\S]{0,80}(?<![0-9.])0\s*卡",
    re.IGNORECASE,
)
#: a layer split that fills the cards with weights ("device map fills up GPUs too much")
_SPLIT_FILLS = re.compile(
    r"device.?map[^\n]{0,60}fill(?:s|ed|ing)? up|fill(?:s|ed|ing)? up (?:the |all )?gpus", re.IGNORECASE
)
#: a card by its index: "0卡", "1号卡", "GPU 0", "cuda:1" ("卡8" is a count: "多卡8张")
_CARD_INDEX = re.compile(r"(?<![0-9.])([0-9])\s*号?\s*卡|(?:gpu|cuda)\s*:?\s*([0-9])(?![0-9])", re.IGNORECASE)


def uneven_growth(text: str) -> bool:
    return bool((_CARD_RISES.search(text) and _OTHERS_STAY.search(text)) or _SPLIT_FILLS.search(text))


def cards_indexed(text: str) -> int | None:
    """How many cards the words name by index, when card 0 is one of them ("0卡 … 1卡": 0 is never a count)."""
    indexed = {int(m.group(1) or m.group(2)) for m in _CARD_INDEX.finditer(text)}
    return max(indexed) + 1 if 0 in indexed and len(indexed) > 1 else None
