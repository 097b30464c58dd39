"""What to order and what sits idle: the two planning questions that follow :func:`movement`.

- :func:`reorder` -- what sold over a look-back: average daily out, stock on hand, days of
  cover, the date each runs out, and a flag for those that run out within the lead time; per
  item, or per item and location with what to do (transfer or order).
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

import warnings
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
from invtools.errors import ConfigError, CutWarning
from invtools.frames import TIME_DTYPE

__all__ = ["reorder", "dead_stock", "REORDER_BY"]

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


#: ``by=`` of :func:`reorder`
REORDER_BY = ("item", "location")


def reorder(
    lines: pd.DataFrame,
    items: pd.DataFrame,
    stock: pd.DataFrame | None = None,
    *,
    by: str = "item",
    look_back: Any = "8W",
    top: int | None = None,
    lead_days: float = 14,
    as_of: Any = None,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """What sold over the ``look_back`` before ``as_of``, and when each runs out at that pace:
    per item (``by="item"``), or per item and location (``by="location"``: order or transfer).

    ``lines`` is a lines frame (``client.lines_df(since="8W")`` holds just enough), ``items``
    an items frame (stock on hand: its ``quantity``), ``stock`` (``by="location"`` only) a
    :func:`invtools.frames.stock_df` frame: what each location holds now. ``look_back`` is a
    duration with its unit (``"8W"``, ``"30D"``, a ``Timedelta``; a bare number is refused);
    the lines from ``as_of - look_back`` to ``as_of`` (both included) are counted. ``as_of``
    defaults to the end of the window the lines were fetched with (the service's clock then),
    else to the newest line (said); when ``look_back`` reaches before the lines' window a
    :class:`~invtools.errors.WindowWarning` gives the dates (``strict=True``: a
    :class:`~invtools.errors.ConfigError`).

    Columns: item_id, item_name, sku, units_out (units sold in the look-back), daily_out
    (units_out / the look-back's days), on_hand (the items frame's ``quantity``), days_of_cover
    (on_hand / daily_out; 0 when nothing is on hand), runs_out (``as_of`` + days_of_cover;
    NaT past a century),
    runs_out_in_lead_time (runs out within ``lead_days`` days: days_of_cover <= lead_days,
    those already out included). Only items that sold in the look-back, the most units out
    first; every one by default. ``top=N`` keeps the first N: when that cuts rows that run out
    within the lead time, a :class:`~invtools.errors.CutWarning` says how many, and
    ``attrs["cut"]`` says the cut (``top``, ``rows`` before it, ``cut``, ``flagged_cut``,
    ``said``). Deleted items are left out unless ``include_deleted`` (then without stock:
    said, see :mod:`invtools.analysis`).

    ``by="location"``: one row per item and location it sold from (the lines'
    ``location_id``), the sales there against the stock there: location_id and
    location_name after sku, on_hand the ``stock`` frame's quantity there (0 where the item is
    listed elsewhere only), and three more columns: shortfall (the units short over the lead
    time there: daily_out x lead_days - on_hand, at least 0), spare_elsewhere (the item's stock
    at its other locations beyond what each of them sells in the lead time at its own pace)
    and action, for the rows that run out within the lead time: ``"transfer"`` (the spare
    elsewhere covers the shortfall), ``"transfer and order"`` (it covers part) or
    ``"order"`` (none spare); ``<NA>`` otherwise. An item out on the shop floor with stock in
    a warehouse is a transfer, not an order, and pooled (``by="item"``) it reads as weeks of
    cover. The stock is the items' (the stock frame's) now, whatever ``as_of``.

    >>> short = reorder(client.lines_df(since="8W"), client.items_df())
    >>> short.columns.tolist()                       # doctest: +NORMALIZE_WHITESPACE
    ['item_id', 'item_name', 'sku', 'units_out', 'daily_out', 'on_hand', 'days_of_cover',
     'runs_out', 'runs_out_in_lead_time']
    >>> bool(short["units_out"].is_monotonic_decreasing)
    True
    >>> order_now = short[short["runs_out_in_lead_time"]]     # runs out before a delivery
    >>> here = reorder(client.lines_df(since="8W"), client.items_df(), client.stock_df(),
    ...                by="location")
    >>> set(here["action"].dropna()) <= {"transfer", "transfer and order", "order"}
    True
    """
    who = "reorder"
    check_choice(by, REORDER_BY, who=who, name="by")
    need(
        lines,
        "lines",
        f"{_LINES} item_name" + (" location_id" if by == "location" else ""),
        who=who,
    )
    need(items, "items", "item_id name quantity", who=who)
    if by == "location" and stock is None:
        raise ConfigError(f"{who}: by='location' needs the stock there: pass client.stock_df()")
    if stock is not None:
        need(stock, "stock", "item_id location_id location_name quantity", who=who)
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
    keys = ["item_id"] + (["location_id"] if by == "location" else [])
    per = pd.DataFrame(
        {
            **{k: sold[k].astype("Int64").array for k in keys},
            "item_name": sold["item_name"].astype("string").array,
            "units_out": np.abs(sold["quantity"].astype("float64").to_numpy()),
        }
    )
    per = per[per["item_id"].notna().to_numpy(dtype=bool)]  # a sale of no item: none to order
    moved = per.groupby(keys, dropna=False).agg(
        item_name=("item_name", "last"), units_out=("units_out", "sum")
    )
    base = (
        items.drop_duplicates("item_id")
        .set_index("item_id")
        .reindex(columns=["name", "sku", "quantity"])
    )
    ids = moved.index.get_level_values("item_id")
    listed_name = base["name"].reindex(ids).set_axis(moved.index)  # pandas 2.2 aligns no other way
    moved["item_name"] = listed_name.fillna(moved["item_name"])
    sku = base["sku"].reindex(ids).astype("string").array  # none: <NA>
    moved.insert(1, "sku", pd.Series(sku, index=moved.index))
    moved["daily_out"] = moved["units_out"] / days
    held = None if stock is None or by == "item" else _held(stock)
    if held is None:
        on_hand = base["quantity"].astype("float64").reindex(ids).to_numpy()
    else:
        on_hand = held.reindex(moved.index).to_numpy(dtype="float64", copy=True)
        listed = pd.Index(held.index.get_level_values("item_id")).unique()
        on_hand[np.isnan(on_hand) & ids.isin(listed) & moved.index.get_level_values(1).notna()] = 0
    moved["on_hand"] = on_hand
    cover = moved["on_hand"].clip(lower=0) / moved["daily_out"]
    moved["days_of_cover"] = cover
    # a cover past a century runs out "never": NaT; in ms, so a far as_of does not overflow
    offset = pd.to_timedelta(cover.where(cover <= 36_500), unit="D").dt.round("ms")
    moved["runs_out"] = (as_of.as_unit("ms") + offset.astype("timedelta64[ms]")).astype(TIME_DTYPE)
    soon = pd.Series(cover.to_numpy() <= lead_days, index=cover.index, dtype="boolean")
    moved["runs_out_in_lead_time"] = soon.mask(cover.isna())  # on hand unknown: <NA>
    moved["item_name"] = moved["item_name"].astype("string")
    if held is not None:
        _transfer_or_order(moved, held, per, days, lead_days)
    result = moved.reset_index().sort_values(
        ["units_out", *keys], ascending=[False] + [True] * len(keys), ignore_index=True
    )
    if held is not None and stock is not None:
        result.insert(3, "location_id", result.pop("location_id"))
        places = stock.dropna(subset=["location_id"]).drop_duplicates("location_id")
        names = places.set_index("location_id")["location_name"].astype("string")
        named = names.reindex(result["location_id"].array).array
        result.insert(4, "location_name", pd.Series(named, index=result.index))
    result = without_deleted(result, sold, include=include_deleted, who=who)
    if top is not None:
        result = _cut(result, top, lead_days, who=who, by=by)
    return carry_provenance(result, lines, items, stock, who="reorder")


def _held(stock: pd.DataFrame) -> pd.Series:
    """(item_id, location_id) -> the units held there, from a stock frame."""
    frame = pd.DataFrame(
        {
            "item_id": stock["item_id"].astype("Int64").array,
            "location_id": stock["location_id"].astype("Int64").array,
            "quantity": stock["quantity"].astype("float64").to_numpy(),
        }
    )
    return frame.groupby(["item_id", "location_id"])["quantity"].sum()


def _transfer_or_order(
    moved: pd.DataFrame, held: pd.Series, per: pd.DataFrame, days: float, lead_days: float
) -> None:
    """Add shortfall, spare_elsewhere and action to ``moved`` (per item and location)."""
    pace = per.groupby(["item_id", "location_id"])["units_out"].sum() / days
    need_there = pace.reindex(held.index, fill_value=0.0) * lead_days
    spare = (held.clip(lower=0) - need_there).clip(lower=0)
    total = spare.groupby(level="item_id").sum()
    ids = moved.index.get_level_values("item_id")
    mine = spare.reindex(moved.index, fill_value=0.0).to_numpy()
    moved["shortfall"] = (moved["daily_out"] * lead_days - moved["on_hand"].clip(lower=0)).clip(
        lower=0
    )
    moved["spare_elsewhere"] = total.reindex(ids, fill_value=0.0).to_numpy() - mine
    flagged = moved["runs_out_in_lead_time"].fillna(False).to_numpy(dtype=bool)
    covers = moved["spare_elsewhere"] >= moved["shortfall"]
    action = np.where(
        moved["spare_elsewhere"] <= 0, "order", np.where(covers, "transfer", "transfer and order")
    )
    moved["action"] = pd.Series(action, index=moved.index, dtype="string").where(flagged)


def _cut(result: pd.DataFrame, top: int, lead_days: float, *, who: str, by: str) -> pd.DataFrame:
    """The first ``top`` rows of ``result``, the cut said in ``attrs["cut"]`` and, when it
    drops rows that run out within the lead time, in a :class:`CutWarning`."""
    below = result.iloc[top:]
    flagged = int(below["runs_out_in_lead_time"].fillna(False).sum())
    said = f"{who}: kept the top {top} of {len(result)} rows by units out, none below them flagged"
    if flagged:
        one, many = ("item", "items") if by == "item" else ("item at a location", "items")
        noun = f"{one} runs" if flagged == 1 else f"{many} run"
        said = (
            f"{who}: {flagged} more {noun} out within the lead time ({lead_days:g} days) below "
            f"the top {top}; top=None keeps every one"
        )
        warnings.warn(said, CutWarning, stacklevel=3)
    kept = result.head(top).reset_index(drop=True)
    kept.attrs["cut"] = {
        "top": top,
        "rows": len(result),
        "cut": len(below),
        "flagged_cut": flagged,
        "said": said,
    }
    return kept


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
    need(items, "items", "item_id cost", who=who)
    need(stock, "stock", "item_id item_name location_id location_name quantity", who=who)
    as_of = _as_of(lines, as_of, who=who)
    start, length = look_back_start(look_back, as_of, who=who)
    question = f"no sale in {spoken(length)} as of {as_of:%d %b %Y}"
    check_reach(lines, start, as_of, question=question, who=who, strict=strict)
    last_sale = _sales(lines, as_of).groupby("item_id")["transaction_time"].max()
    sold = last_sale[last_sale >= start].index  # sold in the look-back
    cost = items.drop_duplicates("item_id").set_index("item_id")["cost"].astype("float64")
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
