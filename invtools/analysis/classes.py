"""Which items matter most: :func:`abc_classes`, the items classed A, B or C by what went out
over a look-back (its value at cost or price, or its units), and the stock each class holds
per location.

The rule is the Pareto cut of :func:`shrinkage`, said once: the items in order, the most first,
class A the items that together make up the first ``cuts[0]`` (80 %) of the total, the item
that crosses the line included; B the next, up to ``cuts[1]`` (95 %); C the rest, every item
that moved nothing among them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.analysis.common import (
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
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames import DELETED_NOTE

__all__ = ["abc_classes", "ABC_MEASURES", "ABC_BY", "CLASSES"]

#: ``measure=`` -> the column of the result it ranks by.
ABC_MEASURES = {"cost": "value_out_at_cost", "price": "value_out_at_price", "quantity": "units_out"}
#: ``by=`` of :func:`abc_classes`
ABC_BY = ("item", "location")
CLASSES = ("A", "B", "C")


def abc_classes(
    lines: pd.DataFrame,
    items: pd.DataFrame,
    stock: pd.DataFrame | None = None,
    *,
    by: str = "item",
    measure: str = "cost",
    cuts: tuple[float, float] = (0.8, 0.95),
    look_back: Any = "90D",
    as_of: Any = None,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The items classed A, B or C by what went out (the ``out`` lines) in the ``look_back``
    before ``as_of``: by its value at cost (``measure="cost"``, the default), at price
    (``"price"``) or its units (``"quantity"``).

    ``lines`` is a lines frame, ``items`` an items frame (every item is classed, one that sold
    nothing is C; ``cost`` and ``price`` are today's), ``stock`` (``by="location"`` only) a
    :func:`invtools.frames.stock_df` frame. ``look_back`` and ``as_of`` as in :func:`reorder`
    (a duration with its unit, counted back from the moment the lines are as of; reaching
    before the lines' window is said, ``strict=True``: an error). ``cuts``: the cumulative
    shares where A and B end (default ``(0.8, 0.95)``): A holds the items that together make
    up the first 80 % of the total, the item crossing 80 % included, B those up to 95 %, C
    the rest. An item without a cost (price) counts 0 there. Deleted items are left out unless
    ``include_deleted`` (then without a cost or price: C unless ranked by quantity).

    ``by="item"``: item_id, item_name, sku, units_out, value_out_at_cost and
    value_out_at_price (units_out x today's cost, price), share (of the measure's total),
    cumulative_share, class (an ordered categorical A < B < C); the most first.
    ``by="location"``: the stock each class holds now, per location: location_id,
    location_name, class, items (distinct items held, quantity > 0), units,
    stock_value_at_cost, stock_value_at_price, share_of_value (of the location's stock value
    at cost); every class at every location that holds stock, by location then class. The
    stock is the stock frame's, now, whatever ``as_of``.
    ``attrs["abc"]`` says the measure, cuts, look-back and as-of.

    >>> lines, items = client.lines_df(since="90D"), client.items_df()
    >>> classes = abc_classes(lines, items)            # by value at cost over 90 days
    >>> classes["class"].value_counts().sort_index().index.tolist()
    ['A', 'B', 'C']
    >>> a = classes[classes["class"] == "A"]
    >>> bool(a["share"].sum() >= 0.8)                   # A makes up the first 80 %
    True
    >>> held = abc_classes(lines, items, client.stock_df(), by="location")
    >>> held.columns.tolist()                          # doctest: +NORMALIZE_WHITESPACE
    ['location_id', 'location_name', 'class', 'items', 'units', 'stock_value_at_cost',
     'stock_value_at_price', 'share_of_value']
    """
    who = "abc_classes"
    check_choice(by, ABC_BY, who=who, name="by")
    check_choice(measure, ABC_MEASURES, who=who, name="measure")
    low, high = _cuts(cuts, who=who)
    need(lines, "lines", "transaction_time type item_id item_name quantity", who=who)
    need(items, "items", "item_id name cost price", who=who)
    if by == "location" and stock is None:
        raise ConfigError(f"{who}: by='location' needs the stock there: pass client.stock_df()")
    if stock is not None:
        need(stock, "stock", "item_id location_id location_name quantity", who=who)
    as_of = as_of_time(as_of, lines["transaction_time"], who=who, frame=lines)
    if pd.isna(as_of):
        raise ConfigError(f"{who}: the lines are empty and no as_of was given: pass as_of=")
    start, length = look_back_start(look_back, as_of, who=who)
    question = f"what went out in {spoken(length)} before {as_of:%d %b %Y}"
    check_reach(lines, start, as_of, question=question, who=who, strict=strict)
    times = lines["transaction_time"]
    out = (lines["type"].astype("string") == "out") & (times >= start) & (times <= as_of)
    sold = lines[out.fillna(False).to_numpy(dtype=bool)]
    # a slice of its own, so marking its attrs touches nothing of the caller's
    sold = without_deleted(sold, sold, include=include_deleted, who=who)
    units = pd.Series(
        np.abs(sold["quantity"].to_numpy(dtype="float64", na_value=np.nan)),
        index=pd.Index(sold["item_id"].astype("Int64").array, name="item_id"),
    )
    units = units.groupby(level=0).sum()
    base = items.drop_duplicates("item_id").set_index("item_id")
    base.index = pd.Index(base.index, dtype="Int64", name="item_id")
    ids = base.index.union(units.index.dropna())
    known = base.reindex(ids)
    names = sold.drop_duplicates("item_id", keep="last").set_index("item_id")["item_name"]
    result = pd.DataFrame(
        {
            "item_name": known["name"].astype("string").fillna(names.astype("string")),
            "sku": known["sku"] if "sku" in known else pd.Series(pd.NA, index=ids),
            "units_out": units.reindex(ids, fill_value=0.0),
        },
        index=ids,
    )
    result["sku"] = result["sku"].astype("string")
    result["value_out_at_cost"] = result["units_out"] * known["cost"].astype("float64")
    result["value_out_at_price"] = result["units_out"] * known["price"].astype("float64")
    ranked = result[ABC_MEASURES[measure]].fillna(0.0)
    result = result.assign(_m=ranked).reset_index()
    result = result.sort_values(["_m", "item_id"], ascending=[False, True], ignore_index=True)
    total = result["_m"].sum()
    result["share"] = result["_m"] / total if total > 0 else np.nan
    result["cumulative_share"] = result["share"].cumsum()
    before = result["share"].cumsum().shift(fill_value=0.0).to_numpy()
    moved = (result.pop("_m") > 0).to_numpy()
    label = np.where(moved & (before < low - 1e-12), "A", "C")
    label = np.where(moved & (label == "C") & (before < high - 1e-12), "B", label)
    result["class"] = pd.Categorical(label, categories=list(CLASSES), ordered=True)
    if by == "location" and stock is not None:
        result = _held_per_class(result, stock, base)
    result.attrs[DELETED_NOTE] = sold.attrs[DELETED_NOTE]
    result.attrs["abc"] = {
        "measure": measure,
        "cuts": [low, high],
        "look_back": spoken(length),
        "as_of": as_of.isoformat(),
    }
    return carry_provenance(result, lines, items, stock, who=who)


