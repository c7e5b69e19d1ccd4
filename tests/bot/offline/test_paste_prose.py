"""Troubles told in words or in another tool's log, read as the evidence they are (issue 24, second batch): an OOM
written next to Chinese, host RAM in prose, memory another process keeps (in words, in PyTorch's process lines,
in an nvidia-smi table), a local runtime that left layers on the CPU, a 16-bit type the card refuses; and what
`diagnose` then ranks first."""

from bot.offline.understand.paste import read_paste
from bot.offline.understand.paste.logs import read_log
from bot.offline.understand.paste.setup import diagnose_args
from bot.offline.understand.request.reader import read
from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def _causes(**kw) -> list[str]:
    return [c.cause for c in diagnose(DiagnoseInput(**kw)).causes]


def test_an_oom_written_against_chinese_is_an_oom():
    # a Han character and a Latin letter are both word characters: "会OOM" has no word boundary before "OOM"
    assert read_paste("用deepspeed zero2也会报OOM，batch设为1也不行").evidence["error_kind"] == "oom"
    assert read_paste("8卡3090全参zero3 sft会OOM").evidence["error_kind"] == "oom"
    assert "error_kind" not in read_paste("把图片放大 zoom 一下再看").evidence


def test_host_ram_told_in_prose_in_either_language():
    assert read_paste("显存还是内存\n内存oom").evidence["error_kind"] == "host_oom"
    assert read_paste("python3 convert-pth-to-ggml.py models/7B/ 1 and running out of RAM").evidence["error_kind"] == (
        "host_oom"
    )
    # 内存 said of the GPU's memory, with no trouble after it, is no host-RAM report
    assert read_paste("每张卡只占用了13G内存。这正常吗？").evidence.get("error_kind") != "host_oom"


def test_memory_another_process_keeps_in_words_and_in_logs():
    assert read_paste("kill进程显卡不释放，nvidia-smi只能看到显存占用").evidence["symptom"] == "other_process"
    two = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.20 GiB is free. Process 1111 has 40.10 GiB memory in use. Process 2222 has 37.80 GiB "
        "memory in use. Of the allocated memory 36.50 GiB is allocated by PyTorch, and 0.80 GiB is reserved by "
        "PyTorch but unallocated."
    )
    ev = read_paste(two).evidence
    assert ev["process_gib"] == 37.8 and ev["other_process_gib"] == 40.1  # the one holding what PyTorch reserved
    smi = """|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
| N/A   34C    P0              68W / 400W |  61234MiB / 81920MiB |      0%      Default |
| Processes:                                                                            |
|    0   N/A  N/A     12345      C   python                                    40000MiB |
|    0   N/A  N/A     23456      C   /usr/bin/python3                          21000MiB |
"""
    assert read_paste(smi).evidence["other_process_gib"] == 20.51
    got = _causes(model="llama-3-8b", gpu="a100-sxm4-80gb", framework="pytorch", error_kind="oom",
                  failed_alloc_gib=2.0, capacity_gib=79.15, free_gib=1.2, process_gib=37.8, other_process_gib=40.1)  # fmt: skip
    assert got[0] == "other_process_memory"


def test_a_local_runtime_that_left_layers_on_the_cpu():
    log = (
        'msg=offload library=cuda layers.requested=-1 layers.model=43 layers.offload=42 layers.split="" '
        'memory.available="[6.9 GiB]" memory.required.full="7.5 GiB" memory.required.partial="6.8 GiB"'
    )
    p = read_paste(log)
    assert p.framework == "ollama" and "model" not in p.setup  # 'layers.model=43' is the log's field
    assert (p.evidence["layers_on_gpu"], p.evidence["layers_total"]) == (42, 43)
    assert (p.evidence["free_gib"], p.evidence["required_gib"]) == (6.9, 7.5)
    out = diagnose(DiagnoseInput(workload="infer", framework="other", free_gib=6.9, required_gib=7.5, symptom="slow"))
    assert [c.cause for c in out.causes[:2]] == ["weights_exceed_memory", "compute_or_config_slow"]
    assert "7.50 GiB" in out.causes[0].arithmetic and "6.90 GiB" in out.causes[0].arithmetic
    assert read_paste("Ollama does not use nvidia gpu").evidence["symptom"] == "cpu_fallback"


def test_a_16_bit_type_the_card_refuses():
    ev = read_paste('raise ValueError("Type fp16 is not supported.")\nCUBLAS_STATUS_NOT_SUPPORTED').evidence
    assert ev["error_kind"] == "unsupported_precision"
    assert _causes(error_kind="unsupported_precision", framework="deepspeed")[0] == "precision_unsupported"


def test_zero3_with_a_thin_estimate_offers_offload_and_its_buffers():
    # 8 × RTX 3090, full fine-tune of an 8B model under ZeRO-3: the estimate fits with little headroom, the run OOMs
    got = _causes(model="llama-3-8b", gpu="rtx-3090", framework="llamafactory", n_gpus=8, method="full",
                  zero_stage=3, seq_len=1024, precision="fp16", error_kind="oom")  # fmt: skip
    assert "needs_offload" in got[:2] and "zero_stage_buffers" in got


def test_auto_buckets_under_the_hf_trainer_follow_the_hidden_size():
    # ZeRO-3 "auto": stage3_prefetch_bucket_size = 0.9 × hidden² = 0.9 × 4096² = 15.1M elements × 2 B = 0.03 GiB
    out = diagnose(DiagnoseInput(model="llama-3-8b", gpu="a100-sxm4-80gb", framework="deepspeed", n_gpus=8,
                                 zero_stage=3, error_kind="oom", failed_alloc_gib=0.0281,
                                 flags="reduce_bucket_size=auto stage3_prefetch_bucket_size=auto"))  # fmt: skip
    first = out.causes[0]
    assert first.cause == "zero_stage_buffers" and "15.1M" in first.arithmetic and first.matches_evidence


