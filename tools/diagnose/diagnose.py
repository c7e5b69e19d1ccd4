"""`diagnose`: the setup and the evidence -> causes ranked by how well their arithmetic reproduces the log.

Ranking: a cause whose figure agrees with the log's (within `MATCH_TOLERANCE`) or that the error message
names comes first, the closest figure first; then the causes the calculators' totals point at, by how
likely they are. A reported OOM is never answered "fits": when the estimate for the setup fits, the output
says the evidence contradicts it (`contradicts_estimate`) and the causes stay those the log supports.
"""

from __future__ import annotations

from typing import Any

from tools.diagnose import dtype, evidence, fixes, named, serve, slow, split, train, zero3
from tools.diagnose.context import ENGINES, LOCAL, SERVING, Candidate, Setup, flag_values, read_setup, runs
from tools.diagnose.facts import WORDS_ONLY, cause_words, say, words
from tools.schemas.common import assume
from tools.schemas.diagnose import CauseOut, DiagnoseInput, DiagnoseOutput, Fix
from tools.speed import steps

#: a cause's figure within this share of the log's "matches" it
MATCH_TOLERANCE = 0.10
#: the estimate over the usable memory by more than this factor: the totals explain the OOM, not the allocator
OVERRUN = 1.1
#: how many causes the output keeps
TOP = 6
#: flags the reader hands over that the tool understands (they change memory or speed) or knows to be irrelevant
UNDERSTOOD = frozenset({
    "reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size", "stage3_max_live_parameters",
    "stage3_param_persistence_threshold", "stage3_max_reuse_distance", "sub_group_size", "overlap_comm",
    "contiguous_gradients", "flash_attn", "attn_implementation", "kv_cache_dtype", "dtype", "quantization",
    "enable_chunked_prefill", "enable_prefix_caching", "swap_space", "block_size", "trust_remote_code",
    "pytorch_cuda_alloc_conf", "nccl_p2p_disable", "nccl_ib_disable", "cuda_visible_devices", "device_map",
    "low_cpu_mem_usage", "load_in_4bit", "load_in_8bit", "torch_dtype", "liger_kernel", "enable_liger_kernel",
    "packing", "neat_packing", "optim", "lora_rank", "lora_target", "quantization_bit", "template", "stage",
    "do_train", "dataset", "dataset_dir", "output_dir", "logging_steps", "save_steps", "learning_rate",
    "num_train_epochs", "lr_scheduler_type", "warmup_ratio", "warmup_steps", "plot_loss", "overwrite_output_dir",
    "overwrite_cache", "report_to", "ddp_timeout", "preprocessing_num_workers", "dataloader_num_workers",
    "max_samples", "val_size", "eval_strategy", "eval_steps", "per_device_eval_batch_size", "save_strategy",
    "host", "port", "served_model_name", "api_key", "disable_log_requests", "disable_log_stats", "seed",
    "model_name_or_path", "model_path", "model", "tokenizer", "lora_alpha", "lora_dropout", "weight_decay",
    "max_grad_norm", "gradient_clipping", "train_batch_size", "steps_per_print", "wall_clock_breakdown",
    "nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "num_gpus", "num_processes",
    "mixed_precision", "zero_allow_untested_optimizer", "vllm_ascend_version", "fp16", "bf16", "deepspeed", "config_file", "fsdp",
})  # fmt: skip


def _score(c: Candidate) -> float:
    err = c.error
    matched = err is not None and err <= MATCH_TOLERANCE
    return (2.0 + (MATCH_TOLERANCE - err) * 10 if matched else 0.0) + (1.0 if c.named else 0.0) + c.prior


def _matches(c: Candidate) -> bool:
    err = c.error
    return c.named or (err is not None and err <= MATCH_TOLERANCE)


#: causes a speed fix answers: none of them is the cause when the measured speed is what the setup gives
SPEED_CAUSES = frozenset({"compute_or_config_slow", "communication_bound", "p2p_or_interconnect"})
#: troubles told in words that name their cause by themselves ("another process holds the GPU", "it runs on the CPU");
#: "slow", "more GPUs are slower" or "low utilisation" name a symptom, not why
#: the arithmetic lines that name a cause in words (the log's, the asker's): they lead for an error or a naming symptom
NAMING_TEMPLATES = frozenset({"named", "said"})
NAMING_SYMPTOMS = frozenset(
    {
        "other_process",
        "cpu_fallback",
        "merge_export",
        "engine_memory",
        "logits",
        "one_gpu_used",
        "serial",
        "uneven_growth",
    }
)


