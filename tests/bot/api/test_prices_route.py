"""POST /v1/prices over HTTP: a price book loaded, then used by /v1/tools/* and named in /v1/ask; a bad CSV is a 422
naming the row and the column in the caller's language; once keys exist only an admin key may load one."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.api import keys
from tools.catalog import user_models
from tools.catalog.prices import tco_params

DAY = (dt.date.today() - dt.timedelta(days=1)).isoformat()
OLD = (dt.date.today() - dt.timedelta(days=120)).isoformat()
CSV = f"item,price,currency,date,vendor\nH20,14000,USD,{DAY},Acme HK\nAscend 910B,110000,CNY,{OLD},Huawei partner\n"


@pytest.fixture(autouse=True)
def data_dir(env):
    user_models.use_data_dir(env / "data")
    yield env / "data"
    user_models.use_data_dir(None)


def test_a_loaded_book_prices_the_tools_and_the_answers(client):
    r = client.post("/v1/prices", json={"csv": CSV, "file_name": "q4.csv", "max_age_days": 60})
    assert r.status_code == 201, r.text
    assert r.json()["quotes"] == 2 and r.json()["stale_rows"] == [3]
    specs = client.post("/v1/tools/gpu_specs", json={"gpu": "H20"}).json()
    fx = tco_params()["fx_cny_per_usd"].default  # a USD quote at the catalog's exchange rate
    assert specs["purchase_low_cny"] == pytest.approx(14_000 * fx) and specs["purchase_low_cny"] > 14_000
    assert specs["price_source"].startswith(f"price book {DAY}, Acme HK")
    ascend = client.post("/v1/tools/gpu_specs", json={"gpu": "910B"}).json()
    assert ascend["purchase_low_cny"] == 110_000 and "⚠ stale: over 60 days" in ascend["price_source"]
    shown = client.get("/v1/prices").json()["book"]
    assert [row["status"] for row in shown["rows"]] == ["ok", "stale"]
    answer = client.post("/v1/ask", json={"text": "昇腾 910B 多少钱一张？"}).json()["answer"]
    assert f"price book {OLD}, Huawei partner ⚠ stale" in answer


def test_a_bad_csv_is_a_422_naming_row_and_column(client):
    r = client.post("/v1/prices?lang=zh", json={"csv": f"item,price,currency,date,vendor\nH20,-5,CNY,{DAY},x\n"})
    assert r.status_code == 422, r.text
    assert "quotes.csv 第 2 行“price”列" in r.json()["error"]["message"]
    assert client.get("/v1/prices").json() == {"book": None}


def test_once_keys_exist_only_an_admin_key_loads_prices(client, advisor):
    _, plain = keys.create(advisor.store, "sales")
    _, admin = keys.create(advisor.store, "ops", admin=True)
    assert client.post("/v1/prices", json={"csv": CSV}).status_code == 401
    denied = client.post("/v1/prices?lang=zh", json={"csv": CSV}, headers={"Authorization": f"Bearer {plain}"})
    assert denied.status_code == 403 and "管理员" in denied.json()["error"]["message"]
    ok = client.post("/v1/prices", json={"csv": CSV}, headers={"Authorization": f"Bearer {admin}"})
    assert ok.status_code == 201