def _cuts(cuts: Any, *, who: str) -> tuple[float, float]:
    """``cuts`` as two shares, 0 < A's < B's <= 1."""
    if not isinstance(cuts, (tuple, list)) or len(cuts) != 2:
        raise ArgumentTypeError(
            f"{who}: cuts must be two shares, where A and B end, such as (0.8, 0.95); not {cuts!r}"
        )
    low, high = (check_number(c, who=who, name="cuts") for c in cuts)
    if not 0 < low < high <= 1:
        raise ConfigError(
            f"{who}: cuts={tuple(cuts)!r} must rise within 0 to 1: A's end above 0, below B's, "
            "B's at most 1 (0.8, 0.95 for 80 % and 95 %)"
        )
    return float(low), float(high)


def _held_per_class(classes: pd.DataFrame, stock: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Per location and class: the items held (quantity > 0), their units and value."""
    held = stock[(stock["quantity"] > 0).fillna(False).to_numpy(dtype=bool)]
    item = held["item_id"].astype("Int64")
    cls = classes.set_index("item_id")["class"]
    rows = pd.DataFrame(
        {
            "location_id": held["location_id"].astype("Int64").array,
            "location_name": held["location_name"].astype("string").array,
            "item_id": item.array,
            "class": pd.Categorical(cls.reindex(item.array).array, categories=list(CLASSES)),
            "units": held["quantity"].to_numpy(dtype="float64"),
        }
    )
    rows = rows[rows["class"].notna().to_numpy(dtype=bool)]  # not in the items frame: no class
    for at in ("cost", "price"):
        rows[f"stock_value_at_{at}"] = (
            rows["units"]
            * base[at].astype("float64").reindex(rows["item_id"].array).fillna(0.0).to_numpy()
        )
    g = rows.groupby(["location_id", "class"], observed=False, dropna=False)
    out = pd.DataFrame(
        {
            "items": g["item_id"].nunique().astype("int64"),
            "units": g["units"].sum(),
            "stock_value_at_cost": g["stock_value_at_cost"].sum(),
            "stock_value_at_price": g["stock_value_at_price"].sum(),
        }
    ).reset_index()
    out["location_id"] = out["location_id"].astype("Int64")
    where = rows.drop_duplicates("location_id").set_index("location_id")["location_name"]
    out.insert(1, "location_name", where.reindex(out["location_id"].array).array)
    total = out.groupby("location_id", dropna=False)["stock_value_at_cost"].transform("sum")
    out["share_of_value"] = out["stock_value_at_cost"] / total.where(total > 0)
    out["class"] = pd.Categorical(out["class"], categories=list(CLASSES), ordered=True)
    return out.sort_values(["location_id", "class"], ignore_index=True)
