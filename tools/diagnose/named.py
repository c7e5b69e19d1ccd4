"""Causes the error message or the user's description names by itself, with the log's own figures where it
prints them: they hold whether or not the model and the card are known (the calculators add their arithmetic
when they are)."""

from __future__ import annotations

from tools.diagnose.context import ENGINES, LOCAL, Candidate, Setup, count, flag_values, gib
from tools.diagnose.context import SMALLER as _SMALLER
from tools.diagnose.facts import fact, say, value
from tools.diagnose.serve import MAX_UTILIZATION, RAISES, fewest_tp, utilization, weights_bytes
from tools.memory.capacity import GPUS_PER_NODE
from tools.units import BYTES_PER_PARAM

#: a kind of error or symptom -> the causes it names, most likely first (with their prior)
_SLOW_SECOND = 0.5


def _bnb_bits(i) -> int | None:
    """The bits of a bitsandbytes base the run trains on (load_in_8bit / load_in_4bit set, or QLoRA); None: none
    (a GPTQ/AWQ checkpoint's int4 is no bitsandbytes load)."""
    flags = flag_values(i)
    if str(flags.get("load_in_8bit", "")).lower() in ("true", "1"):
        return 8
    if str(flags.get("load_in_4bit", "")).lower() in ("true", "1") or i.method == "qlora":
        return 4
    return None


