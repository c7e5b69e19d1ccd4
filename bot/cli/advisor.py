"""`gpu-advisor ask "…"`, `gpu-advisor chat` and `gpu-advisor diagnose`: the advisor from the terminal.

`gpu-advisor diagnose`: why a run broke or runs slow, from what it printed and how it was launched.

    gpu-advisor diagnose --log train.log --config ds_config.json
    gpu-advisor diagnose --cmd "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 3" --gpu 4090 -n 4
    gpu-advisor diagnose --log vllm.log --json

The log, command and config are read as a paste in chat is (`bot.offline.understand.paste`): the figures of the
error, the launch flags, the DeepSpeed JSON or trainer YAML; the `diagnose` calculator ranks the causes and the
answer is the one the chat gives (cause with its figure, fix, what to expect after it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markdown import Markdown

from bot.cli.output import JsonOpt, console, err_console, print_json, user_errors
from bot.core.language import detect_language
from tools.errors import InvalidInput


def _advisor():
    from bot.cli import collector_paused

    with collector_paused():
        from bot.answer.advisor import Advisor

        return Advisor.from_settings()


#: the most of one file read (a longer log is cut by the paste reader, with a note)
MAX_FILE_BYTES = 4_000_000


def _file(path: Path | None, lang: str) -> str:
    if path is None:
        return ""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES)
    except OSError:
        raise InvalidInput(f"Cannot read the file {str(path)!r}.", f"无法读取文件“{path}”。", field="log") from None
    return raw.decode("utf-8", errors="replace")


def diagnose_cmd(
    log: Annotated[
        Path | None, typer.Option("--log", help="A log file: the error, nvidia-smi, tokens/s lines.")
    ] = None,
    cmd: Annotated[str | None, typer.Option("--cmd", help="The launch command (vllm serve …, torchrun …).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="A DeepSpeed JSON or trainer YAML.")] = None,
    question: Annotated[str, typer.Option("--question", "-q", help="Your question, in your words.")] = "",
    model: Annotated[str | None, typer.Option("--model", "-m", help="The model, if the files do not name it.")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="The GPU, if the files do not name it.")] = None,
    n_gpus: Annotated[int | None, typer.Option("--n-gpus", "-n", help="How many GPUs the job ran on.")] = None,
    lang: Annotated[str, typer.Option("--lang", help="zh or en; omitted: from the question (else en).")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Why it broke or runs slow: the causes ranked by how well their arithmetic reproduces the log, each with the
    flag to change, its cost, and what the calculators predict after the fix.

    Example: gpu-advisor diagnose --log vllm.log --cmd "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32768"
    """
    from bot.offline.compose.diagnosis import render
    from bot.offline.understand.paste import read_paste
    from bot.offline.understand.paste.setup import diagnose_args
    from bot.offline.understand.request.reader import read
    from tools import call

    request = read(question)
    lang = lang if lang in ("zh", "en") else request.language
    with user_errors(lang):
        text = "\n".join(t for t in (_file(config, lang), cmd or "", _file(log, lang), question) if t)
        if not text.strip():
            raise InvalidInput(
                "Give a log (--log), a launch command (--cmd) or a config (--config).",
                "请给出日志（--log）、启动命令（--cmd）或配置文件（--config）。",
                field="log",
            )
        paste = read_paste(text)
        args, unknown = diagnose_args(paste, request)
        args.update({k: v for k, v in (("model", model), ("gpu", gpu), ("n_gpus", n_gpus)) if v})
        out = call("diagnose", args) if (paste.anything or paste.evidence or model or gpu) else None
    if as_json:
        print_json({"input": args, "output": out, "read": paste.read, "notes": paste.notes})
        return
    head, below = render(out, paste, args, unknown, lang)  # the diagnosis alone: what leads, then what to check
    console.print(Markdown("\n\n".join(head + below)))


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
        from bot.cli import collector_paused

        lang = detect_language(text)
        with user_errors(lang), collector_paused():  # one answer, then the process ends
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

    app.command("diagnose")(diagnose_cmd)
