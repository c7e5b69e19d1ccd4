"""Settings of the chat channels, read from the environment (and `.env`) when a channel starts.

Delivery core (every channel):
    CHANNEL_WORKERS              answers computed at once in the background (default: 1 offline, where an
                                 answer is pure CPU under one GIL; 4 with an LLM endpoint, which mostly waits)
    CHANNEL_QUEUE                questions waiting for a worker before new ones get "busy, try again" (default 64)
    CHANNEL_ANSWER_TIMEOUT_S     an answer not ready by then is replaced by an apology (default 240)
    CHANNEL_DEDUP_TTL_S          how long a platform message id is remembered (default 900, at least 600)
    CHANNEL_FAULT_DELAY_S        fault tests only: hold every answer this long before it starts (default 0)
    REDIS_URL                    share de-duplication between workers (SET NX EX); unset = the SQL store
    GPU_ADVISOR_REDIS_PREFIX     what every Redis key starts with (default "gpu-advisor:", as bot.core.redis_client)

WeCom (see docs/wecom.md):
    WECOM_AIBOT_TOKEN, WECOM_AIBOT_AES_KEY      AI bot, HTTP callback at /wecom/aibot (on when both are set)
    WECOM_AIBOT_ID, WECOM_AIBOT_SECRET          AI bot, long connection (`gpu-advisor wecom connect`)
    WECOM_WS_URL                                its WebSocket endpoint (default WeCom's)
    WECOM_CORP_ID, WECOM_AGENT_ID, WECOM_APP_SECRET, WECOM_APP_TOKEN, WECOM_APP_AES_KEY
                                                self-built app, XML callback at /wecom/app (on when all are set)
    WECOM_API_BASE                              WeCom's API host (default WeCom's)
    WECOM_STREAM_WINDOW_S                       how long WeCom keeps refreshing a stream (default 360)
    WECOM_CALLBACK_HOSTS                        hosts a response_url may name (default: WECOM_API_BASE's host)
    WECOM_CORP_IDS                              corps whose members the AI bot answers (default: any)
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.core.redis_client import RedisConfig


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class DeliverySettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    workers: int | None = Field(
        None,
        ge=1,
        le=256,
        validation_alias=_env("CHANNEL_WORKERS", "workers"),
        description="Chat channels: answers computed at once in the background (offline answers are CPU work under one GIL, so more threads only slow the acknowledgements).",
        json_schema_extra={"shown_default": "1 offline, 4 with an LLM endpoint"},
    )
    queue: int = Field(
        64,
        ge=0,
        le=100_000,
        validation_alias=_env("CHANNEL_QUEUE", "queue"),
        description='Questions allowed to wait for a worker; beyond that a user gets "busy, try again".',
    )
    answer_timeout_s: float = Field(
        240.0,
        gt=0,
        le=3600,
        validation_alias=_env("CHANNEL_ANSWER_TIMEOUT_S", "answer_timeout_s"),
        description="A channel answer not ready after this many seconds becomes an apology with a request id.",
    )
    dedup_ttl_s: int = Field(
        900,
        ge=600,
        le=7 * 86400,
        validation_alias=_env("CHANNEL_DEDUP_TTL_S", "dedup_ttl_s"),
        description="Seconds a platform message id (and a callback nonce) is remembered, at least 600.",
    )
    fault_delay_s: float = Field(
        0.0,
        ge=0,
        le=600,
        validation_alias=_env("CHANNEL_FAULT_DELAY_S", "fault_delay_s"),
        description="For fault tests only: every channel answer waits this many seconds before it is worked out, so a test can stop the server in the middle of one. Leave it at 0.",
    )
    redis_url: str | None = Field(
        None,
        validation_alias=_env("REDIS_URL", "redis_url"),
        description="`redis://host:6379/0`: one rate-limit budget for every worker, shared channel de-duplication and callback nonces, re-index notices; unset, each process keeps its own (de-duplication in the SQL store). An outage falls back to per-process limits.",
    )
    redis_prefix: str = Field(
        "gpu-advisor:",
        min_length=1,
        max_length=100,
        validation_alias=_env("GPU_ADVISOR_REDIS_PREFIX", "redis_prefix"),
        description="What every Redis key and channel name starts with, so several deployments (or test runs) can share one Redis.",
    )

    @field_validator("redis_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, v):
        return v or None

    @property
    def redis(self) -> RedisConfig | None:
        return RedisConfig(self.redis_url, self.redis_prefix) if self.redis_url else None


class WeComSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    aibot_token: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_AIBOT_TOKEN", "aibot_token"),
        description="WeCom AI bot, API mode: the callback Token; with the AES key it turns `/wecom/aibot` on (docs/wecom.md).",
    )
    aibot_aes_key: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_AIBOT_AES_KEY", "aibot_aes_key"),
        description="WeCom AI bot, API mode: the EncodingAESKey (43 characters).",
    )
    aibot_id: str | None = Field(
        None,
        validation_alias=_env("WECOM_AIBOT_ID", "aibot_id"),
        description="WeCom AI bot, long connection: the Bot ID (`gpu-advisor wecom connect`).",
    )
    aibot_secret: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_AIBOT_SECRET", "aibot_secret"),
        description="WeCom AI bot, long connection: the bot's Secret.",
    )
    ws_url: str = Field(
        "wss://openws.work.weixin.qq.com",
        validation_alias=_env("WECOM_WS_URL", "ws_url"),
        description="The long connection's WebSocket URL; change it only for a proxy or tests.",
        json_schema_extra={"shown_default": "WeCom's endpoint"},
    )
    corp_id: str | None = Field(
        None,
        validation_alias=_env("WECOM_CORP_ID", "corp_id"),
        description="WeCom self-built app: your corp id; with the four below it turns `/wecom/app` on.",
    )
    agent_id: str | None = Field(
        None,
        validation_alias=_env("WECOM_AGENT_ID", "agent_id"),
        description="WeCom self-built app: the app's AgentId.",
    )
    app_secret: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_APP_SECRET", "app_secret"),
        description="WeCom self-built app: the app's Secret.",
    )
    app_token: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_APP_TOKEN", "app_token"),
        description="WeCom self-built app: the callback Token.",
    )
    app_aes_key: SecretStr | None = Field(
        None,
        validation_alias=_env("WECOM_APP_AES_KEY", "app_aes_key"),
        description="WeCom self-built app: the callback EncodingAESKey.",
    )
    api_base: str = Field(
        "https://qyapi.weixin.qq.com",
        validation_alias=_env("WECOM_API_BASE", "api_base"),
        description="Where `gettoken` and `message/send` go; change it only for a proxy or tests.",
        json_schema_extra={"shown_default": "WeCom's API host"},
    )
    corp_ids: str = Field(
        "",
        validation_alias=_env("WECOM_CORP_IDS", "corp_ids"),
        description="Comma-separated corp ids whose members the AI bot answers (a message naming its sender's `corpid` outside the list is ignored); empty: any corp the bot is in.",
    )
    callback_hosts: str = Field(
        "",
        validation_alias=_env("WECOM_CALLBACK_HOSTS", "callback_hosts"),
        description="Hosts (comma-separated, `host` or `host:port`) a callback's `response_url` may point at; any other URL, and any host that resolves to a loopback or private address, is never posted to. Empty: the host of WECOM_API_BASE.",
        json_schema_extra={"shown_default": "the host of WECOM_API_BASE"},
    )
    stream_window_s: float = Field(
        360.0,
        gt=0,
        le=360,
        validation_alias=_env("WECOM_STREAM_WINDOW_S", "stream_window_s"),
        description="Seconds WeCom keeps asking for an AI bot stream (at most 360); an answer ready later goes through the message's `response_url`.",
    )

    @field_validator(
        "aibot_token",
        "aibot_aes_key",
        "aibot_id",
        "aibot_secret",
        "corp_id",
        "agent_id",
        "app_secret",
        "app_token",
        "app_aes_key",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, v):
        return v or None

    def corp_allowed(self, body: dict) -> bool:
        """WECOM_CORP_IDS against the sender's corp (`from.corpid`) of an AI bot message; a message that names no
        corp is the bot's own corp's."""
        listed = {c.strip() for c in self.corp_ids.split(",") if c.strip()}
        sender = body.get("from") if isinstance(body.get("from"), dict) else {}
        corp = str(sender.get("corpid") or "")
        return not listed or not corp or corp in listed

    @property
    def response_hosts(self) -> tuple[str, ...]:
        """The allow-list for response_url: WECOM_CALLBACK_HOSTS, else WECOM_API_BASE's host (and its port)."""
        listed = tuple(h.strip() for h in self.callback_hosts.split(",") if h.strip())
        return listed or (self.api_base,)

    @property
    def aibot_http(self) -> bool:
        return bool(self.aibot_token and self.aibot_aes_key)

    @property
    def aibot_ws(self) -> bool:
        return bool(self.aibot_id and self.aibot_secret)

    @property
    def app(self) -> bool:
        return bool(self.corp_id and self.agent_id and self.app_secret and self.app_token and self.app_aes_key)
