"""The stock at a date: :func:`stock_at`, :func:`month_end_stock` and
:func:`stock_value_by_month`, read from a ``stock_history`` frame.

A history often covers a window (``client.lines_df(since=...)``): an item that held stock when
the window began but has no line until later is still known before that line, at its
**opening balance** -- the level of its first line in the window minus that line's change.
From the window's start (the history's first time) on, every item and location of the history
is therefore known; before it, nothing is.

>>> h = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-03-20"], utc=True),
...     "transaction_id": [1, 2], "item_id": [7, 9], "item_name": ["Mug", "Hose"],
...     "location_id": pd.array([None, None], dtype="Int64"),
...     "stock": [5.0, 8.0], "change": [5.0, -3.0]})   # the Hose held 11 before March 20
>>> stock_at(h, "2026-03-10")[["item_name", "stock"]].values.tolist()
[['Mug', 5.0], ['Hose', 11.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.typing import NaTType

from invtools._types import check_ids, check_tz
from invtools.analysis.common import (
    as_of_time,
    carry_provenance,
    check_number,
    check_reach,
    need,
    without_deleted,
)
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames import DELETED_NOTE

__all__ = ["stock_at", "month_end_stock", "stock_value_by_month"]

_SERIES = ["item_id", "location_id"]  # one stock per item (and location)
_COLUMNS = "transaction_time transaction_id item_id item_name location_id stock change"


def _ordered(history: pd.DataFrame) -> pd.DataFrame:
    """The rows that have a time, each series' rows in time order (the API's tiebreak: id)."""
    h = history[history["transaction_time"].notna().to_numpy(dtype=bool)]
    return h.sort_values(
        [*_SERIES, "transaction_time", "transaction_id"], kind="stable", na_position="last"
    )


def _openings(h: pd.DataFrame) -> pd.DataFrame:
    """Each series' first row (of an :func:`_ordered` frame), its ``stock`` replaced by the
    level before it: its stock minus its change."""
    first = h.groupby(_SERIES, dropna=False, sort=True).head(1)
    change = first["change"].to_numpy(dtype="float64", na_value=np.nan)
    return first.assign(stock=np.round(first["stock"].to_numpy(dtype="float64") - change, 9))


def stock_at(
    history: pd.DataFrame, as_of: Any = None, *, include_deleted: bool = False
) -> pd.DataFrame:
    """The stock of each item at ``as_of``: the level after its last line at or before then,
    or, for an item whose first line in the history comes later, its opening balance.

    ``history`` is a :func:`invtools.frames.stock_history` frame: for all locations (one row
    per item), one location, or ``by_location=True`` (one row per item and location).
    ``as_of`` is a time (naive means UTC; a date is its midnight, so ``"2026-07-01"`` is the
    stock at the end of June 30; ``"30D"`` is 30 days ago); default the newest time in the
    history, i.e. the stock now.

    Every item (and location) of the history whose stock is known at ``as_of`` is listed:

    - with a line at or before ``as_of``: the level after the last one; ``last_change`` is
      its time;
    - without one, when ``as_of`` is at or after the history's first time (the start of its
      window, for a ``since=`` history): its **opening balance**, the level of its first line
      minus that line's change (an item that held 11 and sold nothing until after ``as_of`` had
      11; in a full history, an item not yet stocked had 0); ``last_change`` is NaT;
    - before the history's first time nothing is known and nothing is listed.

    Columns: item_id, item_name, location_id, stock, last_change. Sorted by item and location.
    Deleted items are left out unless ``include_deleted`` (said: see
    :mod:`invtools.analysis`); the history's provenance is carried on.

    >>> lines = client.lines_df(since="2026-10-01")
    >>> at = stock_at(invtools.frames.stock_history(lines, by_location=True), "2026-10-15")
    >>> at.columns.tolist()
    ['item_id', 'item_name', 'location_id', 'stock', 'last_change']
    >>> bool((at["last_change"].dropna() < pd.Timestamp("2026-10-15", tz="UTC")).all())
    True
    """
    need(history, "history", _COLUMNS, who="stock_at")
    when = as_of_time(as_of, history["transaction_time"], who="stock_at")
    h = _ordered(history)
    last = (
        h[(h["transaction_time"] <= when).to_numpy(dtype=bool)]
        .groupby(_SERIES, dropna=False, sort=True)
        .tail(1)
    )
    found = last.assign(last_change=last["transaction_time"])
    if len(h) and when >= h["transaction_time"].min():
        opening = _openings(h)
        later = opening[(opening["transaction_time"] > when).to_numpy(dtype=bool)]
        unknown = pd.Series(pd.NaT, index=later.index, dtype=h["transaction_time"].dtype)
        found = pd.concat([found, later.assign(last_change=unknown)])
    found = found.sort_values(_SERIES, kind="stable", na_position="last")
    out = pd.DataFrame(
        {
            "item_id": found["item_id"].astype("Int64").array,
            "item_name": found["item_name"].astype("string").array,
            "location_id": found["location_id"].astype("Int64").array,
            "stock": found["stock"].to_numpy(dtype="float64"),
            "last_change": found["last_change"].array,
        }
    )
    out = without_deleted(out, history, include=include_deleted, who="stock_at")
    return carry_provenance(out, history, who="stock_at")


def _month_end_levels(
    history: pd.DataFrame, start: pd.Timestamp, until: pd.Timestamp | NaTType, tz: str
) -> tuple[pd.PeriodIndex, pd.DataFrame]:
    """(months, levels): every month from ``start``'s (the history's first time, in ``tz``)
    to ``until``'s, and each series' stock at each month's last instant (at ``until`` for
    the last month): one column per (item_id, location_id), its opening balance before its
    first line."""
    h = _ordered(history)
    # (a history with a time has a newest one: ``until`` is NaT only when ``start`` is too)
    if not len(h) or pd.isna(start) or isinstance(until, NaTType):
        empty = pd.PeriodIndex([], freq="M")
        return empty, pd.DataFrame(
            index=empty, columns=pd.MultiIndex.from_arrays([[], []]), dtype="float64"
        )

    first = pd.Timestamp(start).tz_convert(tz).tz_localize(None).to_period("M")
    end = pd.Timestamp(until).tz_convert(tz).tz_localize(None).to_period("M")
    span = pd.period_range(first, max(first, end), freq="M")
    # The opening balances go in as the levels of the month before the first: carried
    # forward, they are each series' level until its first line.
    opening = _openings(h)
    seen = h[(h["transaction_time"] <= until).to_numpy(dtype=bool)]
    both = pd.concat([opening, seen], ignore_index=True)
    month = both["transaction_time"].dt.tz_convert(tz).dt.tz_localize(None).dt.to_period("M")
    month = month.copy()  # its own (pandas 2 warns on setting into a .dt result)
    month.iloc[: len(opening)] = first - 1
    rows = pd.DataFrame(
        {"month": month.to_numpy(), "stock": both["stock"].to_numpy(dtype="float64")},
        index=pd.MultiIndex.from_arrays([both[c].astype("Int64") for c in _SERIES]),
    )
    # rows are in time order within each series (its opening first): the last is the level
    levels = rows.groupby(["month", rows.index], sort=True)["stock"].last().unstack()
    levels = levels.reindex(pd.period_range(first - 1, span[-1], freq="M")).ffill()
    return span, levels.iloc[1:]


def _month_ends(span: pd.PeriodIndex, until: pd.Timestamp | NaTType, tz: str):
    """Each month's last instant in ``tz`` (as UTC, ms), the last month's cut at ``until``."""
    next_start = (
        (span + 1).to_timestamp().tz_localize(tz, nonexistent="shift_forward", ambiguous="NaT")
    )
    as_of = (next_start - pd.Timedelta(milliseconds=1)).tz_convert("UTC")
    # stubs: DatetimeIndex works with numpy ufuncs such as np.minimum (__array_ufunc__)
    return pd.array(
        np.minimum(as_of.as_unit("ms"), until),  # type: ignore[call-overload]
        dtype="datetime64[ms, UTC]",
    )


def _check_months(
    history: pd.DataFrame, until: Any, periods: int | None, tz: str, *, who: str, strict: bool
) -> None:
    """Say so when the month ends asked for (the last ``periods``, or those of the history)
    reach outside the window the history's lines were fetched with: a month's end before the
    window starts is not known (docs/explanation/now.md)."""
    if pd.isna(until):
        return
    last = until.tz_convert(tz).tz_localize(None).to_period("M")
    months = pd.period_range(end=last, periods=periods or 1)
    first = _month_ends(months, until, tz)[0]
    question = f"month-end stock as of {until:%d %b %Y}"
    if periods:
        question = f"month-end stock of the last {periods} months as of {until:%d %b %Y}"
    check_reach(history, first, until, question=question, who=who, strict=strict)


def month_end_stock(
    history: pd.DataFrame,
    periods: int | None = 12,
    *,
    item_ids: Any = None,
    tz: str = "UTC",
    as_of: Any = None,
    wide: bool = True,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The stock of each item at the end of each of the last ``periods`` months: one row per
    month end, one column per item (``wide=False``: one row per month and item).

    ``history`` is a :func:`invtools.frames.stock_history` frame (for all locations, one, or
    ``by_location=True``: an item's locations are added up). A month's figure is
    :func:`stock_at` its last instant in ``tz`` (a zone name such as ``"Europe/Paris"``);
    the last month's is the stock at ``as_of`` (default the end of the window the lines were
    fetched with, else the newest time in the history: docs/explanation/now.md). Month ends
    asked for before that window starts (the last 12 of a ``since="90D"`` frame) are said
    (:class:`~invtools.errors.WindowWarning`; ``strict=True`` raises).
    Opening balances count, so a history of a window (``client.lines_df(since=...)``) gives
    every item present in it the same figures as the full history would, from the window's first
    month on; months before the history's
    first are not listed (``periods=None``: every month since then). ``item_ids``: the items
    to keep (a list of ids, one id, or an items frame's ``id`` column); default all.

    Wide (default): index ``month`` (``"2026-05"``), one float64 column per item, labelled
    by its name (an item without a name, or sharing it, adds its id: ``"Mug (#12)"``), in
    item id order. Long: columns month, as_of (the instant measured, UTC), item_id,
    item_name, stock. Deleted items are left out unless ``include_deleted`` (said); the
    history's provenance is carried on.

    >>> history = invtools.frames.stock_history(client.lines_df(since="2026-09-01"))
    >>> table = month_end_stock(history, periods=2)
    >>> table.index.tolist(), table.shape[1] == history["item_id"].nunique()
    (['2026-09', '2026-10'], True)
    >>> month_end_stock(history, 2, item_ids=[100012], wide=False).columns.tolist()
    ['month', 'as_of', 'item_id', 'item_name', 'stock']
    """
    who = "month_end_stock"
    need(history, "history", _COLUMNS, who=who)
    if periods is not None and check_number(periods, who=who, name="periods", whole=True) < 1:
        raise ConfigError(
            f"{who}: periods={periods!r} must be a positive whole number of "
            "months (or None for every month of the history)."
        )
    if isinstance(item_ids, pd.DataFrame):
        raise ArgumentTypeError(
            f"{who}: item_ids takes ids, not a frame: pass items['id'] for the "
            "items of an items frame"
        )
    wanted = check_ids(item_ids, name=f"{who}: item_ids")
    tz = check_tz(tz, who)
    if not isinstance(wide, (bool, np.bool_)):
        raise ArgumentTypeError(f"{who}: wide must be True or False, not {type(wide).__name__}")
    until = as_of_time(as_of, history["transaction_time"], who=who, frame=history)
    _check_months(history, until, periods, tz, who=who, strict=strict)
    start = history["transaction_time"].min()  # the window's start, whatever items are kept
    h = history.reset_index(drop=True)
    if wanted is not None:
        h = h[h["item_id"].isin(wanted).to_numpy(dtype=bool)]
    h = without_deleted(h.reset_index(drop=True), h, include=include_deleted, who=who)
    span, levels = _month_end_levels(h, start, until, tz)
    # the columns are (item_id, location_id) pairs: an item's locations added up
    # stubs type the labels str, but they are (item_id, location_id) tuples of ints
    item_of = pd.array([k[0] for k in levels.columns], dtype="Int64")  # type: ignore[call-overload]
    per_item = levels.T.groupby(item_of, sort=True).sum(min_count=1).T
    ids = [int(i) for i in per_item.columns]
    names = (
        h.dropna(subset=["item_name"])
        .drop_duplicates("item_id", keep="last")
        .set_index("item_id")["item_name"]
        .astype(object)
    ).reindex(ids)
    if periods is not None:
        span, per_item = span[-periods:], per_item.iloc[-periods:]
    months = [str(m) for m in span.strftime("%Y-%m")]
    if wide:
        # plain text labels, the Index type pandas infers: the one read_parquet gives back
        out = pd.DataFrame(
            per_item.to_numpy(dtype="float64"),
            index=pd.Index(months, name="month"),
            columns=pd.Index(_labels(ids, names), name="item"),
        )
    else:
        month, item = np.divmod(np.arange(per_item.size), len(ids))  # of each row
        out = pd.DataFrame(
            {
                "month": pd.array(months, dtype="string")[month],
                "as_of": _month_ends(span, until, tz)[month],
                "item_id": pd.array(ids, dtype="Int64")[item],
                "item_name": pd.array(names.to_numpy(dtype=object), dtype="string")[item],
                "stock": per_item.to_numpy(dtype="float64").ravel(),
            }
        )
    out.attrs[DELETED_NOTE] = h.attrs[DELETED_NOTE]
    return carry_provenance(out, history, who="month_end_stock")


