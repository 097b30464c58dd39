"""Activity by two groupings at once: :func:`crosstab`, the count (or units) of transactions
per member and month of each type, per location and type, per partner and month, in one call.

Where :func:`invtools.viz.activity_table` gives one grouping over time (a chart's numbers),
:func:`crosstab` crosses any two (or more) of the same words: the rows' keys against the
columns' key, a period (``"month"``) being a key like any other.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd

from invtools._config import check_flag
from invtools._types import TX_TYPES, check_tz
from invtools.analysis.common import carry_provenance, check_choice, in_window, need, newest_name
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames import OPENING_NOTE
from invtools.frames.openings import with_openings, without_openings

__all__ = ["crosstab", "CROSSTAB_KEYS", "CROSSTAB_PERIODS", "CROSSTAB_METRICS"]

#: A key -> the (id, name) columns it reads: a renamed one is one row, under its newest name.
CROSSTAB_KEYS = {
    "type": (None, "type"),
    "location": ("location_id", "location_name"),
    "partner": ("partner_id", "partner_name"),
    "member": ("created_by_id", "created_by_name"),
    "item": ("item_id", "item_name"),
}
#: A period key -> pandas' period (labelled as pandas writes it: "2026-05", "2026Q2"; a week
#: by its Monday).
CROSSTAB_PERIODS = {"day": "D", "week": "W-SUN", "month": "M", "quarter": "Q", "year": "Y"}
_WORDS = (*CROSSTAB_KEYS, *CROSSTAB_PERIODS)
#: ``metric=``
CROSSTAB_METRICS = ("count", "quantity")
NONE = "(none)"


def crosstab(
    transactions: pd.DataFrame,
    *,
    rows: str | list[str],
    columns: str = "type",
    metric: str = "count",
    since: Any = None,
    until: Any = None,
    tz: str | None = "UTC",
    signed: bool = False,
    exclude_opening_counts: bool = False,
    strict: bool = False,
) -> pd.DataFrame:
    """The transactions counted (or their units added up) by ``rows`` against ``columns``: a
    table per member and month of each type in one call.

    ``transactions`` is a transactions frame (``client.transactions_df()``) or a lines frame
    (``client.lines_df()``: ``"item"`` is a key there only). ``rows`` is a key or a list of
    keys (the index, in that order), ``columns`` a key: ``"type"``, ``"location"`` (where the
    stock changed: ``location_name``), ``"partner"``, ``"member"`` (who recorded it:
    ``created_by_name``), ``"item"``, a period -- ``"day"``, ``"week"`` (from Monday),
    ``"month"``, ``"quarter"``, ``"year"``, cut in ``tz`` (default UTC; a shop in Seoul wants
    ``tz="Asia/Seoul"``) and labelled by their start (``"2026-05"``, ``"2026Q2"``, a week by
    its Monday) -- or any other column of the frame. A renamed location, partner, member or
    item is one row under its newest name; a missing value is ``"(none)"``.

    ``metric="count"``: distinct transactions (a lines frame's ``transaction_id``: a sale of
    five items counts once); ``"quantity"``: their units added up (``total_quantity``, lines:
    ``quantity``), absolute unless ``signed=True`` (only adjustments carry a sign: a count of
    -5 is 5 units of activity). ``since``/``until`` limit the count (both included; a date,
    a month, or a duration such as ``"90D"`` back from the moment the frame is as of); reaching
    outside the frame's window is said (a :class:`~invtools.errors.WindowWarning`;
    ``strict=True``: an error). ``exclude_opening_counts=True`` leaves out the opening stock
    counts (the stocktake a record starts with; :func:`invtools.frames.opening_counts`, read
    from the frame's ``opening_count`` column, so an adjust-only slice leaves them out too),
    said in ``attrs["opening_counts_excluded"]``: the ids of the transactions left out.

    Returns a wide table: one row per combination of the rows' keys that holds anything,
    one column per value of ``columns`` (types in the order in/out/move/adjust, periods in
    time order, others by name), 0 where nothing; int64 counts, float64 quantities.
    ``attrs["crosstab"]`` says the keys, metric and tz; the frame's provenance is carried on.

    >>> tx = client.transactions_df()
    >>> table = crosstab(tx, rows=["member", "month"], columns="type")
    >>> table.columns.tolist(), table.index.names
    (['in', 'out', 'move', 'adjust'], FrozenList(['member', 'month']))
    >>> int(table.to_numpy().sum()) == len(tx)                  # every transaction, once
    True
    >>> where = crosstab(tx, rows="location", columns="type", metric="quantity")
    >>> who_buys = crosstab(tx, rows="partner", columns="month", since="2026-05-01")
    >>> adjusts = crosstab(tx[tx["type"] == "adjust"], rows="member", columns="month",
    ...                    exclude_opening_counts=True)
    >>> len(adjusts.attrs["opening_counts_excluded"])  # the shop's opening stocktake
    4
    """
    who = "crosstab"
    keys = [rows] if isinstance(rows, str) else rows
    if not isinstance(keys, (list, tuple)) or not keys or not all(isinstance(k, str) for k in keys):
        raise ArgumentTypeError(
            f"{who}: rows must be a key or a list of keys, such as ['member', 'month'], "
            f"not {type(rows).__name__}"
        )
    if not isinstance(columns, str):
        raise ArgumentTypeError(
            f"{who}: columns must be one key, such as 'type', not {type(columns).__name__}"
        )
    keys = list(keys)
    if len({*keys, columns}) < len(keys) + 1:
        raise ConfigError(f"{who}: a key is given twice ({[*keys, columns]}); give each once")
    check_choice(metric, CROSSTAB_METRICS, who=who, name="metric")
    check_flag(signed, f"{who}: signed")
    leave_out = check_flag(exclude_opening_counts, f"{who}: exclude_opening_counts")
    zone = check_tz(tz, who=who)
    need(transactions, "transactions", "transaction_time", who=who)
    df = with_openings(transactions) if leave_out else transactions
    df = in_window(df, since, until, who=who, strict=strict)
    if leave_out:
        df, left_out = without_openings(df)
    labels = {key: _labels(df, key, zone, who=who) for key in [*keys, columns]}
    frame = pd.DataFrame({key: values.to_numpy(dtype=object) for key, values in labels.items()})
    if metric == "count":
        ids = "transaction_id" in df.columns
        frame["_v"] = df["transaction_id"].to_numpy() if ids else range(len(df))
        how = "nunique"
    else:
        units = next((c for c in ("total_quantity", "quantity") if c in df.columns), None)
        if units is None:
            raise ConfigError(
                f"{who}: metric='quantity' needs 'total_quantity' (a transactions frame) or "
                "'quantity' (a lines frame); this frame has neither. Use metric='count'."
            )
        q = pd.to_numeric(df[units], errors="coerce").astype("float64").fillna(0.0)
        frame["_v"] = (q if signed else q.abs()).to_numpy()
        how = "sum"
    if len(frame):
        table = frame.groupby([*keys, columns], sort=False)["_v"].agg(how).unstack(columns)
        table = table.reindex(columns=sorted(table.columns, key=lambda v: _rank(columns, v)))
        table = table.fillna(0).sort_index(key=lambda level: level.map(partial(_rank, level.name)))
    else:  # nothing to count: no rows, no columns
        table = pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=keys))
    table = table.astype("int64" if metric == "count" else "float64")
    table.columns.name = columns
    table.index.names = keys
    table.attrs["crosstab"] = {"rows": keys, "columns": columns, "metric": metric, "tz": zone}
    if leave_out:
        table.attrs[OPENING_NOTE] = left_out
    return carry_provenance(table, transactions, who=who)


def _labels(df: pd.DataFrame, key: str, zone: str, *, who: str) -> pd.Series:
    """One text label per row of ``df`` for ``key``."""
    if key in CROSSTAB_PERIODS:
        local = df["transaction_time"].dt.tz_convert(zone).dt.tz_localize(None)
        periods = local.dt.to_period(CROSSTAB_PERIODS[key])
        if key == "week":
            return periods.dt.start_time.dt.strftime("%Y-%m-%d").astype("string")
        return periods.astype("string")
    if key in CROSSTAB_KEYS:
        id_column, name = CROSSTAB_KEYS[key]
        if name not in df.columns:
            raise ConfigError(
                f"{who}: {key!r} needs a {name!r} column"
                + (": a lines frame has it (client.lines_df())" if key == "item" else "")
                + f"; this frame has {list(map(str, df.columns))[:12]}"
            )
        text = df[name].astype("string")
        if id_column is not None and id_column in df.columns and len(df):  # renamed: newest
            newest = newest_name(df, id_column, name).astype("string")
            known = newest.reindex(df[id_column].array).to_numpy(dtype=object)
            text = pd.Series(known, index=df.index, dtype="string").fillna(text)
        return text.fillna(NONE)
    if key not in df.columns:
        raise ConfigError(
            f"{who}: {key!r} is not one of {', '.join(map(repr, _WORDS))} nor a column of the "
            f"frame ({list(map(str, df.columns))[:12]})"
        )
    return df[key].astype("string").fillna(NONE)


def _rank(key: Any, value: Any) -> str:
    """What orders a label: types in/out/move/adjust, others (periods too) as text, "(none)"
    last."""
    if key == "type":
        return f"{TX_TYPES.index(value) if value in TX_TYPES else 9}{value}"
    return f"{int(value == NONE)}{value}"
