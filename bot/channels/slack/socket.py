"""Socket Mode: the same Slack app over a WebSocket that the server opens to Slack (no public URL needed).

`run_socket_mode(settings, advisor, delivery, stop)` asks Slack for a WebSocket URL (apps.connections.open
with the app-level token), receives events and interactions as envelopes, acknowledges each by its
envelope id, and reconnects when Slack rotates the connection (slack_sdk's Socket Mode client does both).
It returns when `stop` is set. `gpu-advisor slack socket` runs it until SIGINT/SIGTERM. Before it connects it
apologises, in their threads, for the messages a stopped process left unanswered (`Delivery.recover`).

Before that it asks for one WebSocket URL itself: a token Slack refuses, or a Slack it cannot reach, is then
a `SocketModeError` that says which, instead of the client's endless reconnect attempts.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer.advisor import Advisor
from bot.channels.delivery import Delivery
from bot.channels.slack.app import SlackChannel
from bot.channels.slack.settings import SlackSettings

log = logging.getLogger("gpu_advisor.channels.slack")


class SocketModeError(RuntimeError):
    """Socket Mode cannot start: the message says why and what to change."""


async def check_app_token(settings: SlackSettings) -> None:
    """apps.connections.open once with SLACK_APP_TOKEN: SocketModeError when Slack refuses it or is unreachable."""
    assert settings.app_token is not None
    client = AsyncWebClient(base_url=settings.api_url, timeout=15)
    try:
        await client.apps_connections_open(app_token=settings.app_token.get_secret_value())
    except SlackApiError as err:
        code = err.response.get("error") if err.response is not None else "refused"
        raise SocketModeError(
            f"Slack refused SLACK_APP_TOKEN ({code}): it must be an app-level token (xapp-…) "
            "with the connections:write scope; see docs/slack.md."
        ) from None
    except (TimeoutError, SlackClientError, aiohttp.ClientError, OSError) as err:
        raise SocketModeError(
            f"Slack could not be reached at {settings.api_url} ({type(err).__name__}); "
            "check the network, or SLACK_API_URL."
        ) from None


async def run_socket_mode(
    settings: SlackSettings,
    advisor: Advisor,
    delivery: Delivery,
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
) -> None:
    if settings.app_token is None or settings.bot_token is None:
        raise ValueError("Socket Mode needs SLACK_APP_TOKEN (xapp-…) and SLACK_BOT_TOKEN (xoxb-…)")
    await check_app_token(settings)
    channel = SlackChannel(settings, advisor, delivery)
    handler = AsyncSocketModeHandler(
        channel.bolt,
        app_token=settings.app_token.get_secret_value(),
        logger=logging.getLogger("gpu_advisor.channels.slack.socket"),
    )
    loop = asyncio.get_running_loop()
    try:  # what an earlier stop left unanswered gets one apology in its thread (see Delivery.recover)
        await asyncio.to_thread(delivery.recover, {"slack": partial(channel.recovery_sink, loop=loop)})
    except Exception:
        log.exception("could not look for Slack messages an earlier stop left unanswered")
    await handler.connect_async()
    log.info("slack socket mode connected")
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        await handler.close_async()
        log.info("slack socket mode closed")
