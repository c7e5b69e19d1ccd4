"""Causes the log's own figures or words establish, whatever the workload: fragmentation (reserved but
unallocated), another process on the GPU, host RAM, NCCL, a precision the card lacks."""

from __future__ import annotations

import math

from tools.diagnose.context import ENGINES, SERVING, SMALLER, Candidate, Setup, gib
from tools.diagnose.facts import fact, say
from tools.diagnose.host import host_causes
from tools.units import GiB

#: reserved-but-unallocated memory at least this share of the card is "large"
LARGE_UNALLOCATED = 0.05
#: memory held outside this process that counts as "another process" (the CUDA context alone is less)
OTHER_PROCESS_MIN = 1.0 * GiB
#: the older message ("… free; … reserved in total by PyTorch", no "this process has") leaves this process's own
#: memory outside PyTorch's allocator (CUDA context, cuBLAS workspaces, NCCL buffers: up to ~2.5 GiB on the
#: multi-GPU A100 runs of the corpus) inside "capacity − free − reserved"; only more than this share of the card,
#: and at least `OTHER_PROCESS_RESERVED_MIN`, is another process's
OTHER_PROCESS_SHARE = 0.10
OTHER_PROCESS_RESERVED_MIN = 3.0 * GiB
#: a vocabulary this large makes the fp32 logits one of the largest single tensors of a training step
LARGE_VOCAB = 100_000


def log_causes(s: Setup) -> list[Candidate]:
    i, out = s.inp, []
    x = i.failed_alloc_gib * GiB if i.failed_alloc_gib else None
    if i.reserved_gib is not None and i.allocated_gib is not None and i.reserved_gib > i.allocated_gib:
        loose = (i.reserved_gib - i.allocated_gib) * GiB
        enough = x is not None and loose >= x
        large = loose >= LARGE_UNALLOCATED * (s.capacity or 0)  # PyTorch's hint: "if reserved but unallocated is large"
        arith = say("fragmentation" if enough or x is None else "fragmentation_short", fig=gib(loose), reserved=f"{i.reserved_gib:.2f}", allocated=f"{i.allocated_gib:.2f}",
                    ask=f"{i.failed_alloc_gib or 0:.2f}")  # fmt: skip
        out.append(Candidate("fragmentation", arith, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
                             named=enough and large, prior=_fragmentation_prior(s, enough, large),
                             after=lambda: {"tool": "diagnose", "change": "expandable_segments:True",
                                            "reclaimable_gib": round(loose / GiB, 2),
                                            "covers_request": enough}))  # fmt: skip
    other, own = _other_process(s)
    if other is not None and other >= OTHER_PROCESS_MIN:
        cap = s.capacity or 0
        arith = say("other_process", fig=gib(other), cap=gib(cap), free=f"{i.free_gib or 0:.2f}", own=gib(own))
        # the other process is why only if its memory, freed, would have covered the request (a 128 GiB request on
        # a 32 GiB card fails whoever else is there)
        covers = x is None or x <= other + (i.free_gib or 0) * GiB
        # read from the older message on a multi-GPU job, what this rank's allocator does not hold may be the job's
        # other ranks on this card (each touching GPU 0): a cause to check, not the one that leads
        ranks = i.process_gib is None and i.other_process_gib is None and i.n_gpus > 1
        named = covers and not ranks
        out.append(Candidate("other_process_memory", arith, "CUDA_VISIBLE_DEVICES", "a GPU with nothing else on it",
                             named=named, prior=0.7 if named else 0.3 if covers else 0.1, figure=other))  # fmt: skip
    out += host_causes(s)
    if i.error_kind in ("nccl_timeout", "nccl_error"):
        consumer = s.gpu is not None and s.gpu.segment == "consumer"
        flag, val = ("NCCL_P2P_DISABLE", 1) if consumer or i.p2p is False else ("NCCL_SOCKET_IFNAME", "the interface")
        out.append(Candidate("nccl_timeout_or_env", say("named", what="NCCL"), flag, val, named=True, prior=0.8))
        if consumer:
            out.append(Candidate("p2p_or_interconnect", say("named", what="NCCL on GeForce (no P2P)"),
                                 "NCCL_P2P_DISABLE", 1, prior=0.6))  # fmt: skip
    out += precision_causes(s)
    out += _weights_alone(s)
    out += _attention_scores(s)
    engine_blind = s.framework in ENGINES and s.capacity is None  # an engine on a card not given: nothing to size
    if s.oom and (s.model is None or (s.workload == "train" and s.gpu is None) or s.framework in ("tgi", "lmdeploy")
                  or engine_blind):  # fmt: skip
        out += _usual_suspects(s)  # nothing to compute with: the usual suspects of that kind of run
    return out


