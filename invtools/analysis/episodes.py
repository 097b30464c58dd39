"""Stock-outs: every out-of-stock episode of a stock history, and a summary per item.

- :func:`stockouts` -- one row per out-of-stock episode, from a ``stock_history`` frame.
- :func:`stockout_summary` -- per item (of a per-location history: per item and location):
  how often it ran out, for how long, how long restocking took.

An item is out at a location when its stock *there* is zero or below: a history of each
location (``stock_history(lines, by_location=True)``) is read per item and location, never
adding locations together (an item out on the shop floor while a warehouse holds 11 is out on
the shop floor only). A history of all locations is read per item: out when its total is.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from invtools.analysis.common import DAY, as_of_time, carry_provenance, need, without_deleted

__all__ = ["stockouts", "stockout_summary"]


def stockouts(
    history: pd.DataFrame, *, as_of: Any = None, include_deleted: bool = False
) -> pd.DataFrame:
    """Every out-of-stock episode: when an item's stock reached zero (or below) and when it
    came back.

    ``history`` is a :func:`invtools.frames.stock_history` frame: for all locations, one, or
    ``by_location=True`` (each location's episodes its own). Columns: item_id, item_name,
    location_id, location_name (<NA> for all locations), out_at, restocked_at (NaT while
    still out), days_out (until the restock, or until ``as_of`` for an item still out: default
    the moment the history is as of -- its lines', kept when a few items are picked:
    docs/explanation/now.md), still_out. Deleted items are left out unless
    ``include_deleted`` (said: see the module's docstring).

    >>> h = pd.DataFrame({"transaction_time": pd.to_datetime(
    ...         ["2026-01-01", "2026-01-05", "2026-01-08", "2026-01-20"], utc=True),
    ...     "transaction_id": [1, 2, 3, 4], "item_id": [9, 9, 9, 9],
    ...     "item_name": ["Mug"] * 4, "location_id": [pd.NA] * 4,
    ...     "stock": [3.0, 0.0, 5.0, 0.0], "change": [3.0, -3.0, 5.0, -5.0]})
    >>> stockouts(h, as_of="2026-01-20")[["days_out", "still_out"]].values.tolist()
    [[3.0, False], [0.0, True]]
    >>> h.attrs["as_of"] = "2026-01-30"        # the moment the lines were as of
    >>> stockouts(h)["days_out"].tolist()     # still out from Jan 20 to Jan 30
    [3.0, 10.0]
    """
    episodes = _episodes(history, as_of, "stockouts")
    episodes = without_deleted(episodes, history, include=include_deleted, who="stockouts")
    return carry_provenance(episodes, history, who="stockouts")


def _episodes(history: pd.DataFrame, as_of: Any, who: str) -> pd.DataFrame:
    need(history, "history", "transaction_time item_id item_name location_id stock", who=who)
    as_of = as_of_time(as_of, history["transaction_time"], who=who, frame=history)
    keys = ["item_id", "location_id"]
    h = history.sort_values(
        [*keys, "transaction_time", "transaction_id"], kind="stable", ignore_index=True
    )
    if "location_name" not in h.columns:  # a history of your own, without names
        h["location_name"] = pd.array([pd.NA] * len(h), dtype="string")
    series = [h["item_id"], h["location_id"]]
    out = pd.Series((h["stock"] <= 0).to_numpy(dtype=bool))
    prev_out = out.groupby(series, dropna=False, sort=False).shift(fill_value=False).astype(bool)
    starts, backs = out & ~prev_out, ~out & prev_out
    # Episode n of a series opens at its n-th start; the restock closing it is the first
    # back-in-stock row after it, whose running count of starts is also n.
    episode = starts.astype(int).groupby(series, dropna=False, sort=False).cumsum()
    opened = (
        h.loc[starts, [*keys, "item_name", "location_name", "transaction_time"]]
        .assign(episode=episode[starts])
        .rename(columns={"transaction_time": "out_at"})
    )
    closed = h.loc[backs, keys].assign(
        episode=episode[backs], restocked_at=h.loc[backs, "transaction_time"]
    )
    result = opened.merge(closed, on=[*keys, "episode"], how="left").drop(columns="episode")
    result["location_id"] = result["location_id"].astype("Int64")
    result["location_name"] = result["location_name"].astype("string")
    end = result["restocked_at"].fillna(as_of)
    out_for = cast("pd.Series[pd.Timedelta]", end - result["out_at"])  # times minus times
    result["days_out"] = (out_for / DAY).astype("float64")
    result["still_out"] = result["restocked_at"].isna().astype("boolean").array
    return result[[*_KEYS, "out_at", "restocked_at", "days_out", "still_out"]]


_KEYS = ["item_id", "item_name", "location_id", "location_name"]


def stockout_summary(
    history: pd.DataFrame, *, as_of: Any = None, include_deleted: bool = False
) -> pd.DataFrame:
    """Per item that ever ran out -- of a per-location history (``stock_history(lines,
    by_location=True)``, or one ``location_id``), per item and location: how often, days out
    of stock in all, the median days until restocked, whether it is out now (there). Sorted
    worst first (most days out). ``as_of`` as for :func:`stockouts`. Deleted items are left
    out unless ``include_deleted`` (said: see the module's docstring); an item without a
    name is kept.

    Columns: item_id, item_name, (of a per-location history: location_id, location_name,)
    stockouts, days_out, median_days_to_restock, still_out.

    >>> summary = stockout_summary(mirror.stock_history())  # or frames.stock_history(lines)
    >>> summary.columns.tolist()
    ['item_id', 'item_name', 'stockouts', 'days_out', 'median_days_to_restock', 'still_out']
    >>> summary.attrs["deleted_items_excluded"]            # ids of deleted items left out
    []
    """
    places = _of_places(history)
    summary = _summary(_episodes(history, as_of, "stockout_summary"), places)
    summary = without_deleted(summary, history, include=include_deleted, who="stockout_summary")
    return carry_provenance(summary, history, who="stockout_summary")


def _of_places(history: Any) -> bool:
    """Whether ``history`` is of locations (any row with a ``location_id``): its summary is
    then per item and location."""
    column = history.get("location_id") if isinstance(history, pd.DataFrame) else None
    return column is not None and bool(column.notna().any())


def _summary(eps: pd.DataFrame, places: bool) -> pd.DataFrame:
    keys = _KEYS if places else _KEYS[:2]
    if eps.empty:
        empty = {
            "item_id": pd.array([], dtype="Int64"),
            "item_name": pd.array([], dtype="string"),
            "location_id": pd.array([], dtype="Int64"),
            "location_name": pd.array([], dtype="string"),
            "stockouts": pd.array([], dtype="int64"),
            "days_out": pd.array([], dtype="float64"),
            "median_days_to_restock": pd.array([], dtype="float64"),
            "still_out": pd.array([], dtype="boolean"),
        }
        return pd.DataFrame({k: v for k, v in empty.items() if k in keys or k not in _KEYS})
    restocked = eps["days_out"].where(~eps["still_out"].fillna(False).to_numpy(dtype=bool))
    # dropna=False: an item whose name is missing is still an item that ran out
    g = eps.assign(_restock=restocked).groupby(keys, observed=True, sort=False, dropna=False)
    out = g.agg(
        stockouts=("out_at", "size"),
        days_out=("days_out", "sum"),
        median_days_to_restock=("_restock", "median"),
        still_out=("still_out", "any"),
    ).reset_index()
    out["still_out"] = out["still_out"].astype("boolean")
    return out.sort_values(["days_out", "stockouts"], ascending=False, ignore_index=True)
