"""Training under ZeRO-3 that runs slow, or shows its GPUs busy at low power: ZeRO-3 gathers every layer's 16-bit
weights in each forward and each backward (frameworks.yaml `deepspeed.zero3_gathers`), traffic ZeRO-2 does not
have because it keeps the whole 16-bit weights on every GPU. Where ZeRO-2 fits the card (fit_training on the
asker's own setup) the gathers buy nothing and ZeRO-2 is the fix; where it does not fit, ZeRO-3 is what makes the
run possible and this is not proposed. Without ZeRO-3, GPUs busy at low power are waiting on the links (or on
memory), not computing."""

from __future__ import annotations

from tools.diagnose.context import Candidate, Setup, gib
from tools.diagnose.facts import Said, fact, say, words
from tools.diagnose.train import fit
from tools.memory.train_breakdown import lora_params
from tools.schemas.memory import FitTrainingInput

#: troubles that say a training run is slow (without a figure), under which ZeRO-3's gathers are a cause
SLOW = frozenset({"busy_low_power", "slow", "multi_gpu_slower"})


def zero3_causes(s: Setup) -> list[Candidate]:
    i = s.inp
    if s.workload != "train" or i.symptom not in SLOW:
        return []
    if s.oom and i.symptom != "busy_low_power":  # an OOM beside "slow": memory is the question, ZeRO-2 needs more
        return []
    if i.zero_stage != 3:
        if i.symptom != "busy_low_power" or i.n_gpus <= 1:
            return []
        what = say("named", what="GPUs busy at low power")
        return [Candidate("communication_bound", what, "gradient_accumulation_steps", 4, named=True, prior=0.6)]
    if s.model is None or s.params is None:
        what = say("named", what="GPUs busy at low power" if i.symptom == "busy_low_power" else "slow")
        return [Candidate("communication_bound", what, "zero_optimization.stage", 2, named=True, prior=0.6,
                          extra={"lower": True, "words": "zero3_gathers"})]  # fmt: skip
    return _gathers(s)


def _gathers(s: Setup) -> list[Candidate]:
    i = s.inp
    per = fact("deepspeed", "zero3_gathers")["value"]["gathers_per_step"]
    weights = 2 * s.params.total  # the 16-bit weights every gather assembles
    adapter = i.method in ("lora", "qlora")
    z2 = 2 * _trainable(s) * 2 if adapter else 2 * weights  # ZeRO-2: gradients reduce-scattered, weights gathered
    z3 = per * weights + (2 * _trainable(s) if adapter else weights)  # + the gradients' reduce-scatter
    tail, fixable = _fits_tail(s, weights)
    if not fixable:
        return []
    w = words()["arithmetic"]
    what = w["zero3_z2_adapter"] if adapter else w["zero3_z2_full"]
    fields = {"weights": gib(weights), "z3": gib(z3), "z2": gib(z2)}
    arith = Said((w["zero3_gathers"]["en"].format(**fields, what=what["en"], fits=tail[0]),
                  w["zero3_gathers"]["zh"].format(**fields, what=what["zh"], fits=tail[1])))  # fmt: skip
    arith.template = "zero3_gathers"
    after = (lambda: _after(s)) if s.gpu is not None else None
    return [Candidate("communication_bound", arith, "zero_optimization.stage", 2, named=True, prior=0.8,
                      after=after, extra={"lower": True, "words": "zero3_gathers"})]  # fmt: skip


def _trainable(s: Setup) -> float:
    """Trainable parameters: fit_training's count on the asker's card; with no card, the adapter at the
    calculator's default rank and targets (the count does not depend on the card)."""
    r = fit(s) if s.gpu is not None else None
    if r is not None:
        return r["trainable_params_b"] * 1e9
    if s.inp.method in ("lora", "qlora"):
        d = FitTrainingInput.model_fields
        return float(lora_params(s.model, d["lora_rank"].default, d["lora_targets"].default))
    return float(s.params.total)


def _fits_tail(s: Setup, weights: float) -> tuple[tuple[str, str], bool]:
    """What ZeRO-2 needs on the card, and whether it fits (unknown card: said as the condition)."""
    if s.gpu is None:
        return say("zero3_if", weights=gib(weights)), True
    r = fit(s, zero_stage=2)
    if r is None or not r["fits"]:
        return ("", ""), False
    return say("zero3_fits", need=f"{r['per_gpu_gb']:g}", usable=f"{r['usable_gb']:g}"), True


def _after(s: Setup) -> dict:
    r = fit(s, zero_stage=2)
    return {"tool": "fit_training", "change": "ZeRO-2", "per_gpu_gb": r["per_gpu_gb"], "usable_gb": r["usable_gb"],
            "fits": r["fits"], "verdict": r["verdict"]}  # fmt: skip
