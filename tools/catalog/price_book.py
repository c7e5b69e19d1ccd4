"""The sales team's own prices (issue 26): a dated price book that overrides the catalog's prices for one deployment.

`gpu-advisor prices import quotes.csv` and `POST /v1/prices` read a CSV (`parse_csv`) and store it as
`<data dir>/price_book.yaml` (`save`; the data dir is the one `user_models` uses). Its columns:

    item      a GPU (any catalog name or alias: "H20", "910B") or a server platform id ("hgx-h20-8gpu")
    price     a number: per card (a GPU's purchase), per card-hour (kind rental) or per server (a platform)
    currency  CNY (also RMB, 元, ¥) or USD ($); USD is converted at tco.yaml's fx_cny_per_usd where it is used
    date      the quote's date, YYYY-MM-DD
    vendor    who quoted it (the column may also be called source)
    validity  optional: the last day it holds (YYYY-MM-DD) or its days from `date` ("30")
    kind      optional: purchase (the default) or rental

A bad cell is an `InvalidInput` naming the file, the row (as a spreadsheet numbers it: the header is row 1) and the
column, in English and Chinese. `prices.price_table` lays the book over the catalog; `bom.bill` prices a platform
with a server quote as whole servers. A quote older than the book's `max_age_days` (default 90) is stale and one
past its validity expired: the quote's source says so, so every answer that names the price flags it. Caches built
on prices register with `on_change`; `refresh` looks at the file at most once a second.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from tools.catalog import user_models
from tools.catalog.lookup import get_gpu
from tools.catalog.servers import platforms
from tools.errors import AdvisorError, InvalidInput
from tools.yaml_data import load_yaml

FILENAME = "price_book.yaml"
MAX_AGE_DAYS = 90
MAX_ROWS = 5000
REQUIRED = ("item", "price", "currency", "date", "vendor")
OPTIONAL = ("validity", "kind")
#: other spellings of a column's name, read as that column
HEADER_ALIASES = {
    "source": "vendor",
    "supplier": "vendor",
    "valid_until": "validity",
    "valid": "validity",
    "gpu": "item",
    "server": "item",
    "price_cny": "price",
    "品名": "item",
    "型号": "item",
    "价格": "price",
    "单价": "price",
    "币种": "currency",
    "日期": "date",
    "供应商": "vendor",
    "来源": "vendor",
    "有效期": "validity",
    "类型": "kind",
}
CURRENCIES = {
    "cny": "CNY",
    "rmb": "CNY",
    "元": "CNY",
    "¥": "CNY",
    "人民币": "CNY",
    "usd": "USD",
    "$": "USD",
    "美元": "USD",
}
KINDS = {
    "purchase": "purchase",
    "buy": "purchase",
    "采购": "purchase",
    "rental": "rental",
    "rent": "rental",
    "租赁": "rental",
}


class BookRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str  # the catalog id: a GPU id or a platform id
    target: Literal["gpu", "server"]
    kind: Literal["purchase", "rental"]
    price: float = Field(gt=0)
    currency: Literal["CNY", "USD"]
    date: dt.date
    vendor: str
    valid_until: dt.date | None = None
    row: int  # the CSV row it came from (header = 1)


class Book(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    imported: dt.date
    max_age_days: int = Field(MAX_AGE_DAYS, ge=1, le=3650)
    rows: tuple[BookRow, ...]

    def status(self, row: BookRow, today: dt.date) -> Literal["ok", "stale", "expired"]:
        if row.valid_until is not None and row.valid_until < today:
            return "expired"
        return "stale" if (today - row.date).days > self.max_age_days else "ok"

    def for_gpu(self, gpu_id: str, kind: str) -> BookRow | None:
        """The newest quote of that kind for the GPU, if any."""
        rows = [r for r in self.rows if r.target == "gpu" and r.item == gpu_id and r.kind == kind]
        return max(rows, key=lambda r: (r.date, r.row)) if rows else None

    def for_server(self, platform_id: str) -> BookRow | None:
        rows = [r for r in self.rows if r.target == "server" and r.item == platform_id]
        return max(rows, key=lambda r: (r.date, r.row)) if rows else None

    def label(self, row: BookRow, today: dt.date) -> str:
        """How an answer names the quote: the book, the vendor, the date, and a flag when it is stale or expired."""
        flag = {
            "ok": "",
            "stale": f" ⚠ stale: over {self.max_age_days} days / 已超 {self.max_age_days} 天",
            "expired": f" ⚠ expired {row.valid_until} / 已过期",
        }[self.status(row, today)]
        return f"price book {row.date.isoformat()}, {row.vendor[:24]}{flag}"


def _bad(file: str, row: int, column: str, en: str, zh: str) -> InvalidInput:
    return InvalidInput(
        f"{file} row {row}, column {column}: {en}", f"{file} 第 {row} 行“{column}”列：{zh}", field=column
    )


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text.strip().replace("/", "-"))
    except ValueError:
        return None


def _item(cell: str) -> tuple[str, Literal["gpu", "server"]] | None:
    ids = {p.id: p.id for p in platforms()}
    key = cell.strip().lower()
    if key in ids:
        return ids[key], "server"
    try:
        return get_gpu(cell.strip()).id, "gpu"
    except AdvisorError:
        return None


def parse_csv(text: str, file: str, today: dt.date, max_age_days: int = MAX_AGE_DAYS) -> Book:
    """Read a price book CSV; the first bad cell raises `InvalidInput` naming its row and column."""
    text = text.lstrip("\ufeff")  # Excel's UTF-8 mark
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise InvalidInput(f"{file} is empty: the first row must name the columns.", f"{file} 是空的：第一行应为列名。")
    names = [HEADER_ALIASES.get(h.strip().lower(), h.strip().lower()) for h in header]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        need = ", ".join(REQUIRED)
        raise InvalidInput(
            f"{file} row 1: no column {', '.join(missing)} (the columns: {need}; optional: validity, kind).",
            f"{file} 第 1 行：缺少列 {'、'.join(missing)}（需要：{need}；可选：validity、kind）。",
            field=missing[0],
        )
    rows = []
    for n, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(rows) >= MAX_ROWS:
            raise InvalidInput(f"{file}: more than {MAX_ROWS} rows.", f"{file} 超过 {MAX_ROWS} 行。")
        cell = {name: (cells[i].strip() if i < len(cells) else "") for i, name in enumerate(names)}
        rows.append(_row(cell, n, file, today))
    if not rows:
        raise InvalidInput(f"{file} has a header but no prices.", f"{file} 只有表头，没有价格。")
    return Book(file=Path(file).name, imported=today, max_age_days=max_age_days, rows=tuple(rows))


def _row(cell: dict[str, str], n: int, file: str, today: dt.date) -> BookRow:
    for column in REQUIRED:
        if not cell.get(column):
            raise _bad(file, n, column, "empty.", "为空。")
    found = _item(cell["item"])
    if found is None:
        raise _bad(
            file,
            n,
            "item",
            f"“{cell['item']}” is neither a GPU nor a server platform the catalog knows.",
            f"“{cell['item']}”不是目录里的 GPU 或服务器平台。",
        )
    item, target = found
    try:
        price = float(cell["price"].replace(",", ""))
    except ValueError:
        price = float("nan")
    if not price > 0 or price == float("inf"):
        raise _bad(file, n, "price", f"“{cell['price']}” is not a positive number.", f"“{cell['price']}”不是正数。")
    currency = CURRENCIES.get(cell["currency"].lower())
    if currency is None:
        raise _bad(
            file, n, "currency", f"“{cell['currency']}”: use CNY or USD.", f"“{cell['currency']}”：请用 CNY 或 USD。"
        )
    date = _date(cell["date"])
    if date is None or date > today:
        en = "is in the future." if date else "is not a date (YYYY-MM-DD)."
        zh = "晚于今天。" if date else "不是日期（YYYY-MM-DD）。"
        raise _bad(file, n, "date", f"“{cell['date']}” {en}", f"“{cell['date']}”{zh}")
    valid_until = None
    if v := cell.get("validity"):
        valid_until = _date(v) or (
            date + dt.timedelta(days=int(v.removesuffix("d"))) if v.removesuffix("d").isdigit() else None
        )
        if valid_until is None or valid_until < date:
            raise _bad(
                file,
                n,
                "validity",
                f"“{v}” is neither a date on or after the quote's nor a number of days.",
                f"“{v}”既不是不早于报价日期的日期，也不是天数。",
            )
    kind = KINDS.get((cell.get("kind") or "purchase").lower())
    if kind is None or (target == "server" and kind == "rental"):
        raise _bad(
            file,
            n,
            "kind",
            f"“{cell.get('kind')}”: purchase or rental (a server: purchase).",
            f"“{cell.get('kind')}”：purchase（采购）或 rental（租赁；服务器只能采购）。",
        )
    return BookRow(
        item=item,
        target=target,
        kind=kind,
        price=price,
        currency=currency,
        date=date,
        vendor=cell["vendor"],
        valid_until=valid_until,
        row=n,
    )


# ---- the stored book: read once per change ----------------------------------------------------------------------

_clearers: list[Callable[[], None]] = []
_lock = threading.Lock()
_seen: tuple[int, int] | None = None
_checked = -1.0
_book: Book | None = None
CHECK_EVERY_S = 1.0


def path() -> Path:
    return user_models.data_dir() / FILENAME


def on_change(clear: Callable[[], None]) -> None:
    """Register a cache to clear when the price book changes."""
    _clearers.append(clear)


def _stamp() -> tuple[int, int]:
    try:
        st = path().stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _read() -> Book | None:
    try:
        with open(path(), encoding="utf-8") as fh:
            return Book.model_validate(load_yaml(fh))
    except (OSError, yaml.YAMLError, ValueError, TypeError):
        return None  # no book (or a broken one): the catalog's prices


def refresh(force: bool = False) -> None:
    """Reload the book and clear the registered caches when the file changed since it was last read."""
    global _seen, _checked, _book
    now = time.monotonic()
    if not force and now - _checked < CHECK_EVERY_S:
        return
    _checked = now
    stamp = _stamp()
    if stamp == _seen and not force:
        return
    with _lock:
        _seen = stamp
        _book = _read() if stamp != (0, 0) else None
        for clear in _clearers:
            clear()


def current() -> Book | None:
    """The deployment's price book (None: the catalog's prices only)."""
    refresh()
    return _book


def save(book: Book) -> Path:
    """Store `book` as the deployment's price book (replacing the previous one); returns the file written."""
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".yaml.tmp")
    tmp.write_text(
        "# The price book loaded with `gpu-advisor prices import`; schema: tools/catalog/price_book.py Book.\n"
        + yaml.safe_dump(book.model_dump(mode="json"), allow_unicode=True, sort_keys=False),
        encoding="utf-8",
    )
    tmp.replace(target)
    refresh(force=True)
    return target


def clear() -> bool:
    """Remove the price book (back to the catalog's prices); True when there was one."""
    try:
        path().unlink()
    except FileNotFoundError:
        return False
    refresh(force=True)
    return True


user_models.on_change(lambda: refresh(force=True))  # another data dir (`use_data_dir`): its book, if any


def summary(book: Book, today: dt.date) -> dict:
    """What an import reports: how many quotes, their dates, which are stale or expired (by their CSV rows)."""
    dates = [r.date for r in book.rows]
    return {
        "file": book.file,
        "imported": book.imported.isoformat(),
        "quotes": len(book.rows),
        "oldest": min(dates).isoformat(),
        "newest": max(dates).isoformat(),
        "max_age_days": book.max_age_days,
        "stale_rows": [r.row for r in book.rows if book.status(r, today) == "stale"],
        "expired_rows": [r.row for r in book.rows if book.status(r, today) == "expired"],
        "items": sorted({r.item for r in book.rows}),
    }
