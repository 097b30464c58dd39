"""The stock at a date: :func:`stock_at`, read from a ``stock_history`` frame, per item (all
locations) or per item and location. The stock at every period's end is in
:mod:`invtools.analysis.periods`.

A history often covers a window (``client.lines_df(since=...)``): an item that held stock when
the window began but has no line until later is still known before that line, at its
**opening balance** -- the level of its first line in the window minus that line's change
(:func:`invtools.frames.stock.opening_levels`). From the window's start on (the ``since`` its
lines were fetched with, kept when a few items are picked; else the history's first time:
:func:`invtools.frames.stock.known_from`), every item and location of the history is
therefore known; before it, nothing is.

>>> h = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-03-20"], utc=True),
...     "transaction_id": [1, 2], "item_id": [7, 9], "item_name": ["Mug", "Hose"],
...     "location_id": pd.array([None, None], dtype="Int64"),
...     "stock": [5.0, 8.0], "change": [5.0, -3.0]})   # the Hose held 11 before March 20
>>> stock_at(h, as_of="2026-03-10")[["item_name", "stock"]].values.tolist()
[['Mug', 5.0], ['Hose', 11.0]]
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools.analysis.common import as_of_time, carry_provenance, need, without_deleted
from invtools.frames.stock import SERIES, in_series_order, known_from, opening_levels

__all__ = ["stock_at"]

_COLUMNS = "transaction_time transaction_id item_id item_name location_id stock change"


def _locations(found: pd.DataFrame) -> Any:
    """The ``location_name`` of each row (all <NA> for a history without one)."""
    names = found.get("location_name", pd.Series(pd.NA, index=found.index, dtype="string"))
    return names.astype("string").array


def stock_at(
    history: pd.DataFrame, *, as_of: Any = None, include_deleted: bool = False
) -> pd.DataFrame:
    """The stock of each item at ``as_of``: the level after its last line at or before then,
    or, for an item whose first line in the history comes later, its opening balance.

    ``history`` is a :func:`invtools.frames.stock_history` frame: for all locations (one row
    per item), one location, or ``by_location=True`` (one row per item and location).
    ``as_of`` is a time (naive means UTC; a date is its midnight, so ``"2026-07-01"`` is the
    stock at the end of June 30; ``"30D"`` is 30 days before the moment the history is as of);
    default that moment (the lines', kept when a few items are picked; else the newest time in
    the history: docs/explanation/now.md), i.e. the stock now.

    The levels are the history's, so its lines' (:func:`invtools.frames.stock_history`:
    anchored at the current stock for a ``client.lines_df(since=...)`` without ``type`` or
    ``until``, else said by a :class:`~invtools.errors.LevelsWarning` when its lines were
    fetched). Every item (and location) of the history whose stock is known at ``as_of`` is
    listed:

    - with a line at or before ``as_of``: the level after the last one; ``last_change`` is
      its time;
    - without one, when ``as_of`` is at or after the start of the window its lines were
      fetched with (``since=``; else the history's first time): its **opening balance**, the
      level of its first line minus that line's change (an item that held 11 and sold nothing
      until after ``as_of`` had 11; in a full history, an item not yet stocked had 0);
      ``last_change`` is NaT;
    - before that nothing is known and nothing is listed.

    Columns: item_id, item_name, location_id, location_name (<NA> for all locations), stock,
    last_change. Sorted by item and location.
    Deleted items are left out unless ``include_deleted`` (said: see
    :mod:`invtools.analysis`); the history's provenance is carried on.

    >>> lines = client.lines_df(since="2026-10-01")
    >>> at = stock_at(invtools.frames.stock_history(lines, by_location=True), as_of="2026-10-15")
    >>> at.columns.tolist()
    ['item_id', 'item_name', 'location_id', 'location_name', 'stock', 'last_change']
    >>> bool((at["last_change"].dropna() < pd.Timestamp("2026-10-15", tz="UTC")).all())
    True
    """
    need(history, "history", _COLUMNS, who="stock_at")
    when = as_of_time(as_of, history["transaction_time"], who="stock_at", frame=history, said=False)
    h = in_series_order(history)
    last = (
        h[(h["transaction_time"] <= when).to_numpy(dtype=bool)]
        .groupby(SERIES, dropna=False, sort=True)
        .tail(1)
    )
    found = last.assign(last_change=last["transaction_time"])
    start = known_from(history)
    if len(h) and start is not None and when >= start:
        opening = opening_levels(h)
        later = opening[(opening["transaction_time"] > when).to_numpy(dtype=bool)]
        unknown = pd.Series(pd.NaT, index=later.index, dtype=h["transaction_time"].dtype)
        found = pd.concat([found, later.assign(last_change=unknown)])
    found = found.sort_values(SERIES, kind="stable", na_position="last")
    out = pd.DataFrame(
        {
            "item_id": found["item_id"].astype("Int64").array,
            "item_name": found["item_name"].astype("string").array,
            "location_id": found["location_id"].astype("Int64").array,
            "location_name": _locations(found),
            "stock": found["stock"].to_numpy(dtype="float64"),
            "last_change": found["last_change"].array,
        }
    )
    out = without_deleted(out, history, include=include_deleted, who="stock_at")
    return carry_provenance(out, history, who="stock_at")
