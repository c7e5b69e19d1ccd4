"""What a user pastes beside a question: a log, a launch command, a config. `read_paste(text) -> Paste` finds
the evidence (an error and its figures, a measured speed) and the setup (model, GPUs, framework, flags), with
real parsers (shlex, json, yaml.safe_load, ast), within size limits; what could not be read is said, never dropped.

    >>> p = read_paste("vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 3 --foo 1")
    >>> p.setup["tp"], p.framework, p.flags
    (3, 'vllm', {'foo': '1'})
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from bot.offline.understand.paste.commands import command_lines, read_command
from bot.offline.understand.paste.configs import read_from_pretrained, read_json, read_yaml
from bot.offline.understand.paste.keys import KEYS, apply, norm
from bot.offline.understand.paste.logs import SLOW_WORDS, forecast, read_log, subject, trouble
from bot.offline.understand.paste.timed import per_token, timed_output
from bot.offline.understand.paste.tried import tried_settings

#: a paste longer than this is cut: its head (commands and configs come first) and its tail (the error is last)
MAX_PASTE_CHARS = 100_000
#: text that is a paste rather than prose: a fenced block, or several lines that look like code or a log
_CODE = re.compile(r"```|(?:^[^\n]*[=:{}\[\]<>|$#!@/\\][^\n]*(?:\n|$)){4,}", re.M)
HEAD_CHARS = 20_000
#: a PyTorch OOM message that opened its figures ("(GPU 0;" in 1.x, "GPU 0 has" in 2.x)
_OOM_OPENED = re.compile(r"tried to allocate[^\n]{0,40}(?:\(GPU\s*\d+|GPU\s+\d+\s+has)", re.I)
#: a TOML or INI config: a [table] line and key = value lines
_TOML_TABLE = re.compile(r"^\s*\[[A-Za-z_][\w.-]*\]\s*$", re.M)
_TOML_KEY = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*=\s*\S", re.M)


class Paste(BaseModel):
    """What was read from the pasted text: `setup` and `evidence` use the diagnose tool's field names."""

    setup: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)
    flags: dict[str, str] = Field(default_factory=dict)
    framework: str | None = None
    read: list[str] = Field(default_factory=list)  # what kinds of text were read: oom, command, deepspeed_json, …
    notes: list[str] = Field(default_factory=list)  # cut, bad_json, bad_yaml
    chars: int = 0  # the paste's length, before any cut
    trouble: str | None = None  # the trouble said in words: failed, memory_higher, abnormal (logs.TROUBLES)

    @property
    def has_evidence(self) -> bool:
        return bool(self.evidence.get("error_kind") or self.evidence.get("failed_alloc_gib")
                    or self.evidence.get("measured_tokens_per_s"))  # fmt: skip

    @property
    def anything(self) -> bool:
        return bool(self.read)


def read_paste(text: str) -> Paste:
    out = Paste(chars=len(text))
    if len(text) > MAX_PASTE_CHARS:
        text = text[:HEAD_CHARS] + "\n" + text[-(MAX_PASTE_CHARS - HEAD_CHARS) :]
        out.notes.append("cut")
    setup: dict[str, Any] = {}
    if read_json(text, setup, out.flags, out.notes):
        out.read.append("deepspeed_json")
    if read_yaml(text, setup, out.flags, out.notes):
        out.read.append("yaml")
    if read_from_pretrained(text, setup, out.flags):
        out.read.append("from_pretrained")
    frameworks = [read_command(line, setup, out.flags) for line in command_lines(text)]
    if frameworks:
        out.read.append("command")
    inline_settings(text, setup)
    if m := _ASCEND_VERSION.search(text):  # which vllm-ascend ran: early releases decode eagerly (frameworks.yaml)
        out.flags.setdefault("vllm_ascend_version", m.group(1))
    fsdp_sharding(text, out.flags)
    if tried := tried_settings(text):
        setup["tried"] = tried
    ev, seen = read_log(text)
    timed_output(text, ev)
    if per_token(text, ev):
        seen.append("throughput")
    out.read += seen + (["timed_output"] if "timed_output" in ev else [])
    for key in ("max_model_len", "tp", "gpu_memory_utilization", "n_gpus"):  # the log's own figures of the setup
        if key in ev:
            setup.setdefault(key, ev.pop(key))
    out.framework = (
        engine_of_log(text) or next((f for f in frameworks if f), None) or setup.pop("framework", None)
        or _framework_of(text)
    )  # fmt: skip
    setup.pop("framework", None)
    out.setup, out.evidence = setup, ev
    described(text, out)
    if "failed_alloc_gib" in ev and "capacity_gib" not in ev and _OOM_OPENED.search(text):
        out.notes.append("cut_log")  # the OOM message stops before its memory figures: only the request was read
    if (
        "yaml" not in out.read
        and "deepspeed_json" not in out.read
        and _TOML_TABLE.search(text)
        and _TOML_KEY.search(text)
    ):
        out.notes.append("not_yaml_json")  # a TOML / INI config: its settings are not read
    if not out.read and not out.notes and _CODE.search(text):
        out.notes.append("unparsed")  # code or a log was pasted, but nothing in it reads
    return out


