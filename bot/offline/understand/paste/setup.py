"""A paste and the question around it -> the `diagnose` tool's input. The paste's own setup wins over the
question's words (the command is what ran); the question fills what the paste leaves out (the card, the count)."""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.dialogue import slots_of
from bot.offline.understand.paste import Paste
from bot.offline.understand.paste.paired import slowest_card
from bot.offline.understand.request.model import Request
from tools.catalog.architecture import param_count
from tools.catalog.lookup import get_gpu, get_model
from tools.diagnose.dtype import fp32_weights
from tools.diagnose.facts import fact
from tools.errors import AdvisorError
from tools.memory.capacity import capacity_bytes
from tools.schemas.diagnose import DiagnoseInput
from tools.units import GiB

_FIELDS = frozenset(DiagnoseInput.model_fields)
_FRAMEWORKS = (
    "vllm",
    "sglang",
    "tgi",
    "lmdeploy",
    "deepspeed",
    "pytorch",
    "llamafactory",
    "transformers",
    "accelerate",
    "torch_npu",
)
#: frameworks that both train and serve (or none named): the question's words say which ran
_GENERAL = (None, "pytorch", "transformers", "accelerate", "torch_npu")
#: frameworks whose run the question's words decide: the general ones and DeepSpeed, which also serves
#: (deepspeed.init_inference, MII): "deepspeed 2张V100 运行 internlm-chat-20B 也会oom吗" runs a model, trains nothing
_EITHER = (*_GENERAL, "deepspeed")
#: runtimes that serve a model on one machine, spilling layers to the CPU when the GPU is too small
_LOCAL = ("ollama", "llama.cpp")
#: a GGUF quantisation tag (Q4_K_M, q8_0) says the weights' precision
_GGUF = re.compile(r"\bq([2-8])_(?:k|[01])", re.IGNORECASE)
#: a preference-training stage, said in words or as LLaMA-Factory's `stage` (its reference/reward models load too)
_PREFERENCE = re.compile(r"(?<![a-z])(dpo|kto|ppo|orpo|simpo)(?![a-z])", re.IGNORECASE)
#: building an inference engine (TensorRT-LLM's convert + build), which holds several copies in host RAM
_ENGINE_BUILD = re.compile(
    r"trtllm-build|convert_checkpoint|\bbuild\.py\b|\bbuild(?:ing)?\s+(?:an?\s+|the\s+|my\s+)?(?:trt\S*\s+|tensorrt\S*\s+)?engines?\b|"
    r"engine build|构建引擎|编译引擎|build\s*引擎",
    re.IGNORECASE,
)
#: a quantised checkpoint's name says its weights' precision ('Qwen2-72B-Instruct-AWQ', '…-GPTQ-Int4', '…-FP8',
#: '…-bnb-4bit'): AWQ/GPTQ/W4A16 are 4-bit integer weights with group scales, bitsandbytes' 4-bit is NF4
_NAME_QUANT = re.compile(
    r"[-_](?:(awq|gptq(?:[-_]int4)?|int4|w4a16)|(bnb[-_]4bit)|(gptq[-_]int8|int8|w8a8)|(fp8))(?=$|[-_./\s]|[\u3000-\u9fff\uff00-\uffef])",
    re.IGNORECASE,
)
#: a trainer's command that serves or chats instead of training
#: a Hugging Face generation call in the paste
_GENERATES = re.compile(
    r"\.generate\(|\.from_quantized\(|TextGenerationPipeline|pipeline\(\s*[\"'](?:text-generation|text2text-generation)",
    re.I,
)
#: words of a training run: an OOM while the weights load says nothing of training without them
_TRAINING = re.compile(
    r"(?<!pre)train|fine-?tun|微调|训练|\bsft\b|lora|deepspeed|fsdp|accelerator\.prepare|backward|optimi[sz]er", re.I
)
#: a load by hand, and what says its dtype (or a quantised load) beside it
_FROM_PRETRAINED = re.compile(r"\.from_pretrained\(", re.I)
_DTYPE_SAID = re.compile(
    r"torch_dtype|\bdtype\s*=|\.half\(\)|\.bfloat16\(\)|\.to\(\s*torch\.(?:b?float16|half)|load_in_[48]bit|"
    r"quantization_config|from_quantized|gptq|awq|gguf|bnb",
    re.I,
)
#: the Hugging Face Trainer's own flags: the script runs TrainingArguments, with its defaults
_HF_TRAINER = re.compile(r"--(?:per_device_train_batch_size|gradient_accumulation_steps)\b", re.I)
#: LLaMA-Factory's own keys: it turns checkpointing on by itself (frameworks.yaml llamafactory.gradient_checkpointing)
_LLAMAFACTORY_KEYS = re.compile(r"--(?:finetuning_type|cutoff_len|template|stage)\b", re.I)
_TRAINER_SERVES = re.compile(r"llamafactory-cli\s+(?:api|chat|webchat)(?![a-z])", re.IGNORECASE)
#: a quantised checkpoint's format named as a precision mention ("部署 7b-awq 模型"): the weights that ran
_CHECKPOINT_FORMAT = re.compile(r"^(?:awq|gptq(?:[-_]int[48])?|w4a16|w8a8)$", re.IGNORECASE | re.MULTILINE)
_WHOLE_NAME = re.compile(r"[^\s，。、；：（）,;:()]+")
_SUFFIX = re.compile(r"[-_](?:instruct|chat|hf|base|it|awq|gptq|int4|int8|fp8|bnb-4bit|\d+k)$", re.IGNORECASE)


