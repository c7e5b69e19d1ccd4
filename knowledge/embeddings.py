"""Embedding functions for the dense leg, registered with Chroma so a reopened collection keeps them.

- `HashingEmbedding` (the default): feature hashing of the lexical tokens (jieba words, CJK bigrams,
  latin tokens) plus latin character trigrams and single CJK characters, each feature hashed with
  CRC32 to one of `dim` signed buckets, tf dampened with log1p, L2-normalised. Deterministic, needs no
  download, zh/en aware; it adds fuzzy matching (trigrams) to the lexical leg rather than semantics.
- `OpenAICompatibleEmbedding`: any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, DashScope,
  vLLM, Ollama ...), chosen by configuration.

Chroma's own default function downloads an ONNX model; it is never used here.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from knowledge.config import EmbeddingConfig
from knowledge.errors import IndexUnavailable
from knowledge.vectors import HashingVectors, remote_suffix


@register_embedding_function
class HashingEmbedding(HashingVectors, EmbeddingFunction[Documents]):
    """Signed feature hashing into `dim` dimensions (see the module docstring; the vectors: `knowledge.vectors`)."""

    def __init__(self, dim: int = 1024):
        HashingVectors.__init__(self, dim)

    def __call__(self, input: Documents) -> Embeddings:
        return [self.embed_one(t) for t in input]

    @staticmethod
    def name() -> str:
        return "gpu_advisor_hashing"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim, "version": self.VERSION}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(dim=int(config.get("dim", 1024)))

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]


@register_embedding_function
class OpenAICompatibleEmbedding(EmbeddingFunction[Documents]):
    """`POST {base_url}/embeddings` through the openai SDK, in batches."""

    min_similarity = 0.0
    #: a semantic model: as much say in rank fusion as the lexical leg
    fusion_weight = 1.0

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        api_key_env_var: str = "EMBEDDINGS_API_KEY",
        batch_size: int = 64,
        http_client: Any = None,
    ):
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self.api_key_env_var = api_key_env_var
        self.batch_size = batch_size
        # local servers (Ollama, vLLM) take any key; the SDK refuses none
        self._client = OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=30.0, max_retries=2, http_client=http_client
        )

    def __call__(self, input: Documents) -> Embeddings:
        import openai

        out: list[np.ndarray] = []
        for start in range(0, len(input), self.batch_size):
            batch = list(input[start : start + self.batch_size])
            try:
                resp = self._client.embeddings.create(model=self.model, input=batch)
            except openai.OpenAIError as err:
                where = self.base_url or "the OpenAI API"
                raise IndexUnavailable(
                    f"The embeddings endpoint {where} (model {self.model}) failed: {err}. "
                    "Check EMBEDDINGS_BASE_URL / EMBEDDINGS_MODEL / EMBEDDINGS_API_KEY, or unset them to use the built-in embedding.",
                    f"向量接口 {where}（模型 {self.model}）调用失败：{err}。"
                    "请检查 EMBEDDINGS_BASE_URL / EMBEDDINGS_MODEL / EMBEDDINGS_API_KEY，或取消设置以使用内置向量。",
                    field="embeddings",
                ) from None
            rows = sorted(resp.data, key=lambda d: d.index)
            out += [np.asarray(r.embedding, dtype=np.float32) for r in rows]
        return out

    @staticmethod
    def name() -> str:
        return "gpu_advisor_openai_compatible"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "api_key_env_var": self.api_key_env_var}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OpenAICompatibleEmbedding:
        # Chroma calls this when a collection is reopened without a function; the key is never stored
        env_var = config.get("api_key_env_var") or "EMBEDDINGS_API_KEY"
        return OpenAICompatibleEmbedding(
            model=config["model"],
            base_url=config.get("base_url"),
            api_key=os.environ.get(env_var),
            api_key_env_var=env_var,
        )

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]

    @property
    def collection_suffix(self) -> str:
        return remote_suffix(self.model, self.base_url)


def make_embedding(config: EmbeddingConfig, *, http_client: Any = None) -> EmbeddingFunction:
    """The embedding a configuration asks for: the endpoint when a model is named, else hashing."""
    if config.remote:
        key = config.api_key.get_secret_value() if config.api_key else None
        return OpenAICompatibleEmbedding(config.model or "", config.base_url, key, http_client=http_client)
    return HashingEmbedding()
