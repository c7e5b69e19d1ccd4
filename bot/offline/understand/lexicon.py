"""Word lists for the offline question parser (`bot/offline/understand/parse.py`): numerals, intent cues, slot words.

Nothing here names a GPU or a model: those come from the catalogs at run time. What is here are
the words people wrap around them, in Chinese and English, as regular-expression fragments. All
matching happens on text that has been NFKC-normalised (full-width "８卡" -> "8卡") and lower-cased.
"""

from __future__ import annotations

import re

from bot.grounding.numerals import BIG, COLLOQUIAL_DIGITS, DIGITS, MAGNITUDES, UNITS

# --- numerals ----------------------------------------------------------------------------

ZH_DIGITS = {**DIGITS, **COLLOQUIAL_DIGITS}
ZH_UNITS = UNITS
ZH_BIG = BIG
#: every Chinese digit a question may hold ("八", "两", "俩"), as a character class body
ZH_DIGIT_CHARS = "".join(ZH_DIGITS)
_ZH_NUMERALS = ZH_DIGIT_CHARS + "".join(ZH_UNITS) + "".join(ZH_BIG)
EN_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "thirty-two": 32, "a single": 1, "single": 1,
    "a couple of": 2, "a pair of": 2, "dual": 2, "a": 1,
}  # fmt: skip

#: one number: "8", "1.5万", "2万亿", "八", "两", "十六", "一百二十"
#: (a number starts where a run of digits or numerals starts: "123个月" is 123, never 23; "100,000" is one number)
NUM = (
    rf"(?:(?<![\d.,])\d{{1,3}}(?:,\d{{3}})+(?![\d,])(?:\.\d+)?(?:\s?(?:{'|'.join(MAGNITUDES)}))?|"  # "100,000 USD"
    rf"(?<![\d.])\d+(?:\.\d+)?(?:\s?(?:{'|'.join(MAGNITUDES)}))?|(?<![{_ZH_NUMERALS}])[{_ZH_NUMERALS}]+)"
)
#: a number or a range "8到16", "30-50万", "3~5"
NUM_RANGE = rf"(?:{NUM}(?:\s*(?:到|至|~|-|–|—)\s*{NUM})?)"
EN_NUM = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|sixteen|thirty-two|a single|single|dual)"
#: the verbs of a follow-up edit ("并发改成 200", "seq 调到 16k", "context to 32k")
CHANGE_TO = r"(?:改成|改为|换成|换为|调到|调成|拉到|加到|增加到|降到|提到|变成|to)"
APPROX_BEFORE = r"(?:约|大约|大概|差不多|估计|预计|around|about|roughly|approx\.?|approximately|~)\s*$"
APPROX_AFTER = r"^\s*(?:左右|上下|出头|ish)"

# --- buying and renting ------------------------------------------------------------------------------
# What a budget is for (`decide.refine`, the serving shortlist): cards to buy, or rent. (The intent model's cue
# groups "buy" and "rent" below are features of the shipped weights and stay as they were trained.)

#: words of buying hardware (a budget with them is for cards, not for rent)
BUY_WORDS = r"买|采购|购置|自建|搭|buy|purchase|build|hardware|硬件"
#: words of renting (a budget with them is for rent)
RENT_WORDS = r"租|rent|上云|云上|云服务|cloud|每月|一个月|per month|monthly"

# --- cue words: features of the intent model ------------------------------------------------------
# Each group is one feature ("k:<name>") of the trained intent model (bot/offline/understand/intent_model.py): the
# model learns how much each group counts for each intent, so no rule here decides an intent by itself.

