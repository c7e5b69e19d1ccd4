"""Each yes/no asked of a setup gets its verdict line, in the order asked, under the headline: "能否在1张4090 24GB上
完成呢，如果不行2张3090 24GB是否可以" is two questions, and the answer says "不能" / "可以" to each with the figure
that decides it (memory needed per card against the card's usable memory, and the fewest cards that hold it).

The sentences come from the reader (`understand/request/verdicts.clauses`: a sentence's form, whatever its topic);
the setup a sentence names (its card and count) is read from its own words; the job is the one the answer already
sized (the first fit of the answer's own part: model, method, precision, lengths), run again on that setup where no
call of the answer has it. Every figure is the fit's output. A question the answer's headline already answers alone
(one setup, the one sized) gets no second line."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, method_label
from bot.offline.understand.parse import parse
from bot.offline.understand.request import setups
from bot.offline.understand.request.forms import SERVING_RUN, TRAINING_RUN, blank_logs
from bot.offline.understand.request.verdicts import SUFFICE, clauses, yes_no
from tools.errors import AdvisorError

FIT_TOOLS = ("fit_training", "fit_inference")
#: a fit's inputs that make it another job, not another setup of the same job
JOB_KEYS = ("model", "method", "precision", "quantization")


def _setups(words: str) -> list[tuple[str, int | None]]:
    """The cards a question names, each with its count ("2张3090 24GB" -> [(the 3090, 2)]; "两张A100/A800 80G" -> both
    cards, two each)."""
    p = parse(words)
    return setups.named(p) or [(gpu, p.n_gpus) for gpu in dict.fromkeys(p.gpus)]  # "8张4090 或者 6张v100": each its own


def _jobs(words: str, fits: list[Any], p) -> list[Any]:
    """The fits a question asks about: the answer's first training fit for a question that names training, its first
    serving fit for one that names serving (made from the model the answer sized when it sized only the other job),
    else the first fit of each job the answer sized ("微调与推理 … 两张A100 80G足够吗": both)."""
    low = words.lower()
    want = "fit_training" if TRAINING_RUN.search(low) else "fit_inference" if SERVING_RUN.search(low) else None
    if want is None:
        return list({c.tool: c for c in reversed(fits)}.values())[::-1]
    found = next((c for c in fits if c.tool == want), None)
    if found is not None or not fits[0].input.get("model"):
        return [found] if found is not None else []
    job = {"model": fits[0].input["model"]}
    if want == "fit_training" and p.method:
        job["method"] = p.method
    return [_Job(want, job)]


class _Job:
    """A job the answer did not size itself: the tool and its input, run on each setup asked."""

    def __init__(self, tool: str, input: dict[str, Any]) -> None:
        self.tool, self.input = tool, input


def _fit_on(job: Any, gpu: str, n: int | None, run: ToolRun) -> Any | None:
    """The job's fit on `gpu` × `n`: a call the answer made, else the same job run on that setup."""
    count = n or (job.input.get("n_gpus") if job.input.get("gpu") == gpu else 1) or 1
    same = {k: job.input.get(k) for k in JOB_KEYS}
    for c in run.calls:
        if c.tool != job.tool or any(c.input.get(k) != v for k, v in same.items()):
            continue
        if c.input.get("gpu") == gpu and c.output.get("n_gpus") == count and "fits" in c.output:
            return c
    try:
        run(job.tool, {**job.input, "gpu": gpu, "n_gpus": count})
    except AdvisorError:
        return None
    return run.calls[-1] if run.calls and run.calls[-1].tool == job.tool else None


def _line(call: Any, lang: str) -> str:
    o = call.output
    what = o.get("model") or ""
    if call.tool == "fit_training" and o.get("method"):  # "全参训练 Llama-3-70B", "LoRA fine-tuning Llama-3-70B"
        what = say("asked_train", lang, method=method_label(o["method"], lang).strip(), model=what)
    elif call.tool == "fit_inference":
        what = say("asked_serve", lang, model=what)
    values = {
        "job": what, "n": o["n_gpus"], "gpu": o["gpu"], "need": gb(o["per_gpu_gb"]),
        "usable": gb(o["usable_gb"]),
    }  # fmt: skip
    if o.get("fits"):
        return say("asked_yes", lang, **values)
    text = say("asked_no", lang, **values)
    if o.get("min_gpus"):
        text += say("asked_no_min", lang, min=o["min_gpus"], gpu=o["gpu"])
    return text + ("。" if lang == "zh" else ".")


#: the frames whose headline is a fit's own verdict ("放得下。" / "It fits.")
FIT_FRAMES = frozenset({"fit", "min_gpus", "train_memory", "zero_states", "weights", "kv_cache"})


def add(request, run: ToolRun, out: Out, at: int, calls_at: int, intent: str = "") -> bool:
    """The verdict lines of the yes/no questions asked of setups, in the order asked, put under the headline.
    True when lines were added."""
    p = request.parsed
    text = p.text or ""
    surveyed = getattr(run, "surveyed", set())
    fits = [
        c for c in run.calls[calls_at:] if c.tool in FIT_TOOLS and c.id not in surveyed and "fits" in (c.output or {})
    ]
    if not fits or not text:
        return False
    lines: list[tuple[Any, str]] = []  # (the fit, its verdict), every setup asked
    said: list[tuple[str, list[str]]] = []  # (the question, its verdicts), in the order asked
    for asked in clauses(blank_logs(text.lower())):
        words = text[asked.start : asked.start + len(asked.text)]
        if not (asked.kind == "yes_no" or yes_no(asked.text)) or not SUFFICE.search(asked.text):
            continue
        verdicts = []
        for job in _jobs(words, fits, p):
            for gpu, n in _setups(words):
                call = _fit_on(job, gpu, n, run)
                if call is not None and call.id not in {c.id for c, _ in lines}:
                    lines.append((call, _line(call, out.lang)))
                    verdicts.append(lines[-1][1])
        if verdicts:
            said.append((words.strip(), verdicts))
    sized = (fits[0].input.get("gpu"), fits[0].output.get("n_gpus"))
    alone = len(lines) == 1 and (lines[0][0].input.get("gpu"), lines[0][0].output.get("n_gpus")) == sized
    if not lines or (alone and intent in FIT_FRAMES):
        return False  # one question, of the setup the headline sized: the headline is its verdict
    rows = [say("asked_question", out.lang, q=q, verdict=v[0]) if len(v) == 1 else
            "\n".join([say("asked_question", out.lang, q=q, verdict="")] + [f"  - {x}" for x in v]) for q, v in said]  # fmt: skip
    out.blocks.insert(_under_headline(out, at), say("asked_head", out.lang) + "\n" + "\n".join(rows))
    return True


def _under_headline(out: Out, at: int) -> int:
    """Where the verdict lines go: after the answer's first paragraph, past a part's header ("**推理部署：**") and
    a line that says which model stands in for the one named."""
    i = at
    while i < len(out.blocks) and (_HEADER.fullmatch(out.blocks[i].strip()) or _STAND_IN.search(out.blocks[i])):
        i += 1
    return min(i + 1, len(out.blocks))


_HEADER = re.compile(r"\*\*[^*\n]{1,40}[：:]\*\*")
_STAND_IN = re.compile(r"不在目录里|is not in the catalog|\(Assuming|（按")
