"""What the list rows alone say of a window, before any detail is fetched: transactions and
units per type (:func:`by_type`), and the line a long fetch of details says first
(:func:`holds_line`).

A row of the transactions list carries its type, time, partner, locations, member, count of
items and total quantity: what a window holds is known in the seconds its walk takes, while
its lines need one detail request per transaction (minutes at the real pace). Questions the
rows answer -- by partner, location, member, day -- need no detail at all:
``invtools.analysis.crosstab(client.transactions_df(since="30D"), rows="partner",
columns="type", metric="quantity")``. Pure: a transactions frame in, a frame or a line out.

>>> import pandas as pd
>>> tx = pd.DataFrame({"type": ["out", "in", "out", "adjust"],
...                    "total_quantity": [3.0, 40.0, 2.0, -5.0]})
>>> print(holds_line(tx))  # doctest: +NORMALIZE_WHITESPACE
the window holds 4 transactions: 2 out (5 units), 1 in (40 units), 1 adjust (5 units); by
partner, location, member or day the list rows answer at once:
invtools.analysis.crosstab(client.transactions_df(<the same window>), ...)
"""

from __future__ import annotations

import pandas as pd

from invtools._types import TX_TYPES

__all__ = ["by_type", "holds_line", "AT_ONCE"]

#: What :func:`holds_line` ends with: where the answers the rows suffice for come from.
AT_ONCE = (
    "; by partner, location, member or day the list rows answer at once: "
    "invtools.analysis.crosstab(client.transactions_df(<the same window>), ...)"
)


def by_type(tx: pd.DataFrame) -> pd.DataFrame:
    """Per type of ``tx`` (a transactions frame: ``type``, ``total_quantity``), its
    ``transactions`` and ``units`` (absolute: an adjustment of -5 is 5 units of activity, as
    :func:`invtools.analysis.crosstab` counts them), most transactions first (ties in the
    order in/out/move/adjust); a type with none is left out.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"type": ["in", "out", "in"], "total_quantity": [1.0, 2.0, 3.5]})
    >>> by_type(tx).to_dict("index")
    {'in': {'transactions': 2, 'units': 4.5}, 'out': {'transactions': 1, 'units': 2.0}}
    """
    units = pd.to_numeric(tx["total_quantity"], errors="coerce").astype("float64").abs()
    kinds = tx["type"].astype("string").fillna("(none)").to_numpy(dtype=object)
    table = (
        pd.DataFrame({"type": kinds, "units": units.fillna(0.0).to_numpy()})
        .groupby("type", sort=False)["units"]
        .agg(["size", "sum"])
        .set_axis(["transactions", "units"], axis=1)
    )
    rank = {t: k for k, t in enumerate(TX_TYPES)}
    counts = {str(t): int(n) for t, n in table["transactions"].items()}
    order = sorted(counts, key=lambda t: (-counts[t], rank.get(t, 9), t))
    table = table.loc[order].astype({"transactions": "int64", "units": "float64"})
    table.index.name = "type"
    return table


def holds_line(tx: pd.DataFrame, *, what: str = "the window") -> str:
    """One line: how many transactions ``what`` holds, per type how many and their units
    (:func:`by_type`), and where the answers the rows suffice for come from (:data:`AT_ONCE`);
    see the module's example."""
    table = by_type(tx)
    parts = [
        f"{int(row.transactions):,} {kind} ({_units(row.units)} units)"
        for kind, row in table.iterrows()
    ]
    n = int(table["transactions"].sum())
    return f"{what} holds {n:,} transaction{'' if n == 1 else 's'}" + (
        ": " + ", ".join(parts) + AT_ONCE if parts else ""
    )


def _units(value: float) -> str:
    """Units as a person reads them: ``3,210``, ``12.5``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0")