CUE_GROUPS: tuple[tuple[str, str], ...] = (
    ("oom", r"\boom\b|out of memory|爆显存|显存(?:不够|不足|溢出|爆了|炸了)|装不下|放不下|塞不下|跑不动|跑不起来|跑不了|训不动"),
    ("fits", r"能(?:不能|否)?跑|可以跑|跑得(?:动|了|起来)|装得下|放得下|塞得下|能装下|能放下|\bfits?\b|run (?:it |this )?on|enough (?:vram|memory)|够不够|够吗|够用吗|能(?:不能)?训|能(?:不能)?微调|能(?:不能)?部署|can (?:i|we|it) (?:run|train|fine-?tune|serve|load)"),
    ("memory", r"显存|vram|\bmemory\b|内存"),
    ("how_much_memory", r"(?:需要|要|占|吃)(?:用)?多少(?:g|gb)?(?:显存|内存)?|多少显存|how much (?:vram|gpu memory|memory)|memory (?:needed|required|footprint|requirement)"),
    ("count", r"几张|几块|几卡|几台|多少张|多少块|多少卡|多少台|最少(?:要|需要|得)?(?:几|多少)|至少(?:要|需要|得)?(?:几|多少)|how many (?:gpus|cards|nodes|servers|a100s|h100s|h800s|of them)|min(?:imum)? (?:number of )?(?:gpus|cards|nodes)|最低配置"),
    ("duration", r"多久|多长时间|多少时间|几天|几个小时|多少天|几周|训练时间|时长|耗时|how long|time to train|training time|wall[- ]?clock|训完|跑完|gpu[- ]?hours?|卡时"),
    ("money", r"多少钱|花多少|费用|成本|贵不贵|多贵|\bcosts?\b|报价|租金|花费|开销|价格|价钱|\bprice|\bpricing|什么价|要花|总价|\busd\b|美元|dollars?"),
    ("rent", r"\brent|租"),
    ("buy", r"\bbuy|买|采购|自购|自建|purchase|购置"),
    ("rent_or_buy", r"租还是买|买还是租|租.{0,8}还是.{0,8}买|买.{0,8}还是.{0,8}租|rent or buy|buy or rent|rent (?:vs\.?|versus) buy|回本|break[- ]?even|\btco\b|划算|上云|keep renting|长租|买断"),
    ("budget", r"预算|budget|手头|经费|资金|投入"),
    ("build", r"搭一套|搭建|组一套|配一台|配一套|build|采购方案|怎么配|配置方案"),
    ("compare", r"对比|比较|区别|差别|差距|差多少|哪个(?:的)?(?:性价比|更)?(?:高|好|强|快|便宜|划算)|哪个好|\bvs\.?\b|versus|compare|comparison|difference between|better than|which is (?:better|faster|cheaper)|相比|比.{1,14}(?:强|快|好|差|慢|便宜|贵|高|低)|跟.{1,12}比"),
    ("replace", r"替代|代替|取代|平替|替换|replace|substitute|alternative"),
    ("domestic", r"国产|信创|自主可控|去美化|去英伟达|非英伟达|domestic|chinese (?:chips?|accelerators?|gpus?)|non-nvidia"),
    ("recommend", r"推荐|选什么|选哪|怎么选|如何选|买什么|买哪|用什么卡|上什么卡|什么卡|哪种卡|哪款|选型|recommend|suggest|which gpus?|what gpus?|what (?:should|can) (?:i|we) (?:buy|rent|get|use)|best gpu|合适"),
    ("speed", r"tokens?/s|tok/s|tokens? (?:per|a) second|每秒|吞吐|throughput|延迟|latency|\bqps\b|\btps\b|\bttft\b|\btpot\b|首字|首token|首 token|出字|生成速度|推理速度|how fast|多快|速度|\bspeed\b"),
    ("concurrency", r"并发|concurren|同时|simultaneous|at once|在线|多少路|几路|多少人|几个人|users?\b|用户"),
    ("max", r"最大|最多|上限|max(?:imum)?\b|how many|能撑|撑得住|支持多少"),
    ("context", r"上下文|context|max[-_ ]?model[-_ ]?len|长文本|\d+k\b"),
    ("serve", r"推理|部署|serving|\bserve\b|inference|上线|线上|\bvllm\b|sglang|客服|问答|deploy|私有化"),
    ("train", r"训练|训|微调|fine-?tun|\bsft\b|lora|全参|pretrain|预训练|\btrain"),
    ("availability", r"(?:能|可以|还能|还可以|能不能|可不可以)(?:正常)?(?:买|采购|购买|拿货|进口|进货)|买得到|买不到|买得着|买不着|好买吗|好不好买|能买吗|有货|没货|货源|现货|交期|供货|到货|禁运|禁售|出口管制|管制|限制出口|被禁|被限|合规|实体清单|许可证|\blicen[cs]e|export (?:control|restriction|ban)|embargo|\brestricted\b|\bbanned\b|(?:buy|get|purchase|import|order|source)(?: (?:it|them|one|an?|the))?(?: \w+)? in china|available in china|(?:still )?(?:available|allowed|legal) (?:to (?:buy|import) )?in (?:mainland )?china|lead time|in stock"),
    ("specs", r"规格|参数表|\bspecs?\b|datasheet|带宽|bandwidth|算力|tflops|显存多大|多大显存|有多少显存|显存是多少|how much (?:memory|vram) does|tell me about|介绍一下"),
    ("power", r"功耗|功率|电费|用电|度电|耗电|供电|多少电|电量|电力|kwh|\bkw\b|千瓦|机柜|rack|power|electricity|\bpue\b|散热|watts?"),
    ("weights", r"权重|weights?\b|模型文件|模型大小|checkpoint (?:size|file)|文件多大|硬盘|磁盘|disk|download|下载|model size|size of the model"),
    ("kv", r"\bkv\b|kv[ _-]?cache|kv缓存|kv 缓存|缓存"),
    ("per_token", r"每个? ?token|per token|每 token|per request|每条请求|一条请求|每个请求"),
    ("zero", r"zero[- _]?[0-3]?|deepspeed|优化器状态|optimizer states?|model states?|模型状态|切分|shard"),
    ("precision_pair", r"fp8.{0,12}(?:bf16|fp16)|(?:bf16|fp16).{0,12}fp8|transformer engine"),
    ("faster", r"快多少|快几倍|提速|加速|speed-?up|faster|省多少(?:时间)?|能快"),
    ("quant", r"int4|int8|awq|gptq|量化|quantiz|4bit|8bit|gguf"),
    ("knowledge", r"nvlink|nvswitch|infiniband|\bib\b|\broce\b|拆机|矿卡|翻新|二手|保修|质保|\bcuda\b|驱动|\bdriver|兼容|compatib|\bcann\b|mindspore|生态|ecosystem|注意(?:什么|事项|哪些)|有什么坑|踩坑|问(?:清楚|什么)|what (?:to|should i) ask|怎么判断|怎么看|explain|解释|什么是|是什么意思|what (?:is|are|does)|\bwhy\b|为什么|为啥|原理|\bhow (?:to|do|does|can)\b|如何|教程|\bguide\b|best practice|靠谱吗|风险|水货|出口管制|禁售|export control|区别是什么"),
    ("off_topic", r"天气|weather|笑话|\bjokes?\b|股票|股价|\bstocks?\b|炒股|基金|彩票|lottery|写(?:一)?首|写诗|作诗|\bpoem|poetry|菜谱|recipe|做饭|电影|\bmovie|足球|篮球|football|星座|算命|女朋友|男朋友|情书|作文|\bessay|唱(?:首)?歌|比特币|bitcoin|加密货币|\bcrypto|减肥|旅游|机票|外卖|挖矿|炒币|\bsing\b|lyrics|歌词|故事|\bstory|游戏|gaming|\bgame|风扇|机箱|翻译|translate|pizza|餐厅"),
    ("greet", r"^(?:你好|您好|hi|hello|hey|哈喽|嗨|在吗|在不在|早上好|下午好|晚上好|good (?:morning|afternoon|evening))|你是谁|who are you|你能做什么|what can you do|谢谢|thanks"),
    ("follow", r"呢[?？]?\s*$|what about|how about|and with|换成|改成|改为|instead"),
)  # fmt: skip