def named_causes(s: Setup) -> list[Candidate]:
    i, out = s.inp, []
    kind, symptom = i.error_kind, i.symptom
    if kind == "kv_too_small" and i.kv_tokens_reported is not None and i.max_model_len:
        m, n = i.kv_tokens_reported, i.max_model_len
        arith = say("kv_log", len=f"{n:,}", kv_tokens=f"{m:,}")
        fix = m // 1024 * 1024 if m >= 1024 else m
        out.append(Candidate("kv_pool_too_small", arith, "--max-model-len", fix, named=True, prior=0.7))
        util = utilization(s) if s.framework != "sglang" else value("vllm", "gpu_memory_utilization")
        out.append(Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization",
                             MAX_UTILIZATION if util < MAX_UTILIZATION else util, prior=0.45, extra=dict(RAISES)))  # fmt: skip
    elif kind == "kv_too_small":  # the engine's refusal without its figures: its cause all the same
        what = say("named", what="the KV pool cannot hold max_model_len")
        util = utilization(s) if s.framework != "sglang" else value("vllm", "gpu_memory_utilization")
        if util < MAX_UTILIZATION:
            out.append(Candidate("kv_pool_too_small", what, "--gpu-memory-utilization", MAX_UTILIZATION, named=True,
                                 prior=0.6, extra=dict(RAISES)))  # fmt: skip
        elif i.max_model_len:
            out.append(Candidate("kv_pool_too_small", what, "--max-model-len", max(i.max_model_len // 2, 16),
                                 named=True, prior=0.6))  # fmt: skip
    if kind == "heads_not_divisible" and i.heads_reported and i.tp and s.model is None:
        h, tp = i.heads_reported, i.tp
        fix = max(t for t in range(1, tp + 1) if h % t == 0)
        arith = say("heads", heads=h, tp=tp, ratio=f"{h / tp:.2f}", kv="?")
        out.append(Candidate("tp_not_divisible", arith, "--tensor-parallel-size", fix, named=True, prior=0.9))
    if i.quant_misaligned:
        out.append(_quant_tp(s))
    if kind == "no_cache_memory":
        out.append(Candidate("memory_utilization_setting", say("named", what="no memory left for the KV cache"),
                             "--gpu-memory-utilization", MAX_UTILIZATION, named=True, prior=0.6, extra=dict(RAISES)))  # fmt: skip
    if kind == "too_many_tokens":
        seqs = i.max_num_seqs or value("vllm", "max_num_seqs")
        out.append(Candidate("batch_or_concurrency_too_high", say("named", what="too many batched tokens"),
                             "--max-num-seqs" if s.framework in ("vllm", None) else "--max-batch-total-tokens",
                             max(1, seqs // 2), named=True, prior=0.75))  # fmt: skip
    if kind == "crash":  # a fault inside a kernel or the runtime: no memory term reproduces it, the version does
        out.append(Candidate("version_or_bug", say("named", what="a crash inside the framework or the driver"),
                             "the framework version", "upgrade or pin", named=True, prior=0.7))  # fmt: skip
    if kind == "weights_oom" and s.model is None:  # the message (or the asker) says the weights do not fit a card
        more = max(2, i.n_gpus if i.n_gpus > 1 else 2)
        fix = ("--tensor-parallel-size", more) if s.framework in ENGINES or i.n_gpus > 1 else (
            "--quantization", "awq (a 4-bit AWQ checkpoint)")  # fmt: skip
        out.append(Candidate("weights_exceed_memory", say("named", what="the weights do not fit one GPU"), *fix,
                             named=True, prior=0.75))  # fmt: skip
    if kind == "load_oom" and "fsdp" in flag_values(i):
        out.append(_fsdp_wrap(s))
    elif kind == "load_oom":
        out.append(Candidate("load_time_peak", say("named", what="out of memory while loading"), "torch_dtype",
                             "bfloat16", named=True, prior=0.6))  # fmt: skip
    if symptom == "multi_gpu_slower" and i.layer_split:  # layers on each card in turn: one GPU works at a time
        what = say("named", what="layers split across GPUs (device_map / model parallel)")
        out.append(Candidate("compute_or_config_slow", what, "device_map", "one GPU per replica (data parallel)",
                             named=True, prior=0.75))  # fmt: skip
    if symptom == "multi_gpu_slower" and not _compared(s):  # measured on one and on several: slow.py decides
        consumer = s.gpu is not None and s.gpu.segment == "consumer"
        p2p = i.p2p if i.p2p is not None else not consumer
        first, second = (
            ("communication_bound", "p2p_or_interconnect") if p2p else ("p2p_or_interconnect", "communication_bound")
        )
        what = say("named", what="more GPUs, slower")
        fix = ("--tensor-parallel-size", fewest_tp(s)) if s.workload == "infer" else ("gradient_accumulation_steps", 4)
        out.append(Candidate(first, what, *fix, named=True, prior=0.7))
        out.append(Candidate(second, what, *fix, prior=_SLOW_SECOND))
        if not i.layer_split and _parallelism_unknown(s):  # one process over several GPUs: often layers in turn
            out.append(Candidate("compute_or_config_slow", say("layers_in_turn_maybe", n=i.n_gpus), "device_map",
                                 "one GPU per process (torchrun / accelerate launch)", prior=_SLOW_SECOND + 0.05))  # fmt: skip
    if symptom == "low_gpu_util":
        out.append(Candidate("dataloader_bound", say("named", what="low GPU utilisation"), "dataloader_num_workers", 8,
                             named=True, prior=0.7))  # fmt: skip
        out.append(Candidate("compute_or_config_slow", say("named", what="low GPU utilisation"),
                             "per_device_train_batch_size", max(2, i.micro_batch * 2), prior=0.4))  # fmt: skip
    if i.vision_inputs and s.oom and s.workload != "infer":  # every image is hundreds to thousands of tokens
        out.append(Candidate("activations_too_large", say("named", what="images or video in the batch"),
                             "image_max_pixels", 262_144, prior=0.55))  # fmt: skip
    if symptom == "logits":
        out.append(Candidate("logits_memory", say("named", what="the vocabulary logits"), "enable_liger_kernel", True,
                             prior=0.6))  # fmt: skip
    if i.measured_tokens_per_s and s.gpu is None:  # nothing to compare with: a setting is the usual reason
        out.append(Candidate("compute_or_config_slow", say("measured_speed", what=f"{i.measured_tokens_per_s:g} tokens/s"),
                             "--enforce-eager", False, prior=0.4))  # fmt: skip
    if symptom == "slow" and s.workload == "train" and not s.oom and (bnb := _bnb_bits(i)):
        bits = bnb  # bitsandbytes: every matmul dequantises the base weights first
        out.append(Candidate("compute_or_config_slow", say("bnb_slow", bits=bits), "load_in_8bit" if bits == 8 else
                             "load_in_4bit", False, named=True, prior=0.6, extra={"cost": "bnb_off", "words": "bnb_slow"}))  # fmt: skip
    if symptom == "slow" and not i.measured_tokens_per_s:  # an OOM beside "slow": the OOM is the question
        prior = 0.2 if s.oom else 0.5
        if s.workload == "train":  # a trainer has no eager mode to leave: a tiny micro-batch is its usual setting
            out.append(Candidate("compute_or_config_slow", say("told", what="slow"), "per_device_train_batch_size",
                                 max(2, i.micro_batch * 2), prior=prior,
                                 extra={"cost": "larger_micro_batch", "words": "slow_told"}))  # fmt: skip
        else:
            out.append(Candidate("compute_or_config_slow", say("told", what="slow"), "--enforce-eager", False,
                                 prior=prior, extra={"words": "slow_told"}))  # fmt: skip
        if s.workload == "infer" and s.model is not None and s.tp > GPUS_PER_NODE:  # TP across servers
            nodes = -(-s.tp // GPUS_PER_NODE)
            arith = say("inter_node_told", tp=s.tp, nodes=nodes, per_node=GPUS_PER_NODE,
                        n_allreduce=2 * s.model.n_layers)  # fmt: skip
            out.append(Candidate("communication_bound", arith, "tensor × pipeline parallel",
                                 f"tp {GPUS_PER_NODE}, pp {nodes}", prior=0.65, extra={"cost": "pipeline_nodes"}))  # fmt: skip
        if i.n_gpus > 1 and not s.oom:  # slow on several GPUs: what they exchange, over the link they have
            consumer = s.gpu is not None and s.gpu.segment == "consumer"
            fix = (
                ("--tensor-parallel-size", fewest_tp(s))
                if s.workload == "infer"
                else ("gradient_accumulation_steps", 4)
            )
            cause = "p2p_or_interconnect" if consumer and i.p2p is not True else "communication_bound"
            out.append(Candidate(cause, say("told", what="slow"), *fix, prior=0.45))
    out += _spilled(s)
    if symptom == "concurrency":  # it breaks when many requests arrive together: the batch the engine schedules
        what = say("named", what="many requests at once")
        out.append(Candidate("batch_or_concurrency_too_high", what, "--max-num-seqs", 64, prior=0.55))
        out.append(Candidate("memory_utilization_setting", what, "--gpu-memory-utilization", 0.8, prior=0.3))
    if symptom == "silent_exit":  # the OS ends a process that runs out of RAM without a Python traceback
        out.append(Candidate("host_ram", say("named", what="the process ends without an error"), "low_cpu_mem_usage",
                             True, prior=0.6))  # fmt: skip
        out.append(Candidate("load_time_peak", say("named", what="the process ends without an error"),
                             "low_cpu_mem_usage", True, prior=0.4))  # fmt: skip
    if symptom == "merge_export":
        out += _merge(s)
    if symptom == "engine_memory" and s.framework == "lmdeploy":
        out.append(_lmdeploy_reserve(s))
    elif symptom == "engine_memory":
        util = utilization(s)
        if s.capacity:
            arith = say("engine_reserve", util=f"{util:g}", cap=gib(s.capacity), reserve=gib(s.capacity * util))
        else:
            arith = say("engine_reserve_share", util=f"{util:g}")
        out.append(Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization", 0.5,
                             named=s.framework in ENGINES, prior=0.75,
                             extra={"words": "engine_reserve"}))  # fmt: skip
    if symptom == "serial":  # later users wait for the earlier ones: nothing batches the requests
        engine = s.framework in ENGINES  # an engine batches when served as a server; not when called per request
        out.append(Candidate("requests_not_batched", say("said", what="requests served one after another"),
                             "server", _ENGINE_SERVER if engine else _BATCHING, named=not engine,
                             prior=0.5 if engine else 0.8))  # fmt: skip
        if engine:
            out += _queued_over_pcie(s)
    if symptom == "other_process":
        out.append(Candidate("other_process_memory", say("named", what="another process on the GPU"),
                             "CUDA_VISIBLE_DEVICES", "a GPU with nothing else on it", named=True, prior=0.75))  # fmt: skip
    if symptom == "hang" and i.n_gpus > 1:  # no timeout printed: the collective waits on a path that is not there
        consumer = s.gpu is not None and s.gpu.segment == "consumer"
        p2p_first = i.p2p is False or (consumer and i.p2p is not True)
        out.append(Candidate("p2p_or_interconnect", say("hang_p2p"), "NCCL_P2P_DISABLE", 1, named=p2p_first,
                             prior=0.65 if p2p_first else 0.55, extra={"cost": "p2p_disable", "words": "hang_p2p"}))  # fmt: skip
        out.append(Candidate("nccl_timeout_or_env", say("named", what="a hang on several GPUs"), "NCCL_DEBUG", "INFO",
                             prior=0.5 if p2p_first else 0.6))  # fmt: skip
    if i.cuda_runtime_oom and s.framework not in LOCAL and not i.other_process_gib:
        out.append(Candidate("other_process_memory", say("runtime_oom"), "CUDA_VISIBLE_DEVICES",
                             "a GPU with nothing else on it", named=True, prior=0.55))  # fmt: skip
    return out


def _queued_over_pcie(s: Setup) -> list[Candidate]:
    """A batching engine whose requests queue on consumer GPUs without peer-to-peer: every layer of every token
    all-reduces through host memory, and a queued prompt's prefill runs through the same all-reduces while the
    running decodes wait; where fewer GPUs hold the weights, a narrower TP with replicas is the fix."""
    i = s.inp
    consumer = s.gpu is not None and s.gpu.segment == "consumer"
    if s.model is None or not consumer or i.p2p is True or max(s.tp, i.n_gpus) < 2:
        return []
    tp = max(s.tp, i.n_gpus)
    narrow = fewest_tp(s)
    arith = say("queued_pcie", n=tp, gpu=s.gpu.name, n_allreduce=2 * s.model.n_layers, narrow=narrow,
                weights=gib(weights_bytes(s)), replicas=max(1, tp // narrow))  # fmt: skip
    return [Candidate("p2p_or_interconnect", arith, "--tensor-parallel-size", narrow, prior=0.6,
                      extra={"words": "queued_pcie"})]  # fmt: skip


#: the group size of 4-bit GPTQ/AWQ checkpoints as published (frameworks.yaml `vllm.quant_group_size`)
def _quant_tp(s: Setup) -> Candidate:
    """A 4-/8-bit checkpoint's weights are stored in whole groups along the FFN width: each tensor-parallel rank
    must hold whole groups, so the number of groups must divide by the size (frameworks.yaml
    `vllm.quant_tp_alignment`). With the model's FFN width known, the arithmetic; the fix is pipeline parallel over
    the GPUs (it splits layers, not the FFN), else a size the groups divide by, else one GPU."""
    i = s.inp
    rule = fact("vllm", "quant_tp_alignment")
    group, tp = rule["group_size"], max(s.tp, 1)
    n = max(tp, i.n_gpus)
    ffn = s.model.ffn_size if s.model is not None and not s.model.generic else None  # a stand-in's width is a guess
    if ffn and tp > 1 and (ffn // group) % tp:
        groups = ffn // group
        arith = say("quant_groups", ffn=f"{ffn:,}", group=group, groups=groups, tp=tp, ratio=f"{groups / tp:.2f}")
    elif tp > 1:
        arith = say("quant_named", tp=tp)
    else:  # the size that failed is not shown ("大于1时会报…"): any size above one
        arith = say("quant_named_any")
    if n > 1 and s.framework in ("vllm", None):
        return Candidate("tp_not_divisible", arith, "--pipeline-parallel-size", f"{n} --tensor-parallel-size 1",
                         named=True, prior=0.9, extra={"cost": "pipeline_parallel", "words": "quant_groups"})  # fmt: skip
    return Candidate(
        "tp_not_divisible", arith, "--tensor-parallel-size", 1, named=True, prior=0.9, extra={"words": "quant_groups"}
    )


def _fsdp_wrap(s: Setup) -> Candidate:
    """Out of memory while FSDP wraps the model: every rank held the whole model on its GPU before FSDP cut it
    (frameworks.yaml `pytorch.fsdp_init`); with the model and the GPUs known, that copy against the shard, in fp32
    unless a torch_dtype was given (`transformers.from_pretrained_dtype`: mixed precision keeps fp32 parameters)."""
    i = s.inp
    if s.params is not None and i.n_gpus > 1:
        if i.method == "qlora":  # a 4-bit base: its NF4 weights are what is whole on the GPU
            per = BYTES_PER_PARAM["nf4"]
        elif "torch_dtype" in flag_values(i):
            per = BYTES_PER_PARAM[i.precision or "bf16"]
        else:  # from_pretrained loads fp32 unless torch_dtype says; FSDP keeps what it is given
            per = BYTES_PER_PARAM["fp32"]
        whole = per * s.params.total
        arith = say("fsdp_wrap", bytes=f"{per:g}", params=count(s.params.total), whole=gib(whole), n=i.n_gpus,
                    shard=gib(whole / i.n_gpus))  # fmt: skip
        over = s.capacity is None or whole > s.capacity  # the whole copy is larger than the card: it is the OOM
    else:
        arith, over = say("named", what="out of memory while FSDP wraps the model"), True
    fix = fact("pytorch", "fsdp_init")
    return Candidate("load_time_peak", arith, fix["flag"], fix["propose"], named=over, prior=0.6 if over else 0.3,
                     extra={"cost": "fsdp_init"})  # fmt: skip


#: what a fix for requests served one at a time runs instead (said in the answer's words: `fix_server_*`): a
#: continuous-batching server, or, for an engine called once per request (vLLM's offline `LLM.generate` in a web
#: handler), the engine's own server
_BATCHING, _ENGINE_SERVER = "continuous_batching", "engine_server"


def _lmdeploy_reserve(s: Setup) -> Candidate:
    """lmdeploy (TurboMind) gives its KV cache a share of the memory left after the weights (frameworks.yaml knobs
    `kv_pool_fraction`: cache_max_entry_count), so it holds most of the card whatever the model's size."""
    flags = flag_values(s.inp)
    share = _number(flags.get("cache_max_entry_count")) or _knob_default("kv_pool_fraction", "lmdeploy")
    if s.capacity and s.model:
        from tools.diagnose.serve import _weights_gb, weights_bytes
        from tools.units import GB

        four_bit = flags.get("model_format", "").lower() in ("awq", "gptq")  # lmdeploy's own word for 4-bit weights
        w = (_weights_gb(s.model.id, "int4") * GB if four_bit else weights_bytes(s)) / max(s.tp, 1)
        if w >= s.capacity:  # the weights alone exceed the card: no reserve is the reason
            arith = say("weights_per_gpu", weights=gib(w), total=gib(w * max(s.tp, 1)), tp=max(s.tp, 1),
                        usable=gib(s.capacity), cap=gib(s.capacity), util="1")  # fmt: skip
            return Candidate("weights_exceed_memory", arith, "--tp", max(s.tp, 1) * 2, named=True, prior=0.8)
        kv = share * max(s.capacity - w, 0)
        arith = say("lmdeploy_reserve", share=f"{share:g}", cap=gib(s.capacity), weights=gib(w), kv=gib(kv),
                    total=gib(w + kv))  # fmt: skip
    else:
        arith = say("lmdeploy_reserve_share", share=f"{share:g}")
    return Candidate("memory_utilization_setting", arith, "--gpu-memory-utilization", 0.5, named=True, prior=0.75)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _knob_default(knob: str, framework: str) -> float:
    from tools.diagnose.facts import facts

    return facts()["knobs"][knob]["flags"][framework]["default"]


def _merge(s: Setup) -> list[Candidate]:
    """Merging adapters into the base model and exporting it (frameworks.yaml `transformers.merge_16bit`): the
    whole model is materialised in 16-bit in CPU RAM (a 4-bit base dequantised first) before it is written."""
    bytes_ = value("transformers", "merge_16bit")["bytes_per_param"]
    if s.params is not None:
        need = bytes_ * s.params.total
        arith = say("merge_ram", fig=gib(need), bytes=bytes_, params=count(s.params.total))
        fix = f"≥ {gib(need * MERGE_HEADROOM)} GiB"
    else:
        arith, fix = say("merge_ram_share", bytes=bytes_), f"≥ {MERGE_HEADROOM:g} × {bytes_} B × params"
    return [Candidate("host_ram", arith, "RAM + swap", fix, prior=0.6),
            Candidate("load_time_peak", arith, "low_cpu_mem_usage", True, prior=0.35)]  # fmt: skip


#: a layer count above any model's: Ollama's num_gpu at this puts every layer on the GPU
ALL_LAYERS = 999
#: host RAM a merge wants beyond the 16-bit model itself (the loaded copy, the shard being written)
MERGE_HEADROOM = 1.5


def _compared(s: Setup) -> bool:
    i = s.inp
    return bool(s.model and s.gpu and i.single_gpu_tokens_per_s and i.measured_tokens_per_s and i.n_gpus > 1)


#: frameworks whose launch says nothing of how the GPUs share the work (a script on Hugging Face or plain PyTorch)
_PLAIN = frozenset({None, "pytorch", "transformers", "other"})


def _parallelism_unknown(s: Setup) -> bool:
    """Nothing says how the GPUs split the work: no engine's tensor parallel, no launcher, no ZeRO stage."""
    i = s.inp
    return s.framework in _PLAIN and i.tp is None and i.zero_stage is None and i.n_gpus > 1


#: a full offload needing at most this much more than is free: trimming the context (KV cache, graph) is enough
NEAR_FIT = 1.3


def _spilled(s: Setup) -> list[Candidate]:
    """The model did not all go on the GPU: a local runtime (llama.cpp, Ollama) put only some layers there (its
    log says how many, or how much a full offload needs against what is free), the user sees it run on the CPU,
    or several GPUs are there and one holds the whole model."""
    i, out = s.inp, []
    partial = i.layers_total is not None and i.layers_on_gpu is not None and i.layers_on_gpu < i.layers_total
    short = i.required_gib is not None and i.free_gib is not None and i.required_gib > i.free_gib
    if partial or short:
        arith = (
            say("offload_need", need=f"{i.required_gib:.2f}", free=f"{i.free_gib:.2f}")
            if short
            else say("layers_offloaded", on=i.layers_on_gpu, total=i.layers_total)
        )
        near = short and i.required_gib <= NEAR_FIT * i.free_gib  # a shorter context frees the little that is missing
        fix = ("num_ctx", 2048) if near else ("model", _SMALLER)
        if partial and s.oom:  # the runtime chose the split from its own estimate, and still ran out: it under-counted
            out.append(_estimate_short(s))
        out.append(Candidate("weights_exceed_memory", arith, *fix, named=not (partial and s.oom), prior=0.8))
        out.append(Candidate("compute_or_config_slow", arith, *fix, prior=0.55))
    elif i.gpu_layers_unset and not s.oom:  # "./main -m x.gguf -n 128": no -ngl, so every layer runs on the CPU
        rule = fact("llamacpp", "default_gpu_layers")
        out.append(Candidate("compute_or_config_slow", say("gpu_layers_unset"), rule["flag"], rule["value"],
                             named=True, prior=0.8, extra={"words": "gpu_layers_unset"}))  # fmt: skip
    elif s.oom and s.framework in LOCAL and "num_gpu" not in flag_values(i):  # its own split, not the user's
        out.append(_estimate_short(s))
    elif i.symptom == "cpu_fallback":
        what = say("named", what="the model runs on the CPU")
        out.append(Candidate("weights_exceed_memory", what, "model", _SMALLER, prior=0.6))
        out.append(Candidate("compute_or_config_slow", what, "model", _SMALLER, prior=0.5))
        if s.framework in LOCAL:  # the runtime decided that from its estimate, which can count more than is needed
            out.append(Candidate("version_or_bug", say("runtime_estimate_over"), fact("ollama", "layer_split")["flag"],
                                 ALL_LAYERS, prior=0.55,
                                 extra={"words": "runtime_estimate_over"}))  # fmt: skip
    if i.symptom == "one_gpu_used" and i.n_gpus > 1:
        what = say("named", what="one GPU holds the whole model")
        usable = s.capacity * utilization(s) if s.capacity else 0.0
        over = s.model is not None and usable > 0 and weights_bytes(s) > usable
        if over:  # the weights alone are more than the one card they went to gives them
            what = say("whole_on_one", weights=gib(weights_bytes(s)), usable=gib(usable), cap=gib(s.capacity),
                       n=i.n_gpus, share=gib(weights_bytes(s) / i.n_gpus))  # fmt: skip
        fix = ("--tensor-parallel-size", i.n_gpus) if s.framework in ENGINES else ("device_map", "auto")
        cost = {"cost": "layer_split"} if fix[0] == "device_map" and s.workload == "infer" else {}
        out.append(Candidate("weights_exceed_memory", what, *fix, named=over, prior=0.8 if over else 0.6, extra=cost))
    return out


def _estimate_short(s: Setup) -> Candidate:
    """A local runtime sized the GPU's share itself (how many layers, frameworks.yaml `ollama.layer_split`) and
    then ran out of GPU memory: what it allocated beside the layers (compute graph, image encoder, KV cache) was
    more than its estimate counted. Fewer layers on the GPU (`num_gpu`) or a release with a better estimate."""
    on, total, flag = s.inp.layers_on_gpu, s.inp.layers_total, fact("ollama", "layer_split")["flag"]
    if on is not None and total is not None:
        arith, fewer = say("runtime_estimate", on=on, total=total), max(0, on - max(1, on // 4))
    else:  # no layer line pasted: the runtime still chose the split, so fewer than it chose is the fix
        arith, fewer = say("runtime_estimate_unseen"), "N − 4 (N/M: 'offloaded N/M layers to GPU')"
    return Candidate("version_or_bug", arith, flag, fewer, named=True, prior=0.7,
                     extra={"words": "runtime_estimate"})  # fmt: skip
