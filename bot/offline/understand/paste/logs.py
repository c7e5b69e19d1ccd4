"""Evidence in a pasted log: PyTorch/CUDA OOM messages (both the 1.x and the 2.x wording), vLLM/SGLang start-up
errors, NCCL/DeepSpeed errors, host-RAM kills, precision errors, `nvidia-smi` tables and tokens/s lines.

Each reader returns the figures as the log prints them (GiB for PyTorch and vLLM, MiB for nvidia-smi) under the
diagnose tool's field names; nothing is converted but MiB -> GiB.
"""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.paste.cards import cards_indexed, uneven_growth
from bot.offline.understand.paste.gpus import gpu_facts, gpu_words
from bot.offline.understand.paste.hedged import HEDGEABLE, hedged
from bot.offline.understand.paste.usage import used_gb
from bot.offline.understand.patterns import SPEED_TARGET_AFTER, SPEED_TARGET_BEFORE, C

_NUM = r"(\d+(?:\.\d+)?)"
_UNIT = r"\s*(GiB|MiB|KiB|GB|MB|bytes|B)\b"
_SCALE = {
    "GiB": 1.0,
    "GB": 1.0,
    "MiB": 1 / 1024,
    "MB": 1 / 1024,
    "KiB": 1 / 1024**2,
    "bytes": 1 / 1024**3,
    "B": 1 / 1024**3,
}


def _gib(value: str, unit: str) -> float:
    return round(float(value) * _SCALE[unit], 4)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


