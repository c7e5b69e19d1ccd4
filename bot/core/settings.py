"""Settings for the advisor, read from the environment (and a `.env` file) with pydantic-settings.

GPU_ADVISOR_DATA_DIR        data folder: SQLite store, embedded Chroma index (~/.local/share/gpu-advisor)
DATABASE_URL                conversations store; default sqlite:///<data dir>/gpu-advisor.sqlite3,
                            or postgresql://user@host:5432/db
GPU_ADVISOR_LLM_BASE_URL    an OpenAI-compatible chat endpoint (OpenAI, DeepSeek, DashScope, vLLM, Ollama);
                            unset = offline mode (the default)
GPU_ADVISOR_LLM_MODEL       model name at that endpoint (e.g. gpt-4o-mini, deepseek-chat, qwen-plus)
GPU_ADVISOR_LLM_API_KEY     its key (OPENAI_API_KEY is used when this is unset)
GPU_ADVISOR_LLM_TIMEOUT_S   cap of one model request (default 30)
GPU_ADVISOR_LLM_DEADLINE_S  one deadline per answer across all its model requests and tool rounds (default 60)
GPU_ADVISOR_LLM_MAX_TOKENS  the most tokens one model reply may have (sent as max_tokens; default 1024)
GPU_ADVISOR_LLM_CONTEXT_TOKENS  the model's context length when the server does not say (default 8192)
GPU_ADVISOR_LLM_MAX_STEPS   caps model+tool rounds (default 12); GPU_ADVISOR_LLM_MAX_RETRIES retries a request
                            that failed to connect or got a 429/5xx (default 1), never one that timed out
CHROMA_HOST, CHROMA_PORT    use a Chroma server (needed for several API workers)
EMBEDDINGS_MODEL, EMBEDDINGS_BASE_URL, EMBEDDINGS_API_KEY   an OpenAI-compatible embeddings endpoint
REDIS_URL                   state shared by every worker: rate limits, de-duplication, re-index notices
                            (redis://host:6379/0); unset = each process keeps its own (the default)
GPU_ADVISOR_REDIS_PREFIX    prefix of every Redis key and channel (default `gpu-advisor:`), so several
                            deployments or test runs can share one Redis
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from knowledge.config import DEFAULT_DATA_DIR, KnowledgeSettings


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    data_dir: Path = Field(
        DEFAULT_DATA_DIR,
        validation_alias=AliasChoices("GPU_ADVISOR_DATA_DIR", "data_dir"),
        description="Data folder: the SQLite store and the embedded Chroma index.",
    )
    database_url: str | None = Field(
        None,
        validation_alias=AliasChoices("DATABASE_URL", "database_url"),
        description="Where conversations, feedback and API keys are stored; `postgresql://user@host:5432/db` for PostgreSQL.",
        json_schema_extra={"shown_default": "`sqlite:///<data dir>/gpu-advisor.sqlite3`"},
    )

    llm_base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_BASE_URL", "llm_base_url"),
        description="An OpenAI-compatible chat endpoint (OpenAI, DeepSeek, DashScope for Qwen, vLLM, Ollama); unset, the offline planner answers.",
    )
    llm_model: str | None = Field(
        None,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_MODEL", "llm_model"),
        description="The model name at that endpoint (`gpt-4o-mini`, `deepseek-chat`, `qwen-plus`, …); the LLM agent runs only when both the endpoint and the model are set.",
    )
    llm_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_API_KEY", "OPENAI_API_KEY", "llm_api_key"),
        description="The endpoint's key.",
    )
    llm_timeout_s: float = Field(
        30.0,
        gt=0,
        le=600,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_TIMEOUT_S", "llm_timeout_s"),
        description="Seconds one model request may take.",
    )
    llm_max_steps: int = Field(
        12,
        ge=1,
        le=50,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_MAX_STEPS", "llm_max_steps"),
        description="The most model and tool calls one answer may make.",
    )
    llm_max_retries: int = Field(
        1,
        ge=0,
        le=10,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_MAX_RETRIES", "llm_max_retries"),
        description="Retries of a request that never reached the model (a failed connection, a 429 or 5xx); a timed-out request is never retried.",
    )
    llm_deadline_s: float = Field(
        60.0,
        gt=0,
        le=1800,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_DEADLINE_S", "llm_deadline_s"),
        description="Seconds one answer may spend across all its model requests (a model still writing is stopped); then the offline answer follows, labelled `llm-fallback`.",
    )
    llm_max_tokens: int = Field(
        1024,
        ge=16,
        le=65536,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_MAX_TOKENS", "llm_max_tokens"),
        description="`max_tokens` sent with every model request.",
    )
    llm_context_tokens: int = Field(
        8192,
        ge=1024,
        le=10_000_000,
        validation_alias=AliasChoices("GPU_ADVISOR_LLM_CONTEXT_TOKENS", "llm_context_tokens"),
        description="The model's context length when the server does not report it (vLLM and llama.cpp do); earlier turns are left out to fit, counted with the server's tokenizer where it offers `POST /tokenize`, else by an estimate that errs high.",
    )

    redis_url: str | None = Field(
        None,
        validation_alias=AliasChoices("REDIS_URL", "redis_url"),
        description="`redis://host:6379/0`: one rate-limit budget for every worker, shared channel de-duplication and callback nonces, re-index notices; unset, each process keeps its own (de-duplication in the SQL store). An outage falls back to per-process limits.",
    )
    redis_prefix: str = Field(
        "gpu-advisor:",
        min_length=1,
        max_length=100,
        validation_alias=AliasChoices("GPU_ADVISOR_REDIS_PREFIX", "redis_prefix"),
        description="What every Redis key and channel name starts with, so several deployments (or test runs) can share one Redis.",
    )

    public_url: str = Field(
        "",
        max_length=500,
        validation_alias=AliasChoices("GPU_ADVISOR_PUBLIC_URL", "public_url"),
        description='The address links in answers start with (`https://advisor.example.com`): the proposal files a chat\'s "生成方案" hands over. Unset: links are paths on this server, which the API and the widget open; Slack and WeCom need it set to make them clickable.',
    )
    link_days: int = Field(
        7,
        ge=1,
        le=365,
        validation_alias=AliasChoices("GPU_ADVISOR_LINK_DAYS", "link_days"),
        description="Days a proposal link in a chat answer opens its files.",
    )

    @field_validator("llm_base_url", "llm_model", "database_url", "redis_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, v):
        return v or None

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def store_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir.expanduser()}/gpu-advisor.sqlite3"

    def knowledge(self):
        """The knowledge index configuration (Chroma embedded or server, embeddings)."""
        return KnowledgeSettings().to_config()
