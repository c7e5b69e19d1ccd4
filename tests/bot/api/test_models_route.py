"""POST /v1/catalog/models over HTTP: a config.json added, then listed and sized by /v1/tools/*; a bad config is a 422 in
the caller's language; once keys exist only an admin key may add."""

from __future__ import annotations

import pytest

from bot.api import keys
from tests.tools.catalog.test_hf_config import LLAMA_31_8B, QWEN3_30B_A3B
from tools.catalog import user_models


@pytest.fixture(autouse=True)
def data_dir(env):
    user_models.use_data_dir(env / "data")
    yield env / "data"
    user_models.use_data_dir(None)


def test_an_added_model_is_listed_and_sized_at_once(client):
    r = client.post("/v1/catalog/models", json={"config": QWEN3_30B_A3B, "name": "acme/Shenzhen-MoE-30B"})
    assert r.status_code == 201, r.text
    assert r.json()["params_b"] == pytest.approx(30.5, rel=0.01) and r.json()["active_params_b"] == pytest.approx(
        3.35, rel=0.01
    )
    assert "acme/Shenzhen-MoE-30B" in [m["name"] for m in client.get("/v1/catalog/models").json()]
    fit = client.post("/v1/tools/fit_inference", json={"model": "Shenzhen-MoE-30B", "gpu": "H100 SXM"})
    assert fit.status_code == 200 and fit.json()["fits"] is True


@pytest.mark.parametrize(
    ("body", "lang", "says"),
    [
        ({"config": {**LLAMA_31_8B, "hidden_size": None}, "name": "x"}, "en", "'hidden_size' is missing"),
        ({"config": {**LLAMA_31_8B, "num_hidden_layers": 10**8}, "name": "x"}, "zh", "超出了任何真实模型"),
        ({"config": QWEN3_30B_A3B, "name": "Qwen3-30B-A3B"}, "zh", "随软件发布的模型"),
    ],
)
def test_a_bad_config_is_a_422_that_says_why(client, body, lang, says):
    r = client.post(f"/v1/catalog/models?lang={lang}", json=body)
    assert r.status_code == 422, r.text
    assert says in r.json()["error"]["message"]


def test_once_keys_exist_only_an_admin_key_adds(client, advisor):
    _, plain = keys.create(advisor.store, "sales")
    _, admin = keys.create(advisor.store, "ops", admin=True)
    body = {"config": LLAMA_31_8B, "name": "acme-8b"}
    assert client.post("/v1/catalog/models", json=body).status_code == 401
    denied = client.post("/v1/catalog/models?lang=zh", json=body, headers={"Authorization": f"Bearer {plain}"})
    assert denied.status_code == 403 and "管理员" in denied.json()["error"]["message"]
    ok = client.post("/v1/catalog/models", json=body, headers={"Authorization": f"Bearer {admin}"})
    assert ok.status_code == 201 and ok.json()["id"] == "acme-8b"