def _labels(ids: list[int], names: pd.Series) -> list[str]:
    """An item's name, or ``"name (#id)"`` where the name is not unique, ``"#id"`` where it
    is missing."""
    text = pd.Series(names.to_numpy(dtype=object), dtype="string")
    tag = pd.Series([f"#{i}" for i in ids], dtype="string")
    shared = (text.duplicated(keep=False) & text.notna()).to_numpy(dtype=bool)
    return text.mask(shared, text + " (" + tag + ")").fillna(tag).tolist()


def stock_value_by_month(
    history: pd.DataFrame,
    items: pd.DataFrame,
    *,
    tz: str = "UTC",
    as_of: Any = None,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """Units in stock and their value at cost and at price at the end of every month, from
    the history's first month to ``as_of`` (default the end of the window the lines were
    fetched with, else the newest time in the history; an ``as_of`` outside that window is
    said, or with ``strict=True`` raised: docs/explanation/now.md).

    ``history`` is a :func:`invtools.frames.stock_history` frame (for all locations, or
    ``by_location=True``: the locations are added up); ``items`` an items frame, for ``cost``
    and ``price`` -- today's: the history does not say what an item cost in the past. A
    month's value is :func:`stock_at` its last instant (in ``tz``), counting positive stock
    only, as :func:`stock_value` does; the last month's is the value at ``as_of``, so with
    the whole history it agrees with ``stock_value(client.stock_df(), items)`` today. Months
    without a line carry the stock over, and an item's opening balance counts before its
    first line (a history of a window values the stock its items held when it began).
    Columns: month (``"2026-05"``), as_of (the instant measured, UTC), items (distinct items
    in stock), units, value_at_cost, value_at_price. Deleted items are left out unless
    ``include_deleted`` (said: see :mod:`invtools.analysis`; they have no cost in ``items``
    anyway).

    >>> monthly = stock_value_by_month(invtools.frames.stock_history(
    ...     client.lines_df(since="2026-09-01")), client.items_df())
    >>> monthly["month"].tolist()
    ['2026-09', '2026-10']
    """
    who = "stock_value_by_month"
    need(history, "history", _COLUMNS, who=who)
    need(items, "items", "id cost price", who=who)
    tz = check_tz(tz, who)
    until = as_of_time(as_of, history["transaction_time"], who=who, frame=history)
    _check_months(history, until, None, tz, who=who, strict=strict)
    h = without_deleted(history.reset_index(drop=True), history, include=include_deleted, who=who)
    span, levels = _month_end_levels(h, history["transaction_time"].min(), until, tz)
    item_of = [k[0] for k in levels.columns]  # (item_id, location_id) pairs
    prices = items.drop_duplicates("id").set_index("id")[["cost", "price"]].reindex(item_of)
    cost, price = np.nan_to_num(prices.to_numpy(dtype="float64")).T
    amounts = np.nan_to_num(levels.clip(lower=0).to_numpy(dtype="float64"))  # positive stock
    in_stock = pd.DataFrame(amounts > 0, columns=item_of).T.groupby(level=0).any().sum()
    out = pd.DataFrame(
        {
            "month": span.strftime("%Y-%m").astype("string").array,
            "as_of": _month_ends(span, until, tz),
            "items": pd.array(in_stock.to_numpy(), dtype="int64"),
            "units": amounts.sum(axis=1),
            "value_at_cost": amounts @ cost,
            "value_at_price": amounts @ price,
        }
    )
    out.attrs[DELETED_NOTE] = h.attrs[DELETED_NOTE]
    return carry_provenance(out, history, items, who="stock_value_by_month")
