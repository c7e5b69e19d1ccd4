"""The sentence forms of two asks whatever the topic: a setting asked for (`config`: how to set it, which flags or
launch parameters, what value, whether there is another way) and an explanation asked for (`knowledge`: what a
figure or a setting means, how a figure was worked out, why it is that number, whether the asker's own
reckoning or belief holds, whether a note or a formula exists). The words that name the topic (vLLM, ZeRO,
max_model_len, steps, 卡时) play no part: the form is the ask. `asks.py` joins these to its cue words."""

from __future__ import annotations

from bot.offline.understand.patterns import C

#: a setting asked for: the flags, parameters, command or configuration to use, the value to set, another way
CONFIG_FORM = (
    # "应该使用什么启动参数", "有什么更不占显存的配置呢", "哪些参数需要改"
    # (a configuration of cards or machines, "什么显卡配置", is the count or the choice, not a setting)
    r"(?:什么|哪些|哪个)(?:样的)?[^，。？?！!\n]{0,10}?(?:启动参数|参数|命令行?|选项)|什么更[^，。？?！!\n]{0,10}配置|"
    r"(?:参数|配置|命令|选项)(?:应该|应|要|该)?(?:怎么|如何|怎样)(?:设|写|改|调|配|填|选)|"
    # "batchsize为多少", "设成多少合适", "该设为多少"
    r"(?:设|设置|调|改|定)(?:成|为|到)多少|(?:为|设|取)多少(?:合适|比较好|为好|才行)|多少(?:比较)?合适|"
    r"(?:batch[ _]?size|bs|lr|学习率|[a-z]+_[a-z_]+)\s*(?:应该|要|该)?(?:为|是|设|取)多少|"
    r"有什么(?:需要|要|该)(?:调整|修改|改|优化)|(?:需要|要)(?:调整|修改|优化)(?:什么|哪些|哪里)|"
    r"有(?:没有)?(?:其他|别的|其它)的?(?:方法|办法|方案|途径|思路)|有办法[^。\n]{0,16}(?:吗|[?？])|"
    # "可以多卡部署…吗", "可以支持分布式推理吗"
    r"(?:能|可以|能否|能不能|是否可以|是否能)(?:支持)?(?:多卡|分布式|多机)(?:部署|推理|训练|微调|运行|加载|并行)|"
    r"最(?:佳|优|合适)的?(?:参数|配置|命令|启动参数|设置)|(?:提供|给)(?:一些|一点|点|个)?(?:思路|方案|配置建议)|"
    # a setting or a method proposed and asked of ("用zero3-offload有机会吗", "是不是可以用int4去微调", "这是否合理")
    r"(?:使用|用|开|加上?)[^，。？?！!\n]{1,20}有(?:机会|可能|希望)(?:吗|么)|(?:是不是|是否)可以(?:用|改用|换成|换用)|"
    r"(?:是否|是不是)合理|合理吗|\bis (?:this|that|it) (?:reasonable|sensible)\b|"
    # "best command line", "which launch parameters should I use", "when to use max_num_tokens"
    r"\bbest (?:command(?:[- ]line)?|line command|settings?|config\w*|flags?|parameters?|arguments?|options?)\b|"
    r"\b(?:what|which) (?:launch |startup |start-?up |engine |build |serving |command[- ]line |vllm |deepspeed )?"
    r"(?:parameters|arguments|args|flags|options|settings) (?:should|do|to|would|can|are needed)\b|"
    r"\bwhen (?:to|should (?:i|we)) (?:use|set|enable|change|turn on)\b|"
    r"\bhow (?:to|do i|can i|should i|do we|can we) (?:choose|pick|tune|optimi[sz]e|increase|lower|raise|limit)\b|"
    r"\boptimi[sz]\w* (?:the |my |our )?[\w.`'\"-]+ (?:script|config\w*|settings?|parameters?) to\b|"
    r"\bwhat (?:is|are|would be) (?:the )?(?:right|best|recommended|optimal|correct) (?:values?|settings?|config\w*|flags?)"
)

#: an explanation asked for, in a sentence that names what is to be explained: what a figure or a setting means, how a
#: figure was reckoned, why it is that number, whether a note or a formula for it exists. Its sentence is a part a
#: note answers (`asks.knowledge_clauses`)
EXPLAIN_FORM = (
    # "是怎么算的", "怎么算出来的", "从哪来的", "具体是指", "指的是什么", "代表什么"
    r"(?:是|要)?怎么算(?:出来)?的|怎么(?:计算|算)出(?:来)?|如何(?:计算|算)出|从哪(?:里|儿)?(?:来|算出来)的|"
    r"具体是指|指的是什么|是指什么|(?:代表|表示)(?:的是)?什么|是什么含义|含义是|"
    # "为什么是 1800", "为什么训练一个epoch使用约1800steps" (the asker's figure, asked why)
    r"为(?:什么|何|啥)[^，。？?！!\n]{0,30}?\d[\d,.]*\s*(?:个|条|张)?\s*(?:steps?|步|epochs?|轮|卡时|gpu[- ]?hours?|小时|天|倍)|"
    r"(?:计算|估算)?公式|经验值|有(?:没有)?(?:相关的?)?(?:文档|资料|说明)|有文档不|"
    r"越[^。？?\n]{1,16}越[^，。？?\n]{1,8}(?:吗|么)|什么量级|"
    # "how is this calculated", "where does 1200 come from", "why is it 2007 steps", "what does X do"
    r"\bhow (?:is|are|was|were) (?:it|this|that|these|those|the [\w -]{1,30}?) (?:calculated|computed|derived|counted|"
    r"estimated|worked out)\b|\bwhere (?:does|do|did) .{1,40} come from\b|"
    r"\bwhy (?:is|are|does|do|did|would) (?:it|this|that|my|the|there) [^.?!\n]{0,40}?\d[\d,.]*\s*(?:steps?|epochs?|"
    r"gpu[- ]?hours?|hours?|days?|x|times)\b|"
    r"\bwhat does [^.?!\n]{1,40} (?:do|mean|refer to|control|stand for)\b|\bwhat is meant by\b|"
    r"\b(?:a |any )?(?:heuristic|formula|rule of thumb)\b|\bis there (?:a |any )?(?:doc(?:ument(?:ation)?)?s?|reference|guide)\b"
)

