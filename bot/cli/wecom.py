"""`gpu-advisor wecom connect`: the WeCom AI bot over its long connection (see docs/wecom.md)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated

import typer

from bot.cli.output import err_console

wecom_app = typer.Typer(help="WeCom (企业微信): the AI bot's long connection.", no_args_is_help=True)


@wecom_app.command("connect")
def connect(
    heartbeat_s: Annotated[float, typer.Option(min=1, max=120, help="Seconds between heartbeats.")] = 30.0,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Answer the WeCom AI bot over its long connection: no public URL or domain needed.

    Needs WECOM_AIBOT_ID and WECOM_AIBOT_SECRET (the bot's 长连接 credentials). Stops cleanly on
    SIGTERM or Ctrl-C, after the answers in progress have gone out.

    Example: WECOM_AIBOT_ID=… WECOM_AIBOT_SECRET=… gpu-advisor wecom connect
    """
    from bot.answer.advisor import Advisor
    from bot.channels.delivery import Delivery
    from bot.channels.settings import WeComSettings
    from bot.channels.wecom.ws import LongConnection, Rejected

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = WeComSettings()
    if not settings.aibot_ws:
        err_console.print(
            "[bold red]error:[/] set WECOM_AIBOT_ID and WECOM_AIBOT_SECRET (the AI bot's long-connection "
            "credentials from the WeCom admin console); see docs/wecom.md"
        )
        raise typer.Exit(2)
    advisor = Advisor.from_settings()
    delivery = Delivery.from_settings(advisor)
    conn = LongConnection(settings, delivery, heartbeat_s=heartbeat_s)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await conn.run(stop)

    try:
        asyncio.run(main())
    except Rejected:
        raise typer.Exit(1) from None
    finally:
        delivery.close(wait=True, timeout=10)
        advisor.store.close()
    err_console.print("stopped")
