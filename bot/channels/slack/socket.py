"""Socket Mode: the same Slack app over a WebSocket that the server opens to Slack (no public URL needed).

`run_socket_mode(settings, advisor, delivery, stop)` asks Slack for a WebSocket URL (apps.connections.open
with the app-level token), receives events and interactions as envelopes, acknowledges each by its
envelope id, and reconnects when Slack rotates the connection (slack_sdk's Socket Mode client does both).
It returns when `stop` is set. `gpu-advisor slack socket` runs it until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.advisor import Advisor
from bot.channels.delivery import Delivery
from bot.channels.slack.app import SlackChannel
from bot.channels.slack.settings import SlackSettings

log = logging.getLogger("gpu_advisor.channels.slack")


async def run_socket_mode(settings: SlackSettings, advisor: Advisor, delivery: Delivery,
                          stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
    if settings.app_token is None or settings.bot_token is None:
        raise ValueError("Socket Mode needs SLACK_APP_TOKEN (xapp-…) and SLACK_BOT_TOKEN (xoxb-…)")
    channel = SlackChannel(settings, advisor, delivery)
    handler = AsyncSocketModeHandler(channel.bolt, app_token=settings.app_token.get_secret_value(),
                                     logger=logging.getLogger("gpu_advisor.channels.slack.socket"))
    await handler.connect_async()
    log.info("slack socket mode connected")
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        await handler.close_async()
        log.info("slack socket mode closed")
