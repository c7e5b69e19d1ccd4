"""Vision-language and speech models people deploy by name (issue 23, class missed_model): Qwen-VL, Qwen2-VL,
Qwen2.5-VL, the Qwen3-VL sizes and Whisper large resolve from the names people type, count their encoder in the
weights, and a family written without a size means the catalog's marked default."""

import pytest

from tools.catalog.architecture import param_count
from tools.catalog.lookup import get_model
from tools.catalog.stand_in import family_default, is_vision, read_name, stand_in


@pytest.mark.parametrize(
    ("typed", "model_id"),
    [
        ("qwen-vl-chat", "qwen-vl-7b"),
        ("Qwen/Qwen-VL-Chat-Int4", "qwen-vl-7b"),
        ("Qwen3-VL-8B-Instruct", "qwen3-vl-8b"),
        ("qwen3vl-30b-a3b", "qwen3-vl-30b-a3b"),
        ("Qwen3-VL-235B-A22B-Thinking", "qwen3-vl-235b-a22b"),
        ("Qwen2.5-VL-7B-Instruct", "qwen2.5-vl-7b"),
        ("whisper-large-v2", "whisper-large"),
        ("openai/whisper-large-v3", "whisper-large"),
    ],
)
def test_the_names_people_type_resolve(typed, model_id):
    assert get_model(typed).id == model_id


@pytest.mark.parametrize(
    ("family", "model_id"),
    [("Qwen3-VL", "qwen3-vl-8b"), ("qwen3vl", "qwen3-vl-8b"), ("Qwen-VL", "qwen-vl-7b"), ("Whisper", "whisper-large")],
)
def test_a_family_without_a_size_means_its_marked_default(family, model_id):
    assert family_default(family).id == model_id


@pytest.mark.parametrize(
    ("vl", "text", "tower_b"),
    [("qwen-vl-7b", "qwen-7b", 1.8), ("qwen3-vl-8b", "qwen3-8b", 0.4), ("qwen3-vl-30b-a3b", "qwen3-30b-a3b", 0.4)],
)
def test_the_vision_tower_counts_in_the_weights_not_in_what_a_token_activates(vl, text, tower_b):
    v, t = param_count(get_model(vl)), param_count(get_model(text))
    assert v.vision / 1e9 == pytest.approx(tower_b, rel=0.05)
    assert v.total - t.total == pytest.approx(v.vision, rel=0.01)
    assert v.active == t.active


def test_whisper_counts_its_encoder_and_the_decoders_cross_attention():
    w = param_count(get_model("whisper-large"))
    assert w.total / 1e9 == pytest.approx(1.55, rel=0.02)  # OpenAI's published 1,550M
    encoder = 32 * (4 * 1280**2 + 2 * 1280 * 5120)
    assert w.vision - encoder == 32 * 4 * 1280**2  # every decoder layer attends to the encoder's output


@pytest.mark.parametrize("typed", ["Qwen3.6-35B-A3B", "Qwen3-31B"])
def test_a_text_model_name_stands_in_with_a_text_model(typed):
    m = stand_in(read_name(typed))
    assert m is not None and not is_vision(m.name)


@pytest.mark.parametrize("typed", ["Qwen2-7B-Instruct", "qwen2-7b", "Qwen3-8B-Instruct"])
def test_a_text_model_name_is_no_typo_of_a_vision_model(typed):
    assert not is_vision(get_model(typed).name)
