"""What a user pastes, read as they wrote it (bot/offline/understand/paste): PyTorch and vLLM errors with their
figures, launch commands, DeepSpeed JSON, trainer YAML, from_pretrained calls; and bad pastes (truncated, another
tool's log, 1 MB, not YAML/JSON) answered with what could be read, in the user's language, never a crash."""

import time

from bot.offline.understand.paste import MAX_PASTE_CHARS, read_paste
from bot.offline.understand.paste.setup import diagnose_args
from bot.offline.understand.request.reader import read

OOM_2X = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU 1 has a total capacity of 79.32 GiB "
    "of which 2.40 GiB is free. Process 105400 has 76.92 GiB memory in use. Of the allocated memory 73.28 GiB is "
    "allocated by PyTorch, and 1.59 GiB is reserved by PyTorch but unallocated."
)
OOM_1X = (
    "RuntimeError: CUDA out of memory. Tried to allocate 978.00 MiB (GPU 0; 4.00 GiB total capacity; 1.68 GiB already "
    "allocated; 0 bytes free; 2.72 GiB reserved in total by PyTorch)"
)
KV = (
    "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV "
    "cache (15248). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
)
DS_JSON = """{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8,
 "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": 5e8,
 "allgather_bucket_size": 2e8, "contiguous_gradients": true}}"""
LF_YAML = """### model
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
stage: sft
finetuning_type: lora
deepspeed: examples/deepspeed/ds_z3_config.json
cutoff_len: 4096
per_device_train_batch_size: 4
gradient_accumulation_steps: 4
bf16: true
"""


def test_pytorch_oom_messages_of_both_eras_give_their_figures():
    ev = read_paste(OOM_2X).evidence
    assert ev["failed_alloc_gib"] == 3.39 and ev["capacity_gib"] == 79.32 and ev["free_gib"] == 2.4
    assert ev["allocated_gib"] == 73.28 and ev["reserved_gib"] == round(73.28 + 1.59, 4)
    assert ev["process_gib"] == 76.92 and ev["gpu_index"] == 1 and ev["error_kind"] == "oom"
    old = read_paste(OOM_1X).evidence
    assert round(old["failed_alloc_gib"], 4) == round(978 / 1024, 4) and old["capacity_gib"] == 4.0
    assert old["allocated_gib"] == 1.68 and old["reserved_gib"] == 2.72


def test_vllm_start_up_errors_give_the_lengths_and_the_heads():
    kv = read_paste(KV)
    assert kv.evidence["error_kind"] == "kv_too_small" and kv.evidence["kv_tokens_reported"] == 15248
    assert kv.setup["max_model_len"] == 32768
    heads = read_paste(
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (3)."
    )
    assert heads.evidence["heads_reported"] == 28 and heads.setup["tp"] == 3


def test_launch_commands_are_split_as_a_shell_would_and_unknown_flags_kept():
    p = read_paste(
        "CUDA_VISIBLE_DEVICES=0,1,2,3 python -m vllm.entrypoints.openai.api_server \\\n"
        "  --model Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 4 --gpu-memory-utilization 0.95 \\\n"
        "  --max-model-len 32768 --enforce-eager --served-model-name 'my model' --frobnicate 3"
    )
    assert p.framework == "vllm" and p.setup["n_gpus"] == 4 and p.setup["tp"] == 4
    assert p.setup["gpu_memory_utilization"] == 0.95 and p.setup["max_model_len"] == 32768
    assert p.setup["enforce_eager"] is True and p.setup["model"] == "Qwen/Qwen2.5-72B-Instruct-AWQ"
    assert p.flags["frobnicate"] == "3" and p.flags["served_model_name"] == "my model"
    sg = read_paste("python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 --mem-fraction-static 0.8")
    assert sg.framework == "sglang" and sg.setup["tp"] == 2 and sg.setup["gpu_memory_utilization"] == 0.8
    tr = read_paste("torchrun --nproc_per_node 8 --nnodes 2 train.py --per_device_train_batch_size 4 --bf16")
    assert tr.setup["n_gpus"] == 16 and tr.setup["micro_batch"] == 4 and tr.setup["precision"] == "bf16"


def test_deepspeed_json_and_trainer_yaml_are_parsed_by_real_parsers():
    ds = read_paste(DS_JSON)
    assert ds.framework == "deepspeed" and ds.setup["zero_stage"] == 2 and ds.setup["offload"] == "optimizer"
    assert ds.setup["micro_batch"] == 2 and ds.setup["grad_accum"] == 8 and ds.setup["precision"] == "bf16"
    assert ds.flags["allgather_bucket_size"] == "200000000.0"
    lf = read_paste(LF_YAML)
    assert lf.framework == "llamafactory" and lf.setup["zero_stage"] == 3 and lf.setup["method"] == "lora"
    assert lf.setup["seq_len"] == 4096 and lf.setup["micro_batch"] == 4 and lf.read == ["yaml"]
    hf = read_paste(
        'm = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-14B", device_map="auto", load_in_4bit=True)'
    )
    assert (
        hf.framework == "transformers" and hf.setup["model"] == "Qwen/Qwen2.5-14B" and hf.flags["device_map"] == "auto"
    )


