"""The widget's files: small on the wire, served by the API itself (no CDN), no HTML built from strings."""

from __future__ import annotations

import re

from bot.channels.widget.assets import PANEL_FILES, SHIPPED, STATIC, _load, asset, gzipped_sizes


def test_loader_and_panel_fit_their_gzip_budgets():
    sizes = gzipped_sizes()
    assert 0 < sizes["loader"] <= 5 * 1024, sizes
    assert 0 < sizes["panel"] <= 60 * 1024, sizes


def test_everything_the_widget_loads_comes_from_the_api():
    for name in (*PANEL_FILES, "loader.js", "panel.html"):
        text = (STATIC / name).read_text(encoding="utf-8")
        # no stylesheet, script, font or image from another host (links in answers are data, not assets)
        assert not re.search(r"""(src|href)\s*=\s*["']https?://""", text), name
        assert "@import" not in text and "url(http" not in text and "fonts.googleapis" not in text, name


def test_no_string_is_ever_parsed_as_html():
    for name in (*PANEL_FILES, "loader.js"):
        text = (STATIC / name).read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text, f"{name} uses {sink}"


def test_only_plain_file_names_are_served():
    assert asset("panel.js") is not None
    for name in ("../assets.py", "..", ".hidden", "panel.html", "routes.py", "static/panel.js"):
        assert asset(name) is None, name


def test_only_the_shipped_files_are_looked_up_and_cached():
    """A name of any length or shape that is not a shipped file is None without touching the disk (a 300-byte
    name used to reach the file system and fail there), and the cache never grows past the shipped files."""
    for name in ("a" * 300 + ".js", "\x00.js", "é" * 200 + ".css", "panel.js\n", "PANEL.JS"):
        assert asset(name) is None
    assert "panel.js" in SHIPPED and "loader.js" in SHIPPED and "panel.html" not in SHIPPED
    assert _load.cache_info().currsize <= len(SHIPPED)


def test_a_long_asset_name_is_a_404_over_http(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from bot.api.app import create_app
    from bot.api.settings import ApiSettings

    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path))
    with TestClient(
        create_app(api_settings=ApiSettings(rate_limit_per_minute=0)),
        raise_server_exceptions=False,
        base_url="http://127.0.0.1",
    ) as c:
        for name in ("a" * 300 + ".js", "b" * 5000):
            r = c.get(f"/widget/assets/{name}")
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert c.get("/widget/assets/panel.js").status_code == 200