def test_frameworks_named_in_prose_set_the_kind_of_run():
    tgi = read_paste("text-generation-inference: Not enough memory to handle 4096 prefill tokens")
    assert (tgi.framework, tgi.evidence["error_kind"]) == ("tgi", "too_many_tokens")
    assert read_paste("unsloth on a Colab T4: CUDA out of memory").framework == "transformers"  # a trainer's OOM
    # an engine's OOM with nothing to compute: the batch it schedules and its memory share, not a training term
    assert _causes(framework="tgi", error_kind="oom")[:2] == [
        "batch_or_concurrency_too_high",
        "memory_utilization_setting",
    ]


def test_the_logs_capacity_wins_over_a_card_guessed_from_the_words():
    from bot.offline.understand.paste.setup import diagnose_args
    from bot.offline.understand.request.reader import read

    text = (
        "4张10G 3080做推理，我有40G显存，为什么还是OOM？\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 26.00 MiB (GPU 0; 10.00 GiB total capacity; 8.82 GiB already allocated; 0 bytes free; 8.82 GiB "
        "reserved in total by PyTorch)"
    )
    args, _ = diagnose_args(read_paste(text), read(text))
    assert args["capacity_gib"] == 10.0 and args.get("gpu") in (None, "rtx-3080")  # never a 40 GB card


def test_a_failure_told_as_a_fear_is_no_reported_oom_and_a_question_about_one_that_happened_still_is():
    feared = (
        "怕一张卡占用了20g之后，后面用户多了，推理显存可能不够，然后增加了一张卡",
        "会不会爆显存？",
        "to avoid OOM I set batch 1",
    )
    for text in feared:  # dev gh-llamafactory-4870: a worry about the future, answered as "you have seen an OOM"
        assert read_log(text)[0].get("error_kind") is None, text
    for text in (
        "3*V100（16G），还是OOM？",
        "这个配置是本来就会爆显存吗",
        "I get OOM when I use 2 GPUs",
        "训练时显存不足",
    ):
        assert read_log(text)[0].get("error_kind") == "oom", text


def test_what_the_asker_tried_and_saw_fail_is_read_apart_from_what_ran():
    p = read_paste(
        "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
        "With 4 GPUs I set the `tensor_parallel_size` to 2 and it gives the same error; gpu_memory_utilization=0.95 "
        "did not work either."
    )
    assert p.setup["tp"] == 3 and p.setup["tried"] == "tp=2 gpu_memory_utilization=0.95"  # the log's tp ran
    zh = read_paste("vllm 启动报错 KV cache 不够，gpu_memory_utilization 设为 0.95 也不行")
    assert zh.setup.get("tried") == "gpu_memory_utilization=0.95"
    # a setting said with no failure after it is the run's own, not something tried
    assert "tried" not in read_paste("I set max_model_len to 8192 and it starts fine.").setup


def test_fsdp_is_read_as_sharding_and_code_is_not_a_setting():
    p = read_paste("8 x RTX 3090, FSDP (full_shard) without peft; the OOM happened in `model = FSDP(model, ...)`.")
    assert p.flags.get("fsdp") == "full_shard"
    said = "8 x RTX 3090, FSDP full_shard, CUDA out of memory"
    assert diagnose_args(read_paste(said), read(said))[0]["zero_stage"] == 3
    assert "model" not in p.setup  # `model = FSDP(model` calls FSDP: it names no model
    assert p.evidence["error_kind"] == "load_oom"  # out of memory while wrapping: before the first step
    grad_op = "fsdp sharding_strategy SHARD_GRAD_OP, OOM at step 3"
    assert diagnose_args(read_paste(grad_op), read(grad_op))[0]["zero_stage"] == 2
    assert "fsdp" not in read_paste("FSDP or DeepSpeed ZeRO-3: I run deepspeed and get an OOM").flags


def test_vllm_v1s_kv_refusal_gives_the_length_and_the_tokens_the_pool_holds():
    p = read_paste(
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (9.59 GiB). Based on the available memory, the "
        "estimated maximum model length is 78560. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine."
    )
    assert p.evidence["error_kind"] == "kv_too_small" and p.evidence["kv_tokens_reported"] == 78560
    assert p.setup["max_model_len"] == 131072


def test_an_engine_its_own_log_lines_show_is_the_framework_whatever_launched_it():
    log = (
        "CUDA_VISIBLE_DEVICES=0 llamafactory-cli api examples/inference/qwen_vllm.yaml\n"
        "ERROR 04-01 23:46:56 [engine.py:160] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 546.00 MiB."
    )
    assert read_paste(log).framework == "vllm"
    heads = "ValueError: Total number of attention heads (52) must be divisible by tensor parallel size (3)."
    assert read_paste(heads).framework == "vllm"  # vLLM's own start-up check
    assert read_paste("python -m sglang.launch_server --model-path x --mem-fraction-static 0.8").framework == "sglang"
    # a training log with no engine marks keeps its trainer
    assert read_paste("deepspeed train.py --deepspeed ds_z3.json\nCUDA out of memory").framework == "deepspeed"


def test_fsdp_asked_about_or_wished_for_is_not_what_ran():
    assert "fsdp" not in read_paste("What parallelism did you use (e.g., FSDP, DeepSpeed)? I get an OOM.").flags
    assert "fsdp" not in read_paste("Please add FSDP support for this model; ZeRO-3 runs out of memory.").flags
    assert read_paste("I train with FSDP on 4 GPUs and it runs out of memory.").flags.get("fsdp") == "full_shard"
