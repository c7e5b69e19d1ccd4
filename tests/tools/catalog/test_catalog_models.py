"""The model catalog (tools/data/models.yaml): it loads, names resolve, figures are sourced, and the
parameter count worked out from each config agrees with the published size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog.architecture import param_count
from tools.catalog.lookup import get_model, models, normalize, parse_param_count
from tools.catalog.records import MODEL_FIGURES
from tools.errors import UnknownModel

TOLERANCE = 0.03
EXCEPTIONS = {
    row["model"]: row
    for row in yaml.safe_load((Path(__file__).parents[2] / "golden" / "param_count_exceptions.yaml").read_text("utf-8"))
}
MODELS = models()
IDS = [m.id for m in MODELS]


def test_catalog_is_large_enough_and_has_the_families_asked_for():
    assert len(MODELS) >= 30
    wanted = set(
        "llama-2-7b llama-2-13b llama-2-70b llama-3-8b llama-3-70b llama-3.1-8b llama-3.1-70b llama-3.1-405b "
        "qwen2.5-0.5b qwen2.5-1.5b qwen2.5-3b qwen2.5-7b qwen2.5-14b qwen2.5-32b qwen2.5-72b qwen3-8b qwen3-14b "
        "qwen3-32b qwen3-30b-a3b qwen3-235b-a22b deepseek-v3 deepseek-r1 deepseek-r1-distill-qwen-7b "
        "deepseek-r1-distill-qwen-14b deepseek-r1-distill-qwen-32b deepseek-r1-distill-llama-8b "
        "deepseek-r1-distill-llama-70b mixtral-8x7b mixtral-8x22b glm-4-9b chatglm3-6b chatglm-6b yi-34b yi-6b "
        "baichuan2-7b baichuan2-13b internlm2.5-7b internlm2.5-20b deepseek-v2-lite".split()
    )
    assert wanted <= set(IDS)


def test_ids_names_and_aliases_are_unique_after_normalising():
    seen: dict[str, str] = {}
    for m in MODELS:
        for key in {normalize(m.id), normalize(m.name), *(normalize(a) for a in m.aliases)}:
            assert key, m.id
            assert seen.setdefault(key, m.id) == m.id, f"{key!r} used by {seen[key]} and {m.id}"


def test_no_alias_is_a_bare_size():
    """'70B' must stay generic: an alias that is only a size would capture every such question."""
    bare = re.compile(r"^\d+(?:\.\d+)?(?:[bmkt]|亿|万亿|千亿|百亿)(?:参数)?$")
    for m in MODELS:
        for alias in (*m.aliases, m.name):
            assert not bare.match(normalize(alias)), (m.id, alias)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_every_figure_is_covered_by_a_source(model):
    covered = {f for s in model.sources for f in s.fields}
    for field in MODEL_FIGURES:
        if getattr(model, field) is not None:
            assert field in covered, f"{model.id}.{field} has no source"
    for s in model.sources:
        assert s.url.startswith("https://"), (model.id, s.title)
        assert s.verified or s.note, f"{model.id}: an unverified source must say why ({s.title})"


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_computed_total_matches_published(model):
    tolerance = EXCEPTIONS.get(model.id, {}).get("tolerance", TOLERANCE)
    computed_b = param_count(model).total / 1e9
    assert computed_b == pytest.approx(model.params_b, rel=tolerance), (
        f"{model.id}: config gives {computed_b:.2f}B, published {model.params_b}B"
    )


@pytest.mark.parametrize("model", [m for m in MODELS if m.is_moe], ids=[m.id for m in MODELS if m.is_moe])
def test_computed_active_matches_published(model):
    pc = param_count(model)
    active = pc.active_excluding_input_embedding if model.active_excludes_embedding else pc.active
    tolerance = EXCEPTIONS.get(model.id, {}).get("active_tolerance", TOLERANCE)
    assert active / 1e9 == pytest.approx(model.active_params_b, rel=tolerance), model.id


def test_exceptions_are_real_and_still_needed():
    for model_id, row in EXCEPTIONS.items():
        m = get_model(model_id)
        pc = param_count(m)
        if "tolerance" in row:
            off = abs(pc.total / 1e9 / m.params_b - 1)
            assert TOLERANCE < off <= row["tolerance"], (model_id, off)
        if "active_tolerance" in row:
            active = pc.active_excluding_input_embedding if m.active_excludes_embedding else pc.active
            off = abs(active / 1e9 / m.active_params_b - 1)
            assert TOLERANCE < off <= row["active_tolerance"], (model_id, off)
        assert row["reason"] and row["source"].startswith("https://")


def test_deepseek_v3_shape_from_the_brief():
    v3 = get_model("deepseek v3")
    assert (v3.params_b, v3.active_params_b) == (671, 37)
    assert (v3.attention, v3.kv_lora_rank, v3.qk_rope_head_dim, v3.q_lora_rank) == ("MLA", 512, 64, 1536)
    assert (v3.n_dense_layers, v3.n_experts, v3.n_shared_experts, v3.experts_per_token) == (3, 256, 1, 8)


@pytest.mark.parametrize(
    ("typed", "model_id"),
    [
        ("Llama-3-70B", "llama-3-70b"),
        ("llama3 70b", "llama-3-70b"),
        ("Meta-Llama-3.1-405B-Instruct", "llama-3.1-405b"),
        ("Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen2.5 7b", "qwen2.5-7b"),
        ("通义千问2.5-72B", "qwen2.5-72b"),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("DeepSeek-R1", "deepseek-r1"),
        ("R1", "deepseek-r1"),
        ("满血版DeepSeek", "deepseek-r1"),
        ("deepseek v3", "deepseek-v3"),
        ("DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1-distill-qwen-32b"),
        ("Mixtral-8x7B", "mixtral-8x7b"),
        ("Mixtral 8x7B", "mixtral-8x7b"),
        ("8x7B", "mixtral-8x7b"),
        ("8x22B", "mixtral-8x22b"),
        ("GLM4-9B", "glm-4-9b"),
        ("ChatGLM3-6B", "chatglm3-6b"),
        ("百川2-13B", "baichuan2-13b"),
        ("书生浦语2.5-7B", "internlm2.5-7b"),
        ("Yi-34B", "yi-34b"),
    ],
)
def test_names_people_type_resolve(typed, model_id):
    assert get_model(typed).id == model_id


def test_mixture_names_are_not_sizes():
    assert parse_param_count("8x7B") is None  # reachable only through the Mixtral aliases


@pytest.mark.parametrize(
    ("typed", "size_b"), [("65B", 65), ("70B", 70), ("a 37B model", 37), ("700亿参数", 70), ("Falcon-40B", 40)]
)
def test_a_bare_size_gives_a_generic_model_of_that_size(typed, size_b):
    """'Falcon-40B' is not in the catalog: a name that carries a size resolves to a generic model of that size."""
    m = get_model(typed)
    assert m.generic
    assert param_count(m).total / 1e9 == pytest.approx(size_b, rel=0.001)


@pytest.mark.parametrize(("typed", "layers", "hidden"), [("7B", 32, 4096), ("13B", 40, 5120), ("70B", 80, 8192)])
def test_a_generic_size_has_the_depth_and_width_of_a_real_family(typed, layers, hidden):
    """Issue 25 (cause 9): the generic 7B/13B had 27 and 55 layers; Llama 2's 7B/13B and Llama 3's 70B shapes are
    32 × 4096, 40 × 5120 and 80 × 8192 (their config.json files in the catalog)."""
    m = get_model(typed)
    assert (m.n_layers, m.hidden_size) == (layers, hidden)
    assert str(layers) in (m.notes or "")


@settings(max_examples=60, deadline=None)
@given(size=st.floats(0.3, 2000))
def test_a_size_said_is_that_size(size):
    """'70B' is 70·10⁹ parameters (140 GB of bf16 weights, as every user expects), whatever the size."""
    from tools.catalog.lookup import generic_model

    assert param_count(generic_model(size)).total == pytest.approx(size * 1e9, rel=0.001)


def test_70b_in_bf16_is_140_gb():
    from tools.memory.model_memory import model_memory
    from tools.schemas.memory import ModelMemoryInput

    assert model_memory(ModelMemoryInput(model="70B", precision="bf16")).weights_gb == pytest.approx(140, abs=0.1)


def test_a_typo_in_a_model_name_resolves():
    assert get_model("Mixtrl").id == get_model("Mixtral").id
    assert get_model("Qwen2.5-72B-Instrcut").id == "qwen2.5-72b"
    assert get_model("72B Qwen2.5").id == "qwen2.5-72b"  # word order


def test_an_unknown_name_without_a_size_suggests_close_names():
    with pytest.raises(UnknownModel) as info:
        get_model("Mistral-Large")
    err = info.value
    assert "Mixtral-8x7B" in err.suggestions
    assert "Mixtral-8x7B" in err.message("en")
    assert "未知的模型" in err.message("zh")
    assert err.field == "model"


def test_glm_45_air_is_its_own_shape_not_the_355b_model():
    """zai-org/GLM-4.5-Air (106B total, 12B active) once resolved to GLM-4.5 (355B), a model three times its size."""
    for name in ("GLM-4.5-Air", "zai-org/GLM-4.5-Air", "GLM 4.5 Air"):
        m = get_model(name)
        assert m.id == "glm-4.5-air" and m.n_experts == 128 and m.n_layers == 46
        assert param_count(m).total / 1e9 == pytest.approx(106, rel=0.03)
    assert get_model("GLM-4.6").id == "glm-4.5"


def test_qwen3_coder_30b_is_sized_on_its_config_not_a_generic_shape():
    """Qwen/Qwen3-Coder-30B-A3B-Instruct was sized on the generic 30B-A3B MoE; its config.json gives 48 layers of
    128 experts (8 active) and a native 262,144-token window."""
    m = get_model("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert m.id == "qwen3-coder-30b-a3b" and not m.generic and m.max_context == 262144
    assert param_count(m).total / 1e9 == pytest.approx(30.5, rel=0.03)
