"""POST /v1/proposals: the proposal and its workbook over HTTP, the workbook opened as a person would."""

from __future__ import annotations

import base64
import io

from fastapi.testclient import TestClient
from openpyxl import load_workbook

import tools
from bot.api.app import create_app
from bot.api.settings import ApiSettings


def test_a_proposal_over_http_holds_the_plan_and_a_workbook(advisor):
    app = create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0))
    body = {"job": "finetune", "model": "Qwen2.5-14B", "budget_cny": 2_000_000, "lang": "en"}
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a keyless app answers loopback hosts
        r = client.post("/v1/proposals", json=body)
        bad = client.post("/v1/proposals", json={"job": "finetune", "model": "GPT-7"})
        served = client.post(
            "/v1/proposals", json={"job": "serve", "model": "Qwen3-32B", "concurrency": 200, "months": 12}
        )
    assert served.status_code == 200, served.text
    assert set(served.json()["charts_png_base64"]) == {"tco.png", "capacity.png"}
    assert "12 个月" in served.json()["markdown"]
    assert r.status_code == 200, r.text
    out = r.json()
    plan = tools.call("plan_system", {k: v for k, v in body.items() if k != "lang"})
    assert out["plan"]["best_value"] == plan["best_value"]
    assert (
        out["markdown"].startswith("# Compute proposal")
        and f"## Recommendation: {plan['best_value']}" in out["markdown"]
    )
    wb = load_workbook(io.BytesIO(base64.b64decode(out["bom_xlsx_base64"])))
    best = next(o for o in plan["options"] if o["label"] == plan["best_value"])
    rows = list(wb["BOM"].iter_rows(values_only=True))[1:]
    assert [(x[0], x[1], x[2], x[3]) for x in rows] == [
        (b["item"], b["qty"], b["low_cny"], b["high_cny"]) for b in best["bom"]
    ]
    assert bad.status_code == 404 and "GPT-7" in bad.json()["error"]["message"]
    assert "## Charts" in out["markdown"]
    from PIL import Image

    for name, data in out["charts_png_base64"].items():  # the charts the document links, opened as images
        assert f"]({name})" in out["markdown"]
        img = Image.open(io.BytesIO(base64.b64decode(data)))
        assert img.format == "PNG" and img.size == (960, 576) and len(img.convert("RGB").getcolors(1 << 24)) > 20
