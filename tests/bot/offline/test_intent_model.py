"""The intent model ships trained (bot/offline/understand/data/intent_model.npz): current with its training data, the
same as a fresh training, packaged, and used without training in a fresh process."""

import fnmatch
import logging
import tomllib
from pathlib import Path

import numpy as np
import pytest

import bot.offline.understand.intent_model as im
from bot.offline.understand.intent_build import stale
from bot.offline.understand.parse import analyse

ROOT = Path(__file__).parents[3]


def test_shipped_weights_are_current():
    """Fails when the training data, the features or the parser changed and nobody rebuilt the weights."""
    why = stale()
    assert why is None, (
        f"{why}: run `.venv/bin/python -m bot.offline.understand.intent_build --build` and commit the file"
    )


def test_a_fresh_training_gives_the_shipped_weights(monkeypatch):
    """Training is deterministic: what GPU_ADVISOR_TRAIN_INTENTS=1 trains in process is what was shipped."""
    monkeypatch.setenv(im.FORCE_TRAIN, "1")
    trained = im.model.__wrapped__(analyse)
    shipped = im.shipped()
    assert shipped is not None
    assert trained.labels == shipped.labels
    assert trained.vocab == shipped.vocab
    np.testing.assert_allclose(trained.weights, shipped.weights, rtol=1e-5, atol=1e-6)
    q, flags = analyse("租 32 张 A800 一个月多少钱")
    assert trained.predict(q, flags)[0][0] == shipped.predict(q, flags)[0][0] == "cost"


def test_a_fresh_process_does_not_train(monkeypatch):
    monkeypatch.delenv(im.FORCE_TRAIN, raising=False)

    def refuse(*_):
        raise AssertionError("trained although current weights are shipped")

    monkeypatch.setattr(im.IntentModel, "train", classmethod(refuse))
    clf = im.model.__wrapped__(analyse)
    q, flags = analyse("Qwen3-14B 的 bf16 权重多大")
    assert clf.predict(q, flags)[0][0] == "weights"


def test_stale_weights_are_noticed_and_the_model_trains(tmp_path, caplog):
    data = tmp_path / "intents.yaml"
    data.write_text(
        im.DATA.read_text(encoding="utf-8").replace("examples:", "examples:\n  # edited", 1), encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING, logger="gpu_advisor.offline"):
        assert im.shipped(data=data) is None
    assert "--build" in caplog.text
    assert stale(data=data) is not None


def test_unreadable_weights_fall_back_to_training(tmp_path, caplog):
    broken = tmp_path / "intent_model.npz"
    broken.write_bytes(b"not a zip")
    with caplog.at_level(logging.WARNING, logger="gpu_advisor.offline"):
        assert im.shipped(path=broken) is None
    assert "unreadable" in caplog.text


def test_saving_is_byte_for_byte_repeatable(tmp_path):
    clf, meta = im.IntentModel.load(im.SHIPPED)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    clf.save(a, meta)
    clf.save(b, meta)
    assert a.read_bytes() == b.read_bytes() == im.SHIPPED.read_bytes()


@pytest.mark.parametrize("path", [im.DATA, im.SHIPPED])
def test_the_model_files_are_package_data(path):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["bot"]
    relative = path.relative_to(ROOT / "bot").as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} is not in the wheel"