def test_nvidia_smi_and_throughput_lines():
    smi = """| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|   0  NVIDIA GeForce RTX 4090        Off | 00000000:01:00.0 Off |                  Off |
| 30%   45C    P2             120W / 450W |  20480MiB / 24564MiB |     35%      Default |
|   1  NVIDIA GeForce RTX 4090        Off | 00000000:02:00.0 Off |                  Off |
| 30%   44C    P2             118W / 450W |  20470MiB / 24564MiB |     33%      Default |"""
    ev = read_paste(smi).evidence
    assert ev["smi_count"] == 2 and ev["capacity_gib"] == round(24564 / 1024, 2) and ev["gpu_util_percent"] == 33
    line = "INFO: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.5 tokens/s, Running: 1 reqs"
    assert read_paste(line).evidence["measured_tokens_per_s"] == 31.5


def test_the_paste_and_the_question_make_the_tool_input():
    text = "4 张 A100 80G 部署，为什么报错？\n" + KV.replace("32768", "131072")
    args, unknown = diagnose_args(read_paste(text), read(text))
    assert args["gpu"] == "a100-sxm4-80gb" and args["n_gpus"] == 4 and args["max_model_len"] == 131072
    assert args["error_kind"] == "kv_too_small" and unknown == {}
    cmd = "vllm serve SomeOrg/NoSuchModel --max-model-len 8192"
    args, unknown = diagnose_args(read_paste(cmd), read(cmd))
    assert unknown == {"model": "SomeOrg/NoSuchModel"} and args.get("tp") == 1  # vLLM's default TP


def test_a_one_megabyte_paste_is_cut_with_a_note_and_its_error_still_read():
    big = "x" * 10 + ("INFO step 1 loss 2.3 lr 1e-5\n" * 40_000) + OOM_2X
    assert len(big) > 1_000_000
    started = time.perf_counter()
    p = read_paste(big)
    assert time.perf_counter() - started < 10
    assert "cut" in p.notes and p.chars == len(big) and p.evidence["failed_alloc_gib"] == 3.39
    assert MAX_PASTE_CHARS < len(big)


def test_bad_pastes_say_what_could_be_read():
    truncated = read_paste('{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"')
    assert "bad_json" in truncated.notes and not truncated.setup
    other_tool = read_paste(
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! Found: react@18.2.0\n"
        "npm ERR! node_modules/react\nnpm ERR! Could not resolve dependency:\n"
    )
    assert other_tool.read == [] and "unparsed" in other_tool.notes
    toml = read_paste('[training]\nbatch = 4\nlr = "1e-5"\n[model]\nname = "llama"\n')
    assert toml.read == [] and not toml.setup
    bad_yaml = read_paste("stage: sft\ncutoff_len: [4096\nper_device_train_batch_size: 2\nbf16: true\n")
    assert "bad_yaml" in bad_yaml.notes


def test_bad_pastes_get_a_clear_answer_in_the_users_language(advisor):
    zh = advisor.ask('为什么报错？ {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"')
    assert "无法解析" in zh.answer and "Traceback" not in zh.answer and zh.ungrounded == []
    en = advisor.ask(
        "why does this fail?\n```\nnpm ERR! code ERESOLVE\nnpm ERR! unable to resolve dependency tree\n```"
    )
    assert en.language == "en" and "is not JSON, YAML, a launch command or an error" in en.answer
    long = advisor.ask("why OOM?\n" + "INFO step loss 2.3\n" * 180 + OOM_2X)  # near the chat's 4,000 characters
    # no model to compute with: the usual suspects are things to check below the estimate, never "the cause"
    assert not long.answer.startswith("**Cause:") and "**Things to check**" in long.answer
    assert long.ungrounded == [] and long.unused == []


def test_a_one_megabyte_log_file_is_cut_with_a_note_by_the_cli(tmp_path):
    from typer.testing import CliRunner

    from bot import cli

    log = tmp_path / "train.log"
    log.write_text("INFO step 1 loss 2.3 lr 1e-5\n" * 40_000 + OOM_2X, encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["diagnose", "--log", str(log), "-q", "8 张 H800 训练 236B，ZeRO-3"])
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "粘贴内容很长，只读了开头和结尾" in shown and "CUDA OOM 报错" in shown
    missing = CliRunner().invoke(cli.app, ["diagnose", "--log", str(tmp_path / "nope.log")])
    assert missing.exit_code == 2 and "Cannot read the file" in missing.output and "Traceback" not in missing.output


