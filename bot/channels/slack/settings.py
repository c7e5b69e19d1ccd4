"""Slack settings, read from the environment (and `.env`) when the server or `gpu-advisor slack socket` starts.

    SLACK_BOT_TOKEN        the bot token (xoxb-…) from the app's "OAuth & Permissions" page
    SLACK_SIGNING_SECRET   "Basic Information" -> Signing Secret; with the bot token it turns on POST /slack/events
    SLACK_APP_TOKEN        an app-level token (xapp-…, scope connections:write) for Socket Mode
    SLACK_API_URL          the Web API base (default https://slack.com/api/); tests point it at a fake on loopback
    SLACK_TEAM_IDS         workspaces the app answers (comma-separated team ids; empty: all)

Secrets are `SecretStr`: they print as '**********' and never reach a log line.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SLACK_API = "https://slack.com/api/"


class SlackSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    bot_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("SLACK_BOT_TOKEN", "bot_token"),
        description="The Slack bot token (`xoxb-…`); with the signing secret it turns `POST /slack/events` on (docs/slack.md).",
    )
    signing_secret: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "signing_secret"),
        description="The Slack app's Signing Secret (Basic Information).",
    )
    app_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("SLACK_APP_TOKEN", "app_token"),
        description="An app-level token (`xapp-…`, scope `connections:write`) for Socket Mode (`gpu-advisor slack socket`).",
    )
    team_ids: str = Field(
        "",
        validation_alias=AliasChoices("SLACK_TEAM_IDS", "team_ids"),
        description="Comma-separated workspace (team) ids the app answers, e.g. `T0123ABC`; events and clicks from any other workspace are acknowledged and ignored. Empty: every workspace the app is installed in.",
    )
    api_url: str = Field(
        SLACK_API,
        validation_alias=AliasChoices("SLACK_API_URL", "api_url"),
        description="The Slack Web API base; tests point it at a fake on loopback.",
        json_schema_extra={"shown_default": "Slack's Web API"},
    )

    @field_validator("bot_token", "signing_secret", "app_token", mode="before")
    @classmethod
    def _blank_is_unset(cls, v):
        return v or None

    @field_validator("api_url")
    @classmethod
    def _trailing_slash(cls, v: str) -> str:
        v = (v or SLACK_API).strip()
        if not v.startswith(("http://", "https://")):
            raise ValueError("SLACK_API_URL must be an http(s) URL such as https://slack.com/api/")
        return v if v.endswith("/") else v + "/"

    def team_allowed(self, team: str | None) -> bool:
        """Whether events from this workspace are answered (SLACK_TEAM_IDS; empty allows every one)."""
        listed = {t.strip() for t in self.team_ids.split(",") if t.strip()}
        return not listed or (team or "") in listed

    @property
    def http_enabled(self) -> bool:
        """POST /slack/events is on when both the bot token and the signing secret are set."""
        return self.bot_token is not None and self.signing_secret is not None

    @property
    def socket_enabled(self) -> bool:
        return self.bot_token is not None and self.app_token is not None

    def secrets(self) -> list[str]:
        """The secret values (for tests and log scrubbing)."""
        return [s.get_secret_value() for s in (self.bot_token, self.signing_secret, self.app_token) if s]
