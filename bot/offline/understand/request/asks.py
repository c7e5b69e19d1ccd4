"""What a message asks, as a set in the order asked: the cue words of each ask (Chinese and English), and the
intents the classifier settled, merged. An ask is answered by the planner's frame of the same name
(`ASK_INTENT`); "choose" is answered by a verdict on what the other asks computed (`compose/verdict.py`)."""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.paste.logs import FORECAST, told
from bot.offline.understand.patterns import C
from bot.offline.understand.question import ParsedQuestion
from bot.offline.understand.request import verdicts
from bot.offline.understand.request.forms import (
    CONFIG_FORM,
    DOUBT_FORM,
    EXPLAIN_FORM,
    LOG_LINE,
    SERVING_RUN,
    TRAINING_RUN,
    blank_logs,
)

#: a part of a question asked in words beside figures: how a thing works or what sets it, per card or in total,
#: why one setting is advised over another, whether it changes the results, whether a model can be split
KNOWLEDGE_PART = (
    r"有什么区别|什么区别|各有什么|(?:单卡|每张卡|每卡)的?.{0,12}还是.{0,16}(?:加起来|总和|合计|之和|总共|总的)|"
    r"(?:哪里|哪儿|什么地方|哪个参数|什么参数)(?:来)?(?:控制|设置|配置|决定)|由什么决定|(?:受|由)(?:哪些|什么)(?:参数|因素)|"
    r"为(?:什么|何)(?:推荐|建议|要先)|会不会(?:影响|降低|导致)(?:模型|训练|精度|效果|结果)|是否(?:会)?(?:影响|降低)(?:模型|训练|精度|效果|结果)|"
    r"(?:可以|能|能否|能不能)(?:将|把)?.{0,16}(?:切分|拆分|分布|分摊|分到|切到|拆到)(?:在|到)?多(?:张|个|块)|"
    r"how does .{1,30} work|why (?:does|do|is|are) .{1,40}\brecommend|per (?:gpu|card|device) or (?:in )?(?:total|combined|summed|all)|"
    r"(?:total|combined|summed) or per (?:gpu|card|device)|what (?:controls|determines|sets|decides)\b|"
    r"does .{1,40} (?:affect|hurt|degrade|reduce|change) (?:the )?(?:accuracy|quality|results?|training)|"
    r"(?:can|could) (?:i|we|it|the model|a model|this model) be (?:split|sharded|distributed|spread)|"
    r"(?:split|shard|spread|distribute) (?:the |a |this |my )?model (?:across|over|on|between) (?:multiple|several|two|many|\d+)|"
    # why one way costs more than another ("Lora比全量微调更耗时是什么原因", "why is LoRA slower than full"): a difference
    r"(?:为什么|为何|什么原因).{0,30}比.{1,20}(?:更|还)?(?:慢|快|耗时|久|占用|大|多|少)|"
    r"比.{1,20}(?:更|还)(?:慢|快|耗时|久|占用|大|多|少).{0,16}(?:是什么原因|什么原因|为什么|为何)|"
    r"why (?:is|does|do|would|are) .{1,40} (?:slower|faster|more|less|bigger|larger) .{0,30}than|"
    # whether a change keeps the results ("Does this guarantee similar accuracy?", "精度会一样吗")
    r"(?:guarantees?|keeps?|gives?|preserves?) (?:a |the )?(?:similar|same|comparable) (?:accuracy|results?|quality|loss)|"
    r"(?:精度|效果|结果)(?:会|能)?(?:一样|相同|不变|一致)吗"
)
#: … and an explanation asked in so many words, whatever the topic (forms.py): what it means, how it was worked out
_WORDED_PART = KNOWLEDGE_PART
KNOWLEDGE_PART = KNOWLEDGE_PART + "|" + EXPLAIN_FORM
#: a time or speed measured on the asker's own run ("8500min", "6800 min", "5 tokens/s"): its clause is a
#: diagnosis of that run, not a question a note answers (a memory figure is often the note's subject: "140 GB")
_MEASURED = C(r"\d+(?:\.\d+)?\s*(?:min|mins|分钟|小时|hours?|秒|tokens?/s|tok/s|t/s|it/s)")
#: the sentences of a message (unbounded: a sentence is as long as it is; the class cannot backtrack)
_CLAUSE = re.compile(r"[^。！？!?\n]+[。！？!?]?")
CUES = {
    "rent_vs_buy": r"租还是买|买还是租|租.{0,6}还是.{0,6}买|买.{0,6}还是.{0,6}租|租.{0,4}划算还是.{0,4}买|自建还是|上云还是|"
    r"rent or buy|buy or rent|rent vs\.? buy|renting or buying|buying or renting|lease or buy",
    "diagnose": r"tried to allocate|outofmemoryerror|为什么|为啥|为何|怎么会|怎么回事|咋回事|报错|\boom(?:s|ed|ing)?\b|out of memory|爆显存|显存(?:不够|不足|溢出|爆了|炸了)|"
    r"怎么解决|如何解决|怎么办|解决方法|跑不起来|启动(?:就)?(?:挂|失败|报错)|\bwhy\b|slower than|变慢|很慢|慢了|太慢|"
    r"traceback|runtimeerror|\berror\b|\bfailed\b|killed|\bhangs?\b|卡住|\bnan\b|doesn'?t work|not working",
    "min_count": r"几张|几块|几卡(?!时)|几台|多少张|多少块|多少卡(?!时|小时|·时)|多少台|多少个(?:gpu|节点|卡)|最少.{0,4}(?:几|多少)|至少.{0,4}(?:几|多少)|"
    r"how (?:many|much) (?:gpus?|cards?|nodes?|servers?|machines?|a100s?|h100s?|h800s?|h20s?|4090s?)(?![- ]?hours?)|"
    # a card named between ("how many RTX 4090 GPUs", "how many 80GB A100 cards")
    r"how many (?:[\w-]+ ){1,3}(?:gpus?|cards?)\b(?![- ]?hours?)|"
    r"min(?:imum)? (?:number of )?(?:gpus?|cards?|nodes?)|最低配置|最低的?(?:显卡|gpu|硬件)配置|"
    # the count asked as resources or requirements ("需要多少资源", "所需卡数", "还是需要多卡", "GPU requirements")
    r"多少的?\s*(?:gpu|显卡)|所需卡数|卡数|(?:多少|什么)(?:的)?(?:硬件|gpu)?资源|硬件资源|需要多卡|最低(?:部署|运行|硬件)?要求|"
    r"至少需要(?:什么|哪些|多少)|需要(?:什么|哪些)(?:显卡|gpu|卡|硬件)|(?:gpu|hardware|pc|system) requirements?|"
    r"requirements? (?:to|for) (?:run|serve|train|fine-?tune|deploy)|how much (?:resources?|hardware|compute)|"
    r"(?:the )?number of (?:gpus?|cards?|a100s?|h100s?|a800s?|h800s?|nodes?)|"
    r"what (?:hardware|gpus?) (?:do|would|will) (?:i|we|you) need",
    "fits": r"能(?:不能|否)?跑|可以跑|跑得(?:动|了|起来)|装得下|放得下|塞得下|能装下|能放下|够不够|够吗|够用吗|够不|能(?:不能)?训|"
    r"能(?:不能)?微调|能(?:不能)?部署|扛得住|行不行|行吗|可行吗|\bfits?\b|run (?:it |this )?on|enough (?:vram|memory)|"
    r"can (?:i|we|it|you) (?:run|train|fine-?tune|serve|load|deploy)|is it possible|possible to (?:run|train)|"
    r"(?:能否|可以|是否能|能不能)支持[^，。,.?？\n]{0,12}(?:预测|推理|部署|运行|训练|微调)|需要多少(?:显存|内存)|多少显存|how much (?:vram|gpu memory|memory)|显存(?:需求|要求|占用)|memory requirements?",
    "time": r"多久|多长的?时间|多少时间|几天|几个小时|多少(?:个)?小时|多少天|几周|训练时间|耗时|how long|time to train|training time|wall[- ]?clock|"
    r"(?:number of|how many) (?:hours|days|weeks)|"
    r"训完|跑完|\beta\b",
    "cost": r"多少钱|花多少(?!.{0,2}时间)|费用|成本|要花(?!.{0,4}时间)|开销|花费(?!了?.{0,3}时间|了?多长|了?多久)|\bcosts?\b|how much (?:would|will|does|did) it cost|how expensive|预算够",
    "price": r"单价|售价|一张多少钱|多少钱一张|什么价|报价|\bprice\b|\bpricing\b",
    "speed": r"速度|多快|吞吐|tokens?/s|tok/s|token/s|(?<![\w/])t/s\b|延迟|latency|throughput|首字|ttft|\btpot\b|每秒|"
    r"tokens? (?:per|a) sec(?:ond)?|\bfast\b|\bspeed\b|性能怎么样|性能如何|性能数据|性能(?:能|可以)?(?:达到|有)多少|"
    # the rate asked per minute or as an efficiency ("每一分钟可以生成多少token", "模型的运行效率")
    r"每一?分钟[^，。,.?？\n]{0,10}(?:生成|输出|吐)|(?:运行|推理|生成)效率",
    "capacity": r"多少(?:并发|用户|人|路|请求)|支撑|支持多少|扛多少|能服务|how many (?:users|requests|concurrent)|"
    r"(?<!memory )(?<!vram )(?<!gpu )(?<!total )capacity(?!\s*(?:of\s*)?[\d(])|"
    r"并发(?:能|可以)?(?:到|达到)多少|serve \d+ users",
    "compare": r"对比|比较|区别|差距|差多少|差别|\bvs\.?\b|versus|compared? (?:to|with)|difference between|相比|比.{1,12}(?:快|慢|强|好)",
    "choose": r"选哪|选什么|选谁|哪个好|哪个更|哪款|哪张|哪种|哪一个|哪家|推荐|建议(?:买|选|用|配)|值不值|值得|划算|性价比|"
    r"which (?:one|gpu|card|is better|should)|should (?:i|we) (?:buy|pick|choose|get|go|use)|worth|recommend|"
    r"better (?:choice|option|deal)|怎么选|如何选|选型|怎么配|如何配|哪些\s*(?:gpu|显卡|卡|芯片|型号)|which (?:gpus|cards)\b",
    "availability": r"能买到|买得到|能(?:不能)?采购|禁运|出口管制|\bexport\b(?!\s+[a-z_][a-z0-9_]*=)|禁售|available in china|供货|交期|有货|还能买",
    "power": r"功耗|耗电|电费|用电|多少度电|机柜|power draw|electricity|\bkw\b|千瓦|散热",
    # how to make it work: the settings, the method or the setup ("如何调整", "有什么办法", "is there a way to",
    # "how can I load it on 4 GPUs", "what should max_batch_size be"), not only the words "set" and "configure"
    "config": r"怎么设置|如何设置|参数怎么|哪个参数|哪些参数|怎么配置|如何配置|怎样的配置|什么(?:样的)?配置|推荐的?配置|配置建议|"
    r"设多少|设置多少|如何调|怎么调|调整参数|改什么参数|有(?:没有)?什么.{0,8}(?:方法|办法|方案|思路)|有没有办法|有办法[^。\n]{0,16}(?:吗|[?？])|"
    r"如何实现|怎么实现|怎么指定|如何指定|如何才能|怎么才能|怎样才能|如何(?:使用|部署|加载|切分|分配|启动|多卡)|"
    r"怎么(?:部署|加载|切分|分配|启动|弄|搞|多卡)|要踩的坑|"
    r"how (?:do i|to|should i) (?:set|configure)|which (?:flag|setting|option|parameter)s?|what (?:value|setting)|"
    r"is there (?:a|any)(?: other)? (?:way|method|option|setting|flag|config\w*|workaround)|any way to|"
    r"how (?:can|could|do|should) (?:i|we|one)\b|how to (?:load|run|deploy|serve|fine-?tune|tune|train|set|configure|"
    r"split|shard|use|make|solve|enable|distribute|divide|speed up|reduce|avoid|get)|what should (?:be|i|we|the)\b|"
    r"should (?:i|we) (?:incr\w*|decr\w*|set|change|reduce|adjust|enable|turn)|(?:guidance|examples?|recipes?) (?:on|for)|"
    r"recommended .{0,24}(?:config\w*|settings?|setup)|what (?:gpu |hardware )?configurations?|" + CONFIG_FORM,
    # host RAM asked beside the GPU's ("需要多少显存空间？还有多少内存需求呢？", "how much RAM is needed to build",
    # "GPU Memory and CPU Memory"): a bare "内存" is often the GPU's, so it is the host's only beside "显存" or named so
    "host_ram": r"(?:主机|cpu|系统|服务器)\s*内存|(?<!显)内存(?:需求|要求|要多少|需要多少|占用(?:是)?多少|多大)(?=.{0,80}显存)|"
    r"(?<=显存).{0,40}(?<!显)内存(?:需求|要求|要多少|需要多少|占用|多大|(?:分别)?要多大)|(?:多少|多大)(?:的)?(?<!显)内存(?=.{0,80}显存)|"
    r"(?<=显存).{0,40}(?:多少|多大)(?:的)?(?<!显)内存|(?<=显存).{0,40}对(?<!显)内存有(?:什么|何)?(?:要求|需求)|"
    r"how much (?:system |host |cpu )?ram\b|"
    r"(?:cpu|host|system) (?:memory|ram)\b|\bram (?:is )?(?:needed|required|nee?ded)",
    "knowledge": r"是什么|什么是|什么意思|原理|what(?:'s|’s| is| are)\b|what does .{1,30} mean|explain|区别是|"
    + KNOWLEDGE_PART,
}
#: "what is the yearly cost", "what's the minimum number of GPUs": "what is" asking for a figure (the ask its
#: quantity word cues), not for an explanation
_QUANTITY_WHAT = C(
    r"what(?:'s|’s| is| are| would be| will be)\s+(?:the |a |an |our |my |your |its |their |this |that )?"
    r"(?:[\w-]+ ){0,3}?(?:costs?|price|prices|bill|time|speed|throughput|latency|memory|vram|number|count|budget|"
    r"power|draw|size|minimum|maximum|total|amount|estimate|break-?even|payback|footprint|requirements?)\b"
)
_CUES = {ask: C(rx) for ask, rx in CUES.items()}
_KNOWLEDGE = C(KNOWLEDGE_PART)
_TOPICAL = C(_WORDED_PART)
_DOUBT = C(DOUBT_FORM)


