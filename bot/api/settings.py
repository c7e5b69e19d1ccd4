"""Settings of the HTTP API, read from the environment (and `.env`) when the server starts.

GPU_ADVISOR_API_KEYS         comma-separated bearer keys (at least 16 characters each); keys can
                             also be created with `gpu-advisor keys create NAME`. When any key
                             exists, every /v1 route needs `Authorization: Bearer <key>`.
GPU_ADVISOR_RATE_LIMIT       requests per minute per key (per client address when the API is open);
                             0 switches the limit off (default 120). Counted in Redis for all workers
                             together when REDIS_URL is set, else in each worker process.
GPU_ADVISOR_MAX_BODY_BYTES   largest request body accepted (default 65536); larger is 413
                             (POST /slack/events takes at least 1 MiB: docs/slack.md)
GPU_ADVISOR_CORS_ORIGINS     comma-separated origins allowed to call the API from a browser
                             (default: none; `*` allows every origin, without credentials)
GPU_ADVISOR_SSE_KEEPALIVE_S  seconds between keep-alive comments on a quiet stream (default 10)
GPU_ADVISOR_WIDGET_RATE_LIMIT  widget requests per minute per client address and key (default 20; 0 = off)
GPU_ADVISOR_AUTH_FAILURES    failed authentications per minute per client address before 429
                             (default 20; 0 = no limit)
GPU_ADVISOR_ANSWER_DEADLINE_S  longest an answer may take before the caller gets 504 (default 120)
GPU_ADVISOR_KEEPALIVE_S      an idle keep-alive connection is closed after this (default 5)
GPU_ADVISOR_HEADER_TIMEOUT_S a request head must arrive within this of connecting (default 10)
GPU_ADVISOR_BODY_TIMEOUT_S   a request body must arrive within this of its first byte, else 408 (default 30)
GPU_ADVISOR_MAX_CONNECTIONS  open connections per worker; more are refused (default 1000)
GPU_ADVISOR_FORWARDED_ALLOW_IPS  comma-separated addresses or CIDR ranges of the reverse proxies whose
                             X-Forwarded-For/-Proto are trusted (`*`: any); the per-address limits then
                             count the caller's address, not the proxy's (default: none trusted)
GPU_ADVISOR_MCP_HOSTS        comma-separated Host values the MCP endpoint (/mcp) accepts, `host:*` for
                             any port, `host` alone for the default port (default: loopback only, with
                             or without a port); the MCP SDK's DNS-rebinding protection
GPU_ADVISOR_MCP_ORIGINS      comma-separated browser Origins /mcp accepts (default: loopback only)
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: values people leave in example files; refused so that a placeholder never guards a deployment
PLACEHOLDER_KEYS = {"changeme", "change-me", "secret", "password", "your-api-key", "sk-xxx", "test", "example"}
MIN_KEY_CHARS = 16


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    api_keys: str = Field(
        "",
        validation_alias=AliasChoices("GPU_ADVISOR_API_KEYS", "api_keys"),
        description="Comma-separated bearer keys, 16 characters or more (placeholders are refused); `gpu-advisor keys create NAME` makes stored ones. Once any key exists, every `/v1` route needs `Authorization: Bearer <key>`.",
    )
    rate_limit_per_minute: int = Field(
        120,
        ge=0,
        le=1_000_000,
        validation_alias=AliasChoices("GPU_ADVISOR_RATE_LIMIT", "rate_limit_per_minute"),
        description="Requests per minute per key (per client address while the API is open); 0 turns the limit off. Counted in Redis for all workers when `REDIS_URL` is set.",
    )
    max_body_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        validation_alias=AliasChoices("GPU_ADVISOR_MAX_BODY_BYTES", "max_body_bytes"),
        description="The largest request body accepted; a larger one gets 413 (`POST /slack/events` always takes at least 1 MiB).",
    )
    cors_origins: str = Field(
        "",
        validation_alias=AliasChoices("GPU_ADVISOR_CORS_ORIGINS", "cors_origins"),
        description="Comma-separated origins a browser may call the API from; `*` allows any origin, without credentials.",
    )
    sse_keepalive_s: float = Field(
        10.0,
        gt=0,
        le=300,
        validation_alias=AliasChoices("GPU_ADVISOR_SSE_KEEPALIVE_S", "sse_keepalive_s"),
        description="Seconds between keep-alive comments on a quiet event stream.",
    )
    widget_rate_limit_per_minute: int = Field(
        20,
        ge=0,
        le=1_000_000,
        validation_alias=AliasChoices("GPU_ADVISOR_WIDGET_RATE_LIMIT", "widget_rate_limit_per_minute"),
        description="Widget requests per minute per client address and publishable key; 0 turns the limit off.",
    )

    auth_failures_per_minute: int = Field(
        20,
        ge=0,
        le=100_000,
        validation_alias=AliasChoices("GPU_ADVISOR_AUTH_FAILURES", "auth_failures_per_minute"),
        description="Failed key checks per minute per client address before 429; 0: no limit.",
    )
    answer_deadline_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        validation_alias=AliasChoices("GPU_ADVISOR_ANSWER_DEADLINE_S", "answer_deadline_s"),
        description="Seconds an answer may take before the caller gets 504.",
    )

    keepalive_s: float = Field(
        5.0,
        gt=0,
        le=600,
        validation_alias=AliasChoices("GPU_ADVISOR_KEEPALIVE_S", "keepalive_s"),
        description="An idle keep-alive connection is closed after this many seconds.",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        validation_alias=AliasChoices("GPU_ADVISOR_HEADER_TIMEOUT_S", "header_timeout_s"),
        description="Seconds after connecting by which a request's head must have arrived.",
    )
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        validation_alias=AliasChoices("GPU_ADVISOR_BODY_TIMEOUT_S", "body_timeout_s"),
        description="Seconds after its first byte by which a request's body must have arrived, else 408.",
    )
    max_connections: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        validation_alias=AliasChoices("GPU_ADVISOR_MAX_CONNECTIONS", "max_connections"),
        description="Open connections per worker; more are refused. Lowered, with a warning in the log, to the open-file limit (`ulimit -n`) less 128 descriptors kept for the store, the index and outbound calls.",
    )

    forwarded_allow_ips: str = Field(
        "",
        validation_alias=AliasChoices("GPU_ADVISOR_FORWARDED_ALLOW_IPS", "forwarded_allow_ips"),
        description="Comma-separated addresses or CIDR ranges of the reverse proxies whose `X-Forwarded-For`/`-Proto` are trusted (`*`: any), so per-address limits count the caller, not the proxy (docs/deploy.md).",
    )

    trusted_hosts: str = Field(
        "",
        validation_alias=AliasChoices("GPU_ADVISOR_TRUSTED_HOSTS", "trusted_hosts"),
        description="Comma-separated `Host` values the server answers on every route (`host`, `host:port`, `host:*` for any port, `*` for any host); others get 421. Unset: the loopback names while no API key exists, any host once one does.",
        json_schema_extra={"shown_default": "loopback while keyless, any host with keys"},
    )
    public_origin: str = Field(
        "",
        validation_alias=AliasChoices("GPU_ADVISOR_PUBLIC_ORIGIN", "public_origin"),
        description="This server's own origin as browsers see it (`https://advisor.example.com`): the widget panel served from here may call the API with a widget key. Unset: only a loopback origin counts as this server.",
    )
    mcp_hosts: str = Field(
        "127.0.0.1,127.0.0.1:*,localhost,localhost:*,[::1],[::1]:*",
        validation_alias=AliasChoices("GPU_ADVISOR_MCP_HOSTS", "mcp_hosts"),
        description="Comma-separated `Host` values `/mcp` accepts (`host:*` for any port, `host` alone for the default one): the MCP SDK's DNS-rebinding protection.",
        json_schema_extra={"shown_default": "loopback only (`127.0.0.1`, `localhost`, `[::1]`, any port)"},
    )
    mcp_origins: str = Field(
        "http://127.0.0.1,http://127.0.0.1:*,http://localhost,http://localhost:*,http://[::1],http://[::1]:*",
        validation_alias=AliasChoices("GPU_ADVISOR_MCP_ORIGINS", "mcp_origins"),
        description="Comma-separated browser `Origin` values `/mcp` accepts.",
        json_schema_extra={"shown_default": "loopback only (`http://` on `127.0.0.1`, `localhost`, `[::1]`, any port)"},
    )

    @field_validator("api_keys")
    @classmethod
    def _no_placeholders(cls, value: str) -> str:
        for key in _split(value):
            if key.lower() in PLACEHOLDER_KEYS or len(key) < MIN_KEY_CHARS:
                raise ValueError(
                    f"GPU_ADVISOR_API_KEYS holds a placeholder or a key shorter than {MIN_KEY_CHARS} characters; "
                    "use `gpu-advisor keys create NAME` or a long random string"
                )
        return value

    @property
    def static_keys(self) -> list[str]:
        return _split(self.api_keys)

    @property
    def origins(self) -> list[str]:
        return _split(self.cors_origins)

    @property
    def trusted_host_patterns(self) -> list[str] | None:
        """GPU_ADVISOR_TRUSTED_HOSTS, or None when unset (the default rule, `bot.api.hosts`)."""
        return _split(self.trusted_hosts) or None

    @property
    def mcp_allowed_hosts(self) -> list[str]:
        return _split(self.mcp_hosts)

    @property
    def mcp_allowed_origins(self) -> list[str]:
        return _split(self.mcp_origins)