#: an explanation asked for in words that name nothing by themselves: a reckoning or a belief to be checked ("这样算对吗",
#: "Is my understanding incorrect?", "correct me if I am wrong"), a figure doubted or set against what was expected
#: ("比较怀疑", "for real?", "比预期的大很多", "而不是每张卡平摊10g呢", "…和推理的显存需求相同吗"). The ask only: the
#: sentence is no part of its own (the answer's figures, or `belief_clauses` with the sentence before, speak to it)
DOUBT_FORM = (
    r"(?:这样|这么)?(?:算|计算)(?:得|的)?(?:对|正确|没错)(?:吗|不|么)|(?:计算|算法)(?:是否|有没有)(?:正确|错)|"
    r"比较怀疑|不太可能吧|(?:是不是|是否)(?:写错|有误|错了)|"
    r"而不是[^。？?！!\n]{1,20}(?:呢|吗)|比预期(?:的)?(?:要)?(?:大|高|多|慢|小|低|长)|"
    r"(?:和|与|跟)[^，。？?！!\n]{1,20}(?:相同|一样|一致)(?:吗|么)|"
    r"\b(?:more|higher|larger|bigger|slower|lower|longer) than (?:i )?expected\b|\bcorrect me if i(?:'m| am) wrong\b|"
    r"\b(?:am i|is there (?:anything|something) i(?:'m| am)) missing\b|\bconfirm (?:if|whether|that)\b|"
    r"\b(?:is|was) my (?:understanding|calculation|math|estimate|assumption|reckoning)s? (?:in)?(?:correct|wrong|right|off)\b|"
    r"\bare (?:those|these|my) (?:assumptions|estimates|numbers|figures|calculations) (?:right|correct|accurate)\b|"
    r"\bdid i get (?:it|this|that) wrong\b|\b(?:does|do)(?:n'?t| not) make sense\b|\bdoes (?:this|that|it) make sense\b|"
    r"\bfor real\b|\bhard to believe\b|\bseems? (?:(?:way|too|kinda|very) )+(?:low|high|slow|fast)\b|"
    r"\b(?:is|are) (?:all )?[^.?!\n]{1,40} (?:performed|done|stored|computed) in (?:fp8|fp16|bf16|int8|int4)\b|"
    r"\bdoes (?:this|it|that) (?:harm|hurt|degrade)\b"
)


# --- the run a sentence is about, and the log lines that are no sentence (shared with compose/) ---------------

#: the host side of a server asked beside its GPUs ("hardware requirement (GPU and CPU)", "What GPU, ram, and CPU do
#: you recommend", "Optimal CPU and GPU Configurations", "How much storage space", "显卡，CPU和内存怎么选"): the CPU
#: cores, system RAM and disk of the machine a plan buys (compose/systems/hostside.py)
HOST_SIDE = C(
    r"\b(?:gpus?|cards?)\s*(?:,\s*(?:ram|memory)\s*,?\s*)?(?:and|&|/|,)\s*(?:the\s+)?cpus?\b|"
    r"\bcpus?\s*(?:and|&|/|,)\s*(?:the\s+)?(?:gpus?|ram|memory)\b(?!\s*(?:offload|memory))|\b(?:ram|memory),?\s*(?:and|&|/)\s*cpus?\b|"
    r"how much (?:disk|storage)|storage (?:space|requirements?)|"
    r"(?:显卡|gpu|cpu)\s*[，,、和与及/]\s*(?:cpu|内存)|cpu\s*[，,、和与及/]\s*(?:内存|显卡|gpu)|内存\s*[，,、和与及/]\s*cpu"
)
#: a training run named ("训练成本", "training cost", "Training Llama3 70B … only 20 TFLOPS"): its cost is billed
#: through its time, and its speed is the training run's (tokens/s, MFU), not a decode speed
TRAINING_RUN = C(r"训练|预训练|微调|\btrain(?:ing|ed)?\b|fine-?tun\w*|pre-?train\w*")
SERVING_RUN = C(
    r"推理|部署|serv(?:e|ing)|inference|deploy|decod\w*|generat\w*|users?\b|用户|并发|concurren|vllm|sglang"
)
#: a line of a pasted log: what it says is evidence, not a question (its error is the `diagnose` cue)
LOG_LINE = C(
    r"(?:tried to allocate|total capacity|already allocated|reserved in total|outofmemoryerror|traceback|"
    r"\[(?:info|warning|error)\]|^\s*file \").*"
)


def blank_logs(low: str) -> str:
    """`low` with a pasted log's lines blanked, positions kept: what they say is evidence, not a question."""
    return LOG_LINE.sub(lambda m: " " * len(m.group(0)), low)
