"""When the activity happens: :func:`activity_profile`, transactions and units by month of the
year or by weekday, per transaction type, with the rule for pooling the years said.

An 18-month history holds six calendar months twice: adding up every May would make May look
twice as busy as December. :func:`activity_profile` says which rule it used: ``how="mean"``
(the default) divides each month's total by the number of years that month is present in the
frame's window, ``how="sum"`` adds them up; the divisor is a column of the result
(``years``, or ``days`` for weekdays) and the rule is in its ``attrs["pooling"]``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from invtools._types import TX_TYPES, check_tz
from invtools.analysis.common import carry_provenance, check_choice, need
from invtools.errors import ConfigError, WindowWarning
from invtools.frames import context_of

__all__ = ["activity_profile", "PROFILE_KEYS", "POOLING"]

#: ``by=`` -> (the key column, its name column, the divisor column, the names in order).
PROFILE_KEYS = {
    "month": (
        "month",
        "month_name",
        "years",
        tuple("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()),
    ),
    "weekday": ("weekday", "weekday_name", "days", tuple("Mon Tue Wed Thu Fri Sat Sun".split())),
}
#: ``how=`` -> the rule, as the result's ``attrs["pooling"]`` says it.
POOLING = {
    "mean": (
        "mean per {unit} present: each {key}'s total divided by the number of {divisor} "
        "that {key} is present in the frame's window (the '{divisor}' column)"
    ),
    "sum": (
        "sum over the frame's window: each {key}'s total, however many {divisor} it is "
        "present (the '{divisor}' column says how many)"
    ),
}


def activity_profile(
    transactions: pd.DataFrame, *, by: str = "month", how: str = "mean", tz: str | None = "UTC"
) -> pd.DataFrame:
    """Transactions and units per month of the year (``by="month"``) or per weekday
    (``by="weekday"``), per transaction type: when in the year, or the week, the activity is.

    ``transactions`` is a transactions frame (``client.transactions_df()``: units are
    ``total_quantity``) or a lines frame (``client.lines_df()``: units are the lines'
    ``quantity``, transactions the distinct ``transaction_id``); units are absolute (an
    adjustment of -5 is 5 units of
    activity). Times are cut in ``tz`` (default UTC, the service's; a shop in Seoul wants
    ``tz="Asia/Seoul"``).

    The pooling rule is explicit. Which months (weekdays) are present, and how often, comes
    from the frame's window (:func:`invtools.frames.window_of`: ``since="2025-05-01"`` to the
    moment it was fetched; a whole list: its first transaction to the moment it is as of), not
    only from the months with rows: a month (a day) is present when any part of it falls within
    the window. ``years`` (``days``) is that count.

    - ``how="mean"`` (default): each month's total divided by ``years`` -- the mean per year
      present (weekdays: the mean per day, an average Monday).
    - ``how="sum"``: each month's total over the window, however many years it is present.

    Months (weekdays) not present in the window are not listed; a present one with no
    activity of a type is 0. Columns: ``month`` (1-12) and ``month_name`` (``"Jan"``) or
    ``weekday`` (0 = Monday) and ``weekday_name`` (``"Mon"``), ``type``, ``years`` or ``days``,
    ``transactions``, ``units``; in order of the year (week), then in/out/move/adjust (names
    and types are ordered categoricals, so a pivot keeps that order, not the alphabet's).
    ``attrs["pooling"]`` says the rule in words, ``attrs["profile"]`` the ``by``, ``how``,
    ``tz`` and the window's first and last instant; the frame's provenance is carried on.

    >>> profile = activity_profile(client.transactions_df(), by="month")   # 18 months
    >>> profile.attrs["pooling"]                          # doctest: +ELLIPSIS
    "mean per year present: each month's total divided by the number of years that month ..."
    >>> may = profile[(profile["month_name"] == "May") & (profile["type"] == "out")]
    >>> int(may["years"].iloc[0])                         # May 2025 and May 2026
    2
    >>> table = profile.pivot(index="month_name", columns="type", values="units")
    """
    who, df = "activity_profile", transactions
    check_choice(by, PROFILE_KEYS, who=who, name="by")
    check_choice(how, POOLING, who=who, name="how")
    zone = check_tz(tz, who=who)
    need(df, "transactions", "transaction_time type", who=who)
    quantity = next((c for c in ("total_quantity", "quantity") if c in df.columns), None)
    if quantity is None:
        raise ConfigError(
            f"{who}: df has no units: a transactions frame has 'total_quantity', a lines frame "
            "'quantity'. Pass client.transactions_df() or client.lines_df()."
        )
    key, name, divisor, names = PROFILE_KEYS[by]
    times = df["transaction_time"]
    rows = times.notna().to_numpy(dtype=bool)
    local = times[rows].dt.tz_convert(zone)
    ids = "transaction_id" in df.columns
    counted = pd.DataFrame(
        {
            key: (local.dt.month if by == "month" else local.dt.day_of_week).to_numpy(),
            "type": df["type"][rows].astype("string").fillna("(none)").to_numpy(dtype=object),
            "tx": df["transaction_id"][rows].to_numpy() if ids else np.arange(int(rows.sum())),
            "units": pd.to_numeric(df[quantity][rows], errors="coerce")
            .abs()
            .fillna(0.0)
            .to_numpy(),
        }
    )
    first, last = _span(df, times)
    present = _present(first, last, by, zone)
    kinds = sorted(
        set(counted["type"]), key=lambda t: (TX_TYPES.index(t) if t in TX_TYPES else 9, t)
    )
    full = pd.MultiIndex.from_product([present.index, kinds], names=[key, "type"])
    g = counted.groupby([key, "type"])
    out = pd.DataFrame({"transactions": g["tx"].nunique(), "units": g["units"].sum()}).reindex(
        full, fill_value=0
    )
    out = out.reset_index()
    labels = [names[k - 1 if by == "month" else k] for k in out[key]]
    # ordered, so a pivot or a groupby keeps the year's (week's) order, not the alphabet's
    out.insert(1, name, pd.Series(pd.Categorical(labels, categories=list(names), ordered=True)))
    out.insert(3, divisor, present.reindex(out[key]).to_numpy(dtype="int64"))
    out[key] = out[key].astype("int64")
    out["type"] = pd.Categorical(out["type"], categories=kinds, ordered=True)
    out["transactions"] = out["transactions"].astype("float64" if how == "mean" else "int64")
    out["units"] = out["units"].astype("float64")
    if how == "mean":
        out["transactions"] = out["transactions"] / out[divisor]
        out["units"] = out["units"] / out[divisor]
    unit = "year" if by == "month" else "day"
    out.attrs["pooling"] = POOLING[how].format(unit=unit, key=by, divisor=divisor)
    out.attrs["profile"] = {
        "by": by,
        "how": how,
        "tz": zone,
        "first": None if first is None else first.isoformat(),
        "last": None if last is None else last.isoformat(),
    }
    return carry_provenance(out, df, who=who)


def _span(df: pd.DataFrame, times: pd.Series) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The first and last instant the frame covers: its window as checked against its rows
    (a start of None: its first row; rows cut after the fetch: their own span, said), else its
    first row to the moment it is as of; widened to hold every row."""
    ctx = context_of(df)
    window, known = ctx.window, times.dropna()
    if ctx.claimed is not None and window is not None:
        said = " to ".join(f"{t:%d %b %Y}" if t is not None else "the start" for t in ctx.claimed)
        warnings.warn(
            f"activity_profile: the rows hold {window[0]:%d %b %Y} to {window[1]:%d %b %Y}, "
            f"not the window {said} the frame was fetched with (cut after the fetch): measured "
            "over the days they hold. Profile the frame as fetched for its whole window, or "
            'fetch the span you mean (client.lines_df(since="2026-08-01", until=...)).',
            WindowWarning,
            stacklevel=3,
        )
    first = window[0] if window is not None else None
    last = window[1] if window is not None else ctx.as_of
    if len(known):
        first = known.min() if first is None else min(first, known.min())
        last = known.max() if last is None else max(last, known.max())
    return first, last


def _present(first: Any, last: Any, by: str, zone: str) -> pd.Series:
    """Month (1-12) or weekday (0-6) -> how many years (days) of ``first``..``last``."""
    if first is None or last is None:
        return pd.Series([], dtype="int64")
    start, end = (t.tz_convert(zone).tz_localize(None) for t in (first, last))
    if by == "month":
        months = pd.period_range(start.to_period("M"), end.to_period("M"), freq="M")
        counts = pd.Series(months.month).value_counts()
    else:
        days = pd.period_range(start.to_period("D"), end.to_period("D"), freq="D")
        counts = pd.Series(days.day_of_week).value_counts()
    return counts.sort_index().astype("int64")
