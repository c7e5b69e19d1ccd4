"""The terms of a decode step that inference_speed adds up: achieved bandwidth shares by weight format and kernel,
prefill efficiency, per-step, per-MoE-layer and per-MLA-layer overheads, and the weight bytes a step reads."""

from __future__ import annotations

from tools.catalog.architecture import mlp_params, param_count, published_expert_bytes
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.model_spec import ModelSpec
from tools.speed.flops import Shape
from tools.units import BYTES_PER_PARAM, INT4_GROUP_BYTES, NF4_BYTES

#: achieved share of spec memory bandwidth in decode, by weight format, for PyTorch-native kernels (gpt-fast's
#: int8/int4 tinygemm dequantise on the fly and reach less). Set from gpt-fast on A100-80GB (README benchmark table).
BANDWIDTH_EFFICIENCY = {"fp32": 0.75, "bf16": 0.75, "fp16": 0.75, "fp8": 0.6, "int8": 0.6, "int4": 0.45, "nf4": 0.45}
#: Marlin (IST-DASLab; vLLM's AWQ/GPTQ int4/int8 kernels): "close to ideal (4x) speedups" over FP16 at small
#: batch, i.e. it streams quantised weights at the 16-bit kernels' achieved share of bandwidth
MARLIN_EFFICIENCY = {"int8": 0.75, "int4": 0.75}
MARLIN_FAMILIES = ("ampere", "ada", "hopper", "blackwell")
#: achieved share of the dense peak in prefill (large GEMMs over the prompt), by compute precision, with the step
#: overhead and tensor-parallel all-reduces on top. Set on the development rows of tests/golden/published.yaml:
#: TensorRT-LLM's A100 fp16 first-token latencies (Llama-2-7B at 2,048 tokens, 70B at tp 4 at 128 and 2,048) are
#: within 5% at 0.70–0.75 and 15–45% slow at the former single 0.5; the fp8 rows (TensorRT-LLM H100/L40S, NIM
#: Llama-3.3-70B on 2 × H100) are least wrong at 0.5 of the FP8 peak, their misses being short-prompt overheads.
PREFILL_EFFICIENCY = {"16-bit": 0.72, "fp8": 0.5}
#: fixed time per decode step beyond weight/KV reads (kernel launches, norms, sampling), seconds
STEP_OVERHEAD_S = 1.2e-3
#: extra time per mixture-of-experts layer per decode step (router, top-k, token permutation and the grouped expert
#: kernels). Set on the development rows of tests/golden/published.yaml with grouped-query attention: Mixtral 8x7B
#: (8 experts, TensorRT-LLM int8, one A100) and Qwen3-235B-A22B / 30B-A3B (128 experts, SGLang 0.4.6, H20) need
#: 40-85 µs per MoE layer beyond reading the weights, with no trend in the expert count (8 or 128), so the term is
#: per layer, not per expert.
MOE_LAYER_S = 60e-6
#: extra time per multi-head latent attention (MLA) layer per decode step: the absorbed path runs the latent down and
#: up projections, the rope split, the absorbed per-head batched matmuls and the latent attention kernel, many small
#: kernels a layer. Set on the DeepSeek-V3/R1/V3.2 development rows (SGLang 0.4.1 fp8 on H200, vLLM AWQ on H100 and
#: A100, vLLM 0.13 on H20): 0.3-0.5 ms per layer at batch 1 beyond weights, MoE and all-reduces, on every card alike
#: (latency, not bytes); the former per-expert term gave Qwen3's 128-expert models 3x their published decode time.
MLA_LAYER_S = 390e-6
#: share of the repeated KV loads that reach HBM with a per-head decode kernel on a grouped-query model (each query
#: head loads its group's KV head again; L2 serves the rest). TensorRT-LLM's XQA blog: the grouped kernel gives 2.4x
#: Llama-70B throughput at 128 in / 2,048 out on one H200. Set on the development Llama-2-70B rows of the TensorRT-LLM
#: v0.6.1 throughput tables (before XQA): 0.5 puts 6 of 7 within 25% (every re-read reaching HBM: 4 of 7, too slow).
PER_HEAD_KV_REREAD = 0.5
#: host time per layer per decode step in eager PyTorch (no CUDA graphs): Python dispatch and the launch of each
#: layer's ~15 kernels, during which a small model's GPU work is already done, so the step lasts the longer of the two.
#: Set on the development rows of LitGPT's resource tables (plain generate on A100 40GB: Llama-2-7B 32.29 ms over 32
#: layers, 13B 40.29 ms over 40, i.e. 1.01 ms a layer for both, while their weights read in 11 and 22 ms).
EAGER_LAYER_HOST_S = 1.0e-3
#: latency of one small all-reduce inside a node (NCCL, NVLink), seconds
ALLREDUCE_LATENCY_S = 15e-6
#: a weight-only quantised format leaves embeddings and the LM head in 16-bit
QUANT_BYTES = {"int8": 1.0, "fp8": 1.0, "int4": INT4_GROUP_BYTES, "nf4": NF4_BYTES}


def decode_weight_bytes(m: ModelSpec, s: Shape, precision: str, batch: int) -> tuple[float, float]:
    """(bytes of weights read per decode step, matmul parameters used per token).

    MoE: each token uses its top-k experts; a batch of b tokens touches E·(1 − (1 − k/E)^b) distinct
    experts per MoE layer (uniform routing), and every touched expert is read once.
    """
    p = param_count(m)
    body = s.n_matmul - s.n_head
    own = published_expert_bytes(m, precision)
    if m.is_moe:
        e, k = m.n_experts or 1, m.experts_per_token or 1
        expert = mlp_params(m.hidden_size, m.moe_ffn_size or m.ffn_size, m.mlp)
        touched = e * (1 - (1 - k / e) ** batch)
        body += p.n_moe_layers * (touched - k) * expert
        if own is not None:  # the experts are read in the format they are published in (gpt-oss: MXFP4)
            routed = p.n_moe_layers * touched * expert
            return (body - routed + s.n_head) * BYTES_PER_PARAM[precision] + routed * own, s.n_matmul
    if precision in QUANT_BYTES:
        return body * QUANT_BYTES[precision] + s.n_head * 2.0, s.n_matmul
    return (body + s.n_head) * BYTES_PER_PARAM[precision], s.n_matmul


def moe_step_s(m: ModelSpec) -> float:
    """Router and grouped-expert kernels of every MoE layer, and the latent-attention kernels of every MLA layer, in
    one decode step (0 for a dense model with standard attention)."""
    moe = param_count(m).n_moe_layers * MOE_LAYER_S if m.is_moe else 0.0
    return moe + (m.n_layers * MLA_LAYER_S if m.attention == "MLA" else 0.0)


def kernel_family(asked: str, precision: str, gpu: GpuSpec) -> str:
    """The int4/int8 kernel family in use: as asked, else Marlin where vLLM runs it (NVIDIA Ampere and newer)."""
    if precision not in MARLIN_EFFICIENCY:
        return "none" if precision != "nf4" else "torch"
    if asked != "auto":
        return asked
    return "marlin" if gpu.vendor == "nvidia" and gpu.family.lower() in MARLIN_FAMILIES else "torch"
