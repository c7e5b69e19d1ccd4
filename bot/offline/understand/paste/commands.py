"""Launch commands in a paste: `vllm serve`, `python -m vllm.entrypoints…`, `python -m sglang.launch_server`,
`torchrun`, `deepspeed`, `accelerate launch`, `llamafactory-cli train` and training scripts' `--key value`
arguments, with the environment variables before them. Split with `shlex`, as a shell would."""

from __future__ import annotations

import re
import shlex
from typing import Any

from bot.offline.understand.paste.keys import apply, norm

_LAUNCH = re.compile(
    r"(?:^|(?<=[\s，,:：;；`]))\s*(?:[$#>]\s*)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:nohup\s+)?(?:python3?\s+(?:-u\s+)?)?"
    r"(vllm\s+serve|-m\s+vllm\.entrypoints[\w.]*|-m\s+sglang\.launch_server|torchrun|deepspeed|accelerate\s+launch|"
    r"llamafactory-cli\s+(?:train|api|chat|webchat)|\S+\.py|"
    r"(?:\S*/)?llama-(?:cli|server|simple|run)(?:\.exe)?|\.{1,2}/(?:\S*/)?(?:main|server)(?:\.exe)?)(?:\s|$)",
    re.IGNORECASE,
)
_NEEDS_ARGS = re.compile(r"torchrun|deepspeed|accelerate", re.IGNORECASE)
_ARGS = re.compile(r"\s--?[a-z]|\S\.(?:py|ya?ml|json)\b", re.IGNORECASE)
_ARG_LINE = re.compile(r"(?:^|\s)--[a-z][\w-]*[ =]\S+.*\s--[a-z][\w-]*", re.IGNORECASE)
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")
#: llama.cpp's programs ("./main", "./build/bin/main", "llama-cli", "llama-server"), the word a command starts with
_LLAMACPP = re.compile(r"(?:^|/)(?:llama-(?:cli|server|simple|run)|main|server)(?:\.exe)?$")
#: the flags that put llama.cpp's layers on the GPU
_GPU_LAYERS = ("ngl", "n_gpu_layers", "gpu_layers")
#: the framework each launcher names
FRAMEWORK = (("vllm", "vllm"), ("sglang", "sglang"), ("llamafactory", "llamafactory"), ("deepspeed", "deepspeed"),
             ("accelerate", "accelerate"), ("torchrun", "pytorch"))  # fmt: skip


def command_lines(text: str) -> list[str]:
    """The launch commands, each on one line (backslash continuations joined)."""
    joined = re.sub(r"\\\s*\n", " ", text)
    out = []
    for line in joined.splitlines():
        if _ARG_LINE.search(line) and not _LAUNCH.search(line):  # the arguments of a command, pasted alone
            out.append(line[line.index("--") :].strip())
            continue
        if m := _LAUNCH.search(line):
            # a command quoted inline ("我使用 `vllm serve X --tensor-parallel-size 4` 来运行") ends at its backtick
            rest = line[m.start() :].split("`", 1)[0].strip().lstrip("$#> ").strip()
            if _NEEDS_ARGS.match(m.group(1)) and not _ARGS.search(rest):
                continue  # "deepspeed zero2" in a sentence names a tool, it is not a command
            out.append(rest)
    return out


def read_command(line: str, setup: dict[str, Any], flags: dict[str, str]) -> str | None:
    """Read one command into `setup` (diagnose fields) and `flags`; returns the framework it launches."""
    try:
        words = shlex.split(line, comments=False)
    except ValueError:  # an unbalanced quote: split on spaces, as much as can be read
        words = line.split()
    low = line.lower()
    framework = next((fw for word, fw in FRAMEWORK if word in low), None)
    i = 0
    while i < len(words) and _ENV.match(words[i]):
        name, _, val = words[i].partition("=")
        apply(name, val, setup, flags)
        i += 1
    if i < len(words) and _LLAMACPP.search(words[i]) and (words[i].startswith(".") or "llama-" in words[i]):
        framework = "llama.cpp"
    nodes = 1
    positional_model = framework == "vllm" and "serve" in words
    while i < len(words):
        w = words[i]
        if w == "-m":  # python -m <module>: the launcher, not a flag
            i += 2
            continue
        if w.startswith("--") or (w.startswith("-") and len(w) <= 4 and not w[1:].isdigit()):
            key, eq, val = w.partition("=")
            if not eq:
                nxt = words[i + 1] if i + 1 < len(words) else None
                if nxt is not None and not nxt.startswith("-"):
                    val, i = nxt, i + 1
                else:
                    val = "true"
            k = norm(key)
            k = {"tp": "tp", "pp": "pp", "m": "model"}.get(k, k)
            if k == "nnodes":
                nodes = int(val) if val.isdigit() else 1
            elif k == "include" and ":" in val:  # deepspeed --include localhost:0,1,2
                apply("cuda_visible_devices", val.split(":", 1)[1], setup, flags)
            else:
                apply(k, val, setup, flags)
        elif positional_model and words[i - 1] == "serve":
            apply("model", w, setup, flags)
        elif w.endswith((".yaml", ".yml", ".json")):
            flags.setdefault("config_file", w)
            if (stage := re.search(r"(?:z|zero|stage)[_-]?([0-3])", w.lower())) and "ds" in w.lower():
                setup.setdefault("zero_stage", int(stage.group(1)))
        i += 1
    if nodes > 1 and "n_gpus" in setup:
        setup["n_gpus"] *= nodes
    if framework == "llama.cpp" and not any(k in flags for k in _GPU_LAYERS):
        setup["gpu_layers_unset"] = True  # no -ngl: llama.cpp keeps the layers on the CPU (frameworks.yaml)
    return framework
