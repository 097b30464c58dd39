"""What moves and what it is worth: units in, out and adjusted per item, dead stock, and the
value of the stock on hand per location.

- :func:`movement` -- per item: received, sold, adjusted, last sale, days since; with the
  items frame also stock on hand and its value; ``dead`` flags stock that did not sell.
- :func:`stock_value` -- units and value of the stock per location.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools.analysis.common import (
    DAY,
    as_of_time,
    carry_provenance,
    check_reach,
    look_back_start,
    need,
    spoken,
    without_deleted,
)
from invtools.frames import deleted_items

__all__ = ["movement", "stock_value"]


def movement(
    lines: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    since: Any = None,
    as_of: Any = None,
    look_back: Any = "90D",
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """Per item: units received (in), sold (out), adjusted (signed) within ``since``..``as_of``,
    the last sale by ``as_of``, days since it, and ``dead``: stock on hand that has not sold in
    the ``look_back`` before ``as_of`` (a duration with its unit: ``"90D"``, ``"12W"``,
    ``"36h"``, a ``timedelta``; a bare ``90`` is refused).

    ``as_of`` defaults to the end of the window ``lines`` were fetched with (the service's
    clock then: ``client.lines_df(since="90D")``), else to the newest line (said). When the question
    reaches before the window (a look-back of 90 days in a ``since="30D"`` frame) a
    :class:`~invtools.errors.WindowWarning` gives the dates; ``strict=True`` raises instead.

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
    movement: left out 4 deleted items (100054 ...); include_deleted=True keeps them
    >>> len(slow) == len(items), slow["sold"].is_monotonic_increasing
    (True, True)
    >>> dead = slow[slow["dead"]]          # stock on hand, no sale for 90 days (or ever)
    >>> len(dead) > 0, bool((dead["quantity"] > 0).all())
    (True, True)
    """
    need(lines, "lines", "transaction_time type item_id item_name quantity", who="movement")
    times = lines["transaction_time"]
    as_of = as_of_time(as_of, times, who="movement", frame=lines)
    start, length = look_back_start(look_back, as_of, who="movement")
    keep = times <= as_of
    if since is not None:
        since = as_of_time(since, times, who="movement", name="since", frame=lines)
        keep &= times >= since
    if not pd.isna(as_of):
        question = f"dead after {spoken(length)} as of {as_of:%d %b %Y}"
        if since is not None:
            start, question = min(start, since), f"{question}, totals since {since:%d %b %Y}"
        check_reach(lines, start, as_of, question=question, who="movement", strict=strict)
    counted = lines[keep]
    kind = counted["type"].astype("string")
    qty = counted["quantity"].astype("float64")
    totals = ["received", "sold", "adjusted"]
    per = pd.DataFrame(
        {
            "item_id": counted["item_id"].array,
            "item_name": counted["item_name"].array,
            "received": qty.where(kind == "in", 0.0).to_numpy(),
            "sold": qty.abs().where(kind == "out", 0.0).to_numpy(),
            "adjusted": qty.where(kind == "adjust", 0.0).to_numpy(),
        }
    )
    moved = per.groupby("item_id", sort=False).agg(
        {"item_name": "last", **dict.fromkeys(totals, "sum")}
    )
    # the last sale by as_of, even one before `since`, says how long an item has been idle
    sold = (lines["type"].astype("string") == "out") & (times <= as_of)
    sales = lines[sold.fillna(False).to_numpy(dtype=bool)]
    last_sale = sales.groupby("item_id")["transaction_time"].max()
    if items is not None:
        need(items, "items", "item_id name quantity cost", who="movement")
        base = items.set_index("item_id")[["name", "quantity", "cost"]]
        # deleted items are not in `items`: kept here, left out (and said) at the end
        gone = moved[moved.index.isin(list(deleted_items(counted))) & ~moved.index.isin(base.index)]
        moved = pd.concat([base.join(moved, how="left"), gone])
        moved["item_name"] = moved["item_name"].fillna(moved.pop("name"))
        moved[totals] = moved[totals].fillna(0.0)
        moved["stock_value"] = moved["quantity"] * moved["cost"]
    moved["last_sale"] = last_sale.reindex(moved.index)
    moved.index = pd.Index(moved.index, dtype="Int64", name="item_id")
    moved["days_since_last_sale"] = ((as_of - moved["last_sale"]) / DAY).astype("float64")
    on_hand = moved["quantity"] > 0 if "quantity" in moved else True
    idle = moved["days_since_last_sale"].isna() | (moved["days_since_last_sale"] > length / DAY)
    moved["dead"] = (idle & on_hand).astype("boolean").array
    moved["item_name"] = moved["item_name"].astype("string")
    result = moved.reset_index().sort_values(
        ["sold", "days_since_last_sale"], ascending=[True, False], ignore_index=True
    )
    result = without_deleted(result, lines, include=include_deleted, who="movement")
    return carry_provenance(result, lines, items, who="movement")


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
    need(stock, "stock", "item_id location_id location_name quantity", who="stock_value")
    need(items, "items", "item_id cost price", who="stock_value")
    s = stock.merge(items[["item_id", "cost", "price"]], on="item_id", how="left")
    s = s[s["quantity"] > 0]
    s = s.assign(value_at_cost=s["quantity"] * s["cost"], value_at_price=s["quantity"] * s["price"])
    out = s.groupby(["location_id", "location_name"], dropna=False, observed=True).agg(
        items=("item_id", "nunique"),
        units=("quantity", "sum"),
        value_at_cost=("value_at_cost", "sum"),
        value_at_price=("value_at_price", "sum"),
    )
    out = out.reset_index().sort_values("value_at_cost", ascending=False, ignore_index=True)
    return carry_provenance(out, stock, items, who="stock_value")
