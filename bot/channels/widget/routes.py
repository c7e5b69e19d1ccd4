"""The widget's HTTP routes: the loader, the panel, the full-page chat, the loader's origin check, assets.

Which key may open what is decided here for the pages and in `bot/api/widget_auth.py` for the API;
the lookups come from `request.app.state.widget_access` (built by the app, so this package does not
import the API layer). A secret key is never written into a page: a page asked for with one is refused.
"""

from __future__ import annotations

import html
import json
import re
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from bot.channels.widget.assets import Asset, asset, panel_template, version
from bot.channels.widget.origins import frame_ancestors, normalize_origin, origin_allowed

_SELF_ONLY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'"
)
_COLOR = re.compile(r"^(#[0-9a-fA-F]{3,8}|(rgb|hsl)a?\([0-9.,%\s/a-z]{1,60}\)|[a-zA-Z]{3,20})$")
_COLOR_NAMES = ("accent", "bg", "fg", "launcher")

Lang = Literal["zh", "en", "auto"]
Theme = Literal["light", "dark", "auto"]

_TEXT = {
    "secret": (
        "这是保密的 API 密钥，不能放进网页。请创建组件密钥：gpu-advisor keys create 名称 --widget --origin https://你的网站",
        "This is a secret API key and must never be put in a web page. Create a widget key: "
        "gpu-advisor keys create NAME --widget --origin https://your.site",
    ),
    "invalid": ("组件密钥（data-key）无效或已吊销。", "The widget key (data-key) is not valid or has been revoked."),
    "missing": (
        '缺少组件密钥：请在 <script> 上加 data-key="pk_…"。',
        'The widget key is missing: add data-key="pk_…" to the <script> tag.',
    ),
    "origin": (
        "此组件密钥未允许在 {origin} 上使用；请用 --origin 把该网站加到密钥里。",
        "This widget key does not allow the site {origin}; add it to the key with --origin.",
    ),
    "chat_key": ("此服务需要组件密钥：请打开 /chat?key=pk_…", "This server needs a widget key: open /chat?key=pk_…"),
}


def _t(name: str, lang: str, **kw: str) -> str:
    zh, en = _TEXT[name]
    return (zh if lang == "zh" else en).format(**kw)


def _lang(request: Request, lang: str) -> str:
    if lang in ("zh", "en"):
        return lang
    first = request.headers.get("accept-language", "").split(",")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"


