"""Where stock is moved: :func:`transfer_flows`, the from -> to table of ``move``
transactions (units, transactions, items per pair of locations).

Drawn by :func:`invtools.viz.plot_transfers`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.analysis.common import carry_provenance, in_window, need, newest_name

__all__ = ["transfer_flows", "FLOW_KEYS"]

#: The (id, name) columns of the two ends of a move.
FLOW_KEYS = (("from_location_id", "from_location_name"), ("to_location_id", "to_location_name"))


def transfer_flows(
    lines: pd.DataFrame, *, since: Any = None, until: Any = None, strict: bool = False
) -> pd.DataFrame:
    """Per pair of locations, the stock moved from one to the other: one row per
    (``from_location``, ``to_location``) of the ``move`` lines of ``lines`` (a lines frame:
    ``client.lines_df()`` or ``mirror.lines_df()``; ``client.lines_df(tx_type="move")``
    fetches only those).

    ``since``/``until`` limit the count (both included; a date, a month, or a duration such as
    ``"90D"`` back from the moment the frame is as of); reaching outside the window the lines
    were fetched with is said (a :class:`~invtools.errors.WindowWarning`; ``strict=True``: a
    :class:`~invtools.errors.ConfigError`). Every move counts, a deleted item's too (what was
    moved was moved); a location's name is its newest.

    Columns: from_location_id, from_location_name, to_location_id, to_location_name, units
    (the lines' quantities added up), transactions (distinct move transactions), items
    (distinct items moved), first_move, last_move; the most units first. The frame's
    provenance is carried on.

    >>> flows = transfer_flows(client.lines_df())
    >>> flows.columns.tolist()                            # doctest: +NORMALIZE_WHITESPACE
    ['from_location_id', 'from_location_name', 'to_location_id', 'to_location_name',
     'units', 'transactions', 'items', 'first_move', 'last_move']
    >>> bool(flows["units"].is_monotonic_decreasing)
    True
    """
    who = "transfer_flows"
    ends = " ".join(c for pair in FLOW_KEYS for c in pair)
    need(lines, "lines", f"transaction_id transaction_time type item_id quantity {ends}", who=who)
    counted = in_window(lines, since, until, who=who, strict=strict)
    moves = counted[counted["type"].isin(["move"]).to_numpy(dtype=bool)]
    (from_id, from_name), (to_id, to_name) = FLOW_KEYS
    per_line = pd.DataFrame(
        {
            from_id: moves[from_id].astype("Int64").array,
            to_id: moves[to_id].astype("Int64").array,
            "transaction_id": moves["transaction_id"].array,
            "item_id": moves["item_id"].array,
            "units": moves["quantity"].to_numpy(dtype="float64", na_value=np.nan),
            "time": moves["transaction_time"].array,
        }
    )
    g = per_line.groupby([from_id, to_id], dropna=False, sort=True)
    out = pd.DataFrame(
        {
            "units": g["units"].sum(),
            "transactions": g["transaction_id"].nunique().astype("int64"),
            "items": g["item_id"].nunique().astype("int64"),
            "first_move": g["time"].min(),
            "last_move": g["time"].max(),
        }
    ).reset_index()
    for key, name, at in ((from_id, from_name, 1), (to_id, to_name, 3)):
        names = newest_name(moves, key, name)
        named = names.reindex(out[key].array).astype(object).astype("string")
        out.insert(at, name, pd.Series(named.to_numpy(), dtype="string", index=out.index))
        out[key] = out[key].astype("Int64")
    out = out.sort_values(
        ["units", "transactions", from_id, to_id],
        ascending=[False, False, True, True],
        kind="stable",
        ignore_index=True,
    )
    return carry_provenance(out, lines, who=who)
