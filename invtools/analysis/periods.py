"""The stock at every period's end, read from a ``stock_history`` frame:
:func:`period_end_stock` (month, quarter, year, week or day ends; per item, or per item and
location), its month case :func:`month_end_stock`, and :func:`stock_value_by_month`.

Each figure is :func:`~invtools.analysis.stock_at` a period's last instant, all of them in one
pass: each series' level carried forward from period to period, its opening balance
(:func:`invtools.frames.stock.opening_levels`) before its first line.

>>> h = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-05-20"], utc=True),
...     "transaction_id": [1, 2], "item_id": [7, 7], "item_name": ["Mug", "Mug"],
...     "location_id": pd.array([1, 2], dtype="Int64"), "location_name": ["WH", "Shop"],
...     "stock": [5.0, 8.0], "change": [5.0, 8.0]})
>>> h.attrs["as_of"] = "2026-06-30"                # the moment the lines were as of
>>> period_end_stock(h, freq="QE", by_location=True).values.tolist()   # WH, Shop
[[5.0, 0.0], [5.0, 8.0]]
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
from invtools.frames.stock import SERIES, in_series_order, known_from, opening_levels

__all__ = ["period_end_stock", "month_end_stock", "stock_value_by_month"]

_COLUMNS = "transaction_time transaction_id item_id item_name location_id stock change"
#: freq -> (pandas Period frequency, the noun naming one period); "W-SAT" and the like too.
_PERIODS = {
    "D": ("D", "day"),
    "W": ("W-SUN", "week"),
    **dict.fromkeys(("M", "ME"), ("M", "month")),
    **dict.fromkeys(("Q", "QE"), ("Q-DEC", "quarter")),
    **dict.fromkeys(("Y", "YE", "A"), ("Y-DEC", "year")),
}
#: How a period is labelled: a month "2026-05", a quarter "2026Q2", a year "2026", a week or
#: a day by its last day.
_LABELS = {
    "month": "%Y-%m",
    "quarter": "%FQ%q",
    "year": "%Y",
    "week": "%Y-%m-%d",
    "day": "%Y-%m-%d",
}


def _period_end_levels(
    history: pd.DataFrame,
    start: pd.Timestamp | None,
    until: pd.Timestamp | NaTType,
    tz: str,
    freq: str = "M",
) -> tuple[pd.PeriodIndex, pd.DataFrame]:
    """(periods, levels): every period of ``freq`` (a pandas Period frequency) from
    ``start``'s (:func:`~invtools.frames.stock.known_from`, in ``tz``) to ``until``'s, and
    each series' stock at each period's last instant (at ``until`` for the last period): one
    column per (item_id, location_id), its opening balance before its first line."""
    h = in_series_order(history)
    # (a history with a time has a newest one: ``until`` is NaT only when ``start`` is None)
    if not len(h) or start is None or isinstance(until, NaTType):
        empty = pd.PeriodIndex([], freq=freq)
        return empty, pd.DataFrame(
            index=empty, columns=pd.MultiIndex.from_arrays([[], []]), dtype="float64"
        )
    first = pd.Timestamp(start).tz_convert(tz).tz_localize(None).to_period(freq)
    end = pd.Timestamp(until).tz_convert(tz).tz_localize(None).to_period(freq)
    span = pd.period_range(first, max(first, end), freq=freq)
    # The opening balances go in as the levels of the period before the first: carried
    # forward, they are each series' level until its first line.
    opening = opening_levels(h)
    seen = h[(h["transaction_time"] <= until).to_numpy(dtype=bool)]
    both = pd.concat([opening, seen], ignore_index=True)
    local = both["transaction_time"].dt.tz_convert(tz).dt.tz_localize(None)
    period = local.dt.to_period(freq).copy()  # its own (pandas 2 warns on setting into .dt)
    period.iloc[: len(opening)] = first - 1
    rows = pd.DataFrame(
        {"period": period.to_numpy(), "stock": both["stock"].to_numpy(dtype="float64")},
        index=pd.MultiIndex.from_arrays([both[c].astype("Int64") for c in SERIES]),
    )
    # rows are in time order within each series (its opening first): the last is the level
    levels = rows.groupby(["period", rows.index], sort=True)["stock"].last().unstack()
    levels = levels.reindex(pd.period_range(first - 1, span[-1], freq=freq)).ffill()
    return span, levels.iloc[1:]


def _period_ends(span: pd.PeriodIndex, until: pd.Timestamp | NaTType, tz: str):
    """Each period's last instant in ``tz`` (as UTC, ms), the last period's cut at ``until``."""
    next_start = (
        (span + 1).to_timestamp().tz_localize(tz, nonexistent="shift_forward", ambiguous="NaT")
    )
    as_of = (next_start - pd.Timedelta(milliseconds=1)).tz_convert("UTC")
    # stubs: DatetimeIndex works with numpy ufuncs such as np.minimum (__array_ufunc__)
    return pd.array(
        np.minimum(as_of.as_unit("ms"), until),  # type: ignore[call-overload]
        dtype="datetime64[ms, UTC]",
    )


def _check_periods(
    history: pd.DataFrame,
    until: Any,
    periods: int | None,
    tz: str,
    freq: tuple[str, str],
    *,
    who: str,
    strict: bool,
) -> None:
    """Say so when the period ends asked for (the last ``periods``, or those of the history)
    reach outside the window the history's lines were fetched with: a period's end before
    the window starts is not known (docs/explanation/now.md)."""
    if pd.isna(until):
        return
    (kind, noun), at = freq, f"as of {until:%d %b %Y}"
    last = until.tz_convert(tz).tz_localize(None).to_period(kind)
    # periods back to 1970 at most: an absurd number asks for lines from then all the same
    back = min(periods or 1, max(1, (last - pd.Period("1970-01-01", freq=kind)).n + 1))
    first = _period_ends(pd.period_range(end=last, periods=back, freq=kind), until, tz)[0]
    question = f"{noun}-end stock {at}"
    if periods:
        question = f"{noun}-end stock of the last {periods} {noun}s {at}"
    check_reach(history, first, until, question=question, who=who, strict=strict)


def _period(freq: Any, *, who: str) -> tuple[str, str]:
    """``freq`` as (pandas Period frequency, noun): "ME" ("M"), "QE" ("Q"), "YE" ("Y"), "W"
    (weeks ending Sunday; "W-SAT" ...) or "D"; else a ConfigError saying which."""
    upper = freq.strip().upper() if isinstance(freq, str) else None
    if upper in _PERIODS:
        return _PERIODS[upper]
    if upper and upper[:2] == "W-" and upper[2:] in ("MON TUE WED THU FRI SAT SUN").split():
        return upper, "week"
    raise ConfigError(
        f"{who}: freq={freq!r} is not a period whose end it can measure; use 'ME' (month "
        "ends), 'QE' (quarter ends), 'YE' (year ends), 'W' (weeks ending Sunday; 'W-SAT' ...) "
        "or 'D' (days)."
    )


def period_end_stock(
    history: pd.DataFrame,
    *,
    freq: str = "ME",
    periods: int | None = 12,
    by_location: bool = False,
    item_ids: Any = None,
    tz: str = "UTC",
    as_of: Any = None,
    wide: bool = True,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The stock of each item (``by_location=True``: of each item at each location) at the end
    of each of the last ``periods`` periods of ``freq``: ``"ME"`` month ends, ``"QE"``
    quarter ends, ``"YE"`` year ends, ``"W"`` weeks (ending Sunday; ``"W-SAT"`` ...), ``"D"``
    days. One row per period end, one column per item (``wide=False``: one row per period and
    item, or item and location). What a loop of :func:`stock_at` and a pivot would give.

    ``history`` is a :func:`invtools.frames.stock_history` frame: for all locations, one, or
    ``by_location=True`` -- whose locations are added up unless ``by_location=True`` is
    given here too (a history of all locations has none to split: refused, saying what to
    pass). A period's figure is :func:`stock_at` its last instant in ``tz`` (a zone name such
    as ``"Europe/Paris"``); the last period's is the stock at ``as_of`` (default the moment
    the history is as of: docs/explanation/now.md). Period ends asked for before the window
    the lines were fetched with starts (the last 12 months of a ``since="90D"`` frame) are
    said (:class:`~invtools.errors.WindowWarning`; ``strict=True`` raises). Opening balances
    count, so a history of a window gives every item present in it the same figures as the
    full history would, from the window's first period on; periods before it are not listed
    (``periods=None``: every period since then). ``item_ids``: the items to keep (a list of
    ids, one id, or an items frame's ``item_id`` column); default all. The levels are the
    history's lines' (anchored at the current stock, or said: :func:`stock_at`).

    Wide (default): index named by the period (``month`` ``"2026-05"``, ``quarter``
    ``"2026Q2"``, ``year`` ``"2026"``, ``week``/``day`` by its last day ``"2026-05-31"``), one
    float64 column per item, labelled by its name (an item without a name, or sharing it,
    adds its id: ``"Mug (#12)"``), in item id order; ``by_location``: columns ``(item,
    location)``, the location by its name. Long: columns <period>, as_of (the instant
    measured, UTC), item_id, item_name (``by_location``: location_id, location_name), stock.
    Deleted items are left out unless ``include_deleted`` (said); the history's provenance is
    carried on.

    >>> history = invtools.frames.stock_history(client.lines_df(since="2026-04-01"),
    ...                                         by_location=True)
    >>> table = period_end_stock(history, freq="QE", periods=2, by_location=True)
    >>> table.index.tolist(), list(table.columns.names)
    (['2026Q3', '2026Q4'], ['item', 'location'])
    >>> long = period_end_stock(history, freq="QE", periods=2, by_location=True, wide=False)
    >>> long.columns.tolist()
    ['quarter', 'as_of', 'item_id', 'item_name', 'location_id', 'location_name', 'stock']
    """
    return _period_table(
        history,
        _period(freq, who="period_end_stock"),
        periods,
        by_location,
        item_ids,
        tz,
        as_of,
        wide,
        include_deleted,
        strict,
        who="period_end_stock",
    )