#: an allocation this many times the model's largest weight tensor is no weight, nor a KV block
NOT_A_WEIGHT = 4
#: the shortest prompt whose attention scores are worth naming (below it they are small beside the weights)
SCORES_MIN_TOKENS = 2048


def _attention_scores(s: Setup) -> list[Candidate]:
    """One huge allocation while a model generates by hand (transformers, a script; engines use flash/paged
    attention): the largest weight tensor (the embedding) is far smaller, and the KV cache grows a token at a
    time; what is that big in one piece is one layer's attention scores, heads × L² × 2 bytes, when attention runs
    eagerly (no SDPA / FlashAttention). The prompt length L that reproduces the allocation is said; it must fit
    the model's context (frameworks.yaml `transformers.eager_attention_scores`)."""
    i, m = s.inp, s.model
    if not (i.failed_alloc_gib and m is not None and s.workload == "infer" and s.framework not in ENGINES):
        return []
    x = i.failed_alloc_gib * GiB
    largest = m.vocab_size * m.hidden_size * 2  # the embedding (or lm_head) in 16 bits
    tokens = int(math.sqrt(x / (m.n_heads * 2)))
    context = max(i.max_model_len or 0, m.max_context)
    if x < NOT_A_WEIGHT * largest or not SCORES_MIN_TOKENS <= tokens <= context:
        return []
    arith = say("attention_scores", fig=gib(x), largest=gib(largest), heads=m.n_heads, tokens=f"{tokens:,}")
    fix = fact("transformers", "eager_attention_scores")
    return [Candidate("activations_too_large", arith, fix["flag"], fix["propose"], named=True, prior=0.6,
                      figure=x, extra={"words": "attention_scores"})]  # fmt: skip


def _fragmentation_prior(s: Setup, enough: bool, large: bool) -> float:
    """How likely fragmentation is: the loose memory covers the request and is a large share of the card (PyTorch's
    own hint); it covers the request and there is no model to compute the other terms with (the request would
    have fit in memory the allocator already holds: the only figure that matches); it covers it; it does not."""
    if enough and large:
        return 0.5
    if enough and s.model is None:
        return 0.4  # above the usual suspects, which are said as likely, never matched
    return 0.2 if enough else 0.02


