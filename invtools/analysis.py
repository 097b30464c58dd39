"""Stock investigations on the typed frames: stock-outs, restocking times, movers, stock value.

Pure functions over the frames of :mod:`invtools.frames` (no HTTP): what the example notebooks
ask of the data more than once lives here, not in the notebooks.

- :func:`stockouts` — one row per out-of-stock episode, from a ``stock_history`` frame.
- :func:`stockout_summary` — per item: how often it ran out, for how long, how long restocking
  took.
- :func:`movement` — per item: received, sold, adjusted, last sale, days since; with the items
  frame also stock on hand and its value; ``dead`` flags stock that did not sell.
- :func:`stock_value` — units and value of the stock per location.
- :func:`stock_at` — the stock of each item (and location) at a given time, from a history.
- :func:`stock_value_by_month` — units and value of the stock at each month's end.

"As of" defaults to the newest time in the data rather than the wall clock, so a question asked
of a fixed download (or of the demo data) always gives the same answer; pass
``as_of=pd.Timestamp.now(tz="UTC")`` to measure up to today.

Deleted items (gone from ``items_df()``, their old lines flagged ``item_deleted``) are left out
of every result about items by default; ``include_deleted=True`` keeps them. When some were
left out, a :class:`~invtools.errors.DeletedItemsWarning` names them and the result's
``attrs["deleted_items_excluded"]`` lists their ids (see :mod:`invtools.frames.deleted`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.errors import ConfigError
from invtools.frames import deleted_items, leave_out_deleted

__all__ = ["stockouts", "stockout_summary", "movement", "stock_value", "stock_at",
           "stock_value_by_month"]

_DAY = pd.Timedelta(days=1)


def _need(df: pd.DataFrame, columns: list[str], what: str, hint: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{what} must be a DataFrame, not {type(df).__name__}. {hint}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{what} lacks the column(s) {missing}. {hint}")


def _as_of(value: Any, times: pd.Series) -> pd.Timestamp:
    if value is None:
        return times.max() if len(times) else pd.NaT
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def stockouts(history: pd.DataFrame, *, as_of: Any = None,
              include_deleted: bool = False) -> pd.DataFrame:
    """Every out-of-stock episode: when an item's stock reached zero (or below) and when it
    came back.

    ``history`` is a :func:`invtools.frames.stock_history` frame (for all locations, or one).
    Columns: item_id, item_name, location_id, out_at, restocked_at (NaT while still out),
    days_out (until the restock, or until ``as_of`` for an item still out), still_out.
    Deleted items are left out unless ``include_deleted`` (said: see the module's docstring).

    >>> h = pd.DataFrame({"transaction_time": pd.to_datetime(
    ...         ["2026-01-01", "2026-01-05", "2026-01-08", "2026-01-20"], utc=True),
    ...     "transaction_id": [1, 2, 3, 4], "item_id": [9, 9, 9, 9],
    ...     "item_name": ["Mug"] * 4, "location_id": [pd.NA] * 4,
    ...     "stock": [3.0, 0.0, 5.0, 0.0], "change": [3.0, -3.0, 5.0, -5.0]})
    >>> stockouts(h)[["days_out", "still_out"]].values.tolist()
    [[3.0, False], [0.0, True]]
    """
    return leave_out_deleted(_episodes(history, as_of), deleted_items(history),
                             include=include_deleted, who="stockouts")


def _episodes(history: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    _need(history, ["transaction_time", "item_id", "item_name", "location_id", "stock"],
          "history", "Pass invtools.frames.stock_history(lines) or mirror.stock_history().")
    as_of = _as_of(as_of, history["transaction_time"])
    keys = ["item_id", "location_id"]
    h = history.sort_values([*keys, "transaction_time", "transaction_id"], kind="stable",
                            ignore_index=True)
    out = pd.Series((h["stock"] <= 0).to_numpy(dtype=bool))
    grouped = out.groupby([h["item_id"], h["location_id"]], dropna=False, sort=False)
    prev_out = grouped.shift(fill_value=False).astype(bool)
    starts, backs = out & ~prev_out, ~out & prev_out
    # Episode n of a series opens at its n-th start; the restock closing it is the first
    # back-in-stock row after it, whose running count of starts is also n.
    episode = starts.astype(int).groupby([h["item_id"], h["location_id"]], dropna=False,
                                         sort=False).cumsum()
    opened = h.loc[starts, [*keys, "item_name", "transaction_time"]].assign(
        episode=episode[starts]).rename(columns={"transaction_time": "out_at"})
    closed = h.loc[backs, keys].assign(episode=episode[backs],
                                       restocked_at=h.loc[backs, "transaction_time"])
    result = opened.merge(closed, on=[*keys, "episode"], how="left").drop(columns="episode")
    result["location_id"] = result["location_id"].astype("Int64")
    end = result["restocked_at"].fillna(as_of)
    result["days_out"] = ((end - result["out_at"]) / _DAY).astype("float64")
    result["still_out"] = pd.array(result["restocked_at"].isna(), dtype="boolean")
    return result[["item_id", "item_name", "location_id", "out_at", "restocked_at",
                   "days_out", "still_out"]]


def stockout_summary(history: pd.DataFrame, *, as_of: Any = None,
                     include_deleted: bool = False) -> pd.DataFrame:
    """Per item that ever ran out: how often, days out of stock in all, the median days until
    restocked, whether it is out now. Sorted worst first (most days out). Deleted items are
    left out unless ``include_deleted`` (said: see the module's docstring); an item without a
    name is kept.

    Columns: item_id, item_name, stockouts, days_out, median_days_to_restock, still_out.

    >>> summary = stockout_summary(mirror.stock_history())  # or frames.stock_history(lines)
    >>> summary.columns.tolist()
    ['item_id', 'item_name', 'stockouts', 'days_out', 'median_days_to_restock', 'still_out']
    >>> summary.attrs["deleted_items_excluded"]            # ids of deleted items left out
    []
    """
    return leave_out_deleted(_summary(_episodes(history, as_of)), deleted_items(history),
                             include=include_deleted, who="stockout_summary")


def _summary(eps: pd.DataFrame) -> pd.DataFrame:
    if eps.empty:
        return pd.DataFrame({
            "item_id": pd.array([], dtype="Int64"), "item_name": pd.array([], dtype="string"),
            "stockouts": pd.array([], dtype="int64"), "days_out": pd.array([], dtype="float64"),
            "median_days_to_restock": pd.array([], dtype="float64"),
            "still_out": pd.array([], dtype="boolean")})
    restocked = eps["days_out"].where(~eps["still_out"].fillna(False).to_numpy(dtype=bool))
    # dropna=False: an item whose name is missing is still an item that ran out
    g = eps.assign(_restock=restocked).groupby(["item_id", "item_name"], observed=True,
                                               sort=False, dropna=False)
    out = g.agg(stockouts=("out_at", "size"), days_out=("days_out", "sum"),
                median_days_to_restock=("_restock", "median"),
                still_out=("still_out", "any")).reset_index()
    out["still_out"] = out["still_out"].astype("boolean")
    return out.sort_values(["days_out", "stockouts"], ascending=False,
                           ignore_index=True)


def movement(lines: pd.DataFrame, items: pd.DataFrame | None = None, *, since: Any = None,
             as_of: Any = None, dead_after_days: float = 90,
             include_deleted: bool = False) -> pd.DataFrame:
    """Per item: units received (in), sold (out), adjusted (signed) within ``since``..``as_of``,
    the last sale, days since it, and ``dead``: stock on hand that has not sold for
    ``dead_after_days``.

    ``lines`` is a :func:`invtools.frames.lines_df` frame. With ``items`` (an
    :func:`invtools.frames.items_df` frame) every item is listed, even one that never moved,
    with its stock on hand (``quantity``), ``cost`` and ``stock_value`` (quantity x cost).
    Moves between locations change no total and are left out. Sorted by units sold, slowest
    first. Deleted items are left out unless ``include_deleted`` (then listed without stock or
    cost; said: see the module's docstring).

    >>> import warnings
    >>> items = client.items_df()
    >>> with warnings.catch_warnings(record=True) as said:   # a notebook shows it anyway
    ...     warnings.simplefilter("always")
    ...     slow = movement(mirror.lines_df(), items)          # or client.lines_df()
    >>> print(said[0].message)                     # doctest: +ELLIPSIS
    movement: left out 4 deleted items (100054 'GreenThumb Seed Packet Marigold', ...); include_deleted=True keeps them
    >>> len(slow) == len(items), slow["sold"].is_monotonic_increasing
    (True, True)
    >>> dead = slow[slow["dead"]]          # stock on hand, no sale for 90 days (or ever)
    >>> len(dead) > 0, bool((dead["quantity"] > 0).all())
    (True, True)
    """
    _need(lines, ["transaction_time", "type", "item_id", "item_name", "quantity"], "lines",
          "Pass a lines frame: client.lines_df() or mirror.lines_df().")
    as_of = _as_of(as_of, lines["transaction_time"])
    window = lines
    if since is not None:
        window = lines[lines["transaction_time"] >= _as_of(since, lines["transaction_time"])]
    window = window[window["transaction_time"] <= as_of]
    kind = window["type"].astype("string")
    qty = window["quantity"].astype("float64")
    per = pd.DataFrame({
        "item_id": window["item_id"].array, "item_name": window["item_name"].array,
        "received": qty.where(kind == "in", 0.0).to_numpy(),
        "sold": qty.abs().where(kind == "out", 0.0).to_numpy(),
        "adjusted": qty.where(kind == "adjust", 0.0).to_numpy(),
        "_sale": window["transaction_time"].where(kind == "out").array,
    })
    g = per.groupby("item_id", sort=False)
    moved = pd.DataFrame({
        "item_name": g["item_name"].last(),
        "received": g["received"].sum(), "sold": g["sold"].sum(),
        "adjusted": g["adjusted"].sum(),
    })
    # the last sale ever, even one before `since`, says how long an item has been idle
    sales = lines.loc[lines["type"].astype("string") == "out"]
    last_sale = sales.groupby("item_id")["transaction_time"].max()
    if items is not None:
        _need(items, ["id", "name", "quantity", "cost"], "items",
              "Pass an items frame: client.items_df().")
        base = items.set_index("id")[["name", "quantity", "cost"]]
        # deleted items are not in `items`: kept here, left out (and said) at the end
        gone = moved[moved.index.isin(list(deleted_items(window)))
                     & ~moved.index.isin(base.index)]
        moved = pd.concat([base.join(moved, how="left"), gone])
        moved["item_name"] = moved["item_name"].fillna(moved["name"])
        moved = moved.drop(columns="name")
        for col in ("received", "sold", "adjusted"):
            moved[col] = moved[col].fillna(0.0)
        moved["stock_value"] = moved["quantity"] * moved["cost"]
    moved["last_sale"] = last_sale.reindex(moved.index)
    moved.index = pd.Index(moved.index, dtype="Int64", name="item_id")
    moved["days_since_last_sale"] = ((as_of - moved["last_sale"]) / _DAY).astype("float64")
    on_hand = moved["quantity"] > 0 if "quantity" in moved else True
    idle = moved["days_since_last_sale"].isna() | (moved["days_since_last_sale"]
                                                  > dead_after_days)
    moved["dead"] = pd.array(idle & on_hand, dtype="boolean")
    moved["item_name"] = moved["item_name"].astype("string")
    result = moved.reset_index().sort_values(["sold", "days_since_last_sale"],
                                             ascending=[True, False], ignore_index=True)
    return leave_out_deleted(result, deleted_items(lines), include=include_deleted,
                             who="movement")


def stock_value(stock: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Units on hand and their value at cost and at price, per location, largest value first.

    ``stock`` is a :func:`invtools.frames.stock_df` frame, ``items`` an items frame (for cost
    and price). Columns: location_id, location_name, items (distinct items in stock), units,
    value_at_cost, value_at_price.

    >>> value = stock_value(client.stock_df(), client.items_df())
    >>> value.columns.tolist()
    ['location_id', 'location_name', 'items', 'units', 'value_at_cost', 'value_at_price']
    >>> value["value_at_cost"].is_monotonic_decreasing
    True
    """
    _need(stock, ["item_id", "location_id", "location_name", "quantity"], "stock",
          "Pass client.stock_df().")
    _need(items, ["id", "cost", "price"], "items", "Pass client.items_df().")
    s = stock.merge(items[["id", "cost", "price"]], left_on="item_id", right_on="id",
                    how="left")
    s = s[s["quantity"] > 0]
    s = s.assign(value_at_cost=s["quantity"] * s["cost"],
                 value_at_price=s["quantity"] * s["price"])
    out = s.groupby(["location_id", "location_name"], dropna=False, observed=True).agg(
        items=("item_id", "nunique"), units=("quantity", "sum"),
        value_at_cost=("value_at_cost", "sum"), value_at_price=("value_at_price", "sum"))
    return out.reset_index().sort_values("value_at_cost", ascending=False, ignore_index=True)


_HISTORY_HINT = ("Pass invtools.frames.stock_history(lines) (by_location=True for each "
                 "location) or mirror.stock_history().")


def stock_at(history: pd.DataFrame, when: Any = None, *,
             include_deleted: bool = False) -> pd.DataFrame:
    """The stock of each item at ``when``: the level after its last line at or before then.

    ``history`` is a :func:`invtools.frames.stock_history` frame: for all locations (one row
    per item), one location, or ``by_location=True`` (one row per item and location).
    ``when`` is a time (naive means UTC; a date is its midnight, so ``"2026-07-01"`` is the
    stock at the end of June 30); default the newest time in the history, i.e. the stock now.
    An item with no line by then is not listed. Columns: item_id, item_name, location_id,
    stock, last_change (the time of that line). Deleted items are left out unless
    ``include_deleted`` (said: see the module's docstring).

    >>> lines = client.lines_df(since="2026-10-01")
    >>> at = stock_at(invtools.frames.stock_history(lines, by_location=True), "2026-10-15")
    >>> at.columns.tolist()
    ['item_id', 'item_name', 'location_id', 'stock', 'last_change']
    >>> bool((at["last_change"] < pd.Timestamp("2026-10-15", tz="UTC")).all())
    True
    """
    _need(history, ["transaction_time", "transaction_id", "item_id", "item_name",
                    "location_id", "stock"], "history", _HISTORY_HINT)
    when = _as_of(when, history["transaction_time"])
    h = history[(history["transaction_time"] <= when).fillna(False).to_numpy(dtype=bool)]
    h = h.sort_values(["item_id", "location_id", "transaction_time", "transaction_id"],
                      kind="stable", na_position="last")
    last = h.groupby(["item_id", "location_id"], dropna=False, sort=True).tail(1)
    out = pd.DataFrame({
        "item_id": last["item_id"].array, "item_name": last["item_name"].astype("string").array,
        "location_id": last["location_id"].astype("Int64").array,
        "stock": last["stock"].to_numpy(dtype="float64"),
        "last_change": last["transaction_time"].array})
    return leave_out_deleted(out, deleted_items(history), include=include_deleted,
                             who="stock_at")


def stock_value_by_month(history: pd.DataFrame, items: pd.DataFrame, *, tz: str = "UTC",
                         until: Any = None, include_deleted: bool = False) -> pd.DataFrame:
    """Units in stock and their value at cost and at price at the end of every month, from
    the history's first month to ``until`` (default the newest time in the history).

    ``history`` is a :func:`invtools.frames.stock_history` frame (for all locations, or
    ``by_location=True``: the locations are added up); ``items`` an items frame, for ``cost``
    and ``price`` -- today's: the history does not say what an item cost in the past. A
    month's value is :func:`stock_at` its last instant (in ``tz``), counting positive stock
    only, as :func:`stock_value` does; the last month's is the value at ``until``, so with
    the whole history it agrees with ``stock_value(client.stock_df(), items)`` today. Months
    without a line carry the stock over. Columns: month (``"2026-05"``), as_of (the instant
    measured, UTC), items (distinct items in stock), units, value_at_cost, value_at_price.
    Deleted items are left out unless ``include_deleted`` (said: see the module's docstring;
    they have no cost in ``items`` anyway).

    >>> monthly = stock_value_by_month(invtools.frames.stock_history(
    ...     client.lines_df(since="2026-09-01")), client.items_df())
    >>> monthly["month"].tolist()
    ['2026-09', '2026-10']
    """
    _need(history, ["transaction_time", "transaction_id", "item_id", "location_id", "stock"],
          "history", _HISTORY_HINT)
    _need(items, ["id", "cost", "price"], "items", "Pass an items frame: client.items_df().")
    until = _as_of(until, history["transaction_time"])
    h = leave_out_deleted(history.reset_index(drop=True), deleted_items(history),
                          include=include_deleted, who="stock_value_by_month")
    h = h[(h["transaction_time"] <= until).fillna(False).to_numpy(dtype=bool)]
    h = h.sort_values(["transaction_time", "transaction_id"], kind="stable")
    local = h["transaction_time"].dt.tz_convert(tz).dt.tz_localize(None)
    months = local.dt.to_period("M")
    key = pd.MultiIndex.from_arrays([h["item_id"].array, h["location_id"].array])
    # the level at each month's end: the last one of the month, carried over quiet months
    levels = pd.DataFrame({"month": months.array, "stock": h["stock"].to_numpy()}, index=key)
    wide = levels.groupby(["month", levels.index], sort=True)["stock"].last().unstack()
    span = pd.PeriodIndex([], freq="M")
    if len(h):
        end = pd.Timestamp(until).tz_convert(tz).tz_localize(None).to_period("M")
        span = pd.period_range(months.min(), end, freq="M")
    wide = wide.reindex(span).ffill().clip(lower=0)
    item_of = [k[0] for k in wide.columns]
    prices = items.drop_duplicates("id").set_index("id")[["cost", "price"]].reindex(item_of)
    held = wide.to_numpy(dtype="float64")
    held = np.where(np.isnan(held), 0.0, held)
    units = held.sum(axis=1)
    in_stock = pd.DataFrame(held > 0, columns=item_of).T.groupby(level=0).any().T.sum(axis=1)
    cost = np.nan_to_num(prices["cost"].to_numpy(dtype="float64"))
    price = np.nan_to_num(prices["price"].to_numpy(dtype="float64"))
    next_start = (span + 1).to_timestamp().tz_localize(tz, nonexistent="shift_forward",
                                                        ambiguous="NaT")
    as_of = (next_start - pd.Timedelta(milliseconds=1)).tz_convert("UTC")
    out = pd.DataFrame({
        "month": pd.array(span.strftime("%Y-%m"), dtype="string"),
        "as_of": pd.array(np.minimum(as_of.as_unit("ms"), until), dtype="datetime64[ms, UTC]"),
        "items": pd.array(in_stock.to_numpy(), dtype="int64"),
        "units": units, "value_at_cost": held @ cost, "value_at_price": held @ price})
    out.attrs.update(h.attrs)
    return out
