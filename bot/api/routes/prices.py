"""POST /v1/prices: load the sales team's dated price book (issue 26), as `gpu-advisor prices import` does; GET
/v1/prices: the book in use. The book overrides the catalog's prices for this deployment, in every route at once.

While the API is open anyone on the host may load one; once keys exist only an admin key may (403 otherwise). A bad
CSV is a 422 naming the row and the column, in the caller's language. Left out of /openapi.json, like
/v1/catalog/models: a schema fuzzer would replace the deployment's prices with what it drew.
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from bot.api.errors import ApiError, request_lang
from bot.api.security import Caller
from tools.catalog import price_book


class PriceBookInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csv: str = Field(
        max_length=2_000_000,
        description="The CSV text: item, price, currency, date, vendor[, validity, kind] (header row first).",
    )
    file_name: str = Field("quotes.csv", max_length=200, description="The file's name, as errors and answers cite it.")
    max_age_days: int = Field(price_book.MAX_AGE_DAYS, ge=1, le=3650, description="Older quotes are flagged stale.")


def router() -> APIRouter:
    r = APIRouter(tags=["prices"])

    @r.post("/prices", status_code=201, include_in_schema=False)  # stores what it is sent: not fuzzed
    def load_prices(body: PriceBookInput, caller: Caller, request: Request) -> JSONResponse:
        """Replace the deployment's price book; answers what was loaded and which quotes are stale or expired."""
        if caller.key_id is not None and not caller.admin:
            zh = request_lang(request) == "zh"
            raise ApiError(
                403,
                "只有管理员密钥可以导入价格表。" if zh else "Only an admin key may load a price book.",
                code="forbidden",
            )
        today = dt.date.today()
        book = price_book.parse_csv(body.csv, body.file_name, today, body.max_age_days)
        price_book.save(book)
        return JSONResponse(price_book.summary(book, today), status_code=201)

    @r.get("/prices", include_in_schema=False)
    def show_prices(caller: Caller) -> JSONResponse:
        """The price book in use (null when answers use the catalog's prices), quote by quote with its status."""
        book = price_book.current()
        if book is None:
            return JSONResponse({"book": None})
        today = dt.date.today()
        rows = [{**r.model_dump(mode="json"), "status": book.status(r, today)} for r in book.rows]
        return JSONResponse({"book": {**price_book.summary(book, today), "rows": rows}})

    return r
