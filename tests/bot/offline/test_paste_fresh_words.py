"""What the fresh December threads showed the paste reader misread, in our own phrasings: GPU memory called 内存,
an engine's quantized-weight alignment error, several GPUs slower said the other way round, a freeze on N GPUs,
memory named as the reason for a setting or asked about (no OOM seen), a base loaded in 8 bits, and the devices a
backticked launch makes visible; and the answers a user then reads."""

from bot.offline.understand.paste import read_paste

QUANT_ZH = (
    "用 vllm 起 Qwen2.5-72B-Instruct 的 GPTQ int4 版本，两张 A100，--tensor-parallel-size 2 启动就报错：\n"
    "ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too large "
    "tensor parallel size."
)
HANG_EN = "Training on 4x RTX 4090 with torchrun, it just freezes (stuck, no error) when using 4 GPUs. One GPU is fine."
BITS_ZH = "两张 3090 上 lora 微调，因为显存不够，开启了8bit，现在训练很慢，是这个原因吗？"


def test_gpu_memory_called_neicun_is_a_gpu_oom_not_host_ram():
    for text in (
        "训练检测模型时出现了CUDA内存不足，T4 16G，batch 64",
        "GPU的内存情况：一号卡22G，其他卡5G，然后报错内存不足",
        "显卡内存溢出了，lora 微调 7B",
    ):
        assert read_paste(text).evidence.get("error_kind") == "oom", text
    # 内存 with nothing calling the GPU's memory so, or the server's RAM named, stays host RAM
    assert read_paste("加载 72B 的时候内存不足，进程被杀").evidence["error_kind"] == "host_oom"
    assert read_paste("GPU 是 A100，服务器内存不够，加载到一半被 kill").evidence["error_kind"] == "host_oom"


def test_the_runtime_oom_is_told_apart_from_the_allocators():
    runtime = read_paste("RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported")
    assert runtime.evidence.get("cuda_runtime_oom") is True
    allocator = read_paste("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                           "capacity of 23.65 GiB of which 1.10 GiB is free.")  # fmt: skip
    assert "cuda_runtime_oom" not in allocator.evidence
    assert "cuda_runtime_oom" not in read_paste("ggml_cuda: CUDA error: out of memory (llama.cpp)").evidence


def test_the_engines_quantized_alignment_error_is_read():
    p = read_paste(QUANT_ZH)
    assert p.evidence["error_kind"] == "quant_tp_misaligned"
    marlin = read_paste("ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128.")
    assert marlin.evidence["error_kind"] == "quant_tp_misaligned"


def test_several_gpus_slower_said_the_other_way_round():
    for text in (
        "8卡训练速度不如单卡快，是什么原因",
        "同样的代码，单卡比4卡还快",
        "试了2卡和4卡，结果反而是单卡的时间最短",
        "Strangely a single GPU trains faster than 4 GPUs with DDP",
    ):
        assert read_paste(text).evidence.get("symptom") == "multi_gpu_slower", text


def test_a_freeze_on_n_gpus_reads_the_count():
    p = read_paste(HANG_EN)
    assert p.evidence["symptom"] == "hang" and p.evidence["gpus_said"] == 4
    launched = read_paste("命令：`CUDA_VISIBLE_DEVICES=0,1,2 llamafactory-cli train qwen_lora.yaml`，报 OOM")
    assert launched.setup["n_gpus"] == 3


def test_memory_as_a_reason_or_a_question_is_no_oom():
    assert "error_kind" not in read_paste(BITS_ZH).evidence  # memory was why 8-bit was chosen: nothing ran out
    asked = read_paste("启动时打印 build and load the cpu_adam kernel，这是显存不够吗？")
    assert "error_kind" not in asked.evidence
    # a report stays a report
    assert read_paste("因为 batch 开太大，显存不够，直接 OOM 了").evidence["error_kind"] == "oom"
    assert read_paste("跑到第 3 步就显存不够了").evidence["error_kind"] == "oom"


def test_the_answers_lead_with_the_cause_and_the_flag(advisor):
    quant = advisor.ask(QUANT_ZH).answer
    head = quant.split("\n\n")[0]
    assert "231" in head and "128" in head  # 29,568 ÷ 128 = 231 groups, not whole over two cards
    assert "--pipeline-parallel-size" in quant and "放得下" not in head

    hang = advisor.ask(HANG_EN).answer
    assert "NCCL_P2P_DISABLE" in hang.split("\n\n")[0] + hang.split("\n\n")[1]

    bits = advisor.ask(BITS_ZH).answer
    assert not bits.startswith("**您已经遇到了 OOM")  # nothing ran out
    assert "load_in_8bit" in bits and "反量化" in bits


def test_more_cards_then_an_error_is_not_a_slowness():
    # gh-lmdeploy-3648: "一个模型在单卡上能跑，多卡反而报RuntimeError: NPU out of memory."
    from bot.offline.understand.paste import read_paste

    ev = read_paste("一个模型在单卡上能跑，多卡反而报RuntimeError: NPU out of memory.").evidence
    assert ev.get("symptom") != "multi_gpu_slower" and ev.get("error_kind") == "oom"
    assert read_paste("双卡反而更慢了，比单卡还慢").evidence.get("symptom") == "multi_gpu_slower"


def test_generate_call_is_a_generation_run():
    from bot.offline.understand.paste import read_paste
    from bot.offline.understand.paste.setup import diagnose_args
    from bot.offline.understand.request.reader import read

    q = (
        'Qwen2.5-7B 推理很慢\nmodel = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-7B-Instruct", '
        'device_map="auto")\nout = model.generate(input_ids, max_new_tokens=512)\n'
    )
    args, _ = diagnose_args(read_paste(q), read(q))
    assert args.get("workload") == "infer"


def test_offload_is_not_loading():
    # gh-llamafactory-7528: "启动deepspeed z3 offload，任然OOM" is an OOM in training, not one while loading
    from bot.offline.understand.paste import read_paste

    assert read_paste("启动deepspeed z3 offload，任然OOM").evidence.get("error_kind") == "oom"
    assert read_paste("from_pretrained 加载就 OOM 了").evidence.get("error_kind") == "load_oom"