def model_id(name: str | None) -> str | None:
    """The catalog id of a model as a command or config names it ('Qwen/Qwen2.5-7B-Instruct', '/data/Qwen2-7B')."""
    if not name:
        return None
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    generic = None  # a generic model of the size the name says: only when no spelling names a catalog model (a
    # path's "…/ChatGLM3-main/chatglm3-6b" read whole is a generic 6B; its last part is ChatGLM3-6B)
    for candidate in (name, tail, _SUFFIX.sub("", tail), _SUFFIX.sub("", _SUFFIX.sub("", tail))):
        try:
            found = get_model(candidate).id
        except AdvisorError:
            continue
        if not found.startswith("generic-"):
            return found
        generic = generic or found
    return generic


def name_precision(written: str | None, request: Request) -> str | None:
    """The weights' precision a quantised checkpoint's name says: the model the command or config loads, else a
    model the question names; None where no name carries a quantisation tag."""
    # a mention holds the name read (the tag may be left off it): the whole name as written runs on from its start
    spans = [_WHOLE_NAME.match(request.text, m.start) for m in request.mentions if m.role == "model"]
    names = [written] if written else [w.group(0) for w in spans if w]
    for name in names:
        if m := _NAME_QUANT.search(name or ""):
            return ("int4", "nf4", "int8", "fp8")[next(i for i, g in enumerate(m.groups()) if g)]
    return None


def gpu_id(name: str | None) -> str | None:
    if not name:
        return None
    for candidate in (name, name.removeprefix("NVIDIA ").removeprefix("GeForce ").replace("-", " ")):
        try:
            return get_gpu(candidate).id
        except AdvisorError:
            continue
    return None


#: a card whose capacity differs from the log's by more than this share is not the card that ran
CAPACITY_MISMATCH = 0.2


def _disagrees(gpu: str, capacity_gib: float) -> bool:
    held = capacity_bytes(get_gpu(gpu)) / GiB
    return abs(held - capacity_gib) > CAPACITY_MISMATCH * held


def question_model(request: Request) -> str | None:
    """The first model the question names (a known stand-in for a name the catalog lacks), as a catalog id."""
    p = request.parsed
    for m in request.mentions:
        if m.role == "model":
            name = str(m.value or m.text)
            stand = p.stand_ins.get(name) or p.stand_ins.get(m.text)
            return stand or model_id(name) or model_id(m.text)
    return p.models[0] if p.models else None


def offload_of(said: object, zero_stage: int | None) -> str:
    """The ZeRO offload the words say: parameters named -> optimizer+params; "offload" alone under ZeRO-3 is the
    shipped ZeRO-3 offload config, which offloads both (frameworks.yaml `llamafactory.z3_offload_config`)."""
    if said in ("param", "optimizer+params") or (said is True and zero_stage == 3):
        return "optimizer+params"
    return "optimizer"


def host_args(request: Request, paste: Paste) -> dict[str, Any]:
    """What host RAM depends on: the RAM and swap the user states (GB), a preference stage, an engine build."""
    out: dict[str, Any] = {}
    for m in request.mentions:
        if m.role in ("ram_gb", "swap_gb") and isinstance(m.value, float) and m.value > 0:
            gb = m.value * (1024 if re.search(r"\d\s*t", m.text, re.IGNORECASE) else 1)
            out.setdefault("host_ram_gb" if m.role == "ram_gb" else "swap_gb", gb)
    said = request.text or ""
    stage = str(paste.flags.get("stage", "")) if paste.flags else ""
    if m := _PREFERENCE.search(stage) or _PREFERENCE.search(said):
        out["preference"] = m.group(1).lower()
    if _ENGINE_BUILD.search(said):
        out["engine_build"] = True
    return out