#: a message that is nothing but a greeting or thanks
GREETING_ONLY = r"^(?:你好|您好|hi|hello|hey|哈喽|嗨|在吗|在不在|早上好|下午好|晚上好|早|老师好|good (?:morning|afternoon|evening)|thanks?(?: you)?|谢谢|多谢|thx|ok|好的|收到)(?:呀|啊|哈|呢|老师|你|哈哈)?[\s!！。.,，~～？?]*$"

#: words that make a message about this domain at all (else, with no cue and no name: out of scope)
DOMAIN_WORDS = r"lora|qlora|\bzero\b|deepspeed|fp8|bf16|fp16|int4|int8|量化|显卡|gpu|显卡|卡|显存|训练|推理|模型|\bmodels?\b|微调|算力|服务器|集群|部署|\bcuda\b|nvidia|英伟达|华为|昇腾|token|\bllm|大模型|租|买|机器|节点|\bnode|vram|\btrain|inference|serving|fine-?tun|\brent|\bbuy|芯片|\bchip|加速|parallel|并行|nvlink|infiniband|\broce\b|checkpointing|重计算|kv ?cache|tensor cores?|\bhbm|\bsxm|\bpcie|quantiz|\bmfu\b|\bfsdp\b|flash ?attention|\bnccl\b|all-?reduce|显存带宽|memory bandwidth"

