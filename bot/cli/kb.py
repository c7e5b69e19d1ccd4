"""`gpu-advisor kb index|search|stats`: the knowledge base from the command line.

The index lives in GPU_ADVISOR_DATA_DIR (default ~/.local/share/gpu-advisor), or on the Chroma
server named by CHROMA_HOST / CHROMA_PORT; EMBEDDINGS_MODEL (+ EMBEDDINGS_BASE_URL, EMBEDDINGS_API_KEY)
switches to an OpenAI-compatible embeddings endpoint.
"""

from __future__ import annotations

import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bot.cli.output import JsonOpt, console, err_console, fmt, lang_of, print_json, table, user_errors
from knowledge.config import KnowledgeSettings
from knowledge.index import KnowledgeIndex
from knowledge.retrieval import Retriever

kb_app = typer.Typer(
    help="The knowledge base: index notes (shipped and your own), search them, see what is indexed.",
    no_args_is_help=True,
)


class Lang(StrEnum):
    zh = "zh"
    en = "en"


def _index() -> KnowledgeIndex:
    return KnowledgeIndex(KnowledgeSettings().to_config())


def _notices(notices: list[str]) -> None:
    for notice in notices:
        err_console.print(f"[yellow]note:[/] {escape(notice)}", highlight=False)


@kb_app.command("index")
def index_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Folders (or files) of your own .md/.txt notes to add; remembered for next time.",
            exists=True,
            resolve_path=True,
        ),
    ] = None,
    forget: Annotated[
        list[Path] | None, typer.Option("--forget", help="Remove a folder indexed before, and its documents.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Index the shipped notes plus your folders; only what changed is embedded again.

    Examples: gpu-advisor kb index
              gpu-advisor kb index ~/sales/price-sheets
              gpu-advisor kb index --forget ~/sales/old-prices
    """
    started = time.perf_counter()
    with user_errors():
        index = _index()
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            disable=as_json,
        ) as bar:
            task = bar.add_task("indexing", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total or 1)

            report = index.sync(paths or [], forget=forget or [], progress=progress)
        stats = index.stats()
    notified = _notify_workers(report, index) if report.changed else None
    elapsed = time.perf_counter() - started
    if as_json:
        print_json(
            {
                **report.model_dump(),
                "chunks": stats.chunks,
                "location": stats.location,
                "seconds": elapsed,
                "workers_notified": notified,
            }
        )
        return
    _notices(report.notices)
    rows = [
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
        ("unchanged", report.unchanged),
    ]
    console.print(table("Knowledge index: chunks", ["", "chunks"], rows))
    console.print(
        f"{stats.docs} documents, {stats.chunks} chunks in {stats.location} ({elapsed:.1f} s)", highlight=False
    )


def _notify_workers(report, index: KnowledgeIndex) -> int | None:
    """With REDIS_URL set and a Chroma server, tell every API worker to reload (they listen on pub/sub)."""
    import os
    import socket

    from bot.core.redis_client import RedisConfig, publish_reindex
    from bot.core.settings import Settings

    config = RedisConfig.from_settings(Settings())
    if config is None or index.backend != "server":
        return None
    payload = {
        "collection": index.collection_name,
        "changed": report.added + report.updated + report.removed,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "at": time.time(),
    }
    listening = publish_reindex(config, payload)
    if listening is None:
        err_console.print(
            f"[yellow]note:[/] Redis at {escape(config.safe_url)} did not answer; running API workers "
            "serve the new index after a restart.",
            highlight=False,
        )
    else:
        err_console.print(f"{listening} API worker(s) told to reload the index.", highlight=False)
    return listening


@kb_app.command("search")
def search_cmd(
    query: Annotated[str, typer.Argument(help="Question or keywords, Chinese or English.")],
    k: Annotated[int, typer.Option("-k", "--k", min=1, max=50, help="How many passages.")] = 5,
    lang: Annotated[Lang | None, typer.Option("--lang", help="Only notes in this language.")] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", help="Only notes with this topic (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ranked passages for a question, each with its source.

    Examples: gpu-advisor kb search "H20 显存多大"
              gpu-advisor kb search "H100 NVL memory" -k 3 --lang en --json
    """
    with user_errors(lang_of(query)):
        retriever = Retriever.from_config(KnowledgeSettings().to_config())
        passages = retriever.search(query, k=k, lang=lang.value if lang else None, topics=topic or None)
    if as_json:
        print_json({"query": query, "passages": [p.model_dump() for p in passages]})
        return
    _notices(retriever.notices)
    if not passages:
        console.print("No passage found." if lang_of(query) == "en" else "没有找到相关段落。")
        return
    for rank, p in enumerate(passages, 1):
        head = f"{rank}. [bold]{escape(p.title)}[/]  [dim]{escape(p.id)} · score {p.score:.4f}[/]"
        console.print(
            Panel(escape(p.text), title=head, title_align="left", subtitle=escape(p.source), subtitle_align="left")
        )


@kb_app.command("stats")
def stats_cmd(as_json: JsonOpt = False) -> None:
    """What is indexed: documents, chunks, languages, where the index lives and which backend.

    Example: gpu-advisor kb stats
    """
    with user_errors():
        index = _index()
        stats = index.stats()
        roots = index.user_roots()
    if as_json:
        print_json({**stats.model_dump(), "user_folders": roots})
        return
    _notices(index.notices)
    rows = [
        ("documents", stats.docs),
        ("chunks", stats.chunks),
        ("languages", ", ".join(f"{k} {fmt(v)}" for k, v in sorted(stats.languages.items())) or None),
        ("topics", ", ".join(f"{k} {fmt(v)}" for k, v in list(stats.topics.items())[:12]) or None),
        ("your folders", "\n".join(roots) or None),
        ("backend", stats.backend),
        ("location", stats.location),
        ("collection", stats.collection),
        ("embedding", stats.embedding),
    ]
    caption = "empty: run `gpu-advisor kb index` (a search builds it too)" if not stats.chunks else None
    t = table("Knowledge index", ["", "value"], rows, caption=caption)
    t.columns[1].justify = "left"
    console.print(t)
