"""`gpu-advisor prices import quotes.csv`: the sales team's dated price book, which overrides the catalog's prices for
this deployment (stored in the data folder, `tools/catalog/price_book.py`); `prices show` and `prices clear`.

Example: gpu-advisor prices import quotes.csv --max-age-days 60
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.output import JsonOpt, console, print_json, table, user_errors
from bot.core.settings import Settings
from tools.catalog import price_book, user_models
from tools.errors import InvalidInput

prices_app = typer.Typer(help="The sales team's price book: it overrides the catalog's prices for this deployment.")


def _use_data_dir() -> None:
    user_models.use_data_dir(Settings().data_dir)


@prices_app.command("import")
def prices_import(
    csv_file: Annotated[Path, typer.Argument(help="CSV: item, price, currency, date, vendor[, validity, kind].")],
    max_age_days: Annotated[
        int, typer.Option("--max-age-days", min=1, max=3650, help="A quote older than this is flagged stale.")
    ] = price_book.MAX_AGE_DAYS,
    as_json: JsonOpt = False,
) -> None:
    """Load a dated price book (replacing the one before): every answer then uses and names its prices.

    Columns: item (a GPU name or a server platform id), price, currency (CNY or USD), date (YYYY-MM-DD),
    vendor (or source), and optionally validity (a last date or a number of days) and kind (purchase or rental).
    """
    today = dt.date.today()
    with user_errors("en"):
        try:
            text = csv_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise InvalidInput(
                f"Cannot read {csv_file}: {getattr(err, 'strerror', None) or err}.",
                f"无法读取 {csv_file}：{getattr(err, 'strerror', None) or err}。",
            ) from None
        book = price_book.parse_csv(text, csv_file.name, today, max_age_days)
        _use_data_dir()
        where = price_book.save(book)
    s = price_book.summary(book, today)
    if as_json:
        print_json({**s, "path": str(where)})
        return
    console.print(
        f"Loaded {s['quotes']} prices from {s['file']} (quoted {s['oldest']} to {s['newest']}) into {where}; "
        f"they now override the catalog's prices for {', '.join(s['items'])}.",
        highlight=False,
    )
    _flags(s)


def _flags(s: dict) -> None:
    if s["stale_rows"]:
        rows = ", ".join(map(str, s["stale_rows"]))
        console.print(f"[yellow]stale[/] (older than {s['max_age_days']} days): rows {rows}", highlight=False)
    if s["expired_rows"]:
        console.print(f"[red]expired[/] (past their validity): rows {', '.join(map(str, s['expired_rows']))}")


@prices_app.command("show")
def prices_show(as_json: JsonOpt = False) -> None:
    """The price book in use, quote by quote, with its status (ok, stale, expired)."""
    _use_data_dir()
    book = price_book.current()
    if book is None:
        console.print("No price book: answers use the catalog's prices (gpu-advisor prices import quotes.csv).")
        return
    today = dt.date.today()
    if as_json:
        print_json({**price_book.summary(book, today), "rows": [r.model_dump(mode="json") for r in book.rows]})
        return
    rows = [
        (
            r.row,
            r.item,
            r.kind,
            f"{r.price:,.2f} {r.currency}",
            r.date,
            r.vendor,
            r.valid_until or "—",
            book.status(r, today),
        )
        for r in book.rows
    ]
    console.print(
        table(
            f"{book.file}, imported {book.imported}",
            ["row", "item", "kind", "price", "date", "vendor", "valid until", "status"],
            rows,
        )
    )


@prices_app.command("clear")
def prices_clear() -> None:
    """Remove the price book: answers go back to the catalog's prices."""
    _use_data_dir()
    gone = price_book.clear()
    console.print("Price book removed." if gone else "There was no price book.")
