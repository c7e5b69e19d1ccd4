"""A model split by whole layers over several GPUs in one process (transformers' device_map='auto', ChatGLM's
load_model_on_gpus, naive model parallel) whose memory grows on one card until it runs out while the others keep
free memory (frameworks.yaml `transformers.device_map_headroom`): the split placed the weights and sized nothing
for what grows with the input. Each card keeps the KV cache of its own layers, and the card with lm_head also
holds the prompt's logits for every position; neither moves to a card with room.

The fix, by what the arithmetic allows: one process per GPU with the whole model where one card holds it with room
to spare; else a max_memory cap per card at its even share of the weights, which leaves every card the same room;
else (the even share leaves little) a serving engine's tensor parallel, which splits every layer evenly and sizes
its KV pool at start-up."""

from __future__ import annotations

import math

from tools.diagnose.context import ENGINES, LOCAL, Candidate, Setup, gib
from tools.diagnose.facts import fact, say
from tools.diagnose.serve import kv_token_bytes, precision, weights_bytes
from tools.units import GiB

#: weights at most this share of one card run whole on each card: the rest holds their KV cache and the logits
ONE_CARD_SHARE = 0.6
#: a max_memory cap this much above a card's even share of the weights (layers are placed whole)
SHARE_MARGIN = 1.1
#: capped at its even share, a card keeps at least this share of its memory free, or the cap leaves too little
ROOM_SHARE = 0.3
#: tokens the per-token figures are said for
PER_TOKENS = 1000


def applies(s: Setup) -> bool:
    """Inference in one process over several GPUs, not a serving engine or a local runtime (which size their own
    KV): the user says one card fills while the others stay, or an OOM with the layers split by device_map."""
    i = s.inp
    if s.framework in ENGINES | LOCAL or s.workload == "train":
        return False
    return i.symptom == "uneven_growth" or (i.layer_split and s.oom and s.workload == "infer")


def split_causes(s: Setup) -> list[Candidate]:
    if not applies(s):
        return []
    f = fact("transformers", "device_map_headroom")
    if s.model is None:
        what = say("named", what="one GPU fills while the others keep free memory")
        return [Candidate("layer_split_headroom", what, f["flag"], "a cap per GPU that leaves room on the one that fills",
                          named=True, prior=0.75)]  # fmt: skip
    m, n = s.model, max(s.inp.n_gpus, 1)
    logits = m.vocab_size * f["value"]["logits_bytes"] * PER_TOKENS
    kv = kv_token_bytes(s, 1) * PER_TOKENS
    weights = weights_bytes(s)
    arith = say("split_headroom" if n > 1 else "split_headroom_cards", n=n, vocab=f"{m.vocab_size:,}",
                logits=gib(logits), kv_card=gib(kv / n), kv=gib(kv), layers=m.n_layers, weights=gib(weights),
                precision=precision(s), per=f"{PER_TOKENS:,}")  # fmt: skip
    flag, value = _fix(s, weights, n)
    if flag == "max_memory":  # the cap said with what it leaves (the figures of the fix, in the arithmetic)
        share = math.ceil(weights / n * SHARE_MARGIN / GiB)
        more = say("split_cap", cap=share, room=gib(s.capacity - share * GiB), n=n)
        arith = (arith[0] + more[0], arith[1] + more[1])
    return [Candidate("layer_split_headroom", arith, flag, value, named=True, prior=0.8)]


def _fix(s: Setup, weights: float, n: int) -> tuple[str, str | int]:
    cap = s.capacity
    if cap is None:
        return "replicas", f"one process per GPU, each with the whole model ({gib(weights)} GiB), if one card holds it with room (else max_memory per GPU)"  # fmt: skip
    if weights <= ONE_CARD_SHARE * cap:
        return (
            "replicas",
            f"one process per GPU (CUDA_VISIBLE_DEVICES=i), each with the whole model ({gib(weights)} GiB)",
        )
    share = math.ceil(weights / n * SHARE_MARGIN / GiB)
    if n > 1 and share * GiB <= (1 - ROOM_SHARE) * cap:
        caps = ", ".join(f"{i}: '{share}GiB'" for i in range(n))
        return "max_memory", "{" + caps + "}"
    return "vllm serve --tensor-parallel-size", n