def month_end_stock(
    history: pd.DataFrame,
    *,
    periods: int | None = 12,
    by_location: bool = False,
    item_ids: Any = None,
    tz: str = "UTC",
    as_of: Any = None,
    wide: bool = True,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The stock of each item (``by_location=True``: at each location) at the end of each of
    the last ``periods`` months: :func:`period_end_stock` with ``freq="ME"``, its index and
    first long column ``month`` (``"2026-05"``). See there for everything else.

    >>> history = invtools.frames.stock_history(client.lines_df(since="2026-09-01"))
    >>> table = month_end_stock(history, periods=2)
    >>> table.index.tolist(), table.shape[1] == history["item_id"].nunique()
    (['2026-09', '2026-10'], True)
    >>> month_end_stock(history, periods=2, item_ids=[100012], wide=False).columns.tolist()
    ['month', 'as_of', 'item_id', 'item_name', 'stock']
    """
    return _period_table(
        history,
        _PERIODS["ME"],
        periods,
        by_location,
        item_ids,
        tz,
        as_of,
        wide,
        include_deleted,
        strict,
        who="month_end_stock",
    )


def _period_table(
    history: pd.DataFrame,
    freq: tuple[str, str],
    periods: Any,
    by_location: Any,
    item_ids: Any,
    tz: Any,
    as_of: Any,
    wide: Any,
    include_deleted: bool,
    strict: bool,
    *,
    who: str,
) -> pd.DataFrame:
    """:func:`period_end_stock`'s table, for the function the user called (``who``)."""
    kind, noun = freq
    need(history, "history", _COLUMNS, who=who)
    if periods is not None and check_number(periods, who=who, name="periods", whole=True) < 1:
        raise ConfigError(
            f"{who}: periods={periods!r} must be a positive whole number of "
            f"{noun}s (or None for every {noun} of the history)."
        )
    if isinstance(item_ids, pd.DataFrame):
        raise ArgumentTypeError(
            f"{who}: item_ids takes ids, not a frame: pass items['item_id'] for the "
            "items of an items frame"
        )
    wanted = check_ids(item_ids, name=f"{who}: item_ids")
    tz = check_tz(tz, who)
    for name, flag in (("wide", wide), ("by_location", by_location)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ArgumentTypeError(
                f"{who}: {name} must be True or False, not {type(flag).__name__}"
            )
    if by_location and not history["location_id"].notna().any():
        raise ConfigError(
            f"{who}: by_location=True needs a history per location; this one is of all "
            "locations (location_id <NA>). Pass invtools.frames.stock_history(lines, "
            "by_location=True), or leave by_location out for each item's stock everywhere."
        )
    until = as_of_time(as_of, history["transaction_time"], who=who, frame=history)
    _check_periods(history, until, periods, tz, freq, who=who, strict=strict)
    h = history.reset_index(drop=True)
    if wanted is not None:
        h = h[h["item_id"].isin(wanted).to_numpy(dtype=bool)]
    h = without_deleted(h.reset_index(drop=True), h, include=include_deleted, who=who)
    # from the window's start, whatever items are kept
    span, levels = _period_end_levels(h, known_from(history), until, tz, kind)
    # the columns are (item_id, location_id) pairs: an item's locations added up unless asked
    # stubs type the labels str, but they are (item_id, location_id) tuples of ints
    item_of = pd.array([k[0] for k in levels.columns], dtype="Int64")  # type: ignore[call-overload]
    if not by_location:
        levels = levels.T.groupby(item_of, sort=True).sum(min_count=1).T
        levels.columns = pd.MultiIndex.from_arrays([levels.columns, [pd.NA] * levels.shape[1]])
    keys = list(levels.columns)
    ids = [int(k[0]) for k in keys]
    locs = [None if pd.isna(k[1]) else int(k[1]) for k in keys]
    items = _newest(h, "item_id", "item_name").reindex(ids)
    places = _newest(h, "location_id", "location_name").reindex(locs)
    if periods is not None:
        span, levels = span[-periods:], levels.iloc[-periods:]
    labels = [str(p) for p in span.strftime(_LABELS[noun])]
    if wide:
        # plain text labels, the Index type pandas infers: the one read_parquet gives back
        columns = pd.Index(_labels(ids, items), name="item")
        if by_location:
            where = [f"location {i}" if i is not None else "all locations" for i in locs]
            named = places.astype(object).where(places.notna(), where)
            columns = pd.MultiIndex.from_arrays(
                [columns, _labels(locs, named)], names=["item", "location"]
            )
        out = pd.DataFrame(
            levels.to_numpy(dtype="float64"), index=pd.Index(labels, name=noun), columns=columns
        )
    else:
        row, col = np.divmod(np.arange(levels.size), len(keys))  # of each row
        long = {
            noun: pd.array(labels, dtype="string")[row],
            "as_of": _period_ends(span, until, tz)[row],
            "item_id": pd.array(ids, dtype="Int64")[col],
            "item_name": pd.array(items.to_numpy(dtype=object), dtype="string")[col],
        }
        if by_location:
            long["location_id"] = pd.array(locs, dtype="Int64")[col]
            long["location_name"] = pd.array(places.to_numpy(dtype=object), dtype="string")[col]
        long["stock"] = levels.to_numpy(dtype="float64").ravel()
        out = pd.DataFrame(long)
    out.attrs[DELETED_NOTE] = h.attrs[DELETED_NOTE]
    return carry_provenance(out, history, who=who)


def _newest(h: pd.DataFrame, key: str, name: str) -> pd.Series:
    """Each ``key``'s ``name`` as its newest row gives it (object values; a frame without the
    column: none)."""
    if name not in h.columns:
        return pd.Series(dtype=object)
    rows = h.dropna(subset=[key, name]).sort_values("transaction_time", kind="stable")
    named = rows.drop_duplicates(key, keep="last")
    return pd.Series(named[name].to_numpy(dtype=object), index=named[key].astype(int).tolist())


def _labels(ids: list[Any], names: pd.Series) -> list[str]:
    """The label of each of ``ids`` (aligned with ``names``; an id may repeat, as an item does
    over its locations): its name, or ``"name (#id)"`` where two ids share the name, ``"#id"``
    where it is missing."""
    each = pd.DataFrame({"id": ids, "name": names.to_numpy(dtype=object)}).drop_duplicates("id")
    text = pd.Series(each["name"].to_numpy(dtype=object), dtype="string")
    tag = pd.Series([f"#{i}" for i in each["id"]], dtype="string")
    shared = (text.duplicated(keep=False) & text.notna()).to_numpy(dtype=bool)
    label = dict(
        zip(each["id"], text.mask(shared, text + " (" + tag + ")").fillna(tag), strict=True)
    )
    return [label[i] for i in ids]


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
    need(items, "items", "item_id cost price", who=who)
    tz = check_tz(tz, who)
    until = as_of_time(as_of, history["transaction_time"], who=who, frame=history)
    _check_periods(history, until, None, tz, _PERIODS["ME"], who=who, strict=strict)
    h = without_deleted(history.reset_index(drop=True), history, include=include_deleted, who=who)
    span, levels = _period_end_levels(h, known_from(history), until, tz)
    item_of = [k[0] for k in levels.columns]  # (item_id, location_id) pairs
    prices = (
        items.drop_duplicates("item_id").set_index("item_id")[["cost", "price"]].reindex(item_of)
    )
    cost, price = np.nan_to_num(prices.to_numpy(dtype="float64")).T
    amounts = np.nan_to_num(levels.clip(lower=0).to_numpy(dtype="float64"))  # positive stock
    in_stock = pd.DataFrame(amounts > 0, columns=item_of).T.groupby(level=0).any().sum()
    out = pd.DataFrame(
        {
            "month": span.strftime("%Y-%m").astype("string").array,
            "as_of": _period_ends(span, until, tz),
            "items": pd.array(in_stock.to_numpy(), dtype="int64"),
            "units": amounts.sum(axis=1),
            "value_at_cost": amounts @ cost,
            "value_at_price": amounts @ price,
        }
    )
    out.attrs[DELETED_NOTE] = h.attrs[DELETED_NOTE]
    return carry_provenance(out, history, items, who="stock_value_by_month")
