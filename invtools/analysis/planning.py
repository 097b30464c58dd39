"""What to order and what sits idle: the two planning questions that follow :func:`movement`.

- :func:`reorder` -- the top movers over a look-back: average daily out, stock on hand, days
  of cover, the date each runs out, and a flag for those that run out within the lead time.
- :func:`dead_stock` -- per location, the items holding stock that did not sell in a
  look-back: how many, their units, their value at cost and its share of the location's stock
  value (``by="item"``: the holdings themselves).

Both take ``look_back=`` as every analysis does (a duration with its unit, ``"8W"``,
``"90D"``, a ``timedelta``; a bare number refused), counted back from ``as_of``, which
defaults as in :func:`movement` (the end of the window the lines were fetched with, else the
newest line), and say when their look-back reaches before the lines' window
(:class:`~invtools.errors.WindowWarning`; ``strict=True``: a
:class:`~invtools.errors.ConfigError`): docs/explanation/now.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.analysis.common import (
    DAY,
    as_of_time,
    carry_provenance,
    check_choice,
    check_number,
    check_reach,
    look_back_start,
    need,
    spoken,
    without_deleted,
)
from invtools.errors import ConfigError
from invtools.frames import TIME_DTYPE

__all__ = ["reorder", "dead_stock"]

_LINES = "transaction_time type item_id quantity"


def _sales(lines: pd.DataFrame, as_of: pd.Timestamp, since: Any = None) -> pd.DataFrame:
    """The ``out`` lines of ``lines`` up to ``as_of`` (included), from ``since`` (included)
    when given."""
    times = lines["transaction_time"]
    keep = (lines["type"].astype("string") == "out") & (times <= as_of)
    if since is not None:
        keep &= times >= since
    return lines[keep.fillna(False).to_numpy(dtype=bool)]


def _as_of(lines: pd.DataFrame, as_of: Any, *, who: str) -> pd.Timestamp:
    when = as_of_time(as_of, lines["transaction_time"], who=who, frame=lines)
    if pd.isna(when):
        raise ConfigError(f"{who}: the lines are empty and no as_of was given: pass as_of=")
    return when


def reorder(
    lines: pd.DataFrame,
    items: pd.DataFrame,
    *,
    look_back: Any = "8W",
    top: int | None = 10,
    lead_days: float = 14,
    as_of: Any = None,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The top movers over the ``look_back`` before ``as_of``, and when each runs out at that
    pace.

    ``lines`` is a lines frame (``client.lines_df(since="8W")`` holds just enough), ``items``
    an items frame (stock on hand: its ``quantity``). ``look_back`` is a duration with its unit
    (``"8W"``, ``"30D"``, a ``Timedelta``; a bare number is refused); the lines from
    ``as_of - look_back`` to ``as_of`` (both included) are counted. ``as_of`` defaults to the
    end of the window the lines were fetched with (the service's clock then), else to the
    newest line (said); when ``look_back`` reaches before the lines' window a
    :class:`~invtools.errors.WindowWarning` gives the dates (``strict=True``: a
    :class:`~invtools.errors.ConfigError`).

    Columns: item_id, item_name, sku, units_out (units sold in the look-back), daily_out
    (units_out / the look-back's days), on_hand (the items frame's ``quantity``), days_of_cover
    (on_hand / daily_out; 0 when nothing is on hand), runs_out (``as_of`` + days_of_cover;
    NaT past a century),
    runs_out_in_lead_time (runs out within ``lead_days`` days: days_of_cover <= lead_days,
    those already out included). Only items that sold in the look-back; the ``top`` of them by
    units_out, biggest first (``top=None``: all). Deleted items are left out unless
    ``include_deleted`` (then without stock: said, see :mod:`invtools.analysis`).

    >>> short = reorder(client.lines_df(since="8W"), client.items_df(), top=5)
    >>> short.columns.tolist()                       # doctest: +NORMALIZE_WHITESPACE
    ['item_id', 'item_name', 'sku', 'units_out', 'daily_out', 'on_hand', 'days_of_cover',
     'runs_out', 'runs_out_in_lead_time']
    >>> len(short), bool(short["units_out"].is_monotonic_decreasing)
    (5, True)
    >>> order_now = short[short["runs_out_in_lead_time"]]     # runs out before a delivery
    """
    who = "reorder"
    need(lines, "lines", f"{_LINES} item_name", who=who)
    need(items, "items", "id name quantity", who=who)
    if top is not None and check_number(top, who=who, name="top", whole=True) < 1:
        raise ConfigError(f"{who}: top={top!r} must be 1 or more (None: every item that sold)")
    if not check_number(lead_days, who=who, name="lead_days") >= 0:
        raise ConfigError(f"{who}: lead_days={lead_days!r} must be 0 or more days")
    as_of = _as_of(lines, as_of, who=who)
    start, length = look_back_start(look_back, as_of, who=who)
    days = length / DAY
    check_reach(
        lines,
        start,
        as_of,
        question=f"the sales of {spoken(length)} before {as_of:%d %b %Y}",
        who=who,
        strict=strict,
    )
    sold = _sales(lines, as_of, since=start)
    per = pd.DataFrame(
        {
            "item_id": sold["item_id"].astype("Int64").array,
            "item_name": sold["item_name"].astype("string").array,
            "units_out": np.abs(sold["quantity"].astype("float64").to_numpy()),
        }
    )
    moved = per.groupby("item_id").agg(
        item_name=("item_name", "last"), units_out=("units_out", "sum")
    )
    base = items.drop_duplicates("id").set_index("id").reindex(columns=["name", "sku", "quantity"])
    moved["item_name"] = base["name"].reindex(moved.index).fillna(moved["item_name"])
    moved.insert(1, "sku", base["sku"].reindex(moved.index).astype("string"))  # none: <NA>
    moved["daily_out"] = moved["units_out"] / days
    on_hand = base["quantity"].astype("float64").reindex(moved.index)
    moved["on_hand"] = on_hand
    cover = on_hand.clip(lower=0) / moved["daily_out"]
    moved["days_of_cover"] = cover
    # a cover past a century runs out "never": NaT; in ms, so a far as_of does not overflow
    offset = pd.to_timedelta(cover.where(cover <= 36_500), unit="D").dt.round("ms")
    moved["runs_out"] = (as_of.as_unit("ms") + offset.astype("timedelta64[ms]")).astype(TIME_DTYPE)
    soon = pd.Series(cover.to_numpy() <= lead_days, index=cover.index, dtype="boolean")
    moved["runs_out_in_lead_time"] = soon.mask(cover.isna())  # on hand unknown: <NA>
    moved["item_name"] = moved["item_name"].astype("string")
    result = moved.reset_index().sort_values(
        ["units_out", "item_id"], ascending=[False, True], ignore_index=True
    )
    result = without_deleted(result, sold, include=include_deleted, who=who)
    if top is not None:
        result = result.head(top).reset_index(drop=True)
    return carry_provenance(result, lines, items, who="reorder")


