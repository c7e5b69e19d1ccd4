"""POST /slack/events: the Slack app over HTTP (Bolt verifies the signature; docs/slack.md)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.api.errors import ApiError


def router() -> APIRouter:
    router = APIRouter(tags=["channels"], include_in_schema=False)

    @router.post("/slack/events")
    async def slack_events(request: Request) -> Response:
        """Slack's Events API and interactivity (Bolt verifies the signature; docs/slack.md)."""
        channel = getattr(request.app.state, "slack", None)
        if channel is None:
            raise ApiError(
                404,
                "Slack is not configured on this server (set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET).",
                code="not_configured",
            )
        return await channel.handle(request)

    return router