def diagnose_args(paste: Paste, request: Request) -> tuple[dict[str, Any], dict[str, str]]:
    """The tool input, and what could not be resolved (role -> the name as written)."""
    p = request.parsed
    s, ev = dict(paste.setup), paste.evidence
    unknown: dict[str, str] = {}
    args: dict[str, Any] = {}
    written = s.pop("model", None)
    model = model_id(written) or question_model(request)
    if written and not model_id(written):
        unknown["model"] = written
    if model:
        args["model"] = model
    gpu = gpu_id(ev.get("smi_gpu")) or slots_of(p).get("gpu") or (p.gpus[0] if p.gpus else None)  # the answer's card
    if gpu and not ev.get("smi_gpu") and ev.get("capacity_gib") and _disagrees(gpu, ev["capacity_gib"]):
        gpu = None  # the log's "total capacity" is what ran: a card read from the question's words that holds
        # a different amount ("我有40G显存" over four 10 GB cards) is not that card
    read_speed = ev.get("symptom") == "slow" and ev.get("measured_tokens_per_s") and gpu_id(gpu)
    slowest = slowest_card(request) if read_speed else None
    if slowest and gpu_id(slowest[0]):  # two cards, a speed each, and "slow": the slow card's run is the question's
        gpu, args["measured_tokens_per_s"] = slowest
    # no card named, only the log's "total capacity": the catalog card of that size stands in for it
    stand_in = bool(gpu and ev.get("capacity_gib") and not ev.get("smi_gpu"))
    stand_in = stand_in and not any(m.role == "gpu" for m in request.mentions)
    if gpu:
        args["gpu"] = gpu
    quant = s.pop("method_quant", None)
    framework = paste.framework if paste.framework in _FRAMEWORKS else None
    if framework:
        args["framework"] = framework
    elif paste.framework in _LOCAL:
        args["framework"], args["workload"] = paste.framework, "infer"
    if paste.framework in _LOCAL or framework is None:
        if m := _GGUF.search(" ".join(str(v) for v in (written or "", request.text or ""))):
            s.setdefault("precision", "int4" if int(m.group(1)) <= 5 else "int8")
        if p.precision_from and "precision" not in s:  # "ollama run llama3.1:70b": the runtime's default build
            s["precision"] = p.precision
    serving = framework in ("vllm", "sglang", "tgi", "lmdeploy") or ev.get("error_kind") in (
        "kv_too_small",
        "heads_not_divisible",
        "quant_tp_misaligned",
    )
    if "precision" not in s and (named := name_precision(written, request)):
        s["precision"] = named
    if quant:
        if serving or framework == "transformers":
            s.setdefault("precision", "nf4")
        else:
            s.setdefault("method", "qlora")
    if ev.get("base_bits") and "precision" not in s and not serving:  # a bitsandbytes base: its weights' bytes
        s["precision"] = "int8" if ev["base_bits"] == 8 else "nf4"
    if s.get("method") == "qlora" and s.get("precision") not in ("bf16", "fp16", None):
        s.pop("precision")
    n = s.pop("n_gpus", None) or p.n_gpus or ev.get("smi_count") or s.get("tp") or ev.get("gpus_said")
    if ev.get("cards_indexed"):  # "0卡 … 1卡": the cards the words name by index ran it, whatever "单卡" said before
        n = max(int(n or 1), ev["cards_indexed"])
    if n:
        args["n_gpus"] = int(n)
    if framework in ("vllm", "sglang") and "command" in paste.read and "tp" not in s:
        s["tp"] = 1  # the engines' default tensor-parallel size, however many GPUs are visible
    if "tp" in s and args.get("n_gpus", 1) < s["tp"]:
        args["n_gpus"] = s["tp"]
    for key, val in {**s, **ev}.items():
        if key in _FIELDS and key not in args and val is not None:
            args[key] = val
    if args.get("error_kind") == "quant_tp_misaligned":  # the engine's refusal, as the tool takes it
        args["error_kind"], args["quant_misaligned"] = "other", True
    if "used_gb" in args and not (model and fp32_weights(param_count(get_model(model)).total, args["used_gb"])):
        args.pop("used_gb")  # the memory the user says it takes is handed over only where it says the dtype
    workload = slots_of(p).get("workload")
    if _GENERATES.search(request.text) and not p.method:  # `model.generate(...)`: a generation run, not training
        args.setdefault("workload", "infer")
    if _TRAINER_SERVES.search(request.text):  # `llamafactory-cli api` / `chat`: the trainer's own inference server
        args.setdefault("workload", "infer")
    if paste.framework in _LOCAL:
        pass  # a local runtime serves: the question's words ("image", "fine-tuned model") do not make it training
    elif (not framework or framework in _EITHER) and workload in ("train", "infer"):
        args["workload"] = workload  # what the words say ran ("推理", "serve", max_model_len) before any fallback
    elif (not framework or framework in _GENERAL) and ev.get("symptom") == "uneven_growth" and not p.method:
        args["workload"] = "infer"  # one card fills under a layer split, nothing said of training: generation
    elif (
        (not framework or framework in _GENERAL)
        and ev.get("error_kind") == "load_oom"
        and not p.method
        and args.get("zero_stage") is None
        and not _TRAINING.search(request.text)
    ):
        args["workload"] = "infer"  # out of memory while the weights load, nothing said of training: a load to run it
    elif (
        not framework
        and ev.get("symptom") != "concurrency"
        and (p.method or args.get("zero_stage") is not None or ev.get("error_kind") in ("oom", "load_oom"))
    ):
        args["workload"] = "train"  # an OOM report without an engine is a training question, as the planner reads it
    if stand_in and args.get("workload") == "infer":  # loading or generating, the capacity sizes the weights; the
        args.pop("gpu", None)  # stand-in would lend its generation's features (no bf16 on a V100) to an unnamed card
    if (
        (args.get("workload") == "train" or (p.method and not serving and args.get("workload") != "infer"))
        and "grad_checkpointing" not in args
        and framework in _GENERAL
        and _HF_TRAINER.search(request.text)
        and not _LLAMAFACTORY_KEYS.search(request.text)
        and "checkpointing" not in request.text.lower()
    ):  # the Trainer's flags and no word of checkpointing: TrainingArguments' default (off) is what ran
        args["grad_checkpointing"] = fact("transformers", "trainer_gradient_checkpointing")["value"]
    by_hand = framework in _GENERAL and _FROM_PRETRAINED.search(request.text)
    if by_hand and "workload" not in args and not p.method and not _TRAINING.search(request.text):
        args["workload"] = "infer"  # a load by hand with nothing said of training: a load to run the model
    if by_hand and args.get("workload") == "infer" and "precision" not in args and not _DTYPE_SAID.search(request.text):
        args["precision"] = "fp32"  # no dtype: transformers 4.x loads fp32 (frameworks.yaml from_pretrained_dtype)
    if not serving and p.method and "method" not in args:
        args["method"] = p.method
    if "zero_stage" not in args and p.zero_stage is not None:
        args["zero_stage"] = p.zero_stage
    if p.context_len and "max_model_len" not in args and args.get("workload") != "train":
        args["max_model_len"] = p.context_len  # "支持 max_model_len 为 1M": the length said in words is what ran
    if args.get("workload") == "train" or (p.method and not serving and args.get("workload") != "infer"):
        # "序列长度是512，batch_size为1": what the words say a training run used, where no config said it
        if (p.seq_len or p.context_len) and "seq_len" not in args:
            args["seq_len"] = p.seq_len or p.context_len
        if p.micro_batch and "micro_batch" not in args:
            args["micro_batch"] = p.micro_batch
    if "zero_stage" not in args and (paste.flags or {}).get("fsdp"):  # FSDP's sharding as the ZeRO stage it equals
        args["zero_stage"] = 2 if paste.flags["fsdp"] == "shard_grad_op" else 3
    if "precision" not in args and p.precision in ("bf16", "fp16", "fp8", "fp32"):
        args["precision"] = p.precision
    elif "precision" not in args and p.precision in ("int4", "int8") and _CHECKPOINT_FORMAT.search(_said(request)):
        args["precision"] = p.precision  # "7b-awq", "GPTQ-Int4": the checkpoint that ran, not a what-if
    named_config = "deepspeed" in (paste.flags or {}) or paste.setup.get("zero_stage") is not None
    if "offload" not in args and p.offload and not named_config:  # a pasted config says what ran; the words may
        args["offload"] = offload_of(p.offload, args.get("zero_stage"))  # name the alternative that worked
    host = host_args(request, paste)
    if args.get("error_kind") != "host_oom" and not host.get("engine_build"):
        host = {k: v for k, v in host.items() if k not in ("host_ram_gb", "swap_gb")}  # the RAM weighs only there
    args.update(host)
    flags = dict(paste.flags or {})
    if ev.get("base_bits"):  # "开启了8bit": the bitsandbytes load, as its flag
        flags.setdefault(f"load_in_{ev['base_bits']}bit", "true")
    if flags:
        items = [f"{k}={v}" for k, v in flags.items() if not re.search(r"[\s,]", f"{k}{v}")]
        args["flags"] = " ".join(items)[:20_000] or None
    return {k: v for k, v in args.items() if v is not None}, unknown


def _said(request: Request) -> str:
    """The precision mentions as written, one per line (matched whole against a checkpoint format)."""
    return "\n".join(m.text for m in request.mentions if m.role == "precision")
