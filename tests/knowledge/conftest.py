"""A small synthetic corpus (zh and en notes) and a config whose index lives in tmp_path."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from knowledge.config import KnowledgeConfig

NOTES = {
    "h20.md": """---
id: h20
title: H20 概览
lang: zh
topics: [gpu, china]
sources:
  - {title: H20 资料, url: "https://example.com/h20"}
  - {title: 第二来源, url: "https://example.com/h20-b"}
as_of: 2025-06-01
---
# H20 概览

## 显存与带宽
H20 配备大容量 HBM3 显存，带宽高。它面向中国市场，推理吞吐不错。

## 训练算力
H20 的训练算力低于 H100，大规模预训练不划算。
""",
    "h100-nvl.md": """---
id: h100-nvl
title: H100 NVL memory
lang: en
topics: [gpu]
sources:
  - {title: H100 product page, url: "https://example.com/h100"}
---
## Memory
The H100 NVL carries its own HBM3 stack per GPU; the pair figure counts two boards. Do not confuse it with the H200.

## Interconnect
NVLink bridges join the pair of boards.
""",
    "rtx-4090d.md": """---
id: rtx-4090d
title: RTX 4090D 消费级显卡
lang: zh
topics: [gpu, consumer]
sources:
  - {title: 4090D 资料, url: "https://example.com/4090d"}
---
## 定位
RTX 4090D 是面向中国大陆销售的消费级显卡，适合小模型的 LoRA 微调和本地推理。

## 限制
没有 NVLink，多卡之间只能走 PCIe。
""",
    "ascend.md": """---
id: ascend-910b
title: 昇腾 910B 与生态
lang: zh
topics: [domestic]
sources:
  - {title: 昇腾资料, url: "https://example.com/ascend"}
---
## 生态适配
昇腾 910B 需要 CANN 和 MindSpore 或 torch_npu，迁移 CUDA 代码要做适配工作。
""",
    "rent.md": """---
id: rent-vs-buy
title: 租赁还是购买
lang: zh
topics: [cost]
sources:
  - {title: 价格资料, url: "https://example.com/rent"}
---
## 租赁
短期项目按卡时租赁更灵活，不用承担机房、电费和折旧。

## 购买
长期满载使用时，自购整机的总成本可能更低。
""",
    "a100.md": """---
id: a100-guide
title: A100 buying guide
lang: en
topics: [gpu, cost]
sources:
  - {title: A100 page, url: "https://example.com/a100"}
---
## Variants
The A100 80GB and the A100 40GB differ in memory; the 80GB part also has more bandwidth.

## Rental
Cloud rental of the A100 is widely available by the hour.
""",
    "kv.md": """---
id: kv-cache
title: KV cache sizing
lang: en
topics: [memory, inference]
sources:
  - {title: KV notes, url: "https://example.com/kv"}
---
## Why it grows
The key-value cache grows with context length, batch size and the number of layers.
""",
}


def write_corpus(folder: Path, notes: dict[str, str] = NOTES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def config(tmp_path: Path, corpus: Path) -> KnowledgeConfig:
    return KnowledgeConfig(data_dir=tmp_path / "data", docs_dir=corpus, lock_timeout_s=0)


@pytest.fixture(autouse=True)
def _fresh_chroma_systems():
    """Chroma caches one system per path for the whole process; stop the ones this test started between tests
    (not the session's shared advisor's, which later suites still use)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    before = set(SharedSystemClient._identifier_to_system)
    yield
    for key in set(SharedSystemClient._identifier_to_system) - before:
        system = SharedSystemClient._identifier_to_system.pop(key)
        SharedSystemClient._identifier_to_refcount.pop(key, None)
        with contextlib.suppress(Exception):
            system.stop()
