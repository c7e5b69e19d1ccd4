"""Models people name by family (issue 23, class missed_model): each added model's parameter count, worked out
from its config shape, is within 2% of the published figure; a family name without a size means the model the
catalog marks for it; a weight size said with its precision implies a parameter count."""

import pytest

from tools.catalog.architecture import param_count
from tools.catalog.lookup import get_model, models, normalize
from tools.catalog.stand_in import family_default, implied_size

#: model id -> the publisher's (or the hub's weight-file) parameter count, billions
PUBLISHED = {
    "deepseek-v2": 236,
    "deepseek-llm-67b": 67,
    "bge-m3": 0.568,
    "bge-base-zh-v1.5": 0.102,
    "bge-large-zh-v1.5": 0.326,
    "glm-4v-9b": 13.9,
    "internlm2-1.8b": 1.89,
    "internlm-20b": 20,
    "mistral-7b": 7.24,
}


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_the_count_from_the_shape_is_within_two_percent_of_the_published_one(model_id):
    total = param_count(get_model(model_id)).total / 1e9
    assert abs(total - PUBLISHED[model_id]) <= 0.02 * PUBLISHED[model_id], (model_id, total)


def test_deepseek_v2_activates_its_published_21b():
    assert abs(param_count(get_model("deepseek-v2")).active_excluding_input_embedding / 1e9 - 21) <= 0.02 * 21


def test_a_vision_model_counts_its_vision_tower():
    vl, text = param_count(get_model("glm-4v-9b")), param_count(get_model("glm-4-9b"))
    assert vl.vision > 4e9 and vl.total - text.total == pytest.approx(vl.vision, rel=0.01)


@pytest.mark.parametrize(
    ("typed", "model_id"),
    [("DeepSeek-v2-Chat", "deepseek-v2"), ("DeepSeek 67B", "deepseek-llm-67b"), ("bge-m3", "bge-m3"),
     ("BAAI/bge-base-zh-v1.5", "bge-base-zh-v1.5"), ("internlm2_1_8b", "internlm2-1.8b"),
     ("glm-4v-9b", "glm-4v-9b"), ("DeepSeek-V2-Lite", "deepseek-v2-lite")],
)  # fmt: skip
def test_the_names_people_write_resolve_to_the_model(typed, model_id):
    assert get_model(typed).id == model_id


@pytest.mark.parametrize(
    ("family", "model_id"), [("ChatGLM", "chatglm-6b"), ("Mistral", "mistral-7b"), ("MiniCPM", "minicpm-2b")]
)
def test_a_family_without_a_size_means_the_size_it_is_known_for(family, model_id):
    assert family_default(family).id == model_id


@pytest.mark.parametrize("family", ["Qwen", "Llama", "DeepSeek", "Baichuan2", "InternLM"])
def test_a_family_of_several_sizes_has_no_default(family):
    assert family_default(family) is None


def test_a_family_default_names_one_model_only():
    seen: dict[str, str] = {}
    for m in models():
        for name in m.family_default:
            assert seen.setdefault(normalize(name), m.id) == m.id, name


@pytest.mark.parametrize(
    ("text", "size_b"),
    [("你这里不是写的fp16只用26吗", 13), ("int4 needs 5 GB", 10), ("26G (fp16)", 13), ("bf16 权重 140GB", 70)],
)
def test_a_weight_size_with_its_precision_implies_a_parameter_count(text, size_b):
    assert implied_size(text)[0] == pytest.approx(size_b)


@pytest.mark.parametrize("text", ["fp16 训练 8 卡", "v100-32G 显存", "batch 4 fp16", "1234567890" * 400])
def test_no_size_is_implied_without_a_weight_figure_next_to_a_precision(text):
    assert implied_size(text) is None


def test_a_bare_size_never_takes_a_vision_models_shape():
    """GLM-4V-9B is 13.9B with its vision tower; its decoder is a 9B's, so a bare '14B' is not shaped on it."""
    from tools.catalog.lookup import family_anchor

    anchor = family_anchor(14)
    assert anchor is not None and not anchor.vision_layers
