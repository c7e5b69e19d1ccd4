"""The slow branch's platform causes (tools/diagnose/platform.py): a decode measured far below the roofline is
answered with the engine/platform causes the setup shows, ranked by the share of the gap each explains, each with
its fix and the address of its documentation (frameworks.yaml `slow_causes`)."""

from tools.diagnose.diagnose import diagnose
from tools.diagnose.facts import facts
from tools.schemas.diagnose import DiagnoseInput


def _lead(**kw):
    out = diagnose(DiagnoseInput(**kw))
    return out, out.causes[0]


def test_every_slow_cause_has_words_and_a_documented_source():
    from tools.diagnose.platform import _words

    for key, rec in facts()["slow_causes"].items():
        assert rec["source"]["url"].startswith("https://"), key
        w = _words()["causes"][key]
        assert {"en", "zh", "fix_en", "fix_zh"} <= set(w), key


def test_vllm_on_ascend_names_the_early_backend_and_the_upgrade():
    # vllm-ascend issue 171: 4 x 910B, R1-Distill-Qwen-32B, 512 tokens in about 3 minutes
    out, c = _lead(model="deepseek-r1-distill-qwen-32b", gpu="ascend-910b", framework="vllm", n_gpus=4, tp=4,
                   symptom="slow", measured_tokens_per_s=2.84)  # fmt: skip
    assert c.leads and c.cause == "compute_or_config_slow"
    assert "vllm-ascend" in c.arithmetic and "0.9.1" in c.arithmetic
    assert "vllm-project/vllm-ascend/issues/171" in c.arithmetic
    assert "图模式" in c.arithmetic_zh
    assert c.fix.flag == "vllm-ascend"
    assert out.speed["verdict"] == "very_low"


def test_layers_in_turn_explain_a_factor_of_the_gpu_count():
    # transformers with device_map over 8 cards: the roofline split every layer over them, the run did not
    _out, c = _lead(model="llama-2-13b", gpu="v100-sxm2-32gb", framework="transformers", n_gpus=8, precision="fp16",
                   flags="device_map=auto", workload="infer", measured_tokens_per_s=0.5)  # fmt: skip
    assert c.leads
    assert "explains ×8.0" in c.arithmetic
    assert "device_map over 8 GPUs" in c.arithmetic
    assert "accelerate/usage_guides/big_modeling" in c.arithmetic
    # the computed share comes first, the eager generate() loop (no figure) after it
    assert c.arithmetic.index("device_map") < c.arithmetic.index("generate() runs eagerly")


def test_cpu_layers_share_is_host_bandwidth_against_the_card():
    # text-generation-webui --pre_layer 26 of a 13B's 40 layers on a 10 GB card: 14 layers from host RAM
    _out, c = _lead(model="13B", gpu="rtx-3080", layers_on_gpu=26, precision="int4", workload="infer",
                   measured_tokens_per_s=1.43)  # fmt: skip
    assert c.leads
    assert "14 of 40 layers run on the CPU" in c.arithmetic
    assert "40" in str(c.fix.value)


def test_bitsandbytes_4bit_explains_the_4bit_roofline_over_bf16():
    # Baichuan2-13B 4-bit (bitsandbytes) on an A100: slower than its 16-bit model
    _out, c = _lead(model="llama-2-13b", gpu="a100-sxm4-80gb", framework="transformers", precision="int4",
                   flags="load_in_4bit=True", workload="infer", measured_tokens_per_s=18)  # fmt: skip
    assert c.leads
    assert "bitsandbytes 4-bit" in c.arithmetic
    assert "text-generation-inference/pull/586" in c.arithmetic
    assert c.fix.flag == "load_in_4bit" and c.fix.value is False


def test_enforce_eager_is_named_when_set():
    _out, c = _lead(model="llama-2-7b", gpu="rtx-3090", framework="vllm", enforce_eager=True,
                   measured_tokens_per_s=5)  # fmt: skip
    assert c.leads and "--enforce-eager decodes without CUDA graphs" in c.arithmetic
    assert c.fix.flag == "--enforce-eager" and c.fix.value is False


def test_a_speed_the_setup_gives_names_no_platform_cause():
    # 80 tokens/s for a 32B int4 on 4 x V100 (Qwen issue 1023) is within the band: nothing to blame
    out = diagnose(DiagnoseInput(model="qwen2.5-32b", gpu="v100-sxm2-16gb", framework="lmdeploy", n_gpus=4,
                                 precision="int4", measured_tokens_per_s=80.0))  # fmt: skip
    assert not any("what this setup shows" in c.arithmetic for c in out.causes)


def test_an_engine_with_nothing_known_keeps_the_generic_line():
    out = diagnose(DiagnoseInput(model="llama-2-7b", gpu="a100-sxm4-80gb", framework="vllm",
                                 measured_tokens_per_s=5))  # fmt: skip
    assert not any("what this setup shows" in c.arithmetic for c in out.causes)


def test_the_cost_said_is_the_leading_fix_s():
    # llama.cpp without -ngl: the fix puts the layers on the GPU, which costs GPU memory, not "outputs unchanged"
    _out, c = _lead(model="llama-2-7b", gpu="rtx-3090", framework="llama.cpp", workload="infer", precision="int4",
                    gpu_layers_unset=True, measured_tokens_per_s=11)  # fmt: skip
    assert c.leads and c.fix.flag == "-ngl" and c.fix.value == 99
    assert "no -ngl" in c.arithmetic and "GPU memory" in c.cost


def test_a_vllm_ascend_release_with_graph_mode_is_not_blamed():
    kw = dict(model="deepseek-r1-distill-qwen-32b", gpu="ascend-910b", framework="vllm", n_gpus=4, tp=4,
              measured_tokens_per_s=2.84)  # fmt: skip
    new = diagnose(DiagnoseInput(**kw, flags="vllm_ascend_version=0.18.0"))
    assert not any("vllm-ascend" in c.arithmetic for c in new.causes)
    old = diagnose(DiagnoseInput(**kw, flags="vllm_ascend_version=0.7.1"))
    assert "vllm-ascend" in old.causes[0].arithmetic and "vllm_ascend_version" not in old.unread


def test_eager_generate_is_given_its_share_of_the_gap():
    # transformers generate() on one A100 at batch 1: the host launching each of 32 layers' kernels per token
    # (inference_speed eager) explains a factor of the gap, computed from the same decode with and without graphs
    from tools.schemas.speed import InferenceSpeedInput
    from tools.speed.inference_speed import inference_speed

    args = dict(model="llama-2-7b", gpu="a100-sxm4-80gb", precision="bf16")
    graphs = inference_speed(InferenceSpeedInput(**args)).total_tokens_per_s
    eager = inference_speed(InferenceSpeedInput(**args, eager=True)).total_tokens_per_s
    assert graphs > eager
    _out, c = _lead(**args, framework="transformers", workload="infer", measured_tokens_per_s=eager / 2)
    assert c.leads
    assert f"explains ×{graphs / eager:.1f}" in c.arithmetic
    assert "generate() runs eagerly" in c.arithmetic