def _leads(c: Candidate, s: Setup) -> bool:
    """A cause may open the answer as *the* cause only when the asker reports a failure or a slowness and the cause
    is earned: its figure, computed from the asker's own setup, reproduces the log's; or the evidence names it (an
    error message of that class, words that name the cause); or it is named with arithmetic from the setup. A speed
    cause never leads a speed that is what the setup gives (tools/speed/measured.py decides that, once)."""
    i = s.inp
    if not (i.error_kind or i.symptom or i.measured_tokens_per_s):
        return False
    template = getattr(c.arith, "template", None)
    if c.cause in SPEED_CAUSES and s.speed:  # a measured speed: below the band, the computed term leads
        return s.speed["verdict"] in ("low", "very_low") and template not in WORDS_ONLY
    if c.extra.get("shortfall") and s.oom:  # the setup as given needs more than the card: the failure's arithmetic
        return True
    err = c.error
    if err is not None and err <= MATCH_TOLERANCE:
        return True
    if not c.named:
        return False
    if template in WORDS_ONLY - NAMING_TEMPLATES:
        return False
    if template in NAMING_TEMPLATES:  # what the log or the words name, with no figure: the error's class, or words
        return i.error_kind is not None or i.symptom in NAMING_SYMPTOMS
    return True


def _out(c: Candidate, s: Setup) -> CauseOut:
    # the cause said for what established it (a runtime's own estimate, a merge, an engine's reservation)
    variant = words()["cause_variants"][c.extra["words"]] if c.extra.get("words") else c.extra.get("variant", {})
    w = {**cause_words(c.cause), **variant}
    if c.flag in words()["flag_costs"] and "cost_en" not in variant:  # (a flag in another framework's spelling)
        w = {**w, **{f"cost_{k}": v for k, v in words()["flag_costs"][c.flag].items()}}
    if c.extra.get("cost"):
        w = {**w, **{f"cost_{k}": v for k, v in words()["fix_costs"][c.extra["cost"]].items()}}
    err = c.error
    figure = c.figure / 2**30 if c.figure is not None and c.cause != "kv_pool_too_small" else None
    return CauseOut(
        cause=c.cause, arithmetic=c.arith[0], arithmetic_zh=c.arith[1], matches_evidence=_matches(c),
        leads=_leads(c, s),
        figure_gib=round(figure, 2) if figure is not None else None,
        error_pct=round(err * 100, 1) if err is not None else None,
        fix=Fix(flag=c.flag, value=c.value), cost=w["cost_en"], cost_zh=w["cost_zh"],
        explanation=w["en"], explanation_zh=w["zh"],
    )  # fmt: skip


def _candidates(s: Setup) -> tuple[list[Candidate], dict[str, Any]]:
    out = evidence.log_causes(s) + named.named_causes(s) + split.split_causes(s) + zero3.zero3_causes(s)
    out += dtype.dtype_causes(s) + dtype.default_fp32_causes(s) + slow.hf_generate_causes(s)
    est: dict[str, Any] = {}
    layers_split = split.applies(s)  # one process over the GPUs: no engine's pool or head rule, and it loaded
    if s.model is not None:
        out += slow.speed_causes(s)
        if s.workload == "infer" and s.framework not in (ENGINES - SERVING) | LOCAL and not layers_split:
            out += serve.tp_causes(s) if not runs(s.inp) else []  # it started and answers: the sizes divide
            if not any(c.cause == "tp_not_divisible" for c in out) and not runs(s.inp) and s.inp.error_kind != "crash":
                out += serve.memory_causes(s)
                est = serve.estimate(s)
        elif s.workload == "train" and s.gpu is not None:
            if s.inp.failed_alloc_gib:
                out += train.allocation_causes(s)
            if s.oom or (s.inp.error_kind is None and not runs(s.inp)):  # it ran: memory is not why it is slow
                more, est = train.memory_causes(s)
                out += more
    if layers_split and s.inp.symptom == "uneven_growth":  # it loaded and grew on one card: the weights fit
        out = [c for c in out if c.cause != "weights_exceed_memory"]
    if s.inp.error_kind == "kv_too_small":  # the engine loaded the weights and profiled before it refused the
        out = [c for c in out if c.cause != "weights_exceed_memory"]  # length: they fit, whatever the estimate says
    if est.get("per_gpu_gb") and est["per_gpu_gb"] > OVERRUN * est["usable_gb"]:
        for c in out:  # the setup needs far more than the card: the loose reserved memory is not why
            if c.cause == "fragmentation":
                c.named, c.prior = False, min(c.prior, 0.2)
    return out, est


