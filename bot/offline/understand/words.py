"""Slots in words: method, precision, workload, ZeRO stage, offload, domestic/China-only, follow-up and
prompt-injection markers."""

from __future__ import annotations

from bot.offline.understand import lexicon as lx
from bot.offline.understand.names import _C
from bot.offline.understand.work import Work
from tools.diagnose.facts import value as fact_value

# --- words: method, precision, settings, flags ----------------------------------------------

_METHODS = [(name, _C(p)) for name, p in lx.METHODS]
_OBJECTIVES = [(name, _C(p)) for name, p in lx.OBJECTIVES]
_WORKLOADS = {name: _C(p) for name, p in lx.WORKLOADS}
_NOT_WORKLOAD = _C(lx.NOT_WORKLOAD)
_PRECISIONS = [(name, _C(p)) for name, p in lx.PRECISIONS]
_ZERO = _C(lx.ZERO)
_OFFLOAD = [
    (False, _C(lx.OFFLOAD_NO)),
    ("optimizer", _C(lx.OFFLOAD_OPT)),
    ("param", _C(lx.OFFLOAD_PARAM)),
    (True, _C(lx.OFFLOAD_ANY)),
]
_MIXED = _C(lx.MIXED_PRECISION)
#: a precision said of the KV cache ("fp8 kv cache", "KV cache 用 fp8", "--kv-cache-dtype fp8"): the cache's, not the
#: weights' (a 7B "w/ fp8 kv cache" keeps its bf16 weights)
_KV_PRECISION = _C(
    r"\b(fp8|int8|fp16|bf16)(?:_e4m3|_e5m2)?\s*(?:的\s*)?(?:kv[\s_-]*cache|kv\s*缓存)|"
    r"kv[\s_-]*(?:cache|缓存)[\s_-]*(?:dtype|精度)?\s*(?:[=:：]|用|设为|设成|is|in|at)?\s*(fp8|int8|fp16|bf16)"
)
#: the sharding stack named: FSDP (a QLoRA base must be stored in a float dtype to wrap) or DeepSpeed/ZeRO
_FSDP = _C(r"\bfsdp2?\b|fully[_ ]sharded")
_DEEPSPEED = _C(r"deepspeed|\bzero[-_ ]?(?:stage[-_ ]?)?[0-3]?\b|\bds_z[0-3]")
#: words of a training run itself, not of a method's name: "LoRA" alone is also what an adapter served is called
_TRAINING_RUN = _C(lx.TRAINING_RUN)
_DOMESTIC = _C(lx.CHINA_DOMESTIC)
_AVAILABLE = _C(lx.CHINA_AVAILABLE)
_DOMESTIC_STATUS = _C(
    r"国产(?:化)?(?:芯片|卡|显卡|gpu|平台)?的?(?:适配|支持|兼容)(?:的)?(?:情况|程度|进展|现状|怎么样|如何)"
)
_FOLLOW_UP = _C(lx.FOLLOW_UP)
_INJECTION = _C(lx.INJECTION)


_CHECKPOINTING = _C(
    r"梯度检查点|激活重计算|重计算|gradient[_\s-]*checkpoint(?:ing)?|activation[_\s-]*checkpoint(?:ing)?|recomput(?:e|ation)|\bgc\b"
)
_RUN = _C(
    r"跑得动|跑不动|能跑|能不能跑|可以跑|跑得起来|跑起来|跑得了|运行|\brun\b|\bruns\b|\brunning\b(?! out)|\bload\b|用得了|带得动"
)
_NEGATED = _C(r"不开|不用|关(?:掉|闭)?|没开|不要|no|without|w/o|disable|off")
_USD = _C(r"美元|美金|\busd\b|\bdollars?\b|us\$|\$\s*\d|in \$")
#: a job put as the condition of the question ("这个方案用于部署…，如果要进行…微调，需要什么硬件", "we serve it; if we
#: wanted to fine-tune it, what hardware"): that job is the one asked, the job said before it is the setting
_IF_JOB = _C(
    r"(?:如果|假如|要是|若是?)(?:我们?|想|要|需要|打算|进一步)*[^，。,.;；?？!！\n]{0,20}$|"
    r"\bif (?:i|we|you|one) (?:want(?:ed)?|need(?:ed)?|plan(?:ned)?|were going|would like) to [^,.;?!\n]{0,20}$"
)


