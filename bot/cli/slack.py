"""`gpu-advisor slack socket`: the Slack app over Socket Mode (no public URL needed; see docs/slack.md)."""

from __future__ import annotations

import asyncio
import logging.config
import signal
from typing import Annotated

import typer

from bot.cli.output import err_console

slack_app = typer.Typer(help="The Slack app (docs/slack.md).", no_args_is_help=True)


@slack_app.command("socket")
def socket(log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info") -> None:
    """Connect to Slack over Socket Mode and answer until Ctrl-C or SIGTERM.

    Needs SLACK_APP_TOKEN (xapp-…, scope connections:write) and SLACK_BOT_TOKEN (xoxb-…).

    Example: SLACK_APP_TOKEN=xapp-… SLACK_BOT_TOKEN=xoxb-… gpu-advisor slack socket
    """
    from bot.api.metrics import logging_config
    from bot.channels.slack.settings import SlackSettings

    try:
        settings = SlackSettings()
    except ValueError as err:
        err_console.print(f"[bold red]error:[/] {err}")
        raise typer.Exit(2) from None
    if not settings.socket_enabled:
        err_console.print(
            "[bold red]error:[/] Socket Mode needs SLACK_APP_TOKEN (xapp-…) and SLACK_BOT_TOKEN "
            "(xoxb-…); see docs/slack.md."
        )
        raise typer.Exit(2)
    logging.config.dictConfig(logging_config(log_level))
    from bot.channels.slack.socket import SocketModeError

    try:
        asyncio.run(_serve(settings))
    except SocketModeError as err:
        err_console.print(f"[bold red]error:[/] {err}")
        raise typer.Exit(1) from None


async def _serve(settings) -> None:
    import anyio.to_thread

    from bot.answer.advisor import Advisor
    from bot.channels.delivery import Delivery
    from bot.channels.slack.socket import run_socket_mode

    advisor = await anyio.to_thread.run_sync(Advisor.from_settings)
    delivery = Delivery.from_settings(advisor)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await run_socket_mode(settings, advisor, delivery, stop)
    finally:
        await anyio.to_thread.run_sync(delivery.close)
        advisor.store.close()