# --- slot words ---------------------------------------------------------------------------

METHODS = (
    ("qlora", r"q-?lora"),
    ("lora", r"(?<!q)(?<!q-)lora|低秩"),
    (
        "full",
        r"全参|全量|全参数|full[- ]?(?:parameter|param|fine[- ]?tun\w*|ft\b|sft\b|training)|full fine|all parameters",
    ),
    ("freeze", r"冻结|(?<![a-z])freez(?:e|ing)(?![a-z])|(?<![a-z])frozen(?![a-z_-])"),
)
#: the training objective (tools/memory/preference.py); RLHF and 强化学习 name PPO, the classic RLHF loop
OBJECTIVES = (
    ("dpo", r"\bdpo\b|直接偏好优化"),
    ("orpo", r"\borpo\b"),
    ("kto", r"\bkto\b"),
    ("grpo", r"\bgrpo\b"),
    ("rloo", r"\brloo\b"),
    ("reinforce++", r"\breinforce\s*\+\+|\breinforce[_-]pp\b"),
    ("dapo", r"\bdapo\b"),
    ("gspo", r"\bgspo\b"),
    ("ppo", r"\bppo\b|\brlhf\b|强化学习|reinforcement learning"),
    ("dpo", r"偏好对齐|偏好优化|preference (?:alignment|optimi[sz]ation|tuning)"),
)
WORKLOADS = (
    ("pretrain", r"预训练|pre-?train|from scratch|从零|从头训|增量预训练|continued pre-?training"),
    (
        "infer",
        r"推理|部署|serving|\bserve\b|inference|上线|线上服务|\bvllm\b|sglang|tensorrt|在线服务|问答服务|客服|api服务|\bdeploy|"
        r"generate\.py|trtllm|build(?:ing)? (?:the )?engine|api_server|web_demo|cli_demo|\bollama\b|llama\.cpp|"
        r"tensor[-_]parallel[-_]size|max[-_]model[-_]len|gpu[-_]memory[-_]utilization|max[-_]num[-_]seqs|kv cache|"
        r"(?:模型|支持|做|用于|进行)预测|预测功能|"
        # an embedding or reranker model run over texts: inference too ("计算向量", "encode the corpus", "多文本嵌入")
        r"计算向量|算向量|生成向量|提取向量|向量化|(?:文本|文档|多文本)嵌入|嵌入(?:文本|文档)|向量入库|"
        r"\.encode\(|\bencod(?:e|es|ing) (?:the |my |our |all )?(?:texts?|documents?|docs|corpus|queries|passages|sentences)|"
        r"\b(?:comput|generat|creat)(?:e|es|ed|ing) (?:the )?embeddings?\b|\bembedding (?:api|service|server|endpoint|inference)\b|"
        r"\brerank(?:s|ed|ing)? (?:the )?(?:results?|documents?|docs|passages|candidates)|重排序?(?:结果|文档)?时|"
        # a pasted API request that names the model first: a served model's client call ({"model":"bge-m3","input":[…]})
        r'\{\s*"model"\s*:\s*"[^"\n]{1,80}"\s*,\s*"(?:input|messages)"\s*:',
    ),
    (
        "finetune",
        r"微调|fine-?tun|\bsft\b|\blora\b|qlora|全参|全量|指令调优|instruction tuning|\bft\b|\brlhf\b|\bdpo\b",
    ),
    ("train", r"训练|\btrain(?:ing)?\b"),
)
#: a job said to be set aside ("暂时不考虑训练的问题", "no training for now"): not the job asked about
NOT_WORKLOAD = (
    r"(?:暂时|暂|先|目前)?(?:不考虑|不涉及|不需要|不打算|不做|不用)(?:做|进行)?(?:预训练|训练|微调|推理)|"
    r"(?:not|no|without) (?:any )?(?:training|fine-?tuning|inference)"
)
TRAINING_RUN = (
    r"训练|预训练|微调|全参|全量|\btrain(?:ing|ed)?\b|fine-?tun\w*|pre-?train\w*|\bsft\b|\brlhf\b|\bdpo\b|"
    r"\bgrpo\b|\brloo\b|\breinforce\s*\+\+|\bdapo\b|\bgspo\b|\bppo\b|instruction tuning|指令调优|\bepochs?\b|轮次|optimizer|优化器|梯度|gradient"
)
PRECISIONS = (
    ("fp32", r"\bfp32\b|float32|单精度|全精度|full precision"),
    ("tf32", r"\btf32\b"),
    ("bf16", r"\bbf16\b|bfloat16|混合精度|mixed[- ]precision|\bamp\b"),
    ("fp16", r"\bfp16\b|float16|半精度|half[- ]precision"),
    ("fp8", r"\bfp8\b|float8"),
    ("nf4", r"\bnf4\b"),
    ("int8", r"\bint-?8\b|8[- ]?bit|8位量化|8比特|\bw8a8\b|\bw8a16\b"),
    ("int4", r"\bint-?4\b|4[- ]?bit|4位量化|4比特|\bgptq\b|\bawq\b|\bq4(?:_k_m|_0)?\b|\bw4a16\b"),
)
MIXED_PRECISION = r"混合精度|mixed[- ]precision|\bamp\b"