def form_only(clause: str) -> bool:
    """Whether a part was found by its sentence form alone (forms.EXPLAIN_FORM: "有文档不", "how is this calculated"),
    not by words that say what it is about: a note answers it only when it holds most of the part's own words."""
    return not _TOPICAL.search(clause.lower())


#: the classifier's intents, as asks
INTENT_ASK = {
    "fit": "fits", "weights": "fits", "kv_cache": "fits", "zero_states": "fits", "train_memory": "fits",
    "min_gpus": "min_count", "time": "time", "cost": "cost", "price": "price", "rent_vs_buy": "rent_vs_buy",
    "build_budget": "choose", "recommend": "choose", "recommend_serving": "choose", "domestic": "choose",
    "compare": "compare", "speed": "speed", "precision_speedup": "speed", "serving_capacity": "capacity",
    "specs": "knowledge", "knowledge": "knowledge", "availability": "availability", "power": "power",
}  # fmt: skip
#: an ask answered by a frame of its own (the planner's intent)
ASK_INTENT = {
    "fits": "fit", "min_count": "min_gpus", "time": "time", "cost": "cost", "price": "price",
    "rent_vs_buy": "rent_vs_buy", "compare": "compare", "speed": "speed", "capacity": "serving_capacity",
    "availability": "availability", "power": "power",
}  # fmt: skip
#: the calculators whose output answers each ask (a call of any one of them answers it)
ANSWERED_BY: dict[str, frozenset[str]] = {
    "fits": frozenset({"fit_training", "fit_inference", "model_memory", "plan_serving", "plan_system", "plan_cluster",
                       "recommend_gpus"}),
    "min_count": frozenset({"fit_training", "fit_inference", "plan_serving", "plan_system", "plan_cluster",
                            "recommend_gpus"}),
    "time": frozenset({"training_time", "plan_system", "rent_vs_buy"}),  # rent_vs_buy: break-even / payback months
    "speed": frozenset({"inference_speed", "training_time", "plan_serving", "precision_speedup"}),
    "capacity": frozenset({"plan_serving", "fit_inference"}),
    "cost": frozenset({"run_cost", "rent_vs_buy", "plan_system", "plan_serving", "power_draw", "plan_cluster"}),
    "price": frozenset({"gpu_specs", "compare_gpus", "run_cost", "rent_vs_buy", "plan_system", "recommend_gpus"}),
    "rent_vs_buy": frozenset({"rent_vs_buy"}),
    "power": frozenset({"power_draw", "plan_system", "plan_cluster"}),
    "availability": frozenset({"gpu_specs", "compare_gpus", "recommend_gpus"}),
    "host_ram": frozenset({"fit_training", "fit_inference", "diagnose"}),
}  # fmt: skip
#: an ask whose calculator answers it only when its output holds the figure: host RAM is computed by a fit that
#: offloads to the host (fit_training's host_ram_gb), a CPU+GPU hybrid fit (fit_inference's hybrid rows), a
#: serving fit given its loader (fit_inference's host_ram: what the engine needs on a node to load and serve) or the
#: host-RAM cause of a diagnosis; a fit of the GPUs alone says nothing of the host
ANSWERED_WHEN: dict[str, Any] = {
    "host_ram": lambda c: bool(
        (c.tool == "fit_training" and (c.output or {}).get("host_ram_gb"))
        or (c.tool == "fit_inference" and ((c.output or {}).get("hybrid") or (c.output or {}).get("host_ram")))
        or (c.tool == "diagnose" and any(x.get("cause") == "host_ram" for x in (c.output or {}).get("causes", [])))
    )
}
#: words that make "A 还是 B？" a choice between two named things
_OR = C(r"还是|\bor\b|或者|或是|或(?!许)")


