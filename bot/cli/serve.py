"""`gpu-advisor serve`: the HTTP API on uvicorn (see bot/api/app.py and docs/api.md)."""

from __future__ import annotations

import logging.config
from typing import Annotated

import typer

from bot.cli.output import err_console


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: Annotated[
            str, typer.Option(help="Address to bind; 0.0.0.0 exposes the API to the network.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
        workers: Annotated[
            int, typer.Option(min=1, max=64, help="Worker processes (more than 1 needs a Chroma server).")
        ] = 1,
        log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    ) -> None:
        """Serve the HTTP API (/v1/ask, /v1/chat/completions, /v1/tools/…) with JSON logs.

        Example: gpu-advisor serve --port 8000
        """
        import uvicorn

        from bot.api.settings import ApiSettings
        from bot.core.settings import Settings

        settings = Settings()
        try:
            api = ApiSettings()
        except ValueError as err:
            err_console.print(f"[bold red]error:[/] {err}")
            raise typer.Exit(2) from None
        if workers > 1:
            if not settings.knowledge().server:
                err_console.print(
                    "[bold red]error:[/] several workers cannot share the embedded Chroma index; start a Chroma "
                    "server (`chroma run --path DIR --port 8001`) and set CHROMA_HOST/CHROMA_PORT, or use --workers 1."
                )
                raise typer.Exit(2)
            if settings.store_url.startswith("sqlite"):
                err_console.print(
                    "[yellow]warning:[/] the workers share one SQLite file (WAL): fine on one machine; use "
                    "DATABASE_URL=postgresql://… when workers run on several machines."
                    + ("" if settings.redis_url else " Without REDIS_URL the rate limit is counted per worker.")
                )
        if host not in ("127.0.0.1", "localhost", "::1") and not api.static_keys:
            err_console.print(
                f"[yellow]warning:[/] binding {host} — create a key (`gpu-advisor keys create NAME`) "
                "unless a proxy in front checks callers."
            )
        config = _logging(log_level)
        logging.config.dictConfig(config)
        from bot.api.server import uvicorn_options

        uvicorn.run(
            "bot.api.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_config=config,
            access_log=False,
            timeout_graceful_shutdown=10,
            http="bot.api.server:GuardedH11Protocol",
            **uvicorn_options(api),
            **_worker_patience(uvicorn),
        )


def _worker_patience(uvicorn) -> dict:
    """A worker process needs seconds to import and load the index before it can answer the supervisor's
    ping; uvicorn's 5 s default kills and restarts it forever on a busy machine."""
    import inspect

    known = inspect.signature(uvicorn.Config).parameters
    return {"timeout_worker_healthcheck": 120} if "timeout_worker_healthcheck" in known else {}


def _logging(level: str) -> dict:
    from bot.api.metrics import logging_config

    return logging_config(level)
