"""Where the knowledge index lives and how it embeds text.

`KnowledgeConfig` is what the code in `knowledge/` takes: an explicit, frozen value. The environment is
read only at the edges (CLI, bot start-up) through `KnowledgeSettings().to_config()`:

    GPU_ADVISOR_DATA_DIR   folder for the embedded index (default ~/.local/share/gpu-advisor)
    CHROMA_HOST, CHROMA_PORT   use a Chroma server instead of the embedded store (either one switches it on)
    EMBEDDINGS_MODEL, EMBEDDINGS_BASE_URL, EMBEDDINGS_API_KEY
                           an OpenAI-compatible embeddings endpoint instead of the built-in hashing embedding
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The notes shipped with the package.
SHIPPED_DOCS = Path(__file__).parent / "docs"
DEFAULT_DATA_DIR = Path("~/.local/share/gpu-advisor")


class EmbeddingConfig(BaseModel):
    """An OpenAI-compatible embeddings endpoint; with no `model` the built-in hashing embedding is used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None

    @property
    def remote(self) -> bool:
        return bool(self.model)


class KnowledgeConfig(BaseModel):
    """Everything the index needs to open: a data folder, optionally a Chroma server, the embedding."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path
    chroma_host: str | None = None
    chroma_port: int | None = None
    embeddings: EmbeddingConfig = EmbeddingConfig()
    docs_dir: Path = SHIPPED_DOCS
    #: seconds to wait for another process's write lock on the embedded index before giving up
    lock_timeout_s: float = 10.0

    @property
    def server(self) -> bool:
        return bool(self.chroma_host or self.chroma_port)

    @property
    def host(self) -> str:
        return self.chroma_host or "localhost"

    @property
    def port(self) -> int:
        return self.chroma_port or 8000

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def manifest_path(self) -> Path:
        return self.data_dir / "kb-manifest.json"

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "chroma.lock"

    @property
    def location(self) -> str:
        return f"http://{self.host}:{self.port}" if self.server else str(self.chroma_path)


class KnowledgeSettings(BaseSettings):
    """The environment variables, read at the edge and turned into a `KnowledgeConfig`."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    gpu_advisor_data_dir: Path = Field(
        DEFAULT_DATA_DIR, description="Data folder: the SQLite store and the embedded Chroma index."
    )
    chroma_host: str | None = Field(
        None,
        description="Host of a Chroma server; with it (or the port) set, the index lives there instead of the embedded store (needed for several workers).",
    )
    chroma_port: int | None = Field(None, description="Port of that Chroma server (8000 when only the host is set).")
    embeddings_base_url: str | None = Field(None, description="Base URL of an OpenAI-compatible embeddings endpoint.")
    embeddings_model: str | None = Field(
        None, description="The embedding model at that endpoint; unset, the built-in hashing embedding is used."
    )
    embeddings_api_key: SecretStr | None = Field(None, description="The embeddings endpoint's key.")

    def to_config(self) -> KnowledgeConfig:
        return KnowledgeConfig(
            data_dir=self.gpu_advisor_data_dir.expanduser(),
            chroma_host=self.chroma_host or None,
            chroma_port=self.chroma_port,
            embeddings=EmbeddingConfig(
                model=self.embeddings_model or None,
                base_url=self.embeddings_base_url or None,
                api_key=self.embeddings_api_key,
            ),
        )