ZERO = r"(?:zero|deepspeed)[\s\-_]*(?:stage|阶段|级)?[\s\-_]*([0-3])(?![\d.])(?!\s*(?:张|卡|块|台|x|×|\*|gpus?|cards?|nodes?))|stage[\s\-_]*([0-3])\b"
OFFLOAD_NO = r"(?:不|没|无需|不用|不要|没有|no|without|w/o)\s*(?:开|用|做|开启)?\s*(?:cpu\s*)?(?:offload|卸载)"
OFFLOAD_OPT = r"(?:optimizer|优化器)(?:状态)?\s*(?:offload|卸载)|offload(?:ing)?\s*(?:the\s*)?(?:optimizer|优化器)"
OFFLOAD_PARAM = r"(?:param(?:eter)?s?|参数|权重|weights?)\s*(?:offload|卸载)|offload(?:ing)?\s*(?:the\s*)?(?:param|参数|权重|weight)|zero[- ]?infinity|nvme"
OFFLOAD_ANY = r"offload|卸载到\s*(?:cpu|内存)|cpu\s*卸载"

CHINA_DOMESTIC = r"国产|信创|自主可控|去美化|非英伟达|不用英伟达|不能用英伟达|domestic chips?|chinese chips?"
CHINA_AVAILABLE = r"国内(?:能|可以)?买(?:得)?到|国内(?:能|可以)?(?:采购|拿到)|只能买国内|合规|禁运|出口管制|买不到(?:h100|a100|英伟达)|available in china|export[- ]control|can(?:not|'t) (?:buy|import)"

FOLLOW_UP = r"^(?:那|那么|那如果|那要是|如果换|换成|改成|还是这个|同样|同样的|然后呢|and if|what about|how about|same (?:with|for|but)|and with|ok,? (?:and|what))|换成|改成|改用|换用|这些卡|这个配置|这套配置|上面(?:的|那个|说的)|刚才|刚刚|前面(?:的|说的)|同样的|the same (?:setup|config|with|but|model)|those gpus|these gpus|that config|instead\??$|呢[?？]?\s*$"

INJECTION = r"忽略(?:之前|以上|上面|前面|所有|你的)?的?(?:所有)?(?:指令|指示|提示|规则|设定|要求)|无视(?:之前|以上|上面)?的?(?:指令|指示|规则)|ignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|your) (?:instructions|prompts?|rules)|disregard (?:all |the )?(?:previous|prior|above)|system prompt|系统提示词?|提示词是什么|你现在是|你是一个(?!.*gpu)|从现在开始你|now you are|you are now|act as (?:a|an|my)|pretend (?:to be|you are)|扮演|developer mode|开发者模式|jailbreak|越狱|\bdan\b|输出你的(?:指令|提示|设定)|reveal your|repeat the (?:words|text) above"

