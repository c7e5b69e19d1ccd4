"""Memoisation by record identity, for derivations every calculator call needs from a catalog record."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")
T = TypeVar("T")


def per_record(fn: Callable[[R], T]) -> Callable[[R], T]:
    """Memoise a function of one record by the record's identity.

    Catalog and generic records are long-lived singletons, and hashing a pydantic record hashes every field
    (slower than most derivations it would save). The record is kept beside its value, so a recycled id()
    can never return another record's value.
    """
    cache: dict[int, tuple[R, T]] = {}

    @functools.wraps(fn)
    def memoised(record: R) -> T:
        hit = cache.get(id(record))
        if hit is not None and hit[0] is record:
            return hit[1]
        if len(cache) > 4096:
            cache.clear()
        value = fn(record)
        cache[id(record)] = (record, value)
        return value

    return memoised