#: engines that reserve their memory up front: more memory than the model's is their setting, not a leak
_RESERVING = ("vllm", "sglang", "lmdeploy", "tgi")


def described(text: str, out: Paste) -> None:
    """The trouble the words tell, and what it is about: a speed or a duration asked "is this normal?" is a slow
    run; more memory than expected on an engine that reserves it is the engine's setting; slow under a concurrent
    load on a server that does not batch is requests served one after another. A forecast ("会不会很慢") is no
    trouble."""
    ev = out.evidence
    if ev.get("symptom") == "slow" and forecast(text):
        del ev["symptom"]
        out.read.remove("slow")
    _told(text, out)
    _serial(text, out)


def _told(text: str, out: Paste) -> None:
    """The symptom the words' trouble gives, where the log gave none."""
    ev = out.evidence
    found = trouble(text)
    if found is None:
        if out.framework in _RESERVING and not ev.get("error_kind") and "symptom" not in ev and _USAGE.search(text):
            ev["symptom"] = "engine_memory"  # "每张卡各占20g" on an engine that reserves: why it holds so much
        return
    out.trouble, at = found
    if out.trouble == "failed" or "symptom" in ev:
        return
    about = "memory" if out.trouble == "memory_higher" else subject(text, at)
    if about == "speed":
        ev["symptom"] = "slow"
    elif about == "memory" and out.framework in _RESERVING and not ev.get("error_kind"):
        ev["symptom"] = "engine_memory"


#: memory the user sees in use ("占用了20g显存", "每张都会各占20g", "it uses 22GB", "takes 90% of the VRAM"), or sees
#: full ("显存就要满了", "VRAM is almost full") with nothing failing: on a reserving engine, its reservation
_USAGE = re.compile(
    r"(?:显存|内存)\s*(?:就|都|很快|马上)?\s*(?:要|快)?\s*(?:被)?(?:占)?满了?|(?:vram|gpu memory|memory)\s+(?:is\s+)?(?:almost\s+|nearly\s+)?full\b|"
    r"(?:占用了?|占了|各占|占到|用了|吃了|吃掉)\s*(?:约|大约|差不多)?\s*\d+(?:\.\d+)?\s*(?:g|gb|gib|%)(?![a-z])|"
    r"\b(?:uses?|using|takes?|taking|occupies|occupying|consumes?|allocates?)\s+(?:about |around |~)?\d+(?:\.\d+)?\s*(?:g|gb|gib|%)",
    re.I,
)
#: a load several users put on the server at once ("10个并发", "压测", "two users … simultaneously")
_CONCURRENT = re.compile(
    r"并发|压测|同时(?:请求|访问|调用|使用)|多(?:个)?(?:人|用户)同时|jmeter|locust|"
    r"concurren\w*|simultaneous\w*|in parallel|parallel requests|(?:\d+|two|several|multiple) users",
    re.I,
)