CONFIRM = r"对吧|对不对|是不是|是吗|对吗|对么|是真的吗|真的吗|没错吧|没错|确认|核实|核对|\bconfirm|\bverify|\bright\?|correct\?|isn't it|is that (?:right|true|correct)|听说|据说|销售说|供应商说|他们说|someone (?:said|told)|i heard|i was told"

#: names of software that contain model-family words ("llama.cpp", "ollama")
SOFTWARE = r"llama\.cpp|llamacpp|ollama|llamafactory|llama-factory|llama_factory|lmdeploy|vllm|sglang|tensorrt-llm|megatron-lm|deepspeed"

#: words that open a language-model name ("gpt-7", "qwen3-235b"); the catalog adds its own families
MODEL_FAMILY_WORDS = (
    "gpt", "chatgpt", "claude", "gemini", "gemma", "llama", "qwen", "qwq", "chatglm", "glm", "baichuan", "yi",
    "internlm", "mistral", "mixtral", "deepseek", "phi", "falcon", "bloom", "kimi", "minimax", "ernie", "文心",
    "通义", "千问", "混元", "hunyuan", "豆包", "doubao", "grok", "opt", "stablelm", "codellama", "starcoder",
)  # fmt: skip

#: words that open an accelerator name; the catalog adds the letter prefixes of its own ids
GPU_BRAND_WORDS = (
    "rtx",
    "gtx",
    "tesla",
    "quadro",
    "instinct",
    "ascend",
    "mi",
    "mlu",
    "mtt",
    "gaudi",
    "英伟达",
    "nvidia",
)

#: Chinese words that prefix an accelerator number ("昇腾910B", "英伟达H800")
GPU_ZH_PREFIXES = ("昇腾", "英伟达", "华为", "寒武纪", "摩尔线程", "海光", "壁仞", "沐曦", "天数", "辉达", "燧原")

#: tokens that look like names but are settings ("fp16", "zero3", "gen5", "v100" is a GPU and not here)
NOT_NAMES = r"^(?:fp\d+|bf16|tf32|int\d+|nf4|zero\d|stage\d|gen\d|pcie\d?|nvlink\d?|cuda\d+(?:\.\d+)?|sm\d+|q\d(?:_k_m|_0)?|w\d+a\d+|k8s|top\d+|\d+(?:k|m|g|gb|tb|t|w|kw|h|hr|hrs|bit|x)|v\d(?:\.\d+)*|r\d|x\d+|p\d+|tp\d+|pp\d+|dp\d+|ep\d+)$"


def to_number(text: str) -> float | None:
    """ "8" -> 8, "1.5万" -> 15000, "2万亿" -> 2e12, "八" -> 8, "十六" -> 16, "两" -> 2, "半" -> 0.5.

    Arabic digits and Chinese numerals may be mixed ("3千", "1.5亿"); anything else gives None.
    """
    words = " ".join(text.lower().split())  # "a single": the words as written, before spaces are dropped
    if words in EN_NUMBERS:
        return float(EN_NUMBERS[words])
    s = text.strip().replace(" ", "").replace(",", "")
    if not s:
        return None
    if s == "半":
        return 0.5
    total = section = 0.0
    pending: float | None = None
    for tok in _NUM_TOKEN.findall(s):
        if tok[0].isdigit():
            pending = float(tok)
        elif tok in ZH_DIGITS:
            pending = float(ZH_DIGITS[tok])
        elif tok in ZH_UNITS:
            section += (1.0 if pending is None else pending) * ZH_UNITS[tok]
            pending = None
        elif tok == "万":
            section = (section + (pending or 0.0)) * 1e4 or 1e4
            pending = None
        elif tok == "亿":
            total = (total + section + (pending or 0.0)) * 1e8 or 1e8
            section, pending = 0.0, None
        else:
            return None
    return total + section + (pending or 0.0)


_NUM_TOKEN = re.compile(r"\d+(?:\.\d+)?|.")