_NAMES = frozenset({"gpus", "unknown_gpus", "models", "unknown_models"})
_STOPS = "。！？!?\n；;"


def _between_names(low: str, p: ParsedQuestion) -> re.Match | None:
    """The first "还是 / or / 或" that stands between two names of one sentence ("H20 还是 4090？", "单卡3090或4090能跑吗");
    "是因为 NCCL 还是因为
    其他的因素" beside two cards named elsewhere chooses between causes, not between the cards."""
    names = [(a, b) for slot, a, b in p.spans if slot in _NAMES]
    for m in _OR.finditer(low):
        opens = max(low.rfind(c, 0, m.start()) for c in _STOPS) + 1
        closes = min((i for c in _STOPS if (i := low.find(c, m.end())) >= 0), default=len(low))
        if any(opens <= b <= m.start() for _, b in names) and any(m.end() <= a < closes for a, _ in names):
            return m
    return None


def cued(text: str, p: ParsedQuestion) -> list[str]:
    """The asks the message's own words place (no classifier), in the order they come."""
    return asks(text, p, classifier=False)


def asks(text: str, p: ParsedQuestion, classifier: bool = True) -> list[str]:
    """The asks, in the order their cue words come; the classifier's intent leads when no cue placed it.
    A pasted log or trace is evidence: its words ("total capacity") ask nothing, its error asks why."""
    low = text.lower()
    evidence = LOG_LINE.search(low)
    placed: list[tuple[int, str]] = [(evidence.start(), "diagnose")] if evidence else []
    low = blank_logs(low)  # positions kept
    low = FORECAST.sub(lambda m: " " * len(m.group(0)), low)  # "会不会很慢" asks for a forecast, not why
    for ask, rx in _CUES.items():
        if m := rx.search(low):
            placed.append((m.start(), ask))
    if (at := told(low)) is not None:  # a trouble told in words (it fails, it is slow, "is this normal?") asks why
        placed.append((at, "diagnose"))
    names = len(p.gpus) + len(p.unknown_gpus) + len(p.models) + len(p.unknown_models)
    if names >= 2 and (m := _between_names(low, p)) and not any(a == "rent_vs_buy" for _, a in placed):
        placed.append((m.start(), "choose"))
    if classifier:  # the sentence's form: a pick asked for, setups weighed, a comparative (the request's asks; the
        placed += verdicts.placed(low, p)  # planner's parts stay on the cue words: its yes/no lines answer these)
    found = list(dict.fromkeys(ask for _, ask in sorted(placed)))
    quantity = bool(_QUANTITY_WHAT.search(low)) and any(a not in ("knowledge", "diagnose") for a in found)
    if quantity:  # "what is the yearly cost": the cost is the ask; nothing is to be explained
        found = [a for a in found if a != "knowledge"]
    if "rent_vs_buy" in found:  # "租还是买" is its own verdict, not a choice of cards; its money words are its own
        found = [a for a in found if a not in ("choose", "cost", "price")]
    if "speed" in found and TRAINING_RUN.search(low) and not SERVING_RUN.search(low):
        found = list(dict.fromkeys("time" if a == "speed" else a for a in found))  # a training run's speed: its time
    if "price" in found and "cost" in found:
        found.remove("price" if p.intent != "price" else "cost")
    if not classifier:
        return found
    if _DOUBT.search(low) and "knowledge" not in found:  # a doubt of figures or beliefs: explained after the parts
        found.append("knowledge")
    lead = INTENT_ASK.get(p.intent)
    out = [lead] if lead and lead not in found and not (quantity and lead == "knowledge") else []
    for ask in [*found, *(INTENT_ASK.get(i) for i in p.intents)]:
        if ask and ask not in out and not (quantity and ask == "knowledge"):
            out.append(ask)
    return out


