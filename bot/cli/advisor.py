"""`gpu-advisor ask "…"` and `gpu-advisor chat`: the advisor from the terminal."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markdown import Markdown

from bot.cli.output import console, err_console, print_json, user_errors
from bot.core.language import detect_language


def _advisor():
    from bot.answer.advisor import Advisor

    return Advisor.from_settings()


def register(app: typer.Typer) -> None:
    @app.command("ask")
    def ask(
        text: Annotated[str, typer.Argument(help="Your question, in Chinese or English.")],
        conversation: Annotated[
            str | None, typer.Option("--conversation", "-c", help="Continue this conversation id.")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the whole AnswerTrace as JSON.")] = False,
    ) -> None:
        """Ask the advisor one question; every number in the answer comes from a calculator or a cited note.

        Example: gpu-advisor ask "70B 模型全参训练，单卡 A100 80GB 够吗？"
        """
        lang = detect_language(text)
        with user_errors(lang):
            advisor = _advisor()
            trace = advisor.ask(text, conversation_id=conversation)
        if as_json:
            print_json(trace)
            return
        console.print(Markdown(trace.answer))
        if trace.follow_ups:
            label = "可以接着问" if trace.language == "zh" else "You could ask next"
            console.print(f"\n[dim]{label}: " + " · ".join(trace.follow_ups) + "[/]")
        label = "会话" if trace.language == "zh" else "conversation"
        console.print(f"[dim]{label}: {trace.conversation_id} ({trace.mode})[/]")

    @app.command("chat")
    def chat(
        conversation: Annotated[
            str | None, typer.Option("--conversation", "-c", help="Continue this conversation id.")
        ] = None,
    ) -> None:
        """An interactive session with rendered answers; Ctrl-D leaves.

        Example: gpu-advisor chat
        """
        with user_errors("en"):
            advisor = _advisor()
        cid = conversation
        console.print("[bold]gpu-advisor[/] — GPU 选型顾问 / GPU selection advisor. Ctrl-D to leave.")
        while True:
            try:
                text = console.input("[bold cyan]> [/]")
            except (EOFError, KeyboardInterrupt):
                console.print()
                return
            if not text.strip():
                continue
            try:
                final = None
                for event in advisor.stream(text, conversation_id=cid):
                    if event["type"] == "tool_started":
                        console.print(f"[dim]… {event['tool']}[/]")
                    elif event["type"] == "final":
                        final = event["trace"]
                    elif event["type"] == "error":
                        err_console.print(f"[bold red]error:[/] {event['message']}")
                if final:
                    cid = final["conversation_id"]
                    console.print(Markdown(final["answer"]))
                    if final["follow_ups"]:
                        console.print("[dim]→ " + " · ".join(final["follow_ups"]) + "[/]")
            except Exception as err:  # the session goes on after any single failure
                err_console.print(f"[bold red]error:[/] {type(err).__name__}")
