"""Host RAM beside a serving answer ("本地推理deepseek r1需要多少显存空间？还有多少内存需求呢？", "如果对内存有要求也请
说明一下", "GPU memory, host RAM and disk"): the setup the answer sized (the last serving fit's cards, count and
precision; the fewest cards that hold the model when it did not fit; with only the weights sized, the fewest of
the default card) is fit again with its loader, and fit_inference's `host_ram` is said: per server, by term (vLLM:
the checkpoint through the page cache while loading, the swap space and CPU offload while serving; transformers:
from_pretrained's copy; llama.cpp / Ollama: the mapped GGUF file), the loader assumed, and the checkpoint's disk.
A host RAM already computed (an offload, a hybrid run, a diagnosis) is left as it is.
"""

from __future__ import annotations

import re

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb
from bot.offline.understand.frames import DEFAULT_GPU, FP8_GPU
from bot.offline.understand.request.asks import unanswered
from bot.offline.understand.request.model import Request
from tools.errors import AdvisorError

#: the runtime named: llama.cpp and Ollama map a GGUF file; transformers loads with from_pretrained
_LLAMACPP = re.compile(r"ollama|llama\.?cpp|gguf|lm ?studio", re.I)
_HF = re.compile(r"transformers|from_pretrained|device_map|\bhf\b", re.I)
_SETUP = {False: "serving_host_setup_one", True: "serving_host_setup_nodes"}  # one server, or several
_FIT_KEYS = ("model", "gpu", "n_gpus", "kv_precision", "batch", "context_len", "engine")


def _loader(text: str, engine: str | None) -> str:
    if _LLAMACPP.search(text):
        return "llamacpp"
    return "hf" if engine == "hf" or _HF.search(text) else "vllm"


def _setup(run: ToolRun) -> dict | None:
    """The fit_inference input for the setup the answer sized, or None when it sized no serving setup."""
    fit = next((c for c in run.calls if c.tool == "fit_inference"), None)  # the setup the answer leads with
    if fit is None:
        weights = next((c for c in reversed(run.calls) if c.tool == "model_memory"), None)
        if weights is None:
            return None
        precision = weights.output.get("precision")
        gpu = FP8_GPU if precision == "fp8" else DEFAULT_GPU
        args = {"model": weights.input["model"], "gpu": gpu, **({"precision": precision} if precision else {})}
        fit = run("fit_inference", args)
        return {**args, "n_gpus": fit["n_gpus"] if fit["fits"] else fit["min_gpus"] or 1}
    out = fit.output
    args = {k: fit.input[k] for k in _FIT_KEYS if k in fit.input}
    precision = next((a["value"] for a in out.get("assumptions", []) if a["key"] == "precision"), None)
    n = out["n_gpus"] if out["fits"] else out.get("min_gpus") or out["n_gpus"]
    return {**args, "n_gpus": n, **({"precision": precision} if precision else {})}


def add(request: Request, text: str, run: ToolRun, out: Out, have: tuple[str, float] | None = None) -> None:
    """Say the host RAM per server for the serving setup sized above, when the question asks it and no call
    computed it yet; `have`: the host RAM the user states (their words, GB), set against it."""
    if "host_ram" not in request.cued or not unanswered(["host_ram"], run.calls):
        return
    try:
        args = _setup(run)
        if args is None:
            return
        loader = _loader(text, args.get("engine"))
        r = run("fit_inference", {**args, "loader": loader})
    except AdvisorError:
        return
    h = r["host_ram"]
    t = h["terms_gb"]
    out.add(
        say(
            f"serving_host_ram_{loader}",
            out.lang,
            ram=gb(h["per_node_gb"]),
            setup=say(_SETUP[h["nodes"] > 1], out.lang, n=r["n_gpus"], gpu=r["gpu"], nodes=h["nodes"]),
            precision=next((a["value"] for a in r["assumptions"] if a["key"] == "precision"), ""),
            ckpt=gb(t.get("checkpoint", t.get("load", t.get("mapped_file", 0.0)))),
            swap=gb(t.get("swap_space", 0.0)),
            gpn=h["gpus_per_node"],
            disk=gb(h["disk_gb"]),
        )
    )
    if have is not None:
        key = "serving_host_ram_enough" if have[1] >= h["per_node_gb"] else "serving_host_ram_short"
        out.add(say(key, out.lang, have=have[0], ram=gb(h["per_node_gb"])))
