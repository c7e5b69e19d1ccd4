"""What a hybrid model's layout does to its memory, stated as assumptions (fit_inference, model_memory): routed
experts kept in their published format, windowed layers whose KV cache stops at the window, linear-attention
layers holding a fixed state instead of a KV cache. Nothing is said for a model whose every layer is alike."""

from __future__ import annotations

from tools.catalog.architecture import linear_state_elements, published_expert_bytes
from tools.catalog.model_spec import ModelSpec
from tools.schemas.common import Assumption, assume
from tools.units import MXFP4_BYTES, plain


def expert_format_note(model: ModelSpec, precision: str, lead: str) -> str | None:
    """The precision note of a model whose routed experts keep their published format at this precision."""
    if published_expert_bytes(model, precision) is None:
        return None
    bits = plain(MXFP4_BYTES * 8)
    return f"{lead}; the routed experts stay in {model.expert_precision} as published ({bits} bits per weight)"


def layout_assumptions(model: ModelSpec, kv_bytes: float) -> list[Assumption]:
    """What a hybrid attention does to the KV cache, stated: windowed layers stop at their window, linear-attention
    layers hold a fixed state instead (none for a model whose every layer attends to the whole context)."""
    out: list[Assumption] = []
    if model.n_window_layers:
        out.append(
            assume(
                "kv_windowed_layers",
                value=model.n_window_layers,
                note=f"{model.window_kind or 'sliding'}-window attention layers of {model.n_layers}: their KV cache "
                f"holds at most {model.attention_window:,} tokens",
            )
        )
    if model.n_linear_layers:
        state_mb = plain(round(linear_state_elements(model) * model.n_linear_layers * kv_bytes / 1e6, 1))
        out.append(
            assume(
                "kv_linear_layers",
                value=model.n_linear_layers,
                note=f"linear-attention layers of {model.n_layers}: no KV cache, a fixed state of {state_mb} MB "
                "per sequence",
            )
        )
    return out