LLAMA_CPP_LOG = """llm_load_tensors: offloading 6 repeating layers to GPU
llm_load_tensors: offloaded 6/33 layers to GPU
llm_load_tensors:        CPU buffer size =  3917.87 MiB
llm_load_tensors:      CUDA0 buffer size =   702.19 MiB
llama_new_context_with_model: n_ctx      = 2048
llama_new_context_with_model: KV self size  =  256.00 MiB, K (f16):  128.00 MiB, V (f16):  128.00 MiB
CUDA error: out of memory"""


def test_a_runtime_log_is_read_as_a_log_not_reported_as_a_broken_config():
    p = read_paste(LLAMA_CPP_LOG)
    assert p.evidence["layers_on_gpu"] == 6 and p.evidence["layers_total"] == 33 and p.evidence["error_kind"] == "oom"
    assert "bad_yaml" not in p.notes and "yaml" not in p.read  # its "prefix: …" lines are not a config's keys
    args, _ = diagnose_args(
        p, read("Ollama: CUDA error: out of memory with llava when providing an image\n" + LLAMA_CPP_LOG)
    )
    assert args["workload"] == "infer"  # a local runtime serves, whatever the question's words
    assert "bad_yaml" in read_paste("stage: sft\ncutoff_len: [4096\nper_device_train_batch_size: 2\nbf16: true\n").notes


def test_a_failed_merge_and_an_engine_holding_more_than_the_model_are_read_as_troubles():
    for text in ("[Bug] Unable to export 4bit or 16bit merged safetensors", "LoRA 合并导出失败，进程直接没了",
                 "model.save_pretrained_merged(...) crashes with no error"):  # fmt: skip
        assert read_paste(text).evidence.get("symptom") == "merge_export", text
    assert read_paste("saving the checkpoint every 500 steps, loss is fine").evidence.get("symptom") is None
    said = ("It is supposed that when i load the model it will take around 40GB total (model size), but when I load it, "
            "the GPU usage is more than that. Why?")  # fmt: skip
    assert read_paste(said).evidence.get("symptom") == "engine_memory"
    assert read_paste("GPU memory usage grows during training").evidence.get("symptom") is None


def test_the_framework_named_first_is_the_one_asked_about():
    text = "cannot load the model with gpu_memory_utilization=1; I'd rather use vllm than llama.cpp"
    assert read_paste(text).framework == "vllm"
    assert read_paste("llama.cpp prints this, and vllm is not installed").framework == "llama.cpp"


def test_a_runtime_falling_back_to_the_cpu_is_read_in_chinese_too():
    assert read_paste("看起来还有几个G的显卡内存，但是ollama会启用cpu推理").evidence.get("symptom") == "cpu_fallback"


def test_a_speed_on_one_gpu_and_on_several_is_read_as_the_comparison_the_user_made():
    ev = read_paste("两张 4090，单卡 3000 tokens/s，双卡只有 2500 tokens/s").evidence
    assert (ev["single_gpu_tokens_per_s"], ev["measured_tokens_per_s"]) == (3000, 2500)
    p = read_paste("one GPU gives 3000 tokens/s, 4 GPUs only 2500 tokens/s")
    assert p.evidence["single_gpu_tokens_per_s"] == 3000 and p.setup["n_gpus"] == 4


def test_a_truncated_error_and_a_toml_config_say_what_was_read_in_the_users_language(advisor):
    cut = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capac"
    p = read_paste(cut)
    assert p.evidence["failed_alloc_gib"] == 2.0 and "cut_log" in p.notes
    assert "cut_log" not in read_paste(OOM_1X).notes and "cut_log" not in read_paste(OOM_2X).notes
    en = advisor.ask("why OOM? " + cut)
    assert "stops partway" in en.answer and "only the size it tried to allocate was read" in en.answer
    toml = '为什么 OOM？\n[training]\nbatch = 4\nlr = "1e-5"\n[model]\nname = "llama"\n'
    assert "not_yaml_json" in read_paste(toml).notes and "not_yaml_json" not in read_paste(LF_YAML).notes
    zh = advisor.ask(toml)
    assert "TOML 或 INI" in zh.answer and "Traceback" not in zh.answer and zh.ungrounded == []


def test_a_kill_by_the_os_is_read_in_every_wording_launchers_print():
    """DeepSpeed's launcher prints "exits with return code = -9" (deepspeed-3823, a development thread), Python's
    subprocess "returned non-zero exit status -9", torchrun "exitcode: -9": the kernel's OOM killer, host RAM."""
    for line in (
        "[launch.py:315:sigkill_handler] Killing subprocess 1234\nexits with return code = -9",
        "subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status -9.",
        "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -9) local_rank: 0",
        "训练到一半 exit code -9 退出了",
    ):
        assert read_paste(line).evidence.get("error_kind") == "host_oom", line
    assert read_paste("exit code -90 from the wrapper").evidence.get("error_kind") != "host_oom"
