"""The widget's files: small on the wire, served by the API itself (no CDN), no HTML built from strings."""

from __future__ import annotations

import re

from bot.channels.widget.assets import PANEL_FILES, STATIC, asset, gzipped_sizes


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
