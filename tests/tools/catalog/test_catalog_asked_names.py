"""Models real askers name that the catalog lacked (issue 25 part 3, issue 23 class missed_model): each is a record now,
its parameter count worked out from the config agrees with the published figure, and the spellings typed in the
development rows of tests/corpus/real resolve to it (the row ids beside each spelling)."""

from __future__ import annotations

import pytest

from tests.corpus import real
from tools.catalog.architecture import param_count
from tools.catalog.lookup import family_anchor, get_model
from tools.catalog.stand_in import read_name, resolve, stand_in

#: id -> (published total, published activated or None, where it is published); a figure the publisher does not
#: print is the one worked out from config.json, as the Qwen1.5-7B/72B entries already do (the record's note says so)
PUBLISHED = {
    "qwen2-57b-a14b": (57, 14, "model card table: '#Params 57B', '#Activated Params 14B'"),
    "llama-33b": (32.5, None, "LLaMA paper, Table 2: 32.5B"),
    "bloom-7b1": (7.069, None, "a BLOOM model table: 7,069 M"),
    "qwen2.5-vl-72b": (73.19, None, "worked out from the config, vision tower included (marketed 72B)"),
    "qwen2-72b": (72.7, None, "worked out from config.json (marketed 72B)"),
    "qwen2-7b": (7.62, None, "worked out from config.json (marketed 7B)"),
    "qwen-72b": (72.3, None, "worked out from config.json (marketed 72B)"),
    "qwen1.5-0.5b": (0.46, None, "worked out from config.json, tied embeddings (marketed 0.5B)"),
    "qwen1.5-1.8b": (1.84, None, "worked out from config.json (marketed 1.8B)"),
    "qwen1.5-4b": (3.95, None, "worked out from config.json (marketed 4B)"),
    "qwen1.5-14b": (14.17, None, "worked out from config.json (marketed 14B)"),
    "qwen1.5-32b": (32.51, None, "worked out from config.json (marketed 32B)"),
    "qwen1.5-110b": (111.2, None, "worked out from config.json (marketed 110B)"),
    "baichuan-7b": (7.0, None, "worked out from config.json (marketed 7B)"),
    "chatglm2-6b": (6.24, None, "worked out from config.json (marketed 6B)"),
}
#: the size class each is marketed as: the worked-out count is within 15% of it (a shape read wrong would not be)
MARKETED = {"qwen2-72b": 72, "qwen2-7b": 7, "qwen-72b": 72, "qwen1.5-0.5b": 0.5, "qwen1.5-1.8b": 1.8, "qwen1.5-4b": 4,
            "qwen1.5-14b": 14, "qwen1.5-32b": 32, "qwen1.5-110b": 110, "baichuan-7b": 7, "chatglm2-6b": 6,
            "qwen2.5-vl-72b": 72}  # fmt: skip


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_the_count_from_the_config_is_the_published_figure_within_2_percent(model_id):
    total, active, _where = PUBLISHED[model_id]
    m = get_model(model_id)
    pc = param_count(m)
    assert pc.total / 1e9 == pytest.approx(total, rel=0.02)
    assert m.params_b == pytest.approx(total, rel=0.02)
    if active is not None:
        assert pc.active / 1e9 == pytest.approx(active, rel=0.02) and m.active_params_b == active
    if model_id in MARKETED:
        assert pc.total / 1e9 == pytest.approx(MARKETED[model_id], rel=0.15)