def answered(ask: str, calls: list[Any]) -> bool:
    """Whether a call in `calls` answers `ask` (an ask with no calculator counts as answered: words answer it)."""
    tools = ANSWERED_BY.get(ask)
    holds = ANSWERED_WHEN.get(ask, lambda c: True)
    return tools is None or any(c.tool in tools and holds(c) and not _rules_only(c) for c in calls)


def _rules_only(c: Any) -> bool:
    """A `plan_cluster` call made only for the host-side rules per GPU (no model, no job): it sizes nothing asked."""
    args = getattr(c, "input", None) or {}
    return c.tool == "plan_cluster" and bool(args.get("host_workload")) and not args.get("model")


def unanswered(asks: list[str], calls: list[Any]) -> list[str]:
    """The asks, in the order asked, that no calculator of the answer answers."""
    return [a for a in dict.fromkeys(asks) if not answered(a, calls)]


def knowledge_clauses(text: str) -> list[str]:
    """The sentences of the message that ask how something works, what sets it or whether it holds, beside
    figures ("这里的GPU memory 是单卡的大小,还是多张加起来的大小", "KV cache 的大小是哪里控制的？"), in order;
    a pasted log's lines and a clause about the asker's own measured run are not among them."""
    low = blank_logs(text.lower())
    out = []
    for m in _CLAUSE.finditer(low):
        clause = m.group(0)
        if _KNOWLEDGE.search(clause) and not _MEASURED.search(clause):
            out.append(text[m.start() : m.end()].strip())
    return out


