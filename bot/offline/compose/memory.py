"""Composers for the sizes of a model, which need no GPU: weights, KV cache, ZeRO-stage model states,
rough training memory (all from `model_memory`)."""

from __future__ import annotations

from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.train import by_method
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, count, gb, method_label
from bot.offline.understand.frames import DEFAULT_GPU
from bot.offline.understand.parse import ParsedQuestion


def _args(s: dict[str, Any], **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"model": s["model"]}
    if s.get("precision") in ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"):
        args["precision"] = s["precision"]
    for key in ("context_len", "batch", "seq_len", "micro_batch", "n_gpus"):
        if s.get(key):
            args[key] = s[key]
    if s.get("method") in ("full", "lora", "qlora"):
        args["method"] = s["method"]
    if s.get("grad_checkpointing") is not None:
        args["grad_checkpointing"] = s["grad_checkpointing"]
    args.update(extra)
    return args


def weights(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    r = run("model_memory", _args(s))
    out.add(
        say(
            "weights_verdict",
            lang,
            model=r["model"],
            precision=r["precision"],
            weights=gb(r["weights_gb"]),
            params=count(r["params_b"] * 1e9),
        )
    )
    w = r["weights_by_precision_gb"]
    out.add(
        say(
            "weights_table",
            lang,
            fp32=gb(w["fp32"]),
            bf16=gb(w["bf16"]),
            fp8=gb(w["fp8"]),
            int8=gb(w["int8"]),
            int4=gb(w["int4"]),
        )
    )
    out.add(say("weights_note", lang))
    out.add(assumptions_block(r["assumptions"], lang, ("model_architecture", "precision")))


def kv_cache(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    args = _args(s)
    if args.get("precision") in ("fp8", "int8", "fp16", "bf16"):  # a precision in a KV question is the cache's
        args["kv_precision"] = args.pop("precision")
    r = run("model_memory", args)
    out.add(
        say(
            "kv_verdict",
            lang,
            model=r["model"],
            per_token=f"{r['kv_cache_bytes_per_token']:,.0f}",
            ctx=f"{r['context_len']:,}",
            per_request=gb(r["kv_cache_gb_per_request"]),
            kv_precision=r["kv_precision"],
        )
    )
    if r["batch"] > 1:
        out.add(
            say(
                "kv_batch",
                lang,
                batch=r["batch"],
                total=gb(r["kv_cache_gb"]),
                weights=gb(r["weights_gb"]),
                serving=gb(r["serving_gb"]),
            )
        )
    out.add(say("kv_note", lang))
    out.add(assumptions_block(r["assumptions"], lang, ("model_architecture", "kv_precision", "context_len", "batch")))


def zero_states(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    r = run("model_memory", _args(s))
    rows = [
        say(
            "zero_row",
            lang,
            stage=z["stage"],
            weights=gb(z["weights_gb"]),
            grads=gb(z["gradients_gb"]),
            optim=gb(z["optimizer_gb"]),
            total=gb(z["per_gpu_gb"]),
        )
        for z in r["zero_stages"]
    ]
    out.add(
        say(
            "zero_verdict",
            lang,
            model=r["model"],
            n=r["zero_stages"][0]["n_gpus"],
            method_label=method_label(r["method"], lang),
            states=gb(r["model_states_gb"]),
            z3=gb(r["zero_stages"][3]["per_gpu_gb"]),
            bpp=f"{r['bytes_per_trainable_param']:g}",
        )
    )
    out.add(say("zero_header", lang) + "\n" + "\n".join(rows))
    out.add(say("zero_note", lang))
    out.add(assumptions_block(r["assumptions"], lang, ("model_architecture", "bytes_per_trainable_param", "n_gpus")))


def train_memory(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    table = ""
    if s.get("workload") == "finetune" and p.method is None:  # no method named: each method's count on a card
        table = by_method({**s, "gpu": s.get("gpu") or DEFAULT_GPU}, run, lang)
    r = run("model_memory", _args(s))
    out.add(
        say(
            "train_memory_verdict",
            lang,
            model=r["model"],
            method_label=method_label(r["method"], lang),
            total=gb(r["training_total_gb"]),
            states=gb(r["model_states_gb"]),
            act=gb(r["activations_gb"]),
            bpp=f"{r['bytes_per_trainable_param']:g}",
            trainable=count(r["trainable_params_b"] * 1e9),
        )
    )
    z = r["zero_stages"]
    out.add(say("train_memory_zero", lang, n=z[0]["n_gpus"], z2=gb(z[2]["per_gpu_gb"]), z3=gb(z[3]["per_gpu_gb"])))
    out.add(table or say("train_memory_note", lang))
    out.add(
        assumptions_block(
            r["assumptions"],
            lang,
            (
                "model_architecture",
                "bytes_per_trainable_param",
                "seq_len",
                "micro_batch",
                "grad_checkpointing",
                "lora_rank",
            ),
        )
    )
