"""POST /v1/tools/diagnose: the diagnose calculator over HTTP, generated from the registry like every tool."""

import tools


def test_the_route_returns_what_the_calculator_returns(client):
    args = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "framework": "deepspeed", "zero_stage": 2,
            "error_kind": "oom", "failed_alloc_gib": 3.55}  # fmt: skip
    resp = client.post("/v1/tools/diagnose", json=args)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body == tools.call("diagnose", args)
    assert body["causes"][0]["cause"] == "zero_stage_buffers" and body["causes"][0]["fix"]["flag"]


def test_bad_input_is_a_422_naming_the_field_and_an_unknown_card_a_404(client):
    bad = client.post("/v1/tools/diagnose", json={"failed_alloc_gib": -2})
    assert bad.status_code == 422 and "failed_alloc_gib" in bad.text
    unknown = client.post("/v1/tools/diagnose", json={"gpu": "B9000", "error_kind": "oom"})
    assert unknown.status_code == 404 and "B9000" in unknown.text