#: a belief the asker states and asks to have checked ("… Is this the right understanding?", "it doesn't make sense
#: to fine-tune a model that has been quantized, right?", "QLoRA 只能单卡，对吗？"): its sentence is a part a note answers
_CHECK = C(
    r"\bis (?:this|that|it|my understanding) (?:the )?(?:right|correct)\b|\bam i (?:right|correct|wrong)\b|"
    r"\bis (?:this|that) (?:true|so)\b|[,，]\s*right\s*[?？]|对吗|对不对|是这样吗|是不是这样|理解(?:得)?(?:对|正确|没错)吗|"
    # a constraint believed, asked as a question ("i MUST use a single GPU with larger memory?", "QLoRA 只能单卡吗？")
    r"\b(?:i|we|you|it|one) (?:must|have to|can only)\b[^?？。,，\n]{0,120}[?？]|(?:只能|必须|一定要)[^?？。,，\n]{0,30}(?:吗|么)\s*[?？]"
)
#: a check this short says nothing of its own: the sentence before it holds the belief
_CHECK_ALONE = 40


def belief_clauses(text: str) -> list[str]:
    """The sentences of the message that state a belief and ask whether it holds, in order (a bare "Is this right?"
    with the sentence before it); a pasted log's lines and a clause about the asker's own measured run are not."""
    low = blank_logs(text.lower())
    spans = [(m.start(), m.end()) for m in _CLAUSE.finditer(low) if m.group(0).strip()]
    out = []
    for i, (start, end) in enumerate(spans):
        if not _CHECK.search(low[start:end]):
            continue
        if len(low[start:end].strip()) < _CHECK_ALONE and i:  # "Is this the right understanding?" alone
            start = spans[i - 1][0]
        if not _MEASURED.search(low[start:end]):
            out.append(text[start:end].strip())
    return list(dict.fromkeys(out))