#: PyTorch OOM figures -> diagnose fields (2.x: "GPU 0 has a total capacity of 79.15 GiB of which 2.40 GiB is free.
#: Process 1 has 76.92 GiB memory in use. Of the allocated memory 73.28 GiB is allocated by PyTorch, and 1.59 GiB is
#: reserved by PyTorch but unallocated"; 1.x: "(GPU 0; 79.15 GiB total capacity; 70.1 GiB already allocated; 1.2 GiB
#: free; 77.5 GiB reserved in total by PyTorch)")
OOM_FIGURES = (
    ("failed_alloc_gib", _rx(r"tried to allocate\s+" + _NUM + _UNIT)),
    ("capacity_gib", _rx(r"total capacity of\s+" + _NUM + _UNIT)),
    ("capacity_gib", _rx(_NUM + _UNIT + r"\s+total capacity")),
    ("free_gib", _rx(r"of which\s+" + _NUM + _UNIT + r"\s+is free")),
    ("free_gib", _rx(_NUM + _UNIT + r"\s+free\b")),
    ("allocated_gib", _rx(_NUM + _UNIT + r"\s+(?:is\s+)?(?:already\s+)?allocated(?: by pytorch)?")),
    ("reserved_gib", _rx(_NUM + _UNIT + r"\s+reserved in total by pytorch")),
    ("unallocated_gib", _rx(_NUM + _UNIT + r"\s+is reserved by pytorch but unallocated")),
    ("process_gib", _rx(r"this process has\s+" + _NUM + _UNIT + r"\s+memory in use")),
)
_PROCESS = _rx(r"process\s+(\d+)\s+has\s+" + _NUM + _UNIT + r"\s+memory in use")
_GPU_INDEX = _rx(r"\bGPU\s+(\d+)(?:\s+has|\s*;)")
KINDS = (
    ("kv_too_small", _rx(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in kv cache \((\d+)\)")),
    ("kv_too_small", _rx(r"(\d+) tokens? .{0,40}exceeds? .{0,40}kv cache.{0,40}\((\d+)\)")),
    ("kv_too_small", _rx(r"max seq len \((\d+)\),?\s*\(?\s*[\d.]+\s*GiB KV cache is needed, which is larger than the available KV cache memory")),
    ("no_cache_memory", _rx(r"no available memory for the cache blocks|insufficient memory for kv cache|not enough memory.{0,40}kv|"
                            r"free memory on device.{0,40}less than desired gpu memory utilization")),
    ("too_many_tokens", _rx(r"not enough memory to handle .{0,40}tokens|max[-_]batch[-_](?:total|prefill)[-_]tokens|"
                            r"(?:decrease|lower|reduce).{0,20}max[-_]num[-_](?:seqs|batched[-_]tokens)")),
    ("heads_not_divisible", _rx(r"(?:number of )?attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)")),
    # a 4-/8-bit checkpoint's weight cannot be cut into whole quantisation groups (or kernel tiles) per rank
    ("quant_tp_misaligned", _rx(r"input size is not aligned with the quantized weight shape|"
                                r"(?:input|output)_size_per_partition\s*=?\s*\d+\s*is not divisible by|"
                                r"not divisible by (?:the )?(?:quantization )?group[_ ]size")),
    ("heads_not_divisible", _rx(r"(?:key.?value|kv) heads.{0,30}(?:divisible|divide)|(?:heads?|头).{0,30}(?:不整除|不能整除|无法整除|not divisible|indivisible)")),
    ("nccl_timeout", _rx(r"watchdog caught collective operation timeout|nccl.{0,40}timeout|timed out.{0,40}nccl|ProcessGroupNCCL.{0,80}Timeout")),
    ("nccl_error", _rx(r"ncclInternalError|ncclSystemError|ncclUnhandledCudaError|nccl error|NCCL WARN")),
    ("host_oom", _rx(r"(?<![a-z])killed(?![a-z])|被\s*kill|被(?:系统|os|内核|kernel)?\s*(?:杀掉|杀死|杀了|干掉)|进程被杀|"
                     r"(?:\bram\b|cpu memory|host memory|system memory|内存)(?: usage)?\s*(?:goes|went|climbs?|hits?|reach\w*|grows?|涨到|升到|到了?|占满)\s*(?:up )?(?:to )?100\s*%|"
                     r"process (?:dies|died|gets killed|got killed|was killed|is killed)|cpu out of memory|can't allocate memory|cannot allocate memory|sigkill|signal 9|(?:exit|return)[ _]?(?:code|status)\s*[:=]?\s*-9(?!\d)|exited with -9|dmesg.{0,40}oom|oom[- ]?killer|"
                     r"(?:cpu|host|system|系统|主机)\s*(?:内存|ram|memory)\s*(?:不足|不够|爆|耗尽|满|exhausted|full|ran out)|out of (?:cpu|host|system) memory|\bram\b.{0,20}(?:full|exhausted|ran out|不足|不够|爆)|"
                     r"(?:out of|running out of|ran out of|not enough|insufficient|limited|low) (?:system |host |cpu )?ram\b|(?<!显)内存\s*(?:oom|不足|不够|满了|爆了|爆掉|炸了|溢出|耗尽)|爆内存|内存被?(?:撑爆|吃满|占满)|"
                     r"(?:\bram\b|(?:cpu|host|system) memory) (?:is |was )?(?:not enough|insufficient|too small|too low|exhausted|full)|(?:not enough|insufficient) (?:cpu|host|system) memory")),
    ("unsupported_precision", _rx(r"bf16.{0,60}(?:only supported|not supported|requires|ampere|compute capability)|bfloat16 is (?:only|not) supported|"
                                  r"doesn't support bf16|fp8.{0,40}(?:not supported|compute capability|requires)|flash ?attention.{0,30}(?:only supports|ampere|not supported)|"
                                  r"(?:不支持|not support\w*|no longer supports?|doesn'?t support|unsupported|supports?)\s*(?:the\s+)?(?:bf16|bfloat16|fp8)|(?:bf16|bfloat16|fp8)\s*(?:不支持|is not supported|unsupported)|type (?:fp16|bf16|float16|bfloat16) is not supported|cublas_status_not_supported|"
                                  r"use float16 instead|--dtype[= ]half|data ?type error|dtype error|not implemented for '(?:half|bfloat16)'")),
    ("weights_oom", _rx(r"not enough memory.{0,40}(?:weights|model)|cannot load model.{0,40}memory|(?:model|weights)[^.\n]{0,40}exceeds? the memory (?:size )?of (?:a |one )?single (?:gpu|card|graphics card)|"
                        r"(?:a |one )?single (?:gpu|card|graphics card)'?s? memory is not enough[^.\n]{0,30}(?:model|weights)|(?:单卡|一张卡)(?:的)?(?:显存)?(?:放不下|装不下|不够放)(?:模型|权重)?")),
    ("load_oom", _rx(r"(?:out of memory|(?<![a-z])oom(?:s|ed|ing)?(?![a-z])).{0,40}(?:in|at|inside|during|when|on)\s*[`'\"]?(?:model\s*=\s*)?(?:FSDP|DDP|DistributedDataParallel|deepspeed\.initialize|accelerator\.prepare|model\.(?:to|cuda))\(|"
                     r"(?:cannot|can't|can not|unable to|fails? to|failed to) (?:load|run|start|fit)\b.{0,60}\d+(?:\.\d+)?\s*(?:gb|gib|g)\b|(?:(?<![a-z])load|(?<![a-z])loading|加载|from_pretrained|merge|合并|导出|export).{0,40}(?:\n.{0,40})?(?:out of memory|(?<![a-z])oom(?:s|ed|ing)?(?![a-z])|爆显存|显存不足)|(?:out of memory|(?<![a-z])oom(?:s|ed|ing)?(?![a-z])|爆显存).{0,20}(?:while|when|during|在).{0,10}(?:load|加载)|"
                     r"(?:out of memory|(?<![a-z])oom(?:s|ed|ing)?(?![a-z])).{0,40}before (?:anything|training|the first step|it starts)|(?:一加载|刚加载)[^，,。.\n]{0,10}(?:就)?(?:oom|爆显存|显存不足)")),
    ("oom", _rx(r"out[- ]of[- ]memory|outofmemoryerror|显存.{0,6}(?:不足|不够|溢出|超|爆|炸)|爆显存|(?<![a-z])oom(?:s|ed|ing)?(?![a-z])|insufficient (?:gpu |cuda )?memory|"
                r"(?<!得动)(?<!得起)(?<!起来)(?<!会)跑不(?:起来|起|动)(?![^，,。.\n]{0,2}[吗么?？])|(?:没有?|无)(?:办法|法)跑(?:起来)?|(?:gpu|显卡|计算)?资源不足|"
                r"memory (?:is )?exceeded|exceeds? (?:the )?(?:gpu )?memory|not enough (?:gpu |cuda )?memory|high (?:peak )?(?:gpu |cuda )?memory|"
                r"(?:more|too much|a lot of) (?:gpu |cuda )?memory")),
    ("crash", _rx(r"illegal memory access|segmentation fault|segfault|core dumped|device-side assert|unspecified launch failure|"
                  r"cublas_status_(?:execution_failed|internal_error|alloc_failed)|cudnn_status_(?:internal_error|execution_failed)|"
                  r"illegal instruction|非法内存访问|段错误")),
)  # fmt: skip
#: what the user describes without a figure (evidence key `symptom`)
SYMPTOMS = (
    ("multi_gpu_slower", _rx(r"(?:双卡|多卡|两张卡|两卡|[2-8]\s*卡|多\s*gpu|多个\s*gpu).{0,30}(?:反而[^，,。.\n报]{0,10}(?:慢|不如|下降|降低|变差)|比单卡|更慢|慢了|慢出|没有?.{0,4}(?:快|提升|加速))|"
                             r"(?:双|两|[2-8])\s*(?:张|块|个)\s*\S{2,12}?.{0,40}(?:反而.{0,12}慢|比(?:单|一|1)\s*(?:张|块|卡|个)[^，,。.\n]{0,8}(?:还|更)?慢)|"
                             r"slower (?:with|on|using) (?:\d+|two|multiple|more|several) gpus|(?:ddp|multi-?gpu|two gpus|2 gpus|multiple gpus|more gpus).{0,60}(?:slower|same speed|no speed ?up|not faster)|"
                             r"same speed.{0,30}(?:one|single|1) gpu|no speed ?up|(?:speed|速度).{0,20}same as.{0,12}(?:1|one|single)|(?:和|跟|与)单卡.{0,4}(?:一样|差不多)|"
                             # "多卡训练速度不如单卡快", "单卡比8卡快", "反而是1卡的时间最短", "one GPU is faster than four"
                             r"(?:双卡|多卡|两张卡|两卡|[2-8]\s*(?:张|块)?卡|多\s*gpu).{0,20}不如(?:单卡|一张卡|1\s*(?:张)?卡)|"
                             r"(?:单卡|一张卡|1\s*(?:张)?卡)[^，,。.\n]{0,6}比[^，,。.\n]{0,4}(?:双卡|多卡|两张卡|两卡|[2-8]\s*(?:张|块)?卡)[^，,。.\n]{0,6}(?:还|更|要)?快|"
                             r"(?:是|就是)(?:单卡|一张卡|1\s*(?:张)?卡)的?(?:时间|耗时)最(?:短|少)|"
                             r"(?:one|a single|single|1) (?:gpu|card) (?:is|runs?|trains?|was) (?:\w+ )?faster than (?:\d+|two|multiple|several|more|all)|"
                             r"faster (?:on|with) (?:one|a single|1) (?:gpu|card) than|"
                             r"(?:tensor[- _]?parallel\w*|multi-?gpus?|multiple gpus)[^.\n]{0,120}?(?:not as good as|worse than|no (?:significant |obvious |real )?(?:increase|improvement|gain|speed ?up)|performs? (?:poorly|worse)|(?:performance |speed )?degradation|does ?n[o']t (?:improve|increase|help|speed))|"
                             r"(?:not as good as|worse than|slower than) (?:running |using )?(?:it )?(?:on )?(?:a |one )?single (?:card|gpu)")),  # "TP ... not as good as a single card"
    ("cpu_fallback", _rx(r"(?:does ?n[o']t|not|never|isn't|is not) (?:use|using|utili[sz]\w*|running on) (?:the |my |any |nvidia |amd )*gpu|gpu (?:is )?not (?:being )?used|"
                         r"(?:runs?|running|only) (?:on|off) (?:the )?cpu|instead of (?:the )?gpu|only (?:uses? )?(?:the )?cpu|"
                         r"(?:跑在|运行在|用的是|只用)\s*cpu|(?:启用|改用|走|用)\s*cpu\s*(?:推理|运行|计算|跑)|(?:没有?|不)(?:用|使用|调用)\s*(?:gpu|显卡)")),
    # one card's memory climbs while the others stay (a split by layers in one process): before "one_gpu_used",
    # whose "另一张…不变" it also says; read by _uneven_growth, which wants the other cards said too
    ("uneven_growth", None),
    ("one_gpu_used", _rx(r"(?:只|仅)(?:用|使用|占用)了?\s*(?:一|1|其中一)张|另一张.{0,10}(?:没|未|不)|(?:都|全部|所有卡?)用起来|"
                         r"only (?:one|1|a single|the first) gpu (?:is )?(?:used|utili[sz]ed|working)|other gpus? (?:are |is )?(?:not used|idle|unused|empty)|use all (?:\d+ |the |my )?gpus")),
    ("merge_export", _rx(r"(?:unable to|can(?:no|')t|could ?n[o']t|fail(?:s|ed)? to|errors? (?:when|while)|crash\w* (?:when|while)) (?:export|merg|sav|push|convert)\w*[^.\n]{0,60}(?:merged|16 ?bit|4 ?bit|safetensors|gguf|adapter|lora)|"
                         r"(?:merge_and_unload|save_pretrained_merged|push_to_hub_merged|save_pretrained_gguf)\b[^\n]{0,80}(?:fail|crash|killed|error|hang)|(?:合并|导出).{0,12}(?:失败|报错|崩溃|被杀|卡住|出错)")),
    # later users wait for earlier ones: nothing batches the requests (before "concurrency": it names why)
    ("serial", _rx(r"排队|一个一个(?:地)?(?:处理|回答|执行)|逐个处理|串行|依次(?:处理|执行|回答)|挨个|不能并发|无法并发|没法并发|不支持并发|"
                   r"(?:第二个|后一个|后面的)(?:请求|用户|人)[^，。,.\n]{0,10}(?:要等|才|更慢)|one (?:after|by) (?:another|one)|"
                   r"(?:processed|handled|served|answered|executed) (?:sequentially|serially)|gets? queued|in a queue|"
                   r"the second (?:user|request|one)[^.\n]{0,30}(?:waits?|takes?|receives?|gets?)|wait(?:s|ing)? for the (?:first|previous)|"
                   r"not (?:processed |handled |served |run )?(?:in parallel|concurrently)")),
    ("concurrency", _rx(r"concurren\w*|并发|(?:many|multiple|parallel|simultaneous) requests|同时(?:请求|访问|调用)|压测|(?:stress|load) test")),
    # utilisation shown full while the power stays low: kernels waiting (on collectives, memory), not computing;
    # before "low_gpu_util", whose "利用率…低" the same words also say
    ("busy_low_power", _rx(r"(?:利用率|使用率|占用率|util\w*)[^，,。.\n]{0,10}(?:100|9\d)\s*%[^。.\n]{0,30}?(?:功率|功耗|\bpower\b)[^。.\n]{0,15}?(?:低|只有|仅|\bonly\b|\blow\b)|"
                           r"(?:100|9\d)\s*%\s*(?:gpu[- ]?)?util\w*[^.\n]{0,60}?(?:\blow\b|\bonly\b)[^.\n]{0,20}?\bpower\b")),
    ("low_gpu_util", _rx(r"(?:gpu|显卡|cuda).{0,20}(?:util\w*|利用率|使用率|占用率|usage).{0,20}(?:low|低|only|只有|很低|不高|上不去|\b[0-4]?\d\s*%)|low gpu (?:util|usage)")),
    ("engine_memory", _rx(r"(?:vllm|sglang).{0,80}(?:占用|占了|占到|用了|吃掉|uses?|using|takes?|occup\w*|requires?|allocat\w*|eat\w*|consum\w*).{0,40}\d+(?:\.\d+)?\s*(?:g|gb|gib)(?![a-z])|"
                          r"\d+(?:\.\d+)?\s*(?:g|gb|gib)(?![a-z]).{0,40}(?:of )?(?:vram|显存).{0,40}(?:vllm|sglang)|why does .{0,40}vllm.{0,40}(?:so much|require)|"
                          r"(?:vllm|sglang).{0,60}(?:high|much|more) (?:gpu |cuda )?memory|"
                          r"(?:when|after|once) (?:i |we )?load(?:ed|ing)? (?:it|the model)[^.\n]{0,40}(?:gpu|vram|memory) usage (?:is )?(?:much |far |way )?(?:more|higher|larger|bigger) than|"
                          r"(?:gpu|vram|memory) usage[^.\n]{0,40}(?:more|higher|larger) than (?:the )?model(?:'s)? size|加载.{0,20}显存占用.{0,10}(?:远?超过|比.{0,10}(?:大|多))")),
    ("other_process", _rx(r"(?:other|another) (?:\w+ )?process(?:es)?\b(?! group)|其他进程|别的进程|另一个进程|被(?:其他|别的)?(?:程序|进程)占用|already in use|"
                         r"(?:其他|别的|另一个)程序|(?:跑|运行|占|部署|加载|开)[了着]?(?:其他|别的|另一个)(?:模型|任务)|(?:其他|别的|另一个)(?:模型|任务)(?=[^，。,.\n]{0,8}(?:占|在跑|在用|运行|显存))|已经?被.{0,6}占用|(?:显存|显卡).{0,6}(?:不释放|没有?释放|未释放)|(?:不会|没有?)释放显存|僵尸进程|zombie|"
                         r"other (?:vram|gpu|cuda) (?:consumers?|users?|processes|applications?|programs?)|(?:gpu memory|vram) (?:is )?(?:not|never) (?:being )?(?:released|freed)")),
    ("logits", _rx(r"(?:vocab\w*|logits?|lm_head|cross[- ]?entropy).{0,80}(?:memory|显存|\boom\b)|(?:memory|显存|\boom\b).{0,80}(?:vocab\w*|logits?|lm_head|cross[- ]?entropy)")),
    ("silent_exit", _rx(r"silently (?:fails?|exits?|crash\w*|dies|stops?)|(?:exits?|quits?|crash\w*|dies|stops?) (?:silently|without (?:any )?(?:error|message|traceback))|"
                        r"没有?(?:任何)?报错(?:就|直接)?(?:退出|结束|没了)|闪退|直接退出")),
    ("hang", _rx(r"\bhangs?\b|\bhung\b|\bstuck\b|卡住|卡死|没有反应|no progress")),
    ("slow", _rx(r"(?:很|太|非常|极|极其|特别|超级|超|巨|贼|好|有点|比较|相当|如此的?|这么|那么)慢|速度慢|慢得|就是慢|"
                 r"慢了?\s*(?:一倍|[\d一二两三四五六七八九十几]+\s*倍|很多|太多|得多|不少|一半)|(?:明显|显著|远)(?:低于|慢于)|"
                 r"(?:速度|效率|性能|吞吐|利用率)(?:[^，,。.\n]{0,6})(?:不理想|不够快|上不去|很低|太低|偏低|低|差(?![距别异多]))|耗时.{0,6}(?:明显|显著|远)?(?:高于|长于|太长|很长)|"
                 r"比[^，,。.\n]{1,24}(?:还|更|要)慢(?![^，,。.\n]{0,3}[吗么?？])|\bslow\b|\bslowly\b|tokens?/s.{0,10}(?:low|only)|\blow (?:throughput|speed|tflops|mfu|tokens?/s|generation rate|output)|"
                 r"only (?:achiev|get|reach|gives?|hit)\w* [^.\n]{0,30}(?:tflops|tokens?/s|tok/s|it/s|mfu)")),
)  # fmt: skip
#: a trouble said in words, beside a log or instead of one: it makes the message a diagnosis even where it names no
#: error or symptom the tool reads. "failed": it breaks; "memory_higher": it takes more memory than the user expected;
#: "abnormal": the user asks whether a figure is normal, or sets it against a claim ("理论上 75 小时，实际 130")
TROUBLES = (
    ("failed", _rx(r"出错|出现错误|报错|报.{0,6}(?:错|异常|不足)|失败|崩溃|崩了|挂了|挂掉|起不来|启动不了|(?<!得动)(?<!得起)(?<!起来)(?<!会)跑不(?:起|动|通|了)(?![^，,。.\n]{0,2}[吗么?？])|"
                   r"(?:没有?|无)(?:办法|法)跑|资源不足|乱码|爆掉|"
                   r"\berrors?\b|\bfail(?:s|ed|ing|ure)?\b|\bcrash\w*|can(?:no|')t (?:run|load|start|launch|serve)|"
                   r"unable to (?:run|load|start|launch|serve)|won'?t (?:run|load|start)|does ?n[o']t (?:run|load|start|work)|"
                   r"not working|garbage (?:output|text)|gibberish")),
    ("memory_higher", _rx(r"(?:显存|内存)(?:占用|使用|消耗|需求)?[^，,。.\n]{0,8}(?:很多|很大|过高|太高|偏高|太大|过大|远超|超出|比[^，,。.\n]{0,10}(?:大|多|高))|"
                          r"(?:vram|gpu memory|memory) (?:usage|use|consumption|footprint) (?:is )?(?:much |far |way |a lot )?(?:more|higher|larger|bigger|greater) than|"
                          r"(?:takes?|uses?|needs?|requires?|consumes?) (?:much |far |way |a lot )?more (?:vram|gpu memory|memory) than|"
                          r"(?:high|too much|a lot of|excessive) (?:vram|gpu memory) (?:usage|use|consumption)")),
    ("abnormal", _rx(r"(?:是否|是不是)(?:为|是)?(?:正常|合理)|正常(?:吗|么|嘛)|正常的(?:吗|么)|合理(?:吗|么)|不(?:太|大)?合理|奇怪|"
                     r"(?:比|超出|超过|高于|低于|不符合|不及|达不到)预期|与预期不符|(?:理论上|按理说|按道理)[\s\S]{0,80}(?:实际|实测|但|却|还是)|"
                     r"(?:文档|官方|论文|readme)(?:里|中|上)?(?:说|写|给出|提到|声称)?[\s\S]{0,60}(?:实测|实际|但|却)|"
                     r"is (?:this|that|it) (?:a |the )?(?:normal|expected|standard|reasonable|typical)|"
                     r"(?:normal|expected|standard) (?:behaviou?r|rate|speed|throughput)\s*\?|than expected|"
                     r"(?:did|does|do) ?n[o']t match|(?:unable|fail\w*|can(?:no|')t) to (?:re)?produce|"
                     r"(?:claimed|reported|official|advertised) (?:results?|numbers?|throughput|speed|figures?)|(?:in|from) the paper")),
)  # fmt: skip
#: what a figure the user asks about is: a speed or a duration (its trouble is "slow"), else memory
_SUBJECT = (
    (
        "speed",
        _rx(
            r"速度|耗时|时间|时长|小时|分钟|天|效率|吞吐|延迟|tokens?/s|tok/s|it/s|s/it|\brate\b|throughput|speed|"
            r"latency|hours?|minutes?|\bdays?\b|steps?|\bsec\w*|tflops|mfu"
        ),
    ),
    ("memory", _rx(r"显存|内存|vram|memory|\d\s*(?:g|gb|gib)\b|占用")),
)
#: a forecast, not a trouble seen ("会不会很慢", "would it be slow on a 4090")
FORECAST = _rx(
    r"会不会[^，,。.\n]{0,8}慢|会(?:很|太|比较)?慢(?:吗|么|嘛)|(?:would|will) (?:it|this|that|they) be (?:too |very )?slow"
)


def trouble(text: str) -> tuple[str, int] | None:
    """The trouble the words tell ("failed", "memory_higher", "abnormal") and where, None when they tell none."""
    return next(((name, m.start()) for name, rx in TROUBLES if (m := rx.search(text))), None)


def subject(text: str, at: int) -> str | None:
    """What the figure asked about at `at` is: the subject word said last before it (else first after it)."""
    before = text[max(0, at - 160) : at]
    found = [(m.end(), name) for name, rx in _SUBJECT for m in rx.finditer(before)]
    if found:
        return max(found)[1]
    after = [(m.start(), name) for name, rx in _SUBJECT if (m := rx.search(text, at))]
    return min(after)[1] if after else None


def forecast(text: str) -> bool:
    return bool(FORECAST.search(text))


SLOW_WORDS = dict(SYMPTOMS)["slow"]


def told(text: str) -> int | None:
    """Where the words first tell a trouble (one of TROUBLES, or a slow run that is no forecast), None if nowhere."""
    at = [m.start() for _, rx in TROUBLES if (m := rx.search(text))]
    if (m := SLOW_WORDS.search(text)) and not forecast(text):
        at.append(m.start())
    return min(at) if at else None


_UNSUPPORTED = (
    ("flash_attn", _rx(r"flash ?attention|flash_attn")),
    ("fp8", _rx(r"\bfp8\b")),
    ("bf16", _rx(r"bf16|bfloat16|use float16 instead|--dtype[= ]half")),
)
_LAYER_SPLIT = _rx(
    r"load_model_on_gpus|device_map\s*=?\s*['\"]?(?:auto|balanced|sequential)|模型并行|model parallel(?:ism)?|naive pipeline|layer(?:s)? (?:split|spread) across"
)
_VISION = _rx(
    r"max_pixels|image_max_pixels|\bpixels?\b|\bimages?\b|\bvideos?\b|图片|图像|视频|分辨率|多模态|multimodal|\bvl\b|-vl-"
)
#: free memory that differs this much between two loads of the same model was taken by something else meanwhile
VARYING_FREE_GIB = 1.0
_LAYERS = _rx(r"offloaded\s+(\d+)\s*/\s*(\d+)\s+layers to gpu|layers\.model=(\d+)\s+layers\.offload=(\d+)")
_OLLAMA_NEED = _rx(r'memory\.available="\[' + _NUM + _UNIT + r'\]".{0,200}?memory\.required\.full="' + _NUM + _UNIT)
_LOG_GPU = _rx(r"your\s+(.{3,40}?)\s+gpu has compute capability")
_FREE_STARTUP = _rx(r"free memory on device \(" + _NUM + r"/" + _NUM + r"\s*GiB\) on startup is less than desired gpu memory utilization \(" + _NUM)  # fmt: skip
_THROUGHPUT = _rx(r"(?:avg\s+)?(?:generation|decode|output|prompt)?\s*throughput:?\s*" + _NUM + r"\s*tokens?\s*/\s*s|"
                  r"(?:output|total) token throughput \(tok/s\):?\s*" + _NUM + "|"  # vLLM's benchmark_serving summary
                  + _NUM + r"\s*(?:(?:output |total )?tokens?\s*/\s*s(?:ec)?|tok/s|(?<![a-z])t/s|tokens? per sec\w*|token/秒|tokens?每秒)(?![a-z])")  # fmt: skip
#: the decode figure, when the log prints several: vLLM's engine log, its benchmark summaries ("1000.5 output tokens/s")
_GENERATION = _rx(r"generation throughput:?\s*" + _NUM + r"|output token throughput \(tok/s\):?\s*" + _NUM
                  + "|" + _NUM + r"\s*output tokens?\s*/\s*s")  # fmt: skip
_TARGET_BEFORE, _TARGET_AFTER = C(SPEED_TARGET_BEFORE), C(SPEED_TARGET_AFTER[1:])
_SMI_GPU = _rx(r"\|\s+(\d+)\s+(NVIDIA [^|]*?|Tesla [^|]*?)\s{2,}.*?\n\|.*?(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+)%")
_SMI_PROC = _rx(r"\|\s+(\d+)\s+N/A\s+N/A\s+(\d+)\s+[CG]\s+(\S+)\s+(\d+)MiB")


def _target(text: str, m: re.Match[str]) -> bool:
    """A speed the user needs ("need 30 tokens/s", "5 token/s minimal hardware"), not evidence of one they saw."""
    return bool(_TARGET_BEFORE.search(text[max(0, m.start() - 30) : m.start()]) or _TARGET_AFTER.match(text, m.end()))


#: vLLM V1's start-up refusal ends with the length the pool would hold ("… the estimated maximum model length is 20000")
_KV_ESTIMATE = _rx(r"estimated maximum model length is (\d+)")


def read_log(text: str) -> tuple[dict[str, Any], list[str]]:
    """The evidence a log carries (diagnose field -> value) and what kind of lines were read."""
    ev: dict[str, Any] = {}
    seen: list[str] = []
    worded = gpu_words(text)
    for kind, rx in KINDS:
        if m := next((m for m in rx.finditer(worded) if kind not in HEDGEABLE or not hedged(worded, m)), None):
            ev.setdefault("error_kind", kind)
            seen.append(kind)
            if kind == "kv_too_small" and m.lastindex == 2:
                ev["max_model_len"], ev["kv_tokens_reported"] = int(m.group(1)), int(m.group(2))
            elif kind == "kv_too_small" and m.lastindex == 1:  # V1: the length, and the one the pool would hold
                ev["max_model_len"] = int(m.group(1))
                if est := _KV_ESTIMATE.search(text):
                    ev["kv_tokens_reported"] = int(est.group(1))
            if kind == "heads_not_divisible" and m.lastindex == 2:
                ev["heads_reported"], ev["tp"] = int(m.group(1)), int(m.group(2))
    if ev.get("error_kind") == "unsupported_precision":
        said = next((name for name, rx in _UNSUPPORTED if rx.search(text)), None)
        if said:
            ev["unsupported"] = said
        if m := _LOG_GPU.search(text):
            ev["smi_gpu"] = m.group(1)
    for name, rx in SYMPTOMS:
        if rx.search(text) if rx is not None else uneven_growth(text):
            ev["symptom"] = name
            seen.append(name)
            break
    if _LAYER_SPLIT.search(text):
        ev["layer_split"] = True
    if ev.get("symptom") == "uneven_growth":
        if n := cards_indexed(text):
            ev["cards_indexed"] = n
    if _VISION.search(text):
        ev["vision_inputs"] = True
    if used := used_gb(text):
        ev["used_gb"] = used
    for field, rx in OOM_FIGURES:
        if field not in ev and (m := rx.search(text)):
            ev[field] = _gib(m.group(1), m.group(2))
    if "failed_alloc_gib" in ev and "error_kind" not in ev:
        ev["error_kind"] = "oom"  # "Tried to allocate" is PyTorch's OOM message
        seen.append("oom")
    if "unallocated_gib" in ev:  # 2.x prints the unallocated part; the tool wants reserved = allocated + it
        loose = ev.pop("unallocated_gib")
        if "allocated_gib" in ev:
            ev["reserved_gib"] = round(ev["allocated_gib"] + loose, 4)
    procs = {m.group(1): _gib(m.group(2), m.group(3)) for m in _PROCESS.finditer(text)}
    if len(procs) == 1:
        ev.setdefault("process_gib", next(iter(procs.values())))
    elif len(procs) > 1:  # several processes on the card: the one that failed holds what PyTorch reserved
        if "process_gib" not in ev:
            mine = ev.get("reserved_gib") or ev.get("allocated_gib")
            own = min(procs.values(), key=lambda v: abs(v - mine)) if mine else max(procs.values())
            ev["process_gib"] = own
        ev["other_process_gib"] = round(sum(procs.values()) - ev["process_gib"], 4)
    if m := _LAYERS.search(text):  # llama.cpp / Ollama: how many layers went to the GPU
        on, total = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        ev["layers_on_gpu"], ev["layers_total"] = int(on), int(total)
    loads = [(_gib(m.group(1), m.group(2)), _gib(m.group(3), m.group(4))) for m in _OLLAMA_NEED.finditer(text)]
    if loads:  # the first load's free memory and need; the free memory changing between loads is someone else's
        ev.setdefault("free_gib", loads[0][0])
        ev["required_gib"] = loads[0][1]
        free = [f for f, _ in loads]
        if max(free) - min(free) >= VARYING_FREE_GIB:
            ev.setdefault("other_process_gib", round(max(free) - min(free), 4))
    if m := _GPU_INDEX.search(text):
        ev["gpu_index"] = int(m.group(1))
    if ev.get("error_kind") == "no_cache_memory" and "free memory on device" in text.lower():
        ev.setdefault("symptom", "other_process")  # less free than the fraction asks: something else holds memory
    if m := _FREE_STARTUP.search(text):
        ev["free_gib"], ev["capacity_gib"], ev["gpu_memory_utilization"] = (
            float(m.group(1)),
            float(m.group(2)),
            float(m.group(3)),
        )
        ev.setdefault("error_kind", "no_cache_memory")
        seen.append("free_memory_on_startup")
    speeds = [_first(m) for m in _THROUGHPUT.finditer(text) if not _target(text, m)]
    single, multi, count = _single_and_multi(text)
    if single is not None and multi is not None:  # "单卡 3000 tokens/s，双卡 2500": the comparison the user made
        ev["single_gpu_tokens_per_s"], ev["measured_tokens_per_s"] = single, multi
        if count:
            ev["n_gpus"] = count
    if speeds:
        generation = [_first(m) for m in _GENERATION.finditer(text)]
        ev.setdefault("measured_tokens_per_s", (generation or speeds)[0])  # the decode figure; else the first one
        ev["throughputs_read"] = speeds
        seen.append("throughput")
    gpu_facts(text, ev)
    smi = smi_table(text)
    if smi:
        ev.update({k: v for k, v in smi.items() if k not in ev})
        seen.append("nvidia_smi")
    return ev, seen


_ONE_GPU = _rx(r"(?:单卡|一张卡|一卡|1\s*卡|1\s*张卡|one gpu|single gpu|1 gpu|a single card|one card)[^\d\n]{0,16}$")
_MANY_GPUS = _rx(
    r"(双卡|两卡|两张卡|多卡|[2-8]\s*张?卡|(?:two|[2-8]|several|multiple) gpus|(?:two|[2-8]) cards)[^\d\n]{0,16}$"
)
_COUNT = {"双": 2, "两": 2, "two": 2}


def _single_and_multi(text: str) -> tuple[float | None, float | None, int | None]:
    """The throughput said right after "one GPU", the one said right after "two / several GPUs", and how many."""
    single = multi = count = None
    for m in _THROUGHPUT.finditer(text):
        before = text[max(0, m.start() - 40) : m.start()]
        value = _first(m)
        if single is None and _ONE_GPU.search(before):
            single = value
        elif multi is None and (many := _MANY_GPUS.search(before)):
            multi, said = value, many.group(1).lower()
            digit = re.search(r"[2-8]", said)
            count = int(digit.group(0)) if digit else next((n for w, n in _COUNT.items() if said.startswith(w)), None)
    return single, multi, count


def _first(m: re.Match[str]) -> float:
    """The figure of a speed match (its alternatives each hold one group)."""
    return float(next(g for g in m.groups() if g is not None))


def smi_table(text: str) -> dict[str, Any]:
    """An `nvidia-smi` table: the card's name, how many, memory used / total and GPU-Util."""
    gpus = _SMI_GPU.findall(text)
    if not gpus:
        return {}
    name = gpus[0][1].strip()
    used = [int(g[2]) for g in gpus]
    total = int(gpus[0][3])
    out: dict[str, Any] = {"smi_gpu": name, "smi_count": len(gpus), "capacity_gib": round(total / 1024, 2),
                           "smi_used_gib": round(max(used) / 1024, 2), "gpu_util_percent": float(min(int(g[4]) for g in gpus))}  # fmt: skip
    procs = _SMI_PROC.findall(text)
    if len({p[1] for p in procs}) > 1:
        out["smi_processes"] = len({p[1] for p in procs})
        per_gpu: dict[str, list[int]] = {}
        for gpu, _pid, _name, mib in procs:
            per_gpu.setdefault(gpu, []).append(int(mib))
        # on one card, every process but the largest (taken to be the job asked about) holds memory it cannot use
        others = max(sum(m) - max(m) for m in per_gpu.values())
        if others >= 1024:
            out["other_process_gib"] = round(others / 1024, 2)
    return out
