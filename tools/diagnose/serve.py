"""Serving causes (vLLM, SGLang): tensor-parallel divisibility, weights per GPU, the pre-allocated KV pool,
the memory fraction vs what is free, and concurrency.

The KV pool is vLLM's start-up arithmetic (frameworks.yaml `kv_pool_preallocated`): total × utilisation −
weights − the activation peak of one profiling pass − non-torch memory, in blocks of 16 tokens. The profiling
pass runs `max_num_batched_tokens` tokens; its peak is the MLP of one layer, where the gate+up output (2 × ffn)
and the activated product (ffn) are live together with three hidden-size tensors (residual, normed input,
output), 2 bytes each, split over the tensor-parallel ranks.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from tools.catalog.architecture import kv_bytes_per_token
from tools.diagnose.context import SERVING, Candidate, Setup, count, gib
from tools.diagnose.facts import fact, say, value
from tools.memory.fit_inference import default_weight_precision, fit_inference
from tools.memory.model_memory import model_memory
from tools.schemas.memory import FitInferenceInput, ModelMemoryInput
from tools.units import BYTES_PER_PARAM, GB, GiB

#: the estimate's KV tokens within this share of the engine's own figure are the same pool (diagnose.MATCH_TOLERANCE);
#: further off, the engine's figure is the one its fix is computed from (named.py), the estimate only a check
MATCH_SHARE = 0.10
#: a fix that gives the KV pool more room: a memory fraction it proposes is a raise, whatever the asker set below it
RAISES = {"raise": True}
#: the highest memory fraction a fix proposes (vLLM needs some room for CUDA graphs and the sampler)
MAX_UTILIZATION = 0.95


def utilization(s: Setup) -> float:
    if s.inp.gpu_memory_utilization:
        return s.inp.gpu_memory_utilization
    if s.framework == "sglang":
        by_tp = value("sglang", "mem_fraction_static")
        tp = s.tp
        return by_tp["tp16" if tp >= 16 else "tp8" if tp >= 8 else "tp4" if tp >= 4 else "tp2" if tp >= 2 else "tp1"]
    return value("vllm", "gpu_memory_utilization")


def heads(s: Setup) -> tuple[int, int]:
    """Attention and KV heads: the catalog record's, unless the engine's own error names another count of attention
    heads (the evidence wins: the record is then not the model that ran, and its KV heads are not known, so they
    are taken as many as the attention heads)."""
    m, said = s.model, s.inp.heads_reported
    if said and said != m.n_heads:
        return said, said
    return m.n_heads, m.n_kv_heads


def heads_ok(s: Setup, tp: int) -> bool:
    h, kv = heads(s)
    return not (h % tp or (kv % tp and tp % kv))


def precision(s: Setup) -> str:
    """As given; else the model's published precision where the card computes in it (DeepSeek-R1: FP8 on H100)."""
    if s.inp.precision:
        return s.inp.precision
    return default_weight_precision(s.model, s.gpu) if s.gpu else "bf16"


def weights_bytes(s: Setup) -> float:
    return _weights_gb(s.model.id, precision(s)) * GB


def fewest_tp(s: Setup) -> int:
    """The narrowest tensor parallel (1, 2, 4, … up to the GPUs there are) whose weights per GPU leave a fifth of
    each card for the KV cache, with heads that divide; 1 where model or card is unknown (the usual advice)."""
    if s.model is None or s.capacity is None:
        return 1
    for t in (1, 2, 4, 8, 16):
        if t <= max(s.inp.n_gpus, s.tp) and heads_ok(s, t) and weights_bytes(s) / t < 0.8 * s.capacity:
            return t
    return max(s.tp, 1)


@functools.lru_cache(maxsize=1024)
def _weights_gb(model_id: str, precision_: str) -> float:
    """model_memory's weights_gb: a per-record constant of the catalog model at a precision (asked by the pool,
    the estimate and every fix of a diagnosis)."""
    return model_memory(ModelMemoryInput(model=model_id, precision=precision_)).weights_gb


