// Interface text in Chinese and English; the answer itself comes in the question's language.
const DONE_EN = { Work: "Worked", Find: "Found", Shortlist: "Shortlisted", Compar: "Compared", Cost: "Costed",
  Estimat: "Estimated", Look: "Looked", Search: "Searched", Calculat: "Calculated" };

const TEXT = {
  zh: {
    title: "GPU 选型助手", newChat: "新对话", close: "关闭", input: "输入问题", send: "发送", stop: "停止",
    placeholder: "问显存、卡数、租还是买…", hint: "Enter 发送，Shift+Enter 换行",
    welcome: "问我显存够不够、要几张卡、租还是买。每个数字都来自计算器。",
    examples: ["Qwen2.5-72B 推理要几张 H100？", "70B 全参训练，单卡 A100 够吗？", "8 张 H100 租还是买？用 3 年"],
    you: "你", advisor: "助手", thinking: "正在思考…", stopped: "已停止。", retry: "重试", copy: "复制",
    copied: "已复制", good: "有帮助", bad: "没帮助", comment: "补充说明（可选）", sendFeedback: "提交",
    thanks: "谢谢反馈！", feedbackFailed: "反馈未能提交：", done: "回答完成：", network: "网络连接中断，请重试。",
    followUps: "接着问", sources: "来源", foot: "数字来自计算器，请按实际报价复核。",
    tools: {
      fit_training: "正在计算训练显存…", fit_inference: "正在计算推理显存…", min_gpus: "正在计算最少卡数…",
      recommend_gpus: "正在筛选合适的卡…", compare_gpus: "正在对比 GPU…", rent_vs_buy: "正在算租还是买…",
      training_time: "正在估算训练时间…", inference_speed: "正在估算推理速度…", gpu_specs: "正在查规格…",
      search_knowledge: "正在查资料…", other: "正在计算…",
    },
    doneStep: (label) => label.replace(/^正在/, "已").replace(/…$/, ""),
    chart: {
      memory: "每卡显存构成（GB）与可用显存", usable: "可用", capacity: "容量", total: "合计",
      parts: { weights: "权重", gradients: "梯度", optimizer: "优化器状态", activations: "激活值", logits: "logits",
        kv_cache: "KV 缓存", cuda_context: "CUDA 上下文", comm_buffers: "通信缓冲", zero3_buffers: "ZeRO-3 缓冲" },
      rent: "租用累计", own: "自建累计", breakeven: "回本", noBreakeven: "期内买不回本", month: "月", money: "万元",
      costs: "累计成本（万元）", compare: "GPU 对比",
      metrics: { memory_gb: "显存 GB", bandwidth_gb_s: "带宽 GB/s", bf16_tflops: "BF16 TFLOPS", fp8_tflops: "FP8 TFLOPS" },
    },
  },
  en: {
    title: "GPU advisor", newChat: "New conversation", close: "Close", input: "Your question", send: "Send", stop: "Stop",
    placeholder: "Ask about memory, GPUs, rent or buy…", hint: "Enter sends, Shift+Enter adds a line",
    welcome: "Ask whether a model fits, how many GPUs it needs, rent or buy. Every figure comes from a calculator.",
    examples: ["How many H100 for Qwen2.5-72B inference?", "Llama 3 8B LoRA on one RTX 4090?", "Rent or buy 8 H100 for 3 years?"],
    you: "You", advisor: "Advisor", thinking: "Thinking…", stopped: "Stopped.", retry: "Retry", copy: "Copy",
    copied: "Copied", good: "Helpful", bad: "Not helpful", comment: "Anything to add? (optional)", sendFeedback: "Send",
    thanks: "Thanks for the feedback!", feedbackFailed: "Feedback not sent: ", done: "Answer ready: ",
    network: "The connection dropped; please retry.", followUps: "Ask next", sources: "Sources",
    foot: "Figures come from calculators; check them against real quotes.",
    tools: {
      fit_training: "Working out training memory…", fit_inference: "Working out inference memory…",
      min_gpus: "Finding the minimum GPU count…", recommend_gpus: "Shortlisting GPUs…", compare_gpus: "Comparing GPUs…",
      rent_vs_buy: "Costing rent against buy…", training_time: "Estimating training time…",
      inference_speed: "Estimating inference speed…", gpu_specs: "Looking up specs…", search_knowledge: "Searching the notes…",
      other: "Calculating…",
    },
    doneStep: (label) => label.replace(/…$/, "").replace(/^(\w+)ing\b/, (_, verb) => DONE_EN[verb] || `${verb}ed`),
    chart: {
      memory: "Memory per GPU (GB) against usable memory", usable: "usable", capacity: "capacity", total: "total",
      parts: { weights: "weights", gradients: "gradients", optimizer: "optimizer", activations: "activations",
        logits: "logits", kv_cache: "KV cache", cuda_context: "CUDA context", comm_buffers: "comm buffers",
        zero3_buffers: "ZeRO-3 buffers" },
      rent: "rent, cumulative", own: "own, cumulative", breakeven: "break-even", noBreakeven: "buying never pays back in this period", month: "month", money: "10k CNY",
      costs: "Cumulative cost (10k CNY)", compare: "GPU comparison",
      metrics: { memory_gb: "memory GB", bandwidth_gb_s: "bandwidth GB/s", bf16_tflops: "BF16 TFLOPS", fp8_tflops: "FP8 TFLOPS" },
    },
  },
};

export function pickLang(wanted) {
  if (wanted === "zh" || wanted === "en") return wanted;
  return /^zh/i.test(navigator.language || "") ? "zh" : "en";
}

export function texts(lang) {
  return TEXT[lang] || TEXT.en;
}