def _usual_suspects(s: Setup) -> list[Candidate]:
    """Without a model the arithmetic cannot run; the causes such a run most often has, by what is known of it
    (a serving engine, DeepSpeed and its stage, plain training), each said as a likely cause, never a match."""
    i = s.inp
    what = say("usual")
    if s.workload == "infer" and s.framework in SERVING:  # vLLM / SGLang reserve their share of the card whole
        return [Candidate("memory_utilization_setting", what, "--gpu-memory-utilization", 0.8, prior=0.35),
                Candidate("batch_or_concurrency_too_high", what, "--max-num-seqs", 64, prior=0.33)]  # fmt: skip
    if s.workload == "infer" and s.framework in ENGINES:
        return [Candidate("batch_or_concurrency_too_high", what, "--max-num-seqs", 64, prior=0.35),
                Candidate("memory_utilization_setting", what, "--gpu-memory-utilization", 0.8, prior=0.3)]  # fmt: skip
    if s.workload == "infer":  # a model loaded by hand (transformers, a local runtime): the weights, then the input
        return [Candidate("weights_exceed_memory", what, "load_in_4bit", True, prior=0.35),
                Candidate("activations_too_large", what, "max_new_tokens", 512, prior=0.3)]  # fmt: skip
    out = []
    if s.model is not None and s.model.vocab_size >= LARGE_VOCAB and s.workload == "train":
        out.append(Candidate("logits_memory", what, "enable_liger_kernel", True, prior=0.36))
    if i.offload != "none" and s.workload == "train":  # the states are in host RAM: what stays is the activations
        out.append(Candidate("activations_too_large", what, "gradient_checkpointing", True, prior=0.36))
    if i.zero_stage == 3:
        return out + [Candidate("needs_offload", what, "zero_optimization.offload_optimizer.device", "cpu", prior=0.34),
                Candidate("zero_stage_buffers", what, "stage3_max_live_parameters", 100_000_000, prior=0.32),
                Candidate("load_time_peak", what, "low_cpu_mem_usage", True, prior=0.3)]  # fmt: skip
    if (s.framework == "deepspeed" or i.zero_stage in (1, 2)) and "method" in i.model_fields_set and i.method == "full":
        return out + [Candidate("optimizer_states_unsharded", what, "zero_optimization.stage", 3, prior=0.34),
                Candidate("needs_offload", what, "zero_optimization.offload_optimizer.device", "cpu", prior=0.32),
                Candidate("zero_stage_buffers", what, "reduce_bucket_size", 50_000_000, prior=0.3)]  # fmt: skip
    if s.framework == "deepspeed" or i.zero_stage in (1, 2):
        return out + [Candidate("optimizer_states_unsharded", what, "zero_optimization.stage", 3, prior=0.34),
                Candidate("zero_stage_buffers", what, "reduce_bucket_size", 50_000_000, prior=0.32),
                Candidate("needs_offload", what, "zero_optimization.offload_optimizer.device", "cpu", prior=0.28)]  # fmt: skip
    if s.workload == "train" and i.n_gpus > 1 and not i.zero_stage:  # data parallel copies the model to each GPU
        out.append(Candidate("zero_stage_buffers", what, "zero_optimization.stage", 3, prior=0.34,
                             extra={"words": "unsharded_weights"}))  # fmt: skip
    if s.workload == "train":
        return out + [Candidate("activations_too_large", what, "gradient_checkpointing", True, prior=0.32),
                Candidate("optimizer_states_unsharded", what, "finetuning_type", "lora", prior=0.3)]  # fmt: skip
    return out


def _weights_alone(s: Setup) -> list[Candidate]:
    """Whatever ran, weights larger than the card explain an OOM on their own (serving computes this with tp)."""
    spills = (
        s.workload == "infer"
        and s.framework not in ENGINES
        and (s.oom or s.inp.symptom in ("cpu_fallback", "slow", "low_gpu_util"))
    )  # a runtime that is not a serving engine puts what does not fit on the CPU (or fails)
    if not (s.model and s.capacity) or s.inp.n_gpus > 1 or not ((s.oom and s.workload != "infer") or spills):
        return []
    if s.workload == "train" and s.inp.method == "qlora":  # a 4-bit base already: the training terms size it
        return []
    from tools.diagnose.serve import weights_bytes

    w = weights_bytes(s)
    if w <= s.capacity:
        return []
    arith = say("weights_per_gpu", weights=gib(w), total=gib(w), tp=1, usable=gib(s.capacity), cap=gib(s.capacity),
                util="1")  # fmt: skip
    if s.inp.precision in ("int4", "nf4"):  # a 4-bit build already (Ollama's default tag): no lower bit to load in
        return [Candidate("weights_exceed_memory", arith, "model", SMALLER, named=True, prior=0.8)]
    return [Candidate("weights_exceed_memory", arith, "load_in_4bit", True, named=True, prior=0.8)]