def _rank(found: list[Candidate]) -> list[Candidate]:
    """Best first; one entry per cause (its best-scoring arithmetic)."""
    best: dict[str, Candidate] = {}
    for c in sorted(found, key=_score, reverse=True):
        best.setdefault(c.cause, c)
    ranked = list(best.values())
    return [c for c in ranked if _score(c) >= 0.1][:TOP] or ranked[:1]


def diagnose(inp: DiagnoseInput) -> DiagnoseOutput:
    """Why a run broke or runs slow: from the setup (model, GPUs, framework, flags) and what the log shows (the
    allocation that failed, memory figures, the error, a measured speed), the causes ranked by how well their
    arithmetic reproduces the evidence, each with the flag and value to change, what that costs, and what the
    calculators predict after the fix. Use it when the user pastes an error, a launch command or a config, or
    asks why something failed or is slow."""
    s = read_setup(inp)
    found, est = _candidates(s)
    ranked = _rank(fixes.fitted(found, s))
    if not ranked:
        w = say("unknown")
        ranked = [Candidate("version_or_bug", w, "the framework version", "upgrade or pin", prior=0.1)]
    contradicts = bool(s.oom and est.get("fits"))
    if s.oom and not any(_matches(c) for c in ranked) and not any(c.cause == "version_or_bug" for c in ranked):
        ranked.append(
            Candidate("version_or_bug", say("unknown"), "the framework version", "upgrade or pin", prior=0.05)
        )
    after = ranked[0].after() if ranked[0].after else {}
    if after.get("fits") is False or after.get("starts") is False:
        for c in ranked[1:]:  # the first fix alone is not enough: show the next that is
            nxt = c.after() if c.after else {}
            if nxt.get("fits") or nxt.get("starts"):
                after = {**nxt, "also": True}
                break
    flags = flag_values(inp)
    unread = sorted(f for f in flags if f not in UNDERSTOOD)
    return DiagnoseOutput.trusted(
        framework=inp.framework, workload=s.workload, causes=[_out(c, s) for c in ranked], speed=dict(s.speed),
        after_fix={k: v for k, v in after.items() if isinstance(v, str | int | float | bool) or v is None},
        contradicts_estimate=contradicts, estimate=est, unread=unread, assumptions=_assumptions(s),
        steps=steps.counted(inp),
    )  # fmt: skip


def _assumptions(s: Setup) -> list:
    out = [assume("match_tolerance", MATCH_TOLERANCE, note="a cause's figure within 10% of the log's matches it")]
    if s.workload == "infer" and s.model is not None and s.capacity:
        out.append(assume("gpu_memory_utilization", serve.utilization(s), default=s.inp.gpu_memory_utilization is None,
                          note="the engine's memory fraction (frameworks.yaml)"))  # fmt: skip
        out.append(assume("profile_activation", "3 × ffn + 3 × hidden, 2 B per token ÷ tp",
                          note="vLLM profiling-pass peak: one layer's MLP (serve.py)"))  # fmt: skip
    if s.workload == "train" and s.inp.zero_stage is None:
        if s.framework == "deepspeed":
            out.append(
                assume("zero_stage", None, note="DeepSpeed config not shown: ZeRO-2 and ZeRO-3 buffers both compared")
            )
        else:
            out.append(assume("zero_stage", 0, note="no DeepSpeed config given: plain data parallel (DDP)"))
    if s.capacity and s.inp.capacity_gib:
        out.append(assume("capacity", s.inp.capacity_gib, unit="GiB", default=False, note="as the log reports"))
    return out