#: spelling typed -> catalog id, from development rows ("" for a spelling of ours: a family's other separators)
SPELLINGS = [
    ("qwen2-72b-instruct", "qwen2-72b", "gh-qwen3-603"),
    ("Qwen2-72B-Instruct", "qwen2-72b", "gh-lmdeploy-2049"),
    ("qwen2 72B", "qwen2-72b", "gh-qwen3-888"),
    ("qwen2-72B", "qwen2-72b", "gh-llamafactory-4141"),
    ("Qwen2-72B", "qwen2-72b", "gh-axolotl-1690"),
    ("qwen72b", "qwen-72b", "gh-llamafactory-1766"),
    ("qwen_72B", "qwen-72b", "gh-chatchat-3613"),
    ("qwen 72b", "qwen-72b", "gh-qwen-248"),
    ("Qwen-72B-Chat", "qwen-72b", "gh-llamafactory-3023"),
    ("qwen-72b-chat", "qwen-72b", "gh-qwen-1224"),
    ("qwen-72b", "qwen-72b", "gh-lmdeploy-905"),
    ("Qwen2-7B-Instruct", "qwen2-7b", "gh-llamafactory-4870"),
    ("qwen2-7b", "qwen2-7b", "gh-lmdeploy-2534"),
    ("Qwen2-57B-A14B-Instruct", "qwen2-57b-a14b", "gh-qwen3-552"),
    ("Baichuan-7B", "baichuan-7b", "gh-baichuan7b-138"),
    ("baichuan-7b", "baichuan-7b", "gh-llamafactory-94"),
    ("chatglm2-6B", "chatglm2-6b", "gh-qwen-175"),
    ("LLaMa 33B", "llama-33b", "gh-vllm-414"),
    ("Llama-70B-chat-hf", "llama-2-70b", "gh-metallama-574"),
    ("Qwen1.5-14B-Chat", "qwen1.5-14b", ""),
    ("Qwen1.5-110B-Chat", "qwen1.5-110b", ""),
    ("qwen1.5_32b", "qwen1.5-32b", ""),
    ("BLOOM-7.1B", "bloom-7b1", ""),
    ("bloomz-7b1", "bloom-7b1", ""),
    ("Qwen2.5-VL-72B-Instruct", "qwen2.5-vl-72b", "gh-qwen3vl-958"),
    ("qwen2.5-vl-72b", "qwen2.5-vl-72b", "gh-vllm-16570"),
    ("bloom 7b", "bloom-7b1", "gh-belle-374"),
]


def test_the_rows_quoted_here_are_development_rows():
    assert not [row_id for _, _, row_id in SPELLINGS if row_id and real.held_out(row_id)]


@pytest.mark.parametrize(("typed", "model_id", "row_id"), SPELLINGS)
def test_the_spellings_askers_type_resolve_to_the_model(typed, model_id, row_id):
    parts = read_name(typed)
    try:
        hit = get_model(typed)
    except Exception:  # a spelling only the name reader resolves ("qwen1.5_32b")
        hit = None
    if hit is None or hit.generic:
        hit = resolve(parts)
    assert hit is not None and hit.id == model_id, (typed, row_id)


def test_a_quantised_moe_name_and_a_glued_size_stand_on_the_new_records():
    assert stand_in(read_name("Qwen2-57B-A14B-Instruct-GPTQ-Int4")).id == "qwen2-57b-a14b"  # gh-qwen3-552
    assert resolve(read_name("72Bqwen")).id == "qwen-72b"  # gh-qwen-708
    # gh-ms-swift-495 "Qwen1.8B": the 1st-generation Qwen-1.8B's shape is Qwen1.5-1.8B's (24 x 2048, 5504, 151936)
    assert stand_in(read_name("Qwen1.8B")).id == "qwen1.5-1.8b"


def test_the_first_generation_and_the_shapes_told_apart():
    """Qwen-72B and Qwen1.5-72B keep all 64 KV heads; Qwen2-72B has 8: a KV cache eight times smaller per token."""
    assert get_model("Qwen-72B-Chat").n_kv_heads == 64 and get_model("qwen2-72b-instruct").n_kv_heads == 8
    assert get_model("Baichuan-7B").vocab_size == 64000 and get_model("baichuan2-7b").vocab_size == 125696
    assert get_model("chatglm2-6b").max_context == 32768 and get_model("chatglm3-6b").max_context == 8192


@pytest.mark.parametrize(("size", "anchor"), [(30.0, "qwen2.5-32b"), (32.0, "qwen2.5-32b"), (33.0, "qwen3-32b")])
def test_a_bare_size_keeps_a_modern_shape_beside_the_first_llamas_33b(size, anchor):
    """LLaMA-33B (60 x 6656) is no anchor for a bare "32B": its worked-out 32.53B is farther than Qwen2.5-32B's 32.5B."""
    assert family_anchor(size).id == anchor