def _serial(text: str, out: Paste) -> None:
    """Slow (or idle GPUs) under a concurrent load, on a server that is not a batching engine (a demo script, an
    app, transformers' generate): the requests are served one after another."""
    ev = out.evidence
    if ev.get("error_kind") or out.framework in _RESERVING:
        return
    slowed = ev.get("symptom") in ("slow", "low_gpu_util") or (
        ev.get("symptom") == "concurrency" and SLOW_WORDS.search(text) and not forecast(text)
    )  # a load alone ("并发 100 要几张卡") is a sizing question, not a trouble
    if slowed and _CONCURRENT.search(text):
        ev["symptom"] = "serial"


_INLINE = re.compile(
    r"(?<![\w.-])([a-z][a-z0-9_]{2,40})\s*(?:[=:]|设(?:置)?(?:为|成|到)?|改(?:为|成)|调(?:到|成)|(?:is )?set (?:to|at))\s*['\"]?([\w.\-/]+)",
    re.I,
)  # "gpu_memory_utilization=0.95", "gpu_memory_utilization 设 0.95", "cutoff_len set to 16384"


#: the vllm-ascend release a paste names ("quay.io/ascend/vllm-ascend:v0.18.0", "vllm-ascend 0.7.3", "vllm_ascend==0.9.1")
_ASCEND_VERSION = re.compile(r"vllm[-_]ascend\s*(?:[:=]=?|\s)\s*v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)


def inline_settings(text: str, setup: dict[str, Any]) -> None:
    """Settings written in a sentence ("deepspeed zero2, offload_optimizer=cpu, per_device_train_batch_size=1",
    "cutoff_len 设成 16384"):
    only keys the table knows are taken (a sentence's other "a=b" are not flags the user passed)."""
    for m in _INLINE.finditer(text[:HEAD_CHARS]):
        key, val = norm(m.group(1)), m.group(2)
        if text[m.end() : m.end() + 1] == "(":
            continue  # code: `model = FSDP(model, …)` calls something, it sets nothing
        if key in ("offload_optimizer", "offload_param") and val.lower() in ("cpu", "nvme"):
            both = key == "offload_param" or setup.get("offload") == "optimizer+params"
            setup["offload"] = "optimizer+params" if both else setup.get("offload", "optimizer")
        elif key in KEYS:
            apply(key, val, setup, {})


_FSDP = re.compile(r"\bfsdp\b|\b(full|hybrid)[_ ]shard\b|\bshard_grad_op\b", re.I)


#: FSDP named as one option among others ("FSDP, DeepSpeed?", "FSDP 还是 DeepSpeed"), asked about, or wished for ("add
#: FSDP support"): not what ran
_ASKED = re.compile(
    r"\bfsdp\b\s*(?:,|/|or|还是|或者?)\s*(?:deepspeed|zero|ddp)|(?:deepspeed|zero\S*|ddp)\s*(?:,|/|or|还是|或者?)\s*\bfsdp\b|"
    r"\?\s*$|？\s*$|support(?:s|ed)? (?:for )?fsdp|fsdp support|(?:should|can|could) i use fsdp|支持\s*fsdp",
    re.I,
)


def _sentence(text: str, m: re.Match) -> str:
    """The sentence around a match (to its end mark, the mark included)."""
    start = max(text.rfind(c, 0, m.start()) for c in ".?!。？！\n") + 1
    ends = [i for c in ".?!。？！\n" if (i := text.find(c, m.end())) >= 0]
    return text[start : min(ends) + 1 if ends else len(text)]


def fsdp_sharding(text: str, flags: dict[str, str]) -> None:
    """PyTorch FSDP named in the words or the code, as the `fsdp` flag (its strategy): it shards the model states as
    ZeRO-3 does (FULL_SHARD, its default, and HYBRID_SHARD inside a node) or as ZeRO-2 does (SHARD_GRAD_OP);
    frameworks.yaml `pytorch.fsdp_sharding`. setup.py gives the memory arithmetic that stage; the flag also says
    whose spelling a fix takes."""
    head = text[:HEAD_CHARS]
    found = [
        m.group(0).lower().replace(" ", "_") for m in _FSDP.finditer(head) if not _ASKED.search(_sentence(head, m))
    ]
    if not found or re.search(r"deepspeed|\bzero[-_ ]?[123]\b", head, re.I):
        return  # (DeepSpeed named too: a run shards with one or the other, and the words do not say which)
    flags.setdefault("fsdp", next((f for f in found if f != "fsdp"), "full_shard"))


#: frameworks a paste or its prose names, beyond the launch commands: serving engines, and training tools that run on
#: Hugging Face transformers (their OOMs are a trainer's)
_NAMED = (
    (re.compile(r"text[-_ ]generation[-_ ]inference|text_generation_(?:server|launcher|router)|\btgi\b", re.I), "tgi"),
    (re.compile(r"\blmdeploy\b", re.I), "lmdeploy"),
    (re.compile(r"\b(?:unsloth|axolotl|torchtune|xtuner|ms-swift|swift (?:sft|rlhf|pt)|peft|trl|sfttrainer)\b", re.I),
     "transformers"),
)  # fmt: skip


#: what only a serving engine prints or reads: its logger's line format, its own start-up errors, its flags. Found in
#: a paste, that engine ran, whatever launched it (`llamafactory-cli api` with the vLLM backend) or the words name
#: first, and the fixes are said in its flags
_ENGINE_MARKS = (
    ("vllm", re.compile(
        r"^\(?(?:INFO|WARNING|ERROR|DEBUG)\)? \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./-]+\.py:\d+\]|\bEngineCore\b|\bVllmWorker\b|"
        r"must be divisible by tensor parallel size|that can be stored in kv cache|no available memory for the cache blocks|"
        r"--gpu-memory-utilization|--max-model-len|--tensor-parallel-size|"
        r"setting the\s*`?dtype`? flag in CLI", re.I | re.M)),  # its bf16 check (frameworks.yaml vllm.bf16_check)
    ("sglang", re.compile(r"--mem-fraction-static|mem_fraction_static|--max-prefill-tokens|\bsglang\.launch_server", re.I)),
    ("tgi", re.compile(r"--max-batch-total-tokens|--max-batch-prefill-tokens|text-generation-launcher", re.I)),
    ("lmdeploy", re.compile(r"cache_max_entry_count|--cache-max-entry-count|\bturbomind\b", re.I)),
)  # fmt: skip


def engine_of_log(text: str) -> str | None:
    """The serving engine a paste's own lines show ran (the first whose marks appear, by position)."""
    found = [(m.start(), fw) for fw, rx in _ENGINE_MARKS if (m := rx.search(text))]
    return min(found)[1] if found else None


def _framework_of(text: str) -> str | None:
    low = text.lower()
    found: list[tuple[int, str]] = []
    for rx, fw in _NAMED[:2]:
        if rx.search(text):
            return fw
    for word, fw in (("ollama", "ollama"), ("memory.required.full", "ollama"), ("layers.offload", "ollama"), ("llama.cpp", "llama.cpp"), ("llama_model_load", "llama.cpp"),
                     ("llm_load_tensors", "llama.cpp"), ("load_tensors:", "llama.cpp"), ("gguf", "llama.cpp"), ("torch_npu", "torch_npu"),
                     ("torch-npu", "torch_npu"), ("vllm", "vllm"), ("sglang", "sglang"), ("deepspeed", "deepspeed"), ("llamafactory", "llamafactory"),
                     ("llama-factory", "llamafactory")):  # fmt: skip
        if word in low:
            found.append((low.index(word), fw))
    if found:  # the one named first ("I'd use vLLM instead of llama.cpp" is about vLLM)
        return min(found)[1]
    if _NAMED[2][0].search(text):
        return _NAMED[2][1]
    for word, fw in (("torch.", "pytorch"), ("cuda out of memory", "pytorch")):
        if word in low:
            return fw
    return None
