"""The top N of any group, ties kept and said: :func:`top`.

``df.groupby(...).sum().nlargest(5)`` or ``.head(5)`` cuts a tie at the fifth place without a
word, and which of the tied rows survive depends on the order of the input. :func:`top` keeps
every row that ties with the N-th, ranks them (``rank``: 1 for the largest, tied rows share
theirs), flags them (``tied``) and says how many rows tie at the N-th place
(``attrs["top"]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.analysis.common import carry_provenance, check_choice, check_number
from invtools.errors import ArgumentTypeError, ConfigError

__all__ = ["top", "AGGREGATIONS"]

#: ``agg=``: how the rows of a group make its value.
AGGREGATIONS = ("sum", "mean", "max", "min", "count", "nunique")


def _columns(value: Any, df: pd.DataFrame, *, who: str, name: str) -> list[str]:
    """``value`` (a column name or a list of them) as a list of columns of ``df``."""
    names = [value] if isinstance(value, str) else value
    if (
        not isinstance(names, (list, tuple))
        or not names
        or not all(isinstance(c, str) for c in names)
    ):
        raise ArgumentTypeError(
            f"{who}: {name} must be a column name or a list of them, not {type(value).__name__}"
        )
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise ConfigError(
            f"{who}: {name}={value!r}: the frame has no column(s) {missing}; it has "
            f"{list(map(str, df.columns))[:12]}"
        )
    return list(names)


def top(
    df: pd.DataFrame,
    *,
    by: str | list[str],
    value: str | None = None,
    n: int = 5,
    agg: str = "sum",
    within: str | list[str] | None = None,
) -> pd.DataFrame:
    """The ``n`` largest groups of ``df`` by ``by`` (a column, or a list of them), measured by
    ``value`` (a column) aggregated with ``agg`` -- ``"sum"`` (default), ``"mean"``,
    ``"max"``, ``"min"``, ``"count"`` or ``"nunique"`` (distinct values, such as
    ``value="transaction_id"``: the number of transactions); ``value=None`` counts rows. With
    ``within`` (a column, or a list), the top ``n`` of each of its groups: the top 3 items of
    each customer.

    Ties are kept and said, never cut: every group whose value ties with the ``n``-th is
    kept, so a result may hold more than ``n`` rows. ``rank`` is 1 for the largest, tied rows
    sharing the best rank of their tie ("1, 2, 2, 4"); ``tied`` flags the rows that share
    theirs. Rows whose key is missing form a group of their own (a sale without a customer is
    activity too; drop them first to leave them out). ``attrs["top"]`` says ``n``, how many
    rows were kept (``rows``), how many beyond ``n`` (``beyond_n``), how many tie at the
    ``n``-th place (``tied_at_n``: 0 when the ``n``-th stands alone) and the same in words
    (``said``); the frame's provenance is carried on.

    Columns: ``within``'s (groups largest total first), ``by``'s, ``value`` (``"rows"`` when
    None), ``rank``, ``tied``; largest first, ties in the order of their keys.

    >>> sales = pd.DataFrame({"partner_name": ["Ann", "Bob", "Cy", "Di", "Ed", "Ann"],
    ...                       "quantity": [5.0, 4.0, 4.0, 4.0, 1.0, 1.0]})
    >>> best = top(sales, by="partner_name", value="quantity", n=2)
    >>> best                                              # doctest: +NORMALIZE_WHITESPACE
      partner_name  quantity  rank  tied
    0          Ann       6.0     1  False
    1          Bob       4.0     2   True
    2           Cy       4.0     2   True
    3           Di       4.0     2   True
    >>> best.attrs["top"]["said"]
    'kept 4 rows for n=2: 3 tie at the 2nd place'
    """
    who = "top"
    if not isinstance(df, pd.DataFrame):
        raise ArgumentTypeError(
            f"{who}: df must be a DataFrame (a lines or transactions frame, or any table), "
            f"not {type(df).__name__}"
        )
    keys = _columns(by, df, who=who, name="by")
    groups = [] if within is None else _columns(within, df, who=who, name="within")
    if overlap := set(keys) & set(groups):
        raise ConfigError(f"{who}: by and within share the column(s) {sorted(overlap)}")
    check_choice(agg, AGGREGATIONS, who=who, name="agg")
    if not check_number(n, who=who, name="n", whole=True) >= 1:
        raise ConfigError(f"{who}: n={n!r} must be 1 or more (how many groups to keep)")
    if value is None:
        if agg not in ("sum", "count"):
            raise ConfigError(
                f"{who}: value=None counts rows; agg={agg!r} needs a value column to aggregate"
            )
        column, values, agg = "rows", pd.Series(1, index=df.index, dtype="int64"), "sum"
    else:
        (column,) = _columns(value, df, who=who, name="value")
        values = df[column]
        if agg in ("sum", "mean") and not pd.api.types.is_numeric_dtype(values):
            raise ConfigError(
                f"{who}: value={value!r} is not a column of numbers; agg={agg!r} adds them up. "
                "Count it instead: agg='count' or agg='nunique'."
            )
        if column in keys + groups:
            raise ConfigError(f"{who}: value={value!r} is also a key (by or within)")
    frame = df[groups + keys].assign(**{column: values.to_numpy()})
    sums = frame.groupby(groups + keys, dropna=False, sort=True)[column].agg(agg).reset_index()
    if groups:
        total = sums.groupby(groups, dropna=False)[column].transform("sum")
        order = sums.assign(_total=total).sort_values(
            ["_total", *groups, column, *keys],
            ascending=[False] + [True] * len(groups) + [False] + [True] * len(keys),
            kind="stable",
            na_position="last",
        )
        sums = order.drop(columns="_total")
        ranks = sums.groupby(groups, dropna=False, sort=False)[column].rank(
            method="min", ascending=False
        )
    else:
        sums = sums.sort_values(
            [column, *keys],
            ascending=[False] + [True] * len(keys),
            kind="stable",
            na_position="last",
        )
        ranks = sums[column].rank(method="min", ascending=False)
    sums["rank"] = ranks.fillna(len(sums) + 1).astype("int64")  # no value: last
    kept = sums[sums["rank"] <= n].reset_index(drop=True)
    same = kept.groupby([*groups, "rank"], dropna=False)["rank"].transform("size")
    kept["tied"] = (same > 1).to_numpy(dtype=bool)
    kept.attrs["top"] = _said(kept, groups, n)
    return carry_provenance(kept, df, who=who)


def _said(kept: pd.DataFrame, groups: list[str], n: int) -> dict[str, Any]:
    """How many rows ``kept`` holds, how many beyond ``n`` and how many tie at the ``n``-th
    place (over every group of ``within``)."""
    parts = [kept] if not groups else [g for _, g in kept.groupby(groups, dropna=False)]
    beyond = tied = 0
    for part in parts:
        beyond += max(len(part) - n, 0)
        if len(part) >= n:
            nth = part["rank"].iloc[n - 1]
            size = int(np.sum(part["rank"].to_numpy() == nth))
            tied += size if size > 1 else 0
    place = f"{n}{'th' if 10 <= n % 100 < 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
    per = " of a group" if groups else ""
    said = f"kept {len(kept)} rows for n={n}{' per group' if groups else ''}: "
    said += f"{tied} tie at the {place} place{per}" if tied else f"no tie at the {place} place"
    return {"n": n, "rows": len(kept), "beyond_n": beyond, "tied_at_n": tied, "said": said}