#: the classifier's intents that the words must ask for to lead (money, in so many words); the asks a frame of its
#: own answers from the model and the cards
_MONEY = frozenset({"cost", "price", "rent_vs_buy"})
_WORDED = {"cost": _MONEY, "price": _MONEY}
_SIZED = ("time", "min_count", "fits", "speed", "capacity")


def unworded_lead(intent: str, text: str, p: ParsedQuestion) -> str:
    """The classifier's cost or price where the words ask for no money but for a figure a frame computes: that
    frame. "在8卡A800的机器上，预训练阶段总共花费了多长的时间" asks how long (a price sheet answers nothing asked);
    "how many H100 GPUs do you need … 5 months" asks for a count, not for the bill of the months."""
    said = cued(text, p)
    if intent not in _WORDED or set(said) & _WORDED[intent]:
        return _first_sized(intent, said)
    framed = [ASK_INTENT[a] for a in said if a in _SIZED]
    return framed[0] if framed else intent


def _first_sized(intent: str, asked: list[str]) -> str:
    """The classifier's pick put back in the order asked (`asked`: the cued asks), where the words ask for it after a
    figure a frame computes: "Will it fit and how long for 50k samples?" leads with the fit, "多久能训完？显存够吗？"
    with the time, "how many servers, and the yearly electricity bill?" with the count (the later asks stay parts)."""
    order = list(dict.fromkeys(_ONE_ANSWER.get(a, a) for a in asked))
    ask = _ASK_OF.get(intent, "")
    said = _ONE_ANSWER.get(ask, ask)
    first = next((a for a in asked if a in _SIZED), None)
    figure = said in _SIZED or said in _FIGURED  # a choice, a comparison or a why keeps its own lead
    if first and figure and said in order and order.index(_ONE_ANSWER.get(first, first)) < order.index(said):
        return ASK_INTENT[first]
    return intent