def _page_headers(ancestors: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": f"{_SELF_ONLY}; frame-ancestors {ancestors}",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _refusal(message: str, lang: str, ancestors: str, status: int = 403) -> HTMLResponse:
    body = (
        f'<!doctype html><html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="widget/assets/panel.css?v={version()}"><title>gpu-advisor</title></head>'
        f'<body class="refusal"><main><p role="alert">{html.escape(message)}</p></main></body></html>'
    )
    return HTMLResponse(body, status_code=status, headers=_page_headers(ancestors))


def _colors(raw: str | None) -> str:
    """Host-page colours passed by the loader, kept only when they look like CSS colours."""
    try:
        given = json.loads(raw) if raw else {}
    except ValueError:
        return "{}"
    if not isinstance(given, dict):
        return "{}"
    kept = {
        k: v.strip() for k, v in given.items() if k in _COLOR_NAMES and isinstance(v, str) and _COLOR.match(v.strip())
    }
    return json.dumps(kept)


def _panel(
    mode: str, key: str, lang: str, title: str, theme: str, parent: str, colors: str, ancestors: str
) -> HTMLResponse:
    values = {
        "mode": mode,
        "key": key,
        "lang": lang,
        "title": title,
        "theme": theme,
        "parent": parent,
        "colors": colors,
        "v": version(),
        "html_lang": "zh-CN" if lang == "zh" else ("en" if lang == "en" else ""),
    }
    page = panel_template()
    for name, value in values.items():
        page = page.replace("{{" + name + "}}", html.escape(value, quote=True))
    return HTMLResponse(page, headers=_page_headers(ancestors))


def _asset_response(request: Request, item: Asset, max_age: int) -> Response:
    cache = f"public, max-age={max_age}" if max_age else "no-cache"  # no-cache: revalidated by ETag (304)
    headers = {
        "ETag": item.etag,
        "Cache-Control": cache,
        "Vary": "Accept-Encoding",
        "X-Content-Type-Options": "nosniff",
        "Cross-Origin-Resource-Policy": "cross-origin",
    }
    if request.headers.get("if-none-match") == item.etag:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(item.gz, media_type=item.media_type, headers={**headers, "Content-Encoding": "gzip"})
    return Response(item.body, media_type=item.media_type, headers=headers)


def router() -> APIRouter:
    r = APIRouter(tags=["widget"], include_in_schema=False)

    @r.get("/widget.js")
    def loader(request: Request) -> Response:
        """The one-line loader: `<script src="…/widget.js" data-key="pk_…" defer></script>`."""
        return _asset_response(request, asset("loader.js"), max_age=300)

    @r.get("/widget/assets/{name}")
    def assets(name: str, request: Request) -> Response:
        item = asset(name)
        if item is None:
            return JSONResponse(
                {"error": {"code": "not_found", "type": "not_found_error", "message": f"No widget file {name!r}."}},
                status_code=404,
            )
        # kept a day only under this release's ?v=; the modules panel.js imports (./i18n.js …) carry no
        # version, so they are revalidated on every load, never a stale copy next to a new panel.js
        return _asset_response(request, item, max_age=86400 if request.query_params.get("v") == version() else 0)

    @r.get("/widget/config")
    def config(request: Request, key: Annotated[str, Query(max_length=200)] = "", lang: Lang = "auto") -> JSONResponse:
        """The loader's check before it shows the launcher: is this key usable from this page's origin?"""
        lang = _lang(request, lang)
        origin = request.headers.get("origin")
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin and origin != "null" else {}
        access = request.app.state.widget_access
        problem = None
        info = access.widget_key(key) if key else None
        if not key:
            problem = ("missing_key", _t("missing", lang))
        elif info is None:
            problem = (
                ("secret_key", _t("secret", lang)) if access.is_secret(key) else ("invalid_key", _t("invalid", lang))
            )
        elif not origin_allowed(origin, info.origins):
            problem = ("origin_not_allowed", _t("origin", lang, origin=origin or "?"))
        if problem:
            code, message = problem
            return JSONResponse(
                {"error": {"code": code, "type": "permission_error", "message": message}}, status_code=403, headers=cors
            )
        return JSONResponse({"ok": True, "name": info.name}, headers={**cors, "Cache-Control": "no-store"})

    @r.get("/widget", response_class=HTMLResponse)
    def panel(
        request: Request,
        key: Annotated[str, Query(max_length=200)] = "",
        lang: Lang = "auto",
        title: Annotated[str, Query(max_length=60)] = "",
        theme: Theme = "auto",
        parent: Annotated[str, Query(max_length=300)] = "",
        colors: Annotated[str, Query(max_length=400)] = "",
    ) -> HTMLResponse:
        """The chat panel inside the host page's iframe; only the key's origins may frame it."""
        shown = _lang(request, lang)
        access = request.app.state.widget_access
        if not key:
            return _refusal(_t("missing", shown), shown, "'none'")
        info = access.widget_key(key)
        if info is None:
            return _refusal(_t("secret" if access.is_secret(key) else "invalid", shown), shown, "'none'")
        ancestors = frame_ancestors(info.origins)
        try:
            parent = normalize_origin(parent) if parent else ""
        except ValueError:
            parent = ""
        if parent and parent not in info.origins:
            return _refusal(_t("origin", shown, origin=parent), shown, ancestors)
        return _panel("widget", key, lang, title, theme, parent, _colors(colors), ancestors)

    @r.get("/chat", response_class=HTMLResponse)
    def chat(
        request: Request,
        key: Annotated[str, Query(max_length=200)] = "",
        lang: Lang = "auto",
        title: Annotated[str, Query(max_length=60)] = "",
        theme: Theme = "auto",
    ) -> HTMLResponse:
        """The same chat as a full page for internal users (`/chat?key=pk_…` once keys exist)."""
        shown = _lang(request, lang)
        access = request.app.state.widget_access
        if key:
            if access.widget_key(key) is None:
                return _refusal(_t("secret" if access.is_secret(key) else "invalid", shown), shown, "'none'")
        elif access.required():
            return _refusal(_t("chat_key", shown), shown, "'none'", status=401)
        return _panel("page", key, lang, title, theme, "", "{}", "'none'")

    return r