def kv_token_bytes(s: Setup, tp: int) -> float:
    """KV bytes per token on one GPU: the KV heads split over tp (replicated when tp exceeds them)."""
    m = s.model
    kv = BYTES_PER_PARAM[s.inp.kv_precision or ("fp16" if precision(s) == "fp16" else "bf16")]
    n_kv = heads(s)[1]
    total = kv_bytes_per_token(m, kv) * n_kv / m.n_kv_heads
    return total * max(1, n_kv // tp) / n_kv if m.attention != "MLA" else total


def profile_tokens(s: Setup, max_len: int) -> int:
    if s.inp.max_num_batched_tokens:
        return s.inp.max_num_batched_tokens
    rule = value("vllm", "profile_tokens")
    if max_len > rule["long_context_threshold"]:
        return rule["chunked_default"]
    return max(max_len, rule["no_chunked_min"])


def activation_peak(s: Setup, tokens: int, tp: int) -> float:
    m = s.model
    ffn = (m.moe_ffn_size or m.ffn_size) * (m.experts_per_token or 1) if m.is_moe else m.ffn_size
    return tokens * (3 * ffn + 3 * m.hidden_size) * 2.0 / tp


def kv_pool(s: Setup, util: float, max_len: int, tp: int) -> dict[str, float]:
    """vLLM's start-up figures: pool bytes and the tokens it holds (whole 16-token blocks)."""
    non_torch = fact("vllm", "non_torch_memory")["value_gib"] * GiB
    tokens = profile_tokens(s, max_len)
    weights = weights_bytes(s) / tp
    act = activation_peak(s, tokens, tp)
    pool = s.capacity * util - weights - act - non_torch
    per_token = kv_token_bytes(s, tp)
    block = fact("vllm", "kv_pool_preallocated")["block_tokens"]
    kv_tokens = max(0, math.floor(pool / per_token / block) * block)
    return {"pool": pool, "kv_tokens": kv_tokens, "weights": weights, "act": act, "non_torch": non_torch,
            "per_token": per_token, "profile_tokens": tokens}  # fmt: skip


def _max_len(s: Setup) -> int:
    return s.inp.max_model_len or s.model.max_context


def _start_len(s: Setup) -> int:
    """The tokens the pool must hold to start: max_model_len; where the error's heads say the catalog record is not
    the model that ran, its context is not known either, and a pool that holds anything is a start."""
    said = s.inp.heads_reported
    return 1 if said and said != s.model.n_heads and not s.inp.max_model_len else _max_len(s)


def _valid_tps(s: Setup) -> list[int]:
    return [t for t in range(1, max(s.inp.n_gpus, 1) + 1) if heads_ok(s, t)]


def tp_causes(s: Setup) -> list[Candidate]:
    """The heads do not divide by the tensor-parallel size. The fix is the largest size that divides them and with
    which the engine starts on the GPUs given; where none starts (the weights need more cards than a valid size
    uses), pipeline parallel over all of them (vLLM splits layers, not heads: no divisibility rule), where that
    starts; else the largest valid size, said to still not start. A size the asker already tried and saw fail is
    not proposed again as it was: with fewer than the visible GPUs, the fix shows the engine only those (early
    releases refuse a size that does not divide the GPUs they see, frameworks.yaml `visible_gpus_divisible`)."""
    tp = s.tp
    if heads_ok(s, tp) or not _tp_evidenced(s):
        return []
    h, kv = heads(s)
    arith = say("heads", heads=h, tp=tp, ratio=f"{h / tp:.2f}", kv=kv) if h % tp else say("kv_heads", kv=kv, tp=tp)
    valid = sorted((t for t in _valid_tps(s) if t <= max(tp, s.inp.n_gpus)), reverse=True) or [1]
    starting = [t for t in valid if s.capacity is None or _after_tp(s, t)["starts"]]
    n = max(s.inp.n_gpus, tp)
    pp_ok = s.framework in ("vllm", None) and s.capacity is not None and n > 1  # (vLLM's flag and arithmetic)
    if not starting and pp_ok and _after_pp(s, n)["starts"]:
        more = say("pp_instead", pp=n, tp=valid[0])
        return [Candidate("tp_not_divisible", (arith[0] + more[0], arith[1] + more[1]), "--pipeline-parallel-size",
                          n, named=True, prior=0.9, after=lambda: _after_pp(s, n))]  # fmt: skip
    fix = (starting or valid)[0]
    if fix < s.inp.n_gpus and fix in tried(s, "tp"):  # it failed as a bare size: the GPUs it sees are why
        devices = ",".join(str(i) for i in range(fix))
        more = say("visible_devices", n=s.inp.n_gpus, tp=fix, devices=devices)
        return [Candidate("tp_not_divisible", (arith[0] + more[0], arith[1] + more[1]), "CUDA_VISIBLE_DEVICES",
                          f"{devices} --tensor-parallel-size {fix}", named=True, prior=0.9,
                          after=lambda: _after_tp(s, fix))]  # fmt: skip
    return [Candidate("tp_not_divisible", arith, "--tensor-parallel-size", fix, named=True, prior=0.9,
                      after=lambda: _after_tp(s, fix))]  # fmt: skip


def torch_oom(s: Setup) -> bool:
    """The log shows the allocator's own failure ("Tried to allocate …"), not words that it did not run."""
    return s.inp.error_kind == "oom" and s.inp.failed_alloc_gib is not None


def _tp_evidenced(s: Setup) -> bool:
    """The divisibility rule is a cause only where the engine said so (its error) or the asker set the size and
    no other failure is reported: a size read off the card count is our guess, and an engine that ran out of
    memory got past its start-up check of the heads."""
    if s.inp.error_kind == "heads_not_divisible":
        return True
    return bool(s.inp.tp) and s.inp.error_kind in (None, "crash")


def tried(s: Setup, field: str) -> set[float]:
    """Values of a setting the asker says they tried and saw fail ('tried' items, 'name=value')."""
    out = set()
    for item in (s.inp.tried or "").split():
        name, _, val = item.partition("=")
        try:
            out |= {float(val)} if name == field else set()
        except ValueError:
            continue
    return out


def _after_tp(s: Setup, tp: int) -> dict[str, Any]:
    if s.capacity is None:  # no card known: the change alone
        return {"tool": "diagnose", "change": f"--tensor-parallel-size {tp}", "tp": tp}
    util = utilization(s)
    r = kv_pool(s, util, _max_len(s), tp)
    return {"tool": "diagnose.kv_pool", "change": f"--tensor-parallel-size {tp}", "tp": tp,
            "weights_gib_per_gpu": round(r["weights"] / GiB, 2), "kv_tokens": r["kv_tokens"],
            "starts": r["kv_tokens"] >= _start_len(s)}  # fmt: skip


def _after_pp(s: Setup, pp: int) -> dict[str, Any]:
    """Pipeline parallel over `pp` GPUs, tp 1: each holds 1/pp of the layers, so of the weights and of the KV per
    token; the profiling pass's peak is one layer's, on every stage."""
    util, max_len = utilization(s), _max_len(s)
    r = kv_pool(s, util, max_len, 1)
    weights = r["weights"] / pp
    pool = s.capacity * util - weights - r["act"] - r["non_torch"]
    block = fact("vllm", "kv_pool_preallocated")["block_tokens"]
    kv_tokens = max(0, math.floor(pool / (r["per_token"] / pp) / block) * block)
    return {"tool": "diagnose.kv_pool", "change": f"--pipeline-parallel-size {pp}", "tp": 1, "pp": pp,
            "weights_gib_per_gpu": round(weights / GiB, 2), "kv_tokens": kv_tokens,
            "starts": kv_tokens >= _start_len(s)}  # fmt: skip


def memory_causes(s: Setup) -> list[Candidate]:
    if s.capacity is None:
        return []
    util, tp, max_len = utilization(s), s.tp, _max_len(s)
    r = kv_pool(s, util, max_len, tp)
    out: list[Candidate] = []
    usable = s.capacity * util - r["non_torch"]
    if r["weights"] > usable:
        out.append(_weights(s, r, util, tp))
    pool_arith = say("kv_pool", cap=gib(s.capacity), util=f"{util:g}", weights=gib(r["weights"]), act=gib(r["act"]),
                     tokens=f"{r['profile_tokens']:,}", other=gib(r["non_torch"]), pool=gib(max(r["pool"], 0)),
                     kv_tokens=f"{r['kv_tokens']:,}", per_token=f"{r['per_token'] / 1024:g}")  # fmt: skip
    short = r["kv_tokens"] < max_len
    if s.inp.error_kind == "kv_too_small" and r["pool"] <= 0:
        return out  # the engine built a pool and profiled: weights the estimate says leave none are not what ran
    if s.inp.error_kind == "kv_too_small" or (short and r["pool"] > 0):
        en, zh = pool_arith
        if short:
            more = say("kv_vs_len", len=f"{max_len:,}", kv_tokens=f"{r['kv_tokens']:,}")
            en, zh = en + more[0], zh + more[1]
        flag, val, after = _kv_fix(s, r, util, tp, max_len)
        said = s.inp.kv_tokens_reported
        off = bool(said) and abs(r["kv_tokens"] - said) > MATCH_SHARE * said  # the log's pool is not the estimate's
        out.append(Candidate("kv_pool_too_small", (en, zh), flag, val, figure=r["kv_tokens"], reported=said,
                             named=s.inp.error_kind == "kv_too_small" and not off,
                             prior=0.3 if off or not short or torch_oom(s) else 0.8, after=after, extra=dict(RAISES)))  # fmt: skip
        # an engine that pre-allocates its pool refuses to start by arithmetic, with its own ValueError: a torch
        # out-of-memory error is an allocation that failed, not that refusal
        if short and not torch_oom(s) and (s.framework in SERVING or (s.framework is None and s.inp.max_model_len)):
            out[-1].extra["shortfall"] = True
    if r["pool"] <= 0 or s.inp.error_kind == "no_cache_memory":
        arith = say("utilization_none", cap=gib(s.capacity), util=f"{util:g}", usable=gib(s.capacity * util),
                    weights=gib(r["weights"]), act=gib(r["act"]))  # fmt: skip
        flag, val, after = _kv_fix(s, r, util, tp, max_len)
        out.append(Candidate("memory_utilization_setting", arith, flag, val, named=s.inp.error_kind == "no_cache_memory",
                             prior=0.7, after=after, extra=dict(RAISES)))  # fmt: skip
    free = s.inp.free_gib * GiB if s.inp.free_gib is not None else None
    if free is not None and s.capacity * util > free + 0.5 * GiB and s.inp.error_kind != "oom":
        fit = math.floor((free - 0.5 * GiB) / s.capacity * 100) / 100
        arith = say(
            "utilization_free", want=gib(s.capacity * util), cap=gib(s.capacity), util=f"{util:g}", free=gib(free)
        )
        out.append(Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization", max(fit, 0.05),
                             figure=s.capacity * util, named=True, prior=0.8))  # fmt: skip
        out.append(Candidate("other_process_memory", arith, "CUDA_VISIBLE_DEVICES", "a GPU with nothing else on it",
                             named=True, prior=0.75))  # fmt: skip
    if s.inp.error_kind == "oom" and util > MAX_UTILIZATION:  # no room left for activations, graphs, sampler
        arith = say("utilization_high", util=f"{util:g}", cap=gib(s.capacity), rest=gib(s.capacity * (1 - util)))
        out.append(Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization", 0.9, named=True,
                             prior=0.7))  # fmt: skip
    if s.inp.error_kind == "oom" and r["pool"] > 0 and util <= MAX_UTILIZATION and s.framework in SERVING:
        # the pool was reserved and the weights fit: what ran out is the memory outside the fraction
        lower = round(max(util - 0.1, 0.5), 2)
        arith = say("outside_pool", util=f"{util:g}", cap=gib(s.capacity), inside=gib(s.capacity * util),
                    rest=gib(s.capacity * (1 - util)))  # fmt: skip
        out.append(Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization", lower, prior=0.55,
                             extra={"words": "outside_pool"}))  # fmt: skip
    if s.inp.error_kind == "oom" and r["pool"] > 0:
        seqs = s.inp.max_num_seqs or value("vllm", "max_num_seqs")
        need = seqs * max_len * r["per_token"]
        arith = say("concurrency", seqs=seqs, len=f"{max_len:,}", per_token=f"{r['per_token'] / 1024:g}",
                    need=gib(need), pool=gib(r["pool"]))  # fmt: skip
        lower = max(1, seqs // 2)
        out.append(Candidate("batch_or_concurrency_too_high", arith, "--max-num-seqs", lower, prior=0.5))
    return out


def _weights(s: Setup, r: dict[str, float], util: float, tp: int) -> Candidate:
    total = r["weights"] * tp
    arith = say("weights_per_gpu", weights=gib(r["weights"]), total=gib(total), tp=tp,
                usable=gib(s.capacity * util - r["non_torch"]), cap=gib(s.capacity), util=f"{util:g}")  # fmt: skip
    for t in (2, 4, 8, 16):
        if t > tp and heads_ok(s, t) and total / t < s.capacity * util * 0.8:
            return Candidate("weights_exceed_memory", arith, "--tensor-parallel-size", t, named=True, prior=0.9,
                             after=lambda t=t: _after_tp(s, t))  # fmt: skip
    return Candidate("weights_exceed_memory", arith, "--quantization", "awq (a 4-bit AWQ checkpoint)",
                     named=True, prior=0.9)  # fmt: skip


def _kv_fix(s: Setup, r: dict[str, float], util: float, tp: int, max_len: int):
    """The flag that lets max_model_len start: a higher utilisation where ≤ MAX_UTILIZATION does it, else a
    shorter max_model_len (the tokens the pool holds), else more tensor parallel."""
    need = (r["weights"] + activation_peak(s, profile_tokens(s, max_len), tp) + r["non_torch"]
            + max_len * r["per_token"]) / s.capacity  # fmt: skip
    u = math.ceil(need * 100) / 100
    if need <= MAX_UTILIZATION and not any(v >= u for v in tried(s, "gpu_memory_utilization")):
        return "--gpu-memory-utilization", u, lambda: _after_pool(s, u, max_len, tp, f"--gpu-memory-utilization {u}")
    if r["kv_tokens"] >= 1024:
        n = r["kv_tokens"] // 1024 * 1024
        return "--max-model-len", n, lambda: _after_pool(s, util, n, tp, f"--max-model-len {n}")
    bigger = next((t for t in (2, 4, 8, 16) if t > tp and heads_ok(s, t)), None)
    if bigger:
        return "--tensor-parallel-size", bigger, lambda: _after_tp(s, bigger)
    return "--quantization", "awq (a 4-bit AWQ checkpoint)", None


def _after_pool(s: Setup, util: float, max_len: int, tp: int, change: str) -> dict[str, Any]:
    r = kv_pool(s, util, max_len, tp)
    return {"tool": "diagnose.kv_pool", "change": change, "kv_tokens": r["kv_tokens"],
            "kv_pool_gib": round(max(r["pool"], 0) / GiB, 2), "max_model_len": max_len,
            "starts": r["kv_tokens"] >= max_len,
            "concurrent_sequences_at_max_len": round(r["kv_tokens"] / max_len, 2)}  # fmt: skip


def estimate(s: Setup) -> dict[str, Any]:
    """fit_inference on the setup as given: what the calculator alone would have said."""
    if not (s.model and s.gpu):
        return {}
    r = fit_inference(FitInferenceInput(model=s.model.id, gpu=s.gpu.id, n_gpus=s.tp,
                                        precision=s.inp.precision, context_len=_max_len(s),
                                        usable_fraction=utilization(s)))  # fmt: skip
    return {"tool": "fit_inference", "fits": r.fits, "per_gpu_gb": r.per_gpu_gb, "usable_gb": r.usable_gb,
            "params": count(s.params.total), "context_len": _max_len(s),
            "context_set": s.inp.max_model_len is not None}  # fmt: skip