#: asks one answer covers whichever leads (a fit states the count it needs, a count states the fit)
_ONE_ANSWER = {"min_count": "fits"}
#: asks besides the sized ones whose answer is a figure of the same job (a bill, a price, the power)
_FIGURED = frozenset({"cost", "price", "power"})
_ASK_OF = {intent: ask for ask, intent in ASK_INTENT.items()}


#: a how-to asked as a question of its own ("Is there any way to reshard the 8 pths into 4 pths?", "模型怎么下载到本地？")
_HOW_TO = C(CUES["config"])
#: a sentence that is a question: its mark, a question particle at its end, or a question word leading it
_QUESTION = re.compile(
    r"[?？]\s*$|(?:吗|呢|么|嘛)\s*[。.]?\s*$|^\s*(?:\d+[.)、．]\s*|[-*•]\s*)?"
    r"(?:how|is there|are there|can|could|should|does|do|is|what|which|why|如何|怎么|怎样|是否|能否|请问)",
    re.IGNORECASE,
)
#: an item of a numbered list of questions ("1. How to solve …", "2、为什么 …"): each is an ask of its own
_NUMBERED = re.compile(r"^\s*\d+\s*[.)、．]\s*\S")
#: a numbered item that asks, in so many words (a second question beside a diagnosed error is its own part)
_ASKING = C(r"\bwhy\b|\bhow\b|\bwhat\b|\bwhich\b|为什么|为何|什么|多大|多少|几|怎么|如何|哪|是否|能否")


