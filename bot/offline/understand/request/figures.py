"""The figures and names the slot stages left alone, with a role read from the words around them.

The slot stages (`understand/money.py`, `quantities.py`, `names.py`…) recognise what the calculators take. What
they leave is still something the user said: "CPU 64 核、内存 512G" (the host, not the GPUs), "训 3 轮" (epochs),
"vllm 0.6.3" (a framework and its version), a log's "Tried to allocate 2.50 GiB" (evidence), a pasted
`per_device_train_batch_size: 4` (a setting by its key). Each becomes a mention with its role, so the coverage
gate (`bot/answer/coverage.py`) can see whether the answer used it or says why not. A figure nothing places
is a mention of role `other`: said as not understood, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.offline.understand.patterns import SPEED_TARGET_AFTER, SPEED_TARGET_BEFORE, C
from bot.offline.understand.request.model import Mention

#: frameworks and engines people name; the value is the name as we write it
FRAMEWORKS = {
    r"vllm": "vLLM", r"sglang": "SGLang", r"deepspeed": "DeepSpeed", r"llama[-_ ]?factory|llamafactory": "LLaMA-Factory",
    r"llama\.cpp|llamacpp": "llama.cpp", r"ollama": "Ollama", r"tensorrt[-_ ]?llm|trt[-_]llm": "TensorRT-LLM",
    r"text[-_ ]generation[-_ ]inference|\btgi\b": "TGI", r"lmdeploy": "LMDeploy", r"megatron(?:[-_ ]?lm)?": "Megatron-LM",
    r"\bfsdp\b": "FSDP", r"\baccelerate\b": "Accelerate", r"\btransformers\b": "Transformers", r"\bpeft\b": "PEFT",
    r"\btrl\b": "TRL", r"unsloth": "Unsloth", r"axolotl": "Axolotl", r"xtuner": "XTuner", r"ms[-_ ]?swift": "ms-swift",
    r"mindie": "MindIE", r"mindspore": "MindSpore", r"mindformers": "MindFormers", r"xinference": "Xinference",
    r"bitsandbytes": "bitsandbytes", r"flash[-_ ]?attn|flash[-_ ]?attention": "FlashAttention",
    r"colossal[-_ ]?ai": "ColossalAI", r"exllama(?:v2)?": "ExLlama", r"\bpytorch\b|\btorch\b": "PyTorch",
    r"\bnccl\b": "NCCL", r"\bkubernetes\b|\bk8s\b": "Kubernetes", r"\bslurm\b": "Slurm",
}  # fmt: skip
_FRAMEWORK = [(C(rf"(?<![\w.-])(?:{rx})(?![\w-])(?!\.[a-z_])"), name) for rx, name in FRAMEWORKS.items()]

#: a pasted setting's key -> role ("per_device_train_batch_size: 4", "--max-model-len 8192")
KEY_ROLES = (
    (r"max[-_]batch[-_]size|max[-_]num[-_]seqs|max[-_]concurrency", "concurrency"),  # a server's, not a step's
    (r"max[-_](?:input|prompt)[-_]len\w*|input[-_]len\w*", "prompt_len"),
    (r"max[-_](?:output|new|completion)[-_](?:len\w*|tokens)|max[-_]tokens|output[-_]len\w*", "output_len"),
    (r"tensor[-_]parallel[-_]size|model[-_]parallel(?:[-_]size)?|\btp\b|--tp|\bmp\b|tp[-_]size", "tp_size"),
    (r"num[-_]gpus?|n[-_]gpus?|world[-_]size|nproc[-_]per[-_]node", "gpus_total"),
    (r"nnodes|num[-_]nodes", "nodes"),
    (r"per_device_(?:train_)?batch_size|micro_batch(?:_size)?|train_micro_batch_size_per_gpu|batch_size", "micro_batch"),
    (r"gradient_accumulation(?:_steps)?|grad_accum\w*", "grad_accum"),
    (r"global_batch(?:_size)?|train_batch_size", "batch"),
    (r"cutoff_len|max_seq_len(?:gth)?|seq_len(?:gth)?|model_max_length|max_length|block_size", "seq_len"),
    (r"max[-_]model[-_]len|max[-_]num[-_]batched[-_]tokens|context[-_]length|max[-_]position\w*", "context_len"),
    (r"pipeline[-_]parallel[-_]size|\bpp\b", "pp_size"),
    (r"gpu[-_]memory[-_]utilization|mem_fraction_static", "utilisation"),
    (r"num_train_epochs|epochs?", "epochs"),
    (r"lora_(?:rank|r|alpha|dropout)|\brank\b|learning_rate|\blr\b|warmup\w*|weight_decay|seed|\w*_steps|"
     r"logging\w*|save\w*|eval\w*|preprocessing_num_workers|num_workers|dataloader\w*|ddp_timeout|max_grad_norm|"
     r"top_[pk]|temperature|local_rank|master_port|port|node_rank|image_resolution|"
     r"repetition_penalty|beta\w*|\w*_size", "hyperparameter"),
)  # fmt: skip
_KEYS = [(C(rf"(?:{rx})"), role) for rx, role in KEY_ROLES]
_SETTING = C(r"(--?[a-z][\w.-]*|[a-z][\w.]*)\s*(?:[:=]|\s)\s*[\"']?$")

#: a number, with what follows it (a unit word, at most a few characters)
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(\d{1,3}(?:[ \u202f\u2009]\d{3})+(?![\w.,])|\d+(?:[.,]\d+)*)(\s*(?:%|[a-zA-Z/]+(?:/s)?|[\u4e00-\u9fff]{1,2})?)"
)
#: roles read from the words around a figure: (pattern on the text before, pattern on the unit after, role)
CONTEXT = (
    # a training run's measured speed (tools/speed/measured.py converts each unit into tokens/s): a logged key
    # ("step_time": 2.98, train_samples_per_second = 0.394, "TFLOP/s/GPU): 137.5"), TFLOPS per GPU or tokens per GPU
    # ("296.5 TFLOPs/s/GPU", "1500 Tokens/GPU/Second"), TFLOPS said as reached ("only achieves 20 TFLOPS"), the
    # time of one step ("迭代一步要48秒", "每步 3 秒", "each step takes 5 s")
    (r"(?:step_time|time_per_step|elapsed time per iteration \(ms\)|(?:train_)?(?:samples|steps|tokens)_per_second"
     r"|tflop/s/gpu\)?|tflops?_per_gpu)[\"']?\s*[:=]\s*$", r"", "throughput_measured"),
    (r"", r"^\s*(?:tflops?(?:/s)?\s*(?:/|per)\s*gpu|tokens?\s*(?:/|per)\s*gpu\s*(?:/|per)\s*s)", "throughput_measured"),
    (r"(?:throughput|achiev\w*|only|reach\w*|got|get|吞吐|只有|仅|才|达到|实测)[^\d\n]{0,20}$", r"^\s*tflops?\b",
     "throughput_measured"),
    (r"(?:一步|每步|每个\s*step|一个\s*step|per step|each step|a step|one step)\s*(?:要|需要|花了?|用了|大概|约|takes?|took)?\s*$",
     r"^\s*(?:秒|s\b|sec\w*|分钟|min\w*)", "throughput_measured"),
    # serving targets a buyer states ("首字 500ms 以内", "TTFT under 1 ms", "每用户 30 token/s")
    # (a figure the user measured, "首字要 3 秒", "每用户只有 5 token/s", is not a target: those words exclude it)
    (r"(?:首字|首\s*token|首个\s*token|ttft|time to first token|first token)"
     r"(?:(?!要(?!求)|需要|花了?|用了|took|takes|实测|measured|现在|目前|只有|才)[^\d\n]){0,12}$",
     r"^\s*(?:ms|毫秒|s|秒|sec(?:onds?)?)?", "ttft_target"),
    (r"(?:每(?:个)?用户|每人|per user|each user|for each user)"
     r"(?:(?!只有|才|only|实测|measured|现在|目前)[^\d\n]){0,8}$",
     r"^\s*(?:tokens?/s|tok/s|t/s|token/秒|tokens? per second)", "speed_target"),
    # a request's lengths ("每次输入 8k token，输出 1000 token", "prompt length 2000"), never a speed ("输出 30 token/s")
    (r"(?:输入|提示词?|prompt|input)\s*(?:长度|length|tokens?|token 数|of)?\s*(?:是|为|约|about|around|[:：=~])?\s*$",
     r"^(?!\s*k?\s*(?:tokens?|tok|t|字)\s*/\s*(?:s|秒))", "prompt_len"),
    (r"(?:输出|生成|回复|回答|output|generat\w*|reply|answer)\s*(?:长度|length|tokens?|token 数|of)?\s*"
     r"(?:是|为|约|about|around|[:：=~])?\s*$",
     r"^(?!\s*k?\s*(?:tokens?|tok|t|字)\s*/\s*(?:s|秒))\s*(?:k\b|tokens?|字)", "output_len"),
    (r"", r"^\s*(?:核|cores?|vcpus?|c(?=\b)|线程|threads?)", "cpu_cores"),
    (r"(?:cpu|处理器)[^\d\n]{0,6}$", r"", "cpu_cores"),
    (r"(?:内存|主机内存|系统内存|\bram\b|system memory|host memory|ddr\d?|shm[-_ ]?size)[^\d\n]{0,6}$", r"^\s*(?:g|gb|t|tb|gib)?\b", "ram_gb"),
    (r"", r"^\s*(?:g|gb|t|tb)[ \t]*(?:的)?(?:内存|\bram\b|ddr)", "ram_gb"),  # on its line: "32GB\n内存：64GB" is a card's
    # a spec sheet's "Memory: 256G" line (a card's memory is written "GPU memory", "VRAM", "显存")
    (r"^\s*(?:memory|mem)\s*[:：=]\s*$", r"^\s*(?:g|gb|t|tb|gib)?\b", "ram_gb"),
    (r"", r"^\s*(?:轮|个?\s*epochs?|遍)", "epochs"),
    (r"(?:训|跑)\s*$", r"^\s*(?:轮|遍)", "epochs"),
    # a speed the user needs, not one they measured ("need 30 tokens/s", "要达到 5 token/s", "at least 20 tok/s")
    (SPEED_TARGET_BEFORE, r"^\s*(?:tokens?/s|tok/s|t/s|token/秒|tokens? per second|字/秒)", "speed_target"),
    (r"", r"^\s*(?:tokens?/s|tok/s|t/s|it/s|s/it|samples?/s|tokens? per second|字/秒|token/秒)", "throughput_measured"),
    # the unit before the figure ("tokens/s仅为40.24", "tok/s: 52.3"): a speed the user measured
    (r"(?:需要|要求|希望|目标|至少|need|want|target|at least)[^\d\n]{0,8}(?:tokens?/s|tok/s|token/秒)\s*(?:达到|到|为|是|[:：=])?\s*$",
     r"", "speed_target"),
    (r"(?:tokens?/s|tok/s|token/秒)\s*(?:[:：=]|仅为|只有|仅|才|为|是|约|大概|(?:均|都)?(?:能)?达到了?|of|is|was|around|about)\s*$", r"",
     "throughput_measured"),
    # "tensor parallel size (3)", "MP=8": the split a setup or an error names
    (r"(?:tensor[-_ ]parallel(?:ism)?|model[-_ ]parallel(?:ism)?)[-_ ]*(?:size|degree)?\s*(?:[:=(]|of|is|to|为|设为)?\s*$|"
     r"\bmp\s*=\s*$", r"", "tp_size"),
    # a duration the user measured or was told ("训练了 140 个小时", "36 hrs", "25h", "30秒", "150min")
    (r"", r"^\s*(?:个)?\s*(?:小时|钟头|hours?|hrs?|h|分钟|mins?|minutes?|秒|seconds?|secs?|s)(?![a-z/])", "wall_clock"),
    (r"(?:allocate|capacity|allocated|reserved|free|used|占用|已用|显存占用)[^\d\n]{0,12}$", r"^\s*(?:gib|mib|gb|mb)\b", "log_memory"),
    (r"", r"^\s*(?:gib|mib)\b", "log_memory"),
    (r"", r"^\s*qps\b", "qps"),
    (r"(?:qps)[^\d\n]{0,4}$", r"", "qps"),
    (r"(?:日活|dau|daily (?:active )?users)[^\d\n]{0,4}$", r"", "daily_users"),
    # the people who use it ("a workgroup with 50 people", "200 名员工" (the unit holds two characters: "名员"), "50
    # employees"): its daily users
    (r"", r"^\s*(?:个|名|位)?(?:用户|人|员工?|同事?|users|people|persons|employees|staff|members|colleagues)", "daily_users"),
    (r"", r"^\s*(?:daily|dau)\b", "daily_users"),  # "2000 daily (active) users", "5000 DAU"
    (r"(?:出租率|上架率|occupancy)[^\d\n]{0,4}$", r"", "occupancy"),
    (r"(?:利用率|utili[sz]ation|mfu)[^\d\n]{0,4}$", r"", "utilisation"),
    (r"", r"^\s*%", "utilisation"),
    (r"(?:版本|version|\bv)\s*$", r"", "version"),
    (r"", r"^\s*(?:g|gb|gbps|gb/s|gbit|g\s*bit)?\s*(?:ethernet|以太网|网卡|nic\b|网络|ib\b|infiniband|roce|bps|rdma)", "network"),
    (r"", r"^\s*(?:kw|千瓦)\b", "power_kw"),
    (r"", r"^\s*(?:w|瓦)\b", "power_kw"),
    (r"", r"^\s*(?:g|gb)\b", "gpu_memory_gb"),
    (r"", r"^\s*(?:b|亿参数)\b", "model_size"),
)  # fmt: skip
_CONTEXT = [(C(b) if b else None, C(a) if a else None, role) for b, a, role in CONTEXT]
_DEVICE = C(r"(?:\bgpu|cuda|device|\brank|\bnode)\s*[:#]?\s*$|visible_devices\s*=\s*[\"']?$")
_LOG_LINE = C(r"out of memory|tried to allocate|traceback|error|exception|warning|info\b|\[rank|nccl|cuda")
_FRAME = C(r"file \"[^\"]*\", line \d+|line \d+, in|\.py:\d+|0x[0-9a-f]+")


def covered(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start < b or a < end <= b or (start <= a and b <= end) for a, b in spans)


def frameworks(text: str, taken: list[tuple[int, int]]) -> list[Mention]:
    found = []
    for rx, name in _FRAMEWORK:
        for m in rx.finditer(text):
            if not covered(taken, *m.span()) and all(f.value != name for f in found):
                found.append(Mention(text=m.group(0), role="framework", value=name, start=m.start(), end=m.end()))
                taken.append(m.span())
    return found


def line_at(text: str, i: int) -> str:
    """The line of `text` that position `i` is on (without its newline)."""
    return text[text.rfind("\n", 0, i) + 1 : (text.find("\n", i) + 1 or len(text) + 1) - 1]


#: a count of requests said with its rate or its simultaneity ("5000 requests per second", "100 requests concurrently")
_RATE_AFTER = (
    (C(r"^[\d,.]+\s*k?\s*(?:input|prompt)\s+tokens?"), "prompt_len"),
    (C(r"^[\d,.]+\s*%\s*(?:occupancy|occupied|rented out|rental rate|出租率|上架率)"), "occupancy"),  # "70% occupancy"
    (C(r"^[\d,.]+\s*k?\s*(?:output|generated|new)\s+tokens?"), "output_len"),
    (C(r"^[\d,.]+\s*(?:requests?|reqs?|queries|calls)\s*(?:/\s*s\b|per\s+sec(?:ond)?|a\s+second|每秒)"), "qps"),
    # a latency or a rate the user measured ("309 ms per token", "1 steps per minute", "3.28 requests/s" measured)
    # a speed the hardware must reach ("5 token/s minimal hardware requirement", "20 tokens/s or more")
    (C(r"^[\d,.]+\s*(?:tokens?/s|tok/s|t/s|token/秒|tokens? per second)" + SPEED_TARGET_AFTER[1:]), "speed_target"),
    (C(r"^[\d,.]+\s*ms\s*(?:per|/|每)\s*(?:token|tok|step|it)"), "throughput_measured"),
    (
        C(r"^[\d,.]+\s*(?:steps?|its?|iterations?)\s*(?:per|/|每)\s*(?:min\w*|sec\w*|s\b|分钟|秒)"),
        "throughput_measured",
    ),
    (
        C(
            r"^[\d,.]+\s*(?:requests?|users?|people|sessions?)\s*(?:concurrently|at\s+once|simultaneously|in\s+parallel)"
        ),
        "concurrency",
    ),
)


_FOREIGN = r"(?:usd|us\$|dollars?|美元|美金|eur|€|euros?)"
#: an electricity price ("0.1 USD/kWh", "$0.12 per kWh", "0.1 美元/度"), and the currency said after its figure
_PER_KWH = C(rf"[\d,.]+\s*{_FOREIGN}?\s*(?:/|per|每|一|a)\s*(?:kwh|度|千瓦时)")
_FOREIGN_AFTER = C(rf"[\d,.]+\s*{_FOREIGN}")


#: host RAM or swap said after the figure, on its line ("400G内存", "32GB of RAM", "an extra 16GB of swap"), not a
#: card's memory ("4GB内存的GPU"; "GPU：RTX 5090 32GB" above "内存：64GB DDR5")
_HOST_AFTER = (
    (C(r"^[\d,.]+\s*(?:g|gb|gib|t|tb)[ \t]*(?:of\s+)?(?:的)?[ \t]*(?:swap|交换(?:空间|分区))"), "swap_gb"),
    (
        C(
            r"^[\d,.]+\s*(?:g|gb|gib|t|tb)[ \t]*(?:of\s+)?(?:的)?[ \t]*(?:(?:system|host|cpu)\s+)?(?:内存|\bram\b|ddr\d?|system memory|"
            r"host memory|cpu memory)(?!\s*的?\s*(?:gpu|显卡|卡|card))"
        ),
        "ram_gb",
    ),
)


#: memory a run is seen using ("显存占用几乎32G", "每张卡只占用了13G内存", "consumed about 60G VRAM"): what nvidia-smi
#: or a log showed, not the card's size nor host RAM (a card's own words, or no host word, say it is on the GPU)
_USED_BEFORE = C(
    r"(?:占用了?|占了|用了|用掉了?|吃了|消耗了?|拉满|跑满|co[mn]sum\w*|\btak(?:es|ing) up|\buses\b|\busing\b|\bused\b|occup\w*)"
    r"(?:\s*(?:几乎|将近|快|约|大约|大概|about|around|nearly|almost|up to|了))?\s*$"
)
_ON_CARD = C(r"显存|显卡|vram|gpu|每张卡|每卡|每个卡|单卡|each card|per card")
_HOST_WORD = C(r"(?<!显)内存|\bram\b|host|system memory|cpu memory")
_MEMORY_UNIT = C(r"^[\d,.]+\s*(?:g|gb|gib|mib|mb)(?![a-z])")


def used_on_card(text: str, start: int, before: str | None = None) -> bool:
    """The figure at `start` is GPU memory a run was seen using (`before`: its line's last 40 characters before it,
    lower case)."""
    if before is None:
        before = text[max(0, text.rfind("\n", 0, start) + 1, start - 40) : start].lower()
    if not (_MEMORY_UNIT.match(text[start : start + 12]) and _USED_BEFORE.search(before)):
        return False
    return bool(_ON_CARD.search(before)) or not _HOST_WORD.search(before + text[start : start + 12])


def role_of(text: str, start: int, unit: str) -> tuple[str, int]:
    """The role of the figure at `start` from the words before it and its unit, and how much of `unit` is the
    unit ("5 轮要多久": "轮")."""
    before = text[max(0, text.rfind("\n", 0, start) + 1, start - 40) : start].lower()
    line = line_at(text, start)
    if used_on_card(text, start, before):
        return "log_memory", len(unit)
    for rx, role in _HOST_AFTER:
        if rx.search(text[start : start + 40]):
            return role, len(unit)
    if _PER_KWH.match(text, start) and (before.rstrip().endswith(("$", "€")) or _FOREIGN_AFTER.match(text, start)):
        return "tariff_foreign", len(unit) if _FOREIGN_AFTER.match(text, start) else 0  # not taken as 元/kWh
    for rx, role in _RATE_AFTER:
        if rx.search(text[start : start + 60]):
            return role, 0
    if m := _SETTING.search(before):
        for rx, role in _KEYS:
            if rx.fullmatch(m.group(1).lstrip("-")) or rx.search(m.group(1)):
                return role, 0
    for b, a, role in _CONTEXT:
        hit = a.search(unit) if a is not None else None
        if (b is None or b.search(before)) and (a is None or hit):
            if role == "gpu_memory_gb" and _LOG_LINE.search(line):
                role = "log_memory"
            return role, hit.end() if hit else 0
    return "other", 0


#: what stands between the two ends of a range ("300–500", "100 到 200")
RANGE_GAP = r"\s*(?:-|–|—|~|～|到|至|to)\s*"
_RANGE_GAP = re.compile(RANGE_GAP)


#: traffic figures read with their Chinese or k multiplier
TRAFFIC = ("daily_users", "concurrency", "qps")
_MULTIPLIER = {"万": 1e4, "亿": 1e8, "k": 1e3, "K": 1e3}


def loose_figures(text: str, taken: list[tuple[int, int]]) -> list[Mention]:
    """Every number outside the recognised spans, with a role from its context; numbers that are part of a
    stack trace's frames (file, line, address) or of an identifier are not things the user said."""
    found = []
    for m in _NUMBER.finditer(text):
        start, end = m.span(1)
        if covered(taken, start, end) or (_FRAME.search(line_at(text, start)) and "line" in text[start - 6 : start]):
            continue
        if start and ((text[start - 1].isalpha() and text[start - 1].isascii()) or text[start - 1] in "_/-"):
            continue  # "gpt2", "sm_80", "cu121", "a/b/7b": a name or a path, not a figure
        unit = m.group(2) or ""
        if _DEVICE.search(text[max(0, start - 18) : start]):
            continue  # "GPU 0;", "cuda:1", "rank 3": which device, not a figure of the question
        role, unit_len = ("version", 0) if m.group(1).count(".") >= 2 else role_of(text, start, unit)
        if role == "other" and found and _RANGE_GAP.fullmatch(text, found[-1].end, start):
            role = found[-1].role  # "QPS：300–500": the upper end of a range has the role of its lower end
        digits = re.sub(r"[,\s\u202f\u2009]", "", m.group(1))  # "10 000 users", "1,000": thousands separators
        value = float(digits) if m.group(1).count(".") <= 1 else m.group(1)
        if role in ("prompt_len", "output_len") and isinstance(value, float) and unit.strip().lower()[:1] == "k":
            value *= 1024  # "8k token": kibi-tokens, as the parser reads context windows
        if role in TRAFFIC and isinstance(value, float) and (mult := _MULTIPLIER.get(unit.strip()[:1])):
            value *= mult  # "日活 10 亿用户": a traffic said in 万/亿 (or 5k users) is that many
            unit_len = max(unit_len, unit.index(unit.strip()[:1]) + 1)
        span_end = end + len(unit[:unit_len].rstrip())
        found.append(Mention(text=text[start:span_end].strip(), role=role, value=value, start=start, end=span_end))
    return found
