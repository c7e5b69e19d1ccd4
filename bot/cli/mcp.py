"""`gpu-advisor mcp`: the calculators and the knowledge base as an MCP server over stdio."""

from __future__ import annotations

import functools
import logging
import sys

import typer


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp() -> None:
        """Serve the calculators, search_knowledge, the catalogs and a sizing prompt over MCP (stdio).

        Point an MCP client at it (Claude Desktop, Cursor, Cherry Studio): command `gpu-advisor`, args
        `["mcp"]`. Over HTTP the same server is at /mcp of `gpu-advisor serve`. See docs/mcp.md.
        """
        from bot.mcp.server import build_server

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout carries the protocol only
        build_server(_toolbox).run("stdio")


@functools.cache
def _toolbox():
    """The toolbox with the knowledge index, loaded on the first call (the server starts at once)."""
    from bot.core.settings import Settings
    from bot.core.toolbox import Toolbox
    from knowledge.retrieval import Retriever

    return Toolbox(Retriever.from_config(Settings().knowledge()))