#: the words of a figure asked (memory, speed, money, a count of cards, a memory lever): a sentence holding one asks
#: for a figure
_FIGURE_WORDS = C(
    r"显存|内存|\bv?ram\b|\bmemory\b|速度|吞吐|\bspeed\b|throughput|tokens?/s|费用|成本|\bcosts?\b|价格|\bprice\b|"
    r"多少张|几张|多少卡|how many (?:gpus?|cards?)|gpu configurations?|"
    # the memory levers (quantised weights, offload to the host): the fit's own lines speak to them ("int4", "内存里")
    r"量化|quantiz\w*|\b[48]-?bit\b|\bint[48]\b|offload\w*|卸载"
)


#: an English sentence's end inside a clause ("… 192GB GPU mem. Is there any way to reshard …")
_EN_END = re.compile(r"(?<!\d)\.\s+(?=[A-Z])")  # "1. How …": a list number is no sentence end


def _sentences(text: str, at: int, line: str, known: set[str]) -> list[tuple[int, int]]:
    """The sentences of a line at `at` of `text`: its clauses, an English clause cut at each ". " before a capital
    (a clause `knowledge_clauses` found stays whole)."""
    out = []
    for m in _CLAUSE.finditer(line):
        start, end = at + m.start(), at + m.end()
        inner = [] if text[start:end].strip() in known else _EN_END.finditer(text[start:end])
        cuts = [start] + [start + c.end() for c in inner] + [end]
        out += [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]
    return out


def worded_clauses(text: str) -> list[str]:
    """The parts of the message asked in words, in the order asked: what `knowledge_clauses` finds (how a thing
    works, what sets it), a how-to asked as a question of its own, and a numbered item that asks. Each is answered
    by a note or said as not answered (`compose/support.knowledge_part`); a pasted log's lines ask nothing, and a
    sentence whose words cue an ask a calculator answers (fits, a count, a time…) is that frame's part."""
    known = set(knowledge_clauses(text))
    low = blank_logs(text.lower())
    out = belief_clauses(text)  # a belief to check is a part whatever its words (figures, quantization)
    for line in re.finditer(r"[^\n]+", low):
        numbered = bool(_NUMBERED.match(line.group(0)))
        for start, end in _sentences(text, line.start(), line.group(0), known):
            clause, said = low[start:end], text[start:end].strip()
            if said in known:
                out.append(said)
                continue
            question = bool(_QUESTION.search(clause))
            how_to = question and _HOW_TO.search(clause)
            item = numbered and (question or _ASKING.search(clause))  # "2. …需要多大数据量": asked without a mark
            # "8*80G够用吗", "微调占用的内存是多少": a figure the frames compute (or the asks gate names), not words
            figured = _FIGURE_WORDS.search(clause) or any(_CUES[a].search(clause) for a in ANSWERED_BY)
            if (how_to or item) and not figured and not _MEASURED.search(clause):
                out.append(said)
            numbered = False  # only the item's own first sentence is its question
    return list(dict.fromkeys(out))