#: ``by=`` of :func:`dead_stock`
DEAD_STOCK_BY = ("location", "item")


def dead_stock(
    lines: pd.DataFrame,
    items: pd.DataFrame,
    stock: pd.DataFrame,
    *,
    look_back: Any = "90D",
    by: str = "location",
    as_of: Any = None,
    strict: bool = False,
) -> pd.DataFrame:
    """Stock that did not sell: per location, the items holding stock there with no sale in
    the ``look_back`` before ``as_of`` (a duration with its unit: ``"90D"``, ``"12W"``, a
    ``timedelta``; a bare number is refused), their units, value at cost, and share of the
    location's stock value at cost.

    ``lines`` is a lines frame (the sales: ``out`` lines), ``items`` an items frame (``cost``),
    ``stock`` a :func:`invtools.frames.stock_df` frame (what each location holds now: the rows
    with quantity > 0). An item that sold anywhere within the ``look_back`` before ``as_of`` is
    not dead, wherever its stock lies (stock in a warehouse sells from the shop floor). ``as_of``
    defaults as in :func:`movement`; when ``look_back`` reaches before the lines' window a
    :class:`~invtools.errors.WindowWarning` gives the dates (``strict=True``: a
    :class:`~invtools.errors.ConfigError`). The stock is the stock frame's, whatever
    ``as_of``.

    ``by="location"``: location_id, location_name, items (distinct dead items held there),
    units, value_at_cost (units x cost; items without a cost count nothing),
    stock_value_at_cost (the value at cost of all the location's stock, as
    :func:`stock_value` counts it), share_of_value (value_at_cost / stock_value_at_cost);
    every location that holds stock, largest dead value first.
    ``by="item"``: one row per dead holding -- location_id, location_name, item_id, item_name,
    quantity, cost, value_at_cost, last_sale (in the lines; NaT: none), days_since_last_sale
    -- by location as above, largest value first.

    >>> idle = dead_stock(client.lines_df(), client.items_df(), client.stock_df(),
    ...                   look_back="90D")
    >>> idle.columns.tolist()                        # doctest: +NORMALIZE_WHITESPACE
    ['location_id', 'location_name', 'items', 'units', 'value_at_cost', 'stock_value_at_cost',
     'share_of_value']
    >>> bool(idle["value_at_cost"].is_monotonic_decreasing)
    True
    """
    who = "dead_stock"
    check_choice(by, DEAD_STOCK_BY, who=who, name="by")
    need(lines, "lines", _LINES, who=who)
    need(items, "items", "id cost", who=who)
    need(stock, "stock", "item_id item_name location_id location_name quantity", who=who)
    as_of = _as_of(lines, as_of, who=who)
    start, length = look_back_start(look_back, as_of, who=who)
    question = f"no sale in {spoken(length)} as of {as_of:%d %b %Y}"
    check_reach(lines, start, as_of, question=question, who=who, strict=strict)
    last_sale = _sales(lines, as_of).groupby("item_id")["transaction_time"].max()
    sold = last_sale[last_sale >= start].index  # sold in the look-back
    cost = items.drop_duplicates("id").set_index("id")["cost"].astype("float64")
    held = stock[(stock["quantity"] > 0).fillna(False).to_numpy(dtype=bool)]
    held = pd.DataFrame(
        {
            "location_id": held["location_id"].astype("Int64").array,
            "location_name": held["location_name"].astype("string").array,
            "item_id": held["item_id"].astype("Int64").array,
            "item_name": held["item_name"].astype("string").array,
            "quantity": held["quantity"].astype("float64").to_numpy(),
        }
    )
    held["cost"] = cost.reindex(held["item_id"].array).to_numpy()
    held["value_at_cost"] = held["quantity"] * held["cost"]
    dead = held[~held["item_id"].isin(sold)]
    g = held.groupby("location_id", dropna=False)
    g_dead = dead.groupby("location_id", dropna=False)
    out = pd.DataFrame({"location_name": g["location_name"].last()})
    out["items"] = g_dead["item_id"].nunique().reindex(out.index, fill_value=0).astype("int64")
    out["units"] = g_dead["quantity"].sum().reindex(out.index, fill_value=0.0)
    out["value_at_cost"] = g_dead["value_at_cost"].sum().reindex(out.index, fill_value=0.0)
    out["stock_value_at_cost"] = g["value_at_cost"].sum()
    total = out["stock_value_at_cost"].where(out["stock_value_at_cost"] > 0)
    out["share_of_value"] = out["value_at_cost"] / total
    out["location_name"] = out["location_name"].astype("string")
    out = out.reset_index().sort_values(
        ["value_at_cost", "location_id"], ascending=[False, True], ignore_index=True
    )
    if by == "item":
        last = last_sale.reindex(dead["item_id"].array).astype(TIME_DTYPE).array
        # each holding at its location's row above; by position, so a holding with no location
        # finds the <NA> row (a dict of ids misses it under pandas 2.2)
        place = pd.Index(out["location_id"].array).get_indexer(dead["location_id"].array)
        out = (
            dead.assign(last_sale=last, days_since_last_sale=(as_of - last) / DAY, _place=place)
            .sort_values(
                ["_place", "value_at_cost", "item_id"],
                ascending=[True, False, True],
                ignore_index=True,
            )
            .drop(columns="_place")
        )
    return carry_provenance(out, lines, items, stock, who="dead_stock")
