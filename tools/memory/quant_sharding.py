"""Whether ZeRO-3 shards a bitsandbytes 4-bit base: QLoRA under DeepSpeed ZeRO-3 and FSDP.

bitsandbytes packs 4-bit weights into `Params4bit` tensors of its storage dtype, uint8 by default. DeepSpeed's
ZeRO-3 partitions floating-point parameters only: with the default uint8 storage every rank keeps the whole
quantised base (PEFT's DeepSpeed guide, before 0.10: "DeepSpeed-Zero3 and bitsandbytes are currently not
compatible"). Setting `bnb_4bit_quant_storage` to a float dtype (bf16, as PEFT's QLoRA + ZeRO-3 recipe does,
PEFT ≥ 0.10 with bitsandbytes ≥ 0.43) makes the packed weights ordinary float tensors that ZeRO-3 partitions;
FSDP-QLoRA needs that float storage to wrap the model at all, and then shards it (PEFT's FSDP guide, Answer.AI's
FSDP-QLoRA). The bytes per parameter do not change: the same packed NF4 bits sit in a wider container.

The rule and its sources are in tools/data/frameworks.yaml (`bitsandbytes.quant_storage_sharding`).
"""

from __future__ import annotations

from tools.schemas.common import Assumption, assume

FLOAT_STORAGES = frozenset({"bf16", "fp16", "fp32"})
#: torchtune keeps its 4-bit base in its own NF4 tensor subclass (torchao), which FSDP2 shards like any parameter
#: (torchtune's recipes/configs/llama3_1/405B_qlora.yaml: QLoRA of 405B over 8 GPUs, README: 44.8 GB per GPU)
TORCHTUNE_NF4 = "nf4"
SHARDED_STORAGES = FLOAT_STORAGES | {TORCHTUNE_NF4}


def quant_storage(asked: str, framework: str = "auto") -> str:
    """The storage dtype of the packed 4-bit weights: as asked, else the stack's (torchtune: its NF4 tensors;
    bitsandbytes: uint8). FSDP-QLoRA cannot wrap uint8 parameters: an FSDP run is a run with a float storage."""
    if asked != "auto":
        return asked
    return TORCHTUNE_NF4 if framework == "torchtune" else "uint8"


def base_shardable(method: str, storage: str) -> bool:
    """Whether ZeRO-3 / FSDP full sharding partitions the frozen base across data-parallel ranks.

    Only a bitsandbytes 4-bit base (QLoRA) in uint8 storage stays whole on every rank; a 16-bit base always shards.
    """
    return method != "qlora" or storage in SHARDED_STORAGES


def assumption(storage: str, defaulted: bool) -> Assumption:
    """The stated assumption of a QLoRA run under ZeRO-3: the storage and what it means for sharding."""
    if storage == TORCHTUNE_NF4:
        words = "torchtune's NF4 tensors: FSDP2 shards the quantised base like any other parameter"
    elif storage in FLOAT_STORAGES:
        words = f"4-bit weights packed in {storage} (bnb_4bit_quant_storage; FSDP-QLoRA needs it): ZeRO-3 and FSDP shard the quantised base"
    else:
        words = (
            "bitsandbytes' default uint8 storage: DeepSpeed ZeRO-3 does not partition the 4-bit base, every GPU "
            "holds all of it (bnb_4bit_quant_storage=bfloat16, or FSDP, shards it)"
        )
    return assume("quant_storage", storage, "", defaulted, words)
