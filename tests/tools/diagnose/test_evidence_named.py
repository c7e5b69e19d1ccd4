"""A cause the engine would have said in its own words leads only where the log says them: the heads/TP start-up
check (an engine that ran out of memory got past it), the KV pool's start-up refusal (vLLM's ValueError, not a
torch OOM); and plain transformers generation names what it lacks for the setup given (issues 23/24)."""

from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def _causes(**kw):
    return {c.cause: c for c in diagnose(DiagnoseInput(**kw)).causes}


def test_heads_rule_needs_the_engines_word_or_an_explicit_size():
    # gh-ms-swift-4748: 48 Ascend cards over three nodes, an OOM; 40 heads do not divide 48, but no size was set
    oom = _causes(model="Qwen2.5-32B", gpu="Huawei Ascend 910B", n_gpus=48, framework="vllm", error_kind="oom")
    assert "tp_not_divisible" not in oom
    said = _causes(model="Qwen2.5-32B", gpu="Huawei Ascend 910B", n_gpus=48, tp=48, framework="vllm",
                   error_kind="heads_not_divisible")  # fmt: skip
    assert said["tp_not_divisible"].leads
    assert said["tp_not_divisible"].fix.value in (1, 2, 4, 5, 8, 10, 20, 40)


def test_torch_oom_is_not_the_kv_pool_refusal():
    # gh-qwen-589: Qwen-14B int8 at TP 2 on two 11.77 GiB cards, "CUDA out of memory. Tried to allocate 134 MiB"
    setup = dict(model="Qwen-14B", n_gpus=2, tp=2, framework="vllm", precision="int8", capacity_gib=11.77)
    oom = diagnose(DiagnoseInput(**setup, error_kind="oom", failed_alloc_gib=0.13))
    assert not any(c.cause == "kv_pool_too_small" and c.leads for c in oom.causes)
    assert oom.causes[0].cause != "kv_pool_too_small"
    refused = _causes(**setup, error_kind="kv_too_small")
    assert refused["kv_pool_too_small"].leads


def test_transformers_generate_names_moe_loop_and_quant_kernels():
    # gh-qwen3-552: Qwen2-57B-A14B GPTQ-Int4 with from_pretrained(device_map="auto") + generate(), 0.5 tokens/s
    out = diagnose(DiagnoseInput(model="generic-moe-57b-a14b", framework="transformers", workload="infer",
                                 precision="int4", symptom="slow", layer_split=True, measured_tokens_per_s=0.5,
                                 flags="device_map=auto"))  # fmt: skip
    top = out.causes[0]
    assert top.leads and top.cause == "compute_or_config_slow"
    assert "Python loop" in top.arithmetic and "Marlin" in top.arithmetic and "in turn" in top.arithmetic
    assert "vLLM" in str(top.fix.value)
    dense = diagnose(DiagnoseInput(model="Qwen2.5-7B", framework="transformers", workload="infer", symptom="slow"))
    assert "Python loop" not in dense.causes[0].arithmetic and "Marlin" not in dense.causes[0].arithmetic


def test_training_slowness_is_not_a_generate_answer():
    out = diagnose(DiagnoseInput(model="Qwen2.5-7B", framework="transformers", workload="train", symptom="slow"))
    assert not any("generate()" in c.arithmetic for c in out.causes)


def test_words_that_it_did_not_run_keep_the_pool_shortfall():
    # gh-glm4-149: "40G显存跑不起来" with max_model_len 1M: no allocator message, the pool arithmetic is the answer
    out = diagnose(DiagnoseInput(model="glm-4-9b-chat-1m", framework="vllm", capacity_gib=40, max_model_len=1048576,
                                 error_kind="oom"))  # fmt: skip
    assert out.causes[0].cause == "kv_pool_too_small" and out.causes[0].leads


def test_plain_generate_of_a_dense_model_on_one_card_names_no_term():
    out = diagnose(DiagnoseInput(model="Qwen2.5-7B", gpu="NVIDIA A10 24GB", framework="transformers", workload="infer",
                                 symptom="slow", layer_split=True, flags="device_map=auto"))  # fmt: skip
    assert not any("generate()" in c.arithmetic for c in out.causes)