def _other_process(s: Setup) -> tuple[float | None, float]:
    """Memory on the card that this process does not hold, and what this process holds: as the log says it
    ("this process has …"), or, from the older message, what PyTorch reserved (then only a share of the card
    this process's own context cannot account for counts: `OTHER_PROCESS_SHARE`)."""
    i = s.inp
    own = i.process_gib * GiB if i.process_gib is not None else 0.0
    if i.other_process_gib is not None:
        return i.other_process_gib * GiB, own
    if s.capacity and i.free_gib is not None and i.process_gib is not None:
        return s.capacity - i.free_gib * GiB - own, own
    if s.capacity and i.free_gib is not None and i.reserved_gib is not None:
        reserved = i.reserved_gib * GiB
        outside = s.capacity - i.free_gib * GiB - reserved
        if outside >= max(OTHER_PROCESS_RESERVED_MIN, OTHER_PROCESS_SHARE * s.capacity):
            return outside, reserved
    return None, own


def precision_causes(s: Setup) -> list[Candidate]:
    g, i = s.gpu, s.inp
    said = i.unsupported
    if g is None:
        if i.error_kind != "unsupported_precision" and not said:
            return []
        fix = _precision_fix(said, None, s)
        return [Candidate("precision_unsupported", say("named", what=said or "precision"), *fix, named=True, prior=0.8)]
    lacks = None
    if (i.precision == "bf16" or said == "bf16") and not g.bf16_tflops:
        lacks = "bf16"
    elif (i.precision == "fp8" or said == "fp8") and not g.fp8_tflops:
        lacks = "fp8"
    elif said == "flash_attn" and not g.bf16_tflops:  # FlashAttention-2 needs Ampere, as bf16 does
        lacks = "FlashAttention-2"
    if (
        lacks is None
        and not g.bf16_tflops
        and i.precision in _AUTO_DTYPE
        and s.workload == "infer"
        and (i.error_kind or i.symptom)
    ):  # an engine's dtype "auto" loads a bf16 checkpoint in bf16, which this card cannot run (weight-only
        # 4/8-bit checkpoints too: their activations and unquantised layers are in that dtype)
        arith = say("precision", gpu=g.name, family=g.family, precision="bf16")
        return [Candidate("precision_unsupported", arith, "--dtype", "half", prior=0.55)]
    if lacks is None:  # the card supports what was asked: the error is elsewhere (a kernel, a version)
        if i.error_kind == "unsupported_precision" and not said:
            return [Candidate("precision_unsupported", say("named", what=said or "precision"), *_precision_fix(said, g, s),
                              named=True, prior=0.7)]  # fmt: skip
        return []
    arith = say("precision", gpu=g.name, family=g.family, precision=lacks)
    return [Candidate("precision_unsupported", arith, *_precision_fix(said or lacks, g, s), named=True, prior=0.85)]


#: weight precisions whose compute runs in the checkpoint's 16-bit dtype (dtype "auto"): none said, or weight-only
#: quantisation (AWQ / GPTQ / bitsandbytes)
_AUTO_DTYPE = (None, "int4", "int8", "nf4")


def _precision_fix(what: str | None, g, s: Setup) -> tuple[str, object]:
    if what in ("flash_attn", "FlashAttention-2"):
        return "attn_implementation", "sdpa"
    if what == "fp8":
        return "--dtype", "bfloat16" if g is not None and g.bf16_tflops else "float16"
    if s.framework in ENGINES:  # bf16 -> fp16, in the serving engine's own flag (vLLM, SGLang, lmdeploy)
        return "--dtype", "half"
    if s.workload == "infer":  # a model loaded by hand for inference: the dtype it is loaded in
        return "torch_dtype", "float16"
    return "fp16", True  # a trainer: mixed precision in fp16 (with loss scaling)