#: Ollama named: a model pulled by its tag alone is the library's 4-bit build (frameworks.yaml `ollama.default_quant`),
#: unless the words name a quantisation or format (a GGUF tag "q8_0", "Q5_K_M", an imported "gguf"/"safetensors")
_OLLAMA = _C(r"\bollama\b")
#: another engine named beside Ollama ("用ollama和vllm"): which one the answer sizes is not Ollama's to say
_OTHER_ENGINE = _C(r"vllm|sglang|lmdeploy|\btgi\b|tensorrt|trt-?llm|transformers|llama\.cpp|ktransformers|xinference")
_QUANT_TAG = _C(r"\bq[2-8](?:_[a-z0-9]+)*\b|\bi?q[1-8]_|gguf|safetensors|modelfile|\bbits?\b|-bit\b|量化")


def _first(w: Work, slot: str, table, text: str | None = None) -> None:
    hits = [(m.start(), name, m) for name, rx in table if (m := rx.search(w.src if text is None else text))]
    if hits:
        _, name, m = min(hits, key=lambda h: h[0])
        w.slots[slot] = name
        for _, _, other in sorted(hits, key=lambda h: h[0]):
            w.note(slot, *other.span())


def words(w: Work) -> None:
    s = w.src
    _first(w, "method", _METHODS)
    _first(w, "objective", _OBJECTIVES)
    w.slots["sharding"] = "fsdp" if _FSDP.search(s) else "deepspeed" if _DEEPSPEED.search(s) else None
    kv = [(m, 1 if m.group(1) else 2) for m in _KV_PRECISION.finditer(s)]
    if kv:
        m, g = kv[0]
        w.slots["kv_precision"] = m.group(g).lower()
        for m, g in kv:
            w.note("kv_precision", *m.span(g))
    weights = w.src
    for m, g in kv:  # the weights' precision is read without the cache's words
        weights = weights[: m.start(g)] + " " * (m.end(g) - m.start(g)) + weights[m.end(g) :]
    _first(w, "precision", _PRECISIONS, weights)
    ollama_ran = _OLLAMA.search(s) and not _QUANT_TAG.search(s) and not _OTHER_ENGINE.search(s)
    if w.slots.get("precision") is None and ollama_ran:
        w.slots["precision"] = fact_value("ollama", "default_quant")  # "ollama run llama3.1:70b": the tag's 4-bit build
        w.slots["precision_from"] = "ollama"
    w.slots["mixed_precision"] = bool(_MIXED.search(s))
    s = _NOT_WORKLOAD.sub(lambda m: " " * len(m.group(0)), s)  # "暂时不考虑训练": the job set aside is not asked
    if _WORKLOADS["pretrain"].search(s):
        w.slots["workload"] = "pretrain"
    elif w.slots.get("method") or _WORKLOADS["finetune"].search(s):
        infer, ft = _WORKLOADS["infer"].search(s), _WORKLOADS["finetune"].search(s)
        served = infer and not _TRAINING_RUN.search(s)  # "做推理…加载 lora 模型": an adapter served, nothing trained
        w.slots["workload"] = (
            "infer"
            if served
            or (
                infer
                and ft
                and infer.start() < ft.start()
                and not w.slots.get("method")
                and not _IF_JOB.search(s[max(0, ft.start() - 24) : ft.start()])
            )
            else "finetune"
        )
    elif _WORKLOADS["infer"].search(s) or "concurrency" in w.slots or w.people:  # traffic: a service
        w.slots["workload"] = "infer"
    elif _WORKLOADS["train"].search(s):
        w.slots["workload"] = "train"
    elif _RUN.search(s) and (w.slots["models"] or w.slots["unknown_models"] or w.slots.get("budget_amount")):
        w.slots["workload"] = (
            "infer"  # "Qwen3-8B 在 A10 上跑得动吗", "预算 1w 以内什么显卡可以跑": running, no training word: serving
        )
    if m := _ZERO.search(s):
        w.slots["zero_stage"] = int(m.group(1) or m.group(2))
        w.note("zero_stage", *m.span())
    for value, rx in _OFFLOAD:
        if m := rx.search(s):
            w.slots["offload"] = value
            w.note("offload", *m.span())
            break
    if m := _CHECKPOINTING.search(s):
        w.slots["grad_checkpointing"] = not _NEGATED.search(s[max(0, m.start() - 6) : m.start()])
        w.note("grad_checkpointing", *m.span())
    if _USD.search(s):
        w.slots["currency"] = "USD"
    # "国产化适配情况怎么样" beside "哪些 GPU 能跑": how far domestic chips support it is asked, no domestic-only rule
    w.slots["domestic_only"] = bool(_DOMESTIC.search(_DOMESTIC_STATUS.sub("", s)))
    w.slots["china_only"] = w.slots["domestic_only"] or bool(_AVAILABLE.search(s))
    w.slots["injection"] = bool(_INJECTION.search(s))
    w.slots["follow_up"] = bool(_FOLLOW_UP.search(s.strip()))
