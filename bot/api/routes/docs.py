"""/docs (Swagger UI) and /redoc served from this server, never from a CDN (CDNs are often out of
reach in China, and an intranet deployment may have no internet at all).

The Swagger UI and Redoc bundles come from the `fastapi-offline` package (MIT), which ships them
unchanged: Swagger UI is under the Apache License 2.0 (SmartBear Software), Redoc under the MIT
licence (Redocly). `/docs/static/LICENSES.txt` says so next to the files.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles

STATIC = "/docs/static"
LICENSES = """Third-party files served under /docs/static

swagger-ui-bundle.js, swagger-ui.css  Swagger UI, Apache License 2.0, (c) SmartBear Software
redoc.standalone.js                   Redoc, MIT licence, (c) Redocly
favicon.png                           from the fastapi-offline package
All four are shipped unchanged by the Python package fastapi-offline (MIT licence).
"""


def _assets() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def install(app: FastAPI) -> None:
    """Mount the assets and the two pages; create the app with docs_url=None, redoc_url=None."""

    @app.get(f"{STATIC}/LICENSES.txt", include_in_schema=False)
    def licenses() -> PlainTextResponse:
        return PlainTextResponse(LICENSES)

    app.mount(STATIC, StaticFiles(directory=_assets()), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} — API",
            swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} — API",
            redoc_js_url=f"{STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC}/favicon.png",
            with_google_fonts=False,
        )
