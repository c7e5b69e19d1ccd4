"""What a pasted OOM or start-up error says about the run, read before any cause is ranked (issue 24):
vLLM's own bf16 check names the engine (its fix is vLLM's `--dtype half`), an OOM while the checkpoint loads
with nothing said of training is a load to run the model (the weights first), and a card nobody named, only
the log's capacity, lends no generation's features to the diagnosis."""

T4_BF16 = (
    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0\nI'm getting this error:\n\n"
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
    "compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in CLI, for example: "
    "--dtype=half.\n\nIs there a way to pass the set the dtype parameter?"
)
LOADING = (
    "Met error of CUDA out of memory. How to split the model into multiple GPUs?\nWhen loading the checkpoint, it "
    "comes out:\n`torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB (GPU 0; 15.90 GiB "
    "total capacity; 15.30 GiB already allocated; 31.81 MiB free; 15.30 GiB reserved in total by PyTorch)`"
)
OTHER = (
    "RuntimeError: CUDA out of memory\n> RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; "
    "11.17 GiB total capacity; 505.96 MiB already allocated; 12.50 MiB free; 530.00 MiB reserved in total by "
    "PyTorch)\nPyTorch version: 1.5.1"
)


def _diagnose(trace):
    return next(c for c in trace.tool_calls if c.tool == "diagnose")


def test_vllms_bf16_check_names_the_engine_and_its_flag(advisor):
    # gh-vllm-docker-37 (a T4 in a vLLM container; the message is vLLM's own)
    t = advisor.ask(T4_BF16)
    call = _diagnose(t)
    assert call.input["framework"] == "vllm"
    assert call.output["causes"][0]["cause"] == "precision_unsupported"
    assert "--dtype=half" in t.answer and "fp16=true" not in t.answer


def test_an_oom_while_loading_is_a_load_and_the_weights_come_first(advisor):
    # openchat-16 (diagnose corpus): 13B on a 16 GB card, OOM while the checkpoint loads
    call = _diagnose(advisor.ask(LOADING))
    assert call.input["error_kind"] == "load_oom" and call.input["workload"] == "infer"
    assert "gpu" not in call.input  # only the capacity was given: no V100 stands in for it
    top2 = [c["cause"] for c in call.output["causes"][:2]]
    assert "weights_exceed_memory" in top2 and "precision_unsupported" not in top2


def test_memory_held_elsewhere_leads_with_its_figure(advisor):
    t = advisor.ask(OTHER)
    assert _diagnose(t).output["causes"][0]["cause"] == "other_process_memory"
    assert "10.64 GiB held outside this process" in t.answer and "nvidia-smi" in t.answer


TRAINER_OOM = (
    "提供的base微调16G显存 out of memory.请问需要多大的显存\n"
    "python3 finetune.py --train_format input-output --train_file train_data.jsonl --lora_rank 8 --lora_alpha 32 "
    "--max_seq_length 256 --model_name_or_path /home/u/chatglm3-6b --output_dir output_test/ "
    "--per_device_train_batch_size 1 --gradient_accumulation_steps 1 --max_steps 500\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.74 GiB total capacity; "
    "14.89 GiB already allocated; 18.56 MiB free; 15.10 GiB reserved in total by PyTorch)"
)


def test_a_trainer_script_without_checkpointing_runs_the_trainers_default_off(advisor):
    # gh-chatglm3-567: the Hugging Face Trainer's flags, no word of checkpointing: TrainingArguments' default (off)
    call = _diagnose(advisor.ask(TRAINER_OOM))
    assert call.input["grad_checkpointing"] is False
    acts = next(c for c in call.output["causes"] if c["cause"] == "activations_too_large")
    assert acts["fix"]["flag"] == "gradient_checkpointing" and acts["fix"]["value"] is True


def test_llamafactory_keys_keep_its_own_default_on(advisor):
    # LLaMA-Factory turns checkpointing on by itself: its keys beside the Trainer's flags leave the default alone
    lf = TRAINER_OOM.replace("--train_format input-output", "--stage sft --finetuning_type lora --cutoff_len 256")
    assert "grad_checkpointing" not in _diagnose(advisor.ask(lf)).input


FP32_LOAD = (
    "RTX 4090 24GB, why does this OOM?\n"
    "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-7B-Instruct', device_map='cuda')\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB (GPU 0; 23.65 GiB total capacity; "
    "22.95 GiB already allocated; 110.06 MiB free; 22.99 GiB reserved in total by PyTorch)"
)


def test_from_pretrained_without_a_dtype_is_read_as_fp32_and_the_fix_is_torch_dtype(advisor):
    t = advisor.ask(FP32_LOAD)
    call = _diagnose(t)
    assert call.input["precision"] == "fp32" and call.input["workload"] == "infer"
    top = call.output["causes"][0]
    assert top["cause"] == "weights_exceed_memory" and top["fix"]["flag"] == "torch_dtype"
    assert "torch_dtype=torch.float16" in t.answer
    said = FP32_LOAD.replace("device_map='cuda')", "device_map='cuda', torch_dtype=torch.bfloat16)")
    assert _diagnose(advisor.ask(said)).input.get("precision") != "fp32"
