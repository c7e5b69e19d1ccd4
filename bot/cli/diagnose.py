"""`gpu-advisor diagnose`: why a run broke or runs slow, from what it printed and how it was launched.

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

from bot.cli.output import JsonOpt, console, print_json, user_errors
from bot.offline.compose.diagnosis import render
from bot.offline.understand.paste import Paste, read_paste
from bot.offline.understand.paste.setup import diagnose_args
from bot.offline.understand.request.reader import read
from tools import call
from tools.errors import InvalidInput

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
        paste: Paste = read_paste(text)
        args, unknown = diagnose_args(paste, request)
        args.update({k: v for k, v in (("model", model), ("gpu", gpu), ("n_gpus", n_gpus)) if v})
        out = call("diagnose", args) if (paste.anything or paste.evidence or model or gpu) else None
    if as_json:
        print_json({"input": args, "output": out, "read": paste.read, "notes": paste.notes})
        return
    console.print(Markdown("\n\n".join(render(out, paste, args, unknown, lang))))


def register(app: typer.Typer) -> None:
    app.command("diagnose")(diagnose_cmd)
