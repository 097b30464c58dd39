"""Audits of the transaction lines: who supplies what (:func:`supplier_summary`) and where
stock goes missing (:func:`shrinkage`).

Both read a :func:`invtools.frames.lines_df` frame (``client.lines_df()``,
``mirror.lines_df()``), take optional ``since``/``until`` bounds (said when they reach outside
the window the lines were fetched with: a :class:`~invtools.errors.WindowWarning`, or with
``strict=True`` a :class:`~invtools.errors.ConfigError`), value quantities at
today's cost from an items frame (``cost`` is a decimal string on the wire; the items frame
has it as a number), leave deleted items out unless asked (and say so), and carry the lines'
provenance on.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from invtools._config import check_flag
from invtools.analysis.common import (
    DAY,
    carry_provenance,
    check_choice,
    check_number,
    in_window,
    need,
    newest_name,
    without_deleted,
)
from invtools.errors import ConfigError
from invtools.frames import DELETED_NOTE, OPENING_NOTE
from invtools.frames.openings import with_openings, without_openings

__all__ = ["supplier_summary", "shrinkage", "SHRINKAGE_KEYS"]

#: The columns of the lines both audits read (and those of their partner, or of ``by=``).
_LINE_COLUMNS = "transaction_id transaction_time type item_id quantity"
#: ``by=`` of :func:`shrinkage` -> the (id, name) columns of the lines it groups by.
SHRINKAGE_KEYS = {
    "item": ("item_id", "item_name"),
    "location": ("location_id", "location_name"),
    "member": ("created_by_id", "created_by_name"),
}


def _costs(lines: pd.DataFrame, items: pd.DataFrame) -> np.ndarray:
    """Each line's item cost (today's; NaN for an item the items frame lacks)."""
    cost = items.drop_duplicates("item_id").set_index("item_id")["cost"].astype("float64")
    return cost.reindex(lines["item_id"].array).to_numpy(dtype="float64", na_value=np.nan)


def supplier_summary(
    lines: pd.DataFrame,
    items: pd.DataFrame | None = None,
    partners: pd.DataFrame | None = None,
    *,
    since: Any = None,
    until: Any = None,
    include_deleted: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """Per supplier: its deliveries (inbound transactions), the quantity and value delivered,
    how regularly it delivers and how many distinct items.

    ``lines`` is a lines frame; a supplier is the partner of an ``in`` transaction (the
    partners of type supplier; pass ``partners=client.partners_df()`` to leave out a
    customer's return booked as ``in``, and to list the suppliers that delivered nothing in
    the count, with zeros). ``items`` (an items frame) adds the value at today's cost.
    ``since``/``until`` limit the count (both included; a date, a month, or a duration such as
    ``"90D"`` back from the moment the frame is as of, as the client's ``since=`` takes); a
    ``since`` before the window the lines were fetched with (or an ``until`` after it) is
    said, a :class:`~invtools.errors.WindowWarning` with the dates (``strict=True``: a
    :class:`~invtools.errors.ConfigError`).

    Columns: partner_id, partner_name, deliveries (distinct inbound transactions), quantity
    (units delivered), value_at_cost (quantity x cost, with ``items``; items without a cost
    count nothing, NaN when no item's cost is known), median_days_between (the median of the
    days between consecutive deliveries; NaN with fewer than two), items (distinct items
    delivered), first_delivery, last_delivery. Largest value first (without ``items``: largest
    quantity). Deleted items'
    lines are left out unless ``include_deleted`` (said: see :mod:`invtools.analysis`).

    >>> import warnings
    >>> with warnings.catch_warnings():     # a deleted item's deliveries are left out (said)
    ...     warnings.simplefilter("ignore", invtools.DeletedItemsWarning)
    ...     suppliers = supplier_summary(client.lines_df(), client.items_df())
    >>> suppliers.columns.tolist()          # doctest: +NORMALIZE_WHITESPACE
    ['partner_id', 'partner_name', 'deliveries', 'quantity', 'value_at_cost',
     'median_days_between', 'items', 'first_delivery', 'last_delivery']
    >>> bool(suppliers["value_at_cost"].is_monotonic_decreasing)
    True
    """
    who = "supplier_summary"
    need(lines, "lines", f"{_LINE_COLUMNS} partner_id partner_name", who=who)
    if items is not None:
        need(items, "items", "item_id cost", who=who)
    counted = in_window(lines, since, until, who=who, strict=strict)
    inbound = counted[(counted["type"].isin(["in"]) & counted["partner_id"].notna()).to_numpy(bool)]
    suppliers = None
    if partners is not None:
        need(partners, "partners", "partner_id name type", who=who)
        customers = partners.loc[partners["type"].isin(["customer"]).to_numpy(bool), "partner_id"]
        inbound = inbound[~inbound["partner_id"].isin(customers.tolist()).to_numpy(bool)]
        suppliers = partners[partners["type"].isin(["supplier"]).to_numpy(bool)]
    # a slice of its own, so marking its attrs touches nothing of the caller's
    inbound = without_deleted(inbound, inbound, include=include_deleted, who=who)
    per_line = pd.DataFrame(
        {
            "partner_id": inbound["partner_id"].astype("Int64").array,
            "transaction_id": inbound["transaction_id"].array,
            "time": inbound["transaction_time"].array,
            "item_id": inbound["item_id"].array,
            "quantity": inbound["quantity"].to_numpy(dtype="float64", na_value=np.nan),
        }
    )
    if items is not None:
        per_line["value_at_cost"] = per_line["quantity"].to_numpy() * _costs(inbound, items)
    g = per_line.groupby("partner_id", sort=True)
    out = pd.DataFrame(
        {"deliveries": g["transaction_id"].nunique(), "quantity": g["quantity"].sum()}
    )
    if items is not None:
        out["value_at_cost"] = g["value_at_cost"].sum(min_count=1)
    # one time per delivery (a transaction), in order: the gaps between consecutive ones
    visits = per_line.drop_duplicates("transaction_id").sort_values(
        ["partner_id", "time"], kind="stable"
    )
    # differences of times: durations
    gaps = (
        cast("pd.Series[pd.Timedelta]", visits.groupby("partner_id", sort=True)["time"].diff())
        / DAY
    )
    out["median_days_between"] = gaps.groupby(visits["partner_id"]).median().astype("float64")
    out["items"] = g["item_id"].nunique()
    out["first_delivery"], out["last_delivery"] = g["time"].min(), g["time"].max()
    names = newest_name(inbound, "partner_id", "partner_name")
    if suppliers is not None:  # every supplier, those that delivered nothing too
        names = pd.concat([suppliers.set_index("partner_id")["name"], names])
        names = names[~names.index.duplicated(keep="last")]
        out = out.reindex(
            out.index.union(pd.Index(suppliers["partner_id"].dropna(), dtype="Int64"))
        )
        out = out.fillna({"deliveries": 0, "quantity": 0.0, "items": 0, "value_at_cost": 0.0})
    out.index = pd.Index(out.index, dtype="Int64", name="partner_id")
    out.insert(0, "partner_name", names.reindex(out.index).astype(object).astype("string"))
    out = out.astype({"deliveries": "int64", "items": "int64"})
    ranked = "value_at_cost" if items is not None else "quantity"
    out = out.reset_index().sort_values(
        [ranked, "deliveries", "partner_id"], ascending=[False, False, True], ignore_index=True
    )
    out.attrs[DELETED_NOTE] = inbound.attrs[DELETED_NOTE]
    return carry_provenance(out, lines, items, partners, who="supplier_summary")


def shrinkage(
    lines: pd.DataFrame,
    items: pd.DataFrame,
    *,
    since: Any = None,
    until: Any = None,
    by: str = "item",
    cut: float = 0.8,
    include_deleted: bool = False,
    exclude_opening_counts: bool = True,
    strict: bool = False,
) -> pd.DataFrame:
    """Stock that went missing (or turned up): the adjustments' net quantity and value at
    cost per item, location or member, the biggest loss first, with the cumulative share of
    the loss for a Pareto cut.

    ``lines`` is a lines frame, ``items`` an items frame (for today's ``cost``); ``since`` /
    ``until`` limit the count as in :func:`supplier_summary` (both included; a date, a month,
    or a duration such as ``"90D"``; reaching outside the lines' window is said, and refused
    with ``strict=True``). Adjust quantities are signed: a count that
    found 3 fewer than the books is ``-3``, one that found more is positive, and they net out.
    Opening stock counts (the stocktake a record starts with: every unit on the shelves, not
    stock that turned up; :func:`invtools.frames.opening_counts`) are left out unless
    ``exclude_opening_counts=False``, and said: ``attrs["opening_counts_excluded"]`` lists
    the ids of the transactions left out (``[]`` when none, or when kept).
    ``by``: ``"item"``, ``"location"`` (``location_name``: where the count was made) or
    ``"member"`` (``created_by_name``: who recorded it). Adjustments without one count under
    a missing key.

    Columns: the key's id and name (item_id/item_name, location_id/location_name or
    created_by_id/created_by_name), adjustments (distinct adjustment transactions),
    net_quantity, value_at_cost (net_quantity x cost, negative for a loss; items without a
    cost count nothing, NaN when none has one), cumulative_share (of the whole loss, the rows
    so far: rows in loss only add to it), in_cut (the rows that together make up the first
    ``cut`` -- 80 % -- of the loss, the row that crosses it included). Sorted by value_at_cost, the
    biggest loss
    first. Deleted items' adjustments are left out unless ``include_deleted`` (said: see
    :mod:`invtools.analysis`).

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", invtools.DeletedItemsWarning)
    ...     where = shrinkage(client.lines_df(), client.items_df(), by="location")
    >>> where.columns.tolist()              # doctest: +NORMALIZE_WHITESPACE
    ['location_id', 'location_name', 'adjustments', 'net_quantity', 'value_at_cost',
     'cumulative_share', 'in_cut']
    >>> bool(where["value_at_cost"].is_monotonic_increasing)     # the biggest loss first
    True
    """
    who = "shrinkage"
    check_choice(by, SHRINKAGE_KEYS, who=who, name="by")
    if not 0 < check_number(cut, who=who, name="cut") <= 1:
        raise ConfigError(
            f"{who}: cut={cut!r} must be a share of the loss, above 0 and at most 1 (0.8 for 80 %)."
        )
    key, name = SHRINKAGE_KEYS[by]
    need(lines, "lines", f"{_LINE_COLUMNS} {key} {name}", who=who)
    need(items, "items", "item_id cost", who=who)
    leave_out = check_flag(exclude_opening_counts, f"{who}: exclude_opening_counts")
    counted = in_window(
        with_openings(lines) if leave_out else lines, since, until, who=who, strict=strict
    )
    adjusted = counted[counted["type"].isin(["adjust"]).to_numpy(bool)]
    left_out: list[Any] = []
    if leave_out:
        adjusted, left_out = without_openings(adjusted)
    # a slice of its own, so marking its attrs touches nothing of the caller's
    adjusted = without_deleted(adjusted, adjusted, include=include_deleted, who=who)
    qty = adjusted["quantity"].to_numpy(dtype="float64", na_value=np.nan)
    per_line = pd.DataFrame(
        {
            key: adjusted[key].astype("Int64").array,
            "transaction_id": adjusted["transaction_id"].array,
            "net_quantity": qty,
            "value_at_cost": qty * _costs(adjusted, items),
        }
    )
    g = per_line.groupby(key, sort=True, dropna=False)
    out = pd.DataFrame(
        {
            "adjustments": g["transaction_id"].nunique().astype("int64"),
            "net_quantity": g["net_quantity"].sum(),
            "value_at_cost": g["value_at_cost"].sum(min_count=1),
        }
    )
    out.index = pd.Index(out.index, dtype="Int64", name=key)
    names = newest_name(adjusted, key, name)
    out.insert(0, name, names.reindex(out.index).astype(object).astype("string"))
    out = out.reset_index().sort_values(
        ["value_at_cost", "net_quantity", key], kind="stable", na_position="last", ignore_index=True
    )
    loss = (-out["value_at_cost"]).clip(lower=0).fillna(0.0)
    total = loss.sum()
    share = loss.cumsum() / total if total > 0 else pd.Series(np.nan, index=out.index)
    out["cumulative_share"] = share.astype("float64")
    before = share.shift(fill_value=0.0)
    out["in_cut"] = pd.array(
        ((before < cut - 1e-12) & (loss > 0)).to_numpy(dtype=bool), dtype="boolean"
    )
    out.attrs[DELETED_NOTE] = adjusted.attrs[DELETED_NOTE]
    out.attrs[OPENING_NOTE] = left_out
    return carry_provenance(out, lines, items, who="shrinkage")
