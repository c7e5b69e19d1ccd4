"""A training run's counts as the asker gives them, when they ask about a step or epoch count they saw ("数据集有
29450条，batch_size=1，为什么训练一个epoch使用约1800steps?", "per_device_train_batch_size=1, gradient_accumulation_steps=4
… 7 for training … the training log gives me a total training step of 2007"): the samples, the per-GPU batch, the
accumulation, the training GPUs and epochs, and the count seen, so the arithmetic can be redone on their figures
(`diagnose`'s `steps`, tools/speed/steps.py). No samples or no count seen: nothing to redo (None)."""

from __future__ import annotations

from typing import Any

from bot.offline.understand.patterns import C

_N = r"(\d[\d,]*(?:\.\d+)?)"
#: the dataset's size: a count of samples, rows, examples, images, pairs ("29450条", "8,031 samples", "20k条问答对")
_SAMPLES = C(
    _N
    + r"\s*([kw万])?\s*(?:条|个样本|个?\s*samples?\b|examples?\b|(?:training )?images?\b|张图片?|rows?\b|问答对|对数据)"
)
#: the per-GPU batch ("per_device_train_batch_size=1", "batch_size=1", "micro batch 4", "batch size of 8")
_MICRO = C(
    r"(?:per_device_train_batch_size|train_micro_batch_size_per_gpu|micro[_ ]?batch(?:[_ ]size)?|batch[_ ]?size|\bbs)"
    r"\s*(?:of|为|是|[=:：])?\s*`?(\d+)\b"
)
#: the accumulation ("gradient_accumulation_steps=4", "gradient accumulation = 6", "梯度累积 8")
_ACCUM = C(
    r"(?:gradient_accumulation_steps|gradient[_ ]accumulation(?:[_ ]steps)?|grad(?:ient)?[_ ]accum\w*|梯度累(?:积|加)(?:步数)?)"
    r"\s*(?:of|为|是|[=:：])?\s*`?(\d+)\b"
)
#: the GPUs that train, said apart from those that do not ("7 for training", "其中 7 张用于训练", "8 张卡")
_TRAINING_GPUS = C(r"(\d+)\s*(?:张|块)?\s*(?:卡|gpus?)?\s*(?:for|用于|用来|做)\s*(?:training|训练)")
_GPUS = C(
    r"(\d+)\s*(?:张|块)\s*(?:卡|gpu|显卡)|(\d+)\s*(?:x\s*)?(?:[\w-]+ )?gpus?\b|(?:nproc_per_node|num_gpus)\s*[=:]?\s*(\d+)"
)
#: an epoch count ("200 epoch", "num_train_epochs=1", "3 个 epoch", "训 3 轮")
_EPOCHS = C(r"(?:num_train_epochs\s*[=:]\s*`?(\d+(?:\.\d+)?))|(\d+(?:\.\d+)?)\s*(?:个)?\s*(?:epochs?\b|轮)")
#: a step count seen ("约1800steps", "a total training step of 2007", "只有 468 步"), not a setting's key ("max_steps 3000")
_STEPS = C(
    r"(?<![\w-])"
    + _N
    + r"\s*(?:个)?\s*(?:steps?\b|步(?!长))(?!\s*(?:per\b|/|每|an? (?:minute|second|hour)))|(?<![_\w])(?:total (?:training )?steps?|steps?|步数)"
    r"\s*(?:of|is|was|为|是|=|:|：)\s*" + _N
)
_SCALE = {"k": 1_000, "w": 10_000, "万": 10_000}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def run_counts(text: str) -> dict[str, Any] | None:
    """The run's counts and the count seen, or None when the message gives no samples or no count seen."""
    low = text.lower()
    samples = _SAMPLES.search(low)
    epochs = [float(a or b) for a, b in _EPOCHS.findall(low)]
    steps = [_number(a or b) for a, b in _STEPS.findall(low)]
    if not samples or not (steps or len(epochs) >= 2):
        return None
    out: dict[str, Any] = {"samples": int(_number(samples.group(1)) * _SCALE.get(samples.group(2) or "", 1))}
    if m := _MICRO.search(low):
        out["micro_batch"] = int(m.group(1))
    if m := _ACCUM.search(low):
        out["grad_accum"] = int(m.group(1))
    if m := _TRAINING_GPUS.search(low):
        out["n_gpus"] = int(m.group(1))
    elif m := _GPUS.search(low):
        out["n_gpus"] = int(next(g for g in m.groups() if g))
    if steps:  # the last step count said is the one seen (an earlier one is the asker's expectation)
        out["stated_steps"] = steps[-1]
        if epochs:
            out["epochs"] = epochs[0]
    else:  # two epoch counts: the one set, then the one the run shows ("200 epoch … will last 1200 epochs")
        out["epochs"], out["stated_epochs"] = epochs[0], epochs[-1]
    return out
