"""The numbers behind the pictures: :func:`activity_table` and the pure helpers it needs.

Reading a frame's times, its categories (``by=``) and values (``metric=``), the plot range
(``since``/``until``), the frequencies plots understand, and the top-N lumping into ``"other"``.
No matplotlib here: everything is pandas in, pandas out.

The helpers every plot shares (a frame's times, frequencies, time zones, the words of an
error) are in :mod:`invtools.viz.common`.

>>> import pandas as pd
>>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02"], utc=True),
...                    "type": ["in"]})
>>> activity_table(tx, "W").to_dict("list")
{'in': [1]}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools._types import TX_TYPES, parse_time
from invtools.errors import ConfigError
from invtools.frames import OPENING_NOTE, merge_provenance, window_of
from invtools.frames.openings import transaction_ids
from invtools.viz.common import (
    check_tz,
    choices_text,
    columns_text,
    frame_times,
    period_freq,
)
from invtools.viz.rows import opening_counts, partner_types

__all__ = ["activity_table"]

#: The bucket that holds every category outside the top N, and the label of missing values.
OTHER = "other"
NONE = "(none)"

#: The two sides of trade: ``by="supplier"`` / ``"customer"`` count only their transactions.
PARTNER_SIDES = ("supplier", "customer")
BY_CHOICES = ("type", "location", "supplier", "customer", "partner", "member", "item")
METRICS = ("count", "quantity")
#: The most periods a table or chart is made of (27 years by day).
MAX_PERIODS = 10_000


def activity_table(
    df: pd.DataFrame,
    freq: str = "W",
    by: str | None = "type",
    metric: str = "count",
    *,
    top: int | None = 8,
    other: bool = True,
    since: Any = None,
    until: Any = None,
    tz: str | None = None,
    signed: bool = False,
    exclude_opening_counts: bool = False,
) -> pd.DataFrame:
    """Transaction activity per period and category: the numbers
    :func:`~invtools.viz.plot_activity` draws.

    ``df`` is a transactions frame (``transactions_df``: one row per transaction) or a lines
    frame (``lines_df``: one row per transaction line, with ``item_name`` and ``quantity``).

    - ``freq``: ``"D"``, ``"W"`` (weeks start on Monday), ``"M"`` (calendar months), also
      ``"Q"``, ``"Y"`` and the pandas spellings ``"ME"``, ``"MS"``, ``"W-SAT"``... (a
      ``"W-XXX"`` week *ends* on that day, as in pandas).
    - ``by``: ``"type"``, ``"location"`` (``location_name``, else ``to_location_name``: where
      stock came in, went out or was adjusted, the destination of a move;
      ``from_location_name`` when there is none), ``"supplier"`` (only transactions with a
      supplier, one column per supplier), ``"customer"`` (the same for customers; see
      :func:`~invtools.viz.partner_types` for how a partner's type is known), ``"partner"``
      (every partner, suppliers and customers together), ``"member"`` (``created_by_name``:
      who recorded it), ``"item"`` (lines frames only; an item deleted in the service since is
      counted, labelled ``"<name> (deleted)"``), ``None`` (one column ``"all"``), or the
      name of any other column of ``df``. Missing values count as ``"(none)"``.
    - ``metric``: ``"count"`` (transactions, or lines for a lines frame) or ``"quantity"``:
      the sum of ``total_quantity`` (lines: ``quantity``); a missing quantity counts as 0.
    - ``signed``: quantities as recorded (``True``) or absolute (``False``, the default).
      In, out and move quantities are recorded positive; only adjustments carry a sign, so
      the two differ by twice the units counted away: absolute takes a correction of -5 as
      5 units of activity, signed subtracts it.
    - ``exclude_opening_counts``: leave out the opening stock counts (the stocktake a
      team's record starts with; :func:`~invtools.viz.opening_counts` says how they are
      recognised), whose thousands of units dwarf everything else in a quantity view. Read
      from the frame's ``opening_count`` column, decided on the whole frame as it was built,
      so a slice of it (``lines[lines["type"] == "adjust"]``) leaves them out too. Said in
      ``attrs["opening_counts_excluded"]``: the ids of the transactions left out of the range.
    - ``top``: keep the ``top`` categories with the largest totals over the range, sum the rest
      into ``"other"``; ``None`` keeps all. ``other=False`` leaves the rest out instead: the
      top N alone (``by="customer", top=5, other=False``: the five biggest customers). A tie
      at the N-th place is broken by name; :func:`invtools.analysis.top` keeps ties.
    - ``since``, ``until``: the range, both included (an ``until`` without a time of day
      includes that whole day), spelled as for the client's methods; by default the first and
      last transaction. Every period of the range is a row, with zeros where nothing happened;
      the first and last periods count only what falls inside the range
      (``since="2026-03-04"`` by week leaves out 2 and 3 March).
    - ``tz``: the time zone periods are cut in (default UTC, the service's time zone); a shop
      in Seoul wants ``tz="Asia/Seoul"`` so that its days start at its midnight.

    Returns a DataFrame: index ``period`` (period start timestamps, tz-aware), one column per
    category (types in the order in/out/move/adjust, others largest first, then ``"other"``),
    int64 counts or float64 quantities. No rows in range and no ``since``/``until``: an empty
    frame. Its ``attrs`` hold the provenance of ``df`` (:func:`invtools.frames.merge_provenance`).

    >>> import pandas as pd
    >>> lines = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-01-05", "2026-01-20", "2026-03-01"],
    ...                                        utc=True),
    ...     "type": ["in", "adjust", "out"], "item_name": ["bolt", "bolt", "nut"],
    ...     "quantity": [10.0, -3.0, 4.0]})
    >>> activity_table(lines, "M", by="item", metric="quantity")  # doctest: +NORMALIZE_WHITESPACE
    item                       bolt  nut
    period
    2026-01-01 00:00:00+00:00  13.0  0.0
    2026-02-01 00:00:00+00:00   0.0  0.0
    2026-03-01 00:00:00+00:00   0.0  4.0
    """
    table = table_of(
        "activity_table",
        df,
        freq,
        by,
        metric,
        top=top,
        other=other,
        since=since,
        until=until,
        tz=tz,
        signed=signed,
        exclude_opening_counts=exclude_opening_counts,
    )
    note = table.attrs.get(OPENING_NOTE)
    table.attrs.clear()  # not what pandas carried over: where the frame counted came from
    table.attrs.update(merge_provenance([df]))
    if table.attrs:
        table.attrs["rows"] = len(table)  # the table's own, not its input's
    if note is not None:
        table.attrs[OPENING_NOTE] = note
    return table


def table_of(
    who: str,
    df: pd.DataFrame,
    freq: str,
    by: str | None,
    metric: str,
    *,
    top: int | None = None,
    other: bool = True,
    since: Any = None,
    until: Any = None,
    tz: str | None = None,
    signed: bool = False,
    exclude_opening_counts: bool = False,
) -> pd.DataFrame:
    """:func:`activity_table` for ``who`` (the function the user called, named by errors)."""
    pfreq, _noun = period_freq(freq)
    if not isinstance(metric, str) or metric not in METRICS:
        raise ConfigError(f"{who}: metric={metric!r} is not one of {choices_text(METRICS)}.")
    if top is not None and (
        isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1
    ):
        raise ConfigError(f"{who}: top={top!r} must be a positive whole number (or None for all).")
    flags = (
        ("other", other),
        ("signed", signed),
        ("exclude_opening_counts", exclude_opening_counts),
    )
    for name, flag in flags:
        if not isinstance(flag, (bool, np.bool_)):
            raise ConfigError(f"{who}: {name}={flag!r} must be True or False.")
    tz = check_tz(tz)
    times = frame_times(df, who)
    categories = _categories(df, by)
    values = _values(df, metric, signed)

    lo, hi, last_in = _time_range(since, until, tz, who)
    keep = times.notna()  # a row without a time cannot be placed in any period
    if by in PARTNER_SIDES:  # only the transactions with a partner of that type
        keep &= (partner_types(df) == by).fillna(False)
    if lo is not None:
        keep &= times >= lo
    if last_in is not None:
        keep &= times <= last_in
    left_out = None
    if exclude_opening_counts:  # and said: the transactions left out of this range
        openings = opening_counts(df)
        left_out = transaction_ids(df, keep & openings)
        keep &= ~openings
    rows = keep.to_numpy(dtype=bool)
    # Wall-clock times in the chosen zone, naive: Period cannot hold a time zone.
    periods = times[rows].dt.tz_convert(tz).dt.tz_localize(None).dt.to_period(pfreq)
    first = periods.min() if lo is None else pd.Period(lo.tz_convert(tz).tz_localize(None), pfreq)
    last = periods.max() if hi is None else pd.Period(hi.tz_convert(tz).tz_localize(None), pfreq)
    if not len(periods) and (lo is None or hi is None):  # nothing in range, no range given
        full = pd.PeriodIndex([], freq=pfreq)
    elif (n := last.ordinal - first.ordinal + 1) > MAX_PERIODS:
        raise ConfigError(
            f"{who}: from {first} to {last} is {n:,} periods of a {_noun}, more than a chart "
            f"holds ({MAX_PERIODS:,}); narrow since/until or take a longer freq"
        )
    else:  # every row is in the range, which _time_range checked ends after it starts
        full = pd.period_range(first, last, freq=pfreq)

    sums = values[rows].groupby([periods.array, categories[rows].to_numpy()]).sum()
    table = _top(sums.unstack(fill_value=0).reindex(full, fill_value=0), top, by, other=other)
    table = table.astype("int64" if metric == "count" else "float64")
    # Midnight does not exist (or exists twice) on DST days in a few zones: take the later one.
    starts = full.start_time.tz_localize(
        tz, nonexistent="shift_forward", ambiguous=np.zeros(len(full), dtype=bool)
    )
    # no freq on the index: a saved table (Parquet, Feather) comes back without one
    # (stubs: freq=None, which drops it, is allowed)
    table.index = pd.DatetimeIndex(starts, freq=None, name="period")  # type: ignore[arg-type]
    # Plain text labels, the Index type pandas infers for them: the one read_parquet and
    # read_feather give back, so a saved table is equal to the table.
    table.columns = pd.Index([str(c) for c in table.columns], name=by if by is not None else None)
    if left_out is not None:
        table.attrs[OPENING_NOTE] = left_out
    return table


def covered_range(
    who: str, df: pd.DataFrame, since: Any, until: Any, tz: str | None
) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The span of time a table of ``df`` knows about, as UTC ``(start, end)``: ``since``
    and ``until`` where given (an ``until`` date: its whole day), else the window ``df`` was
    fetched with (:func:`invtools.frames.window_of`), else its first and last transaction;
    None where there is none. What says whether a table's first and last periods are whole.

    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-04", "2026-03-20"],
    ...                                                        utc=True)})
    >>> [str(t) for t in covered_range("me", tx, None, "2026-03-22", None)]
    ['2026-03-04 00:00:00+00:00', '2026-03-22 23:59:59.999999999+00:00']
    """
    lo, _hi, last_in = _time_range(since, until, check_tz(tz), who)
    times = frame_times(df, who).dropna()
    window = window_of(df)
    if lo is None and window is not None and window[0] is not None:
        lo = window[0]
    if last_in is None and window is not None:
        last_in = window[1]
    if lo is None and len(times):
        lo = times.min()
    if last_in is None and len(times):
        last_in = times.max()
    return lo, last_in


# ------------------------------------------------------------------------------- categories, values

#: ``by=`` -> the column it reads, where that column is all it takes.
_BY_COLUMN = {
    "type": "type",
    **dict.fromkeys(("partner", *PARTNER_SIDES), "partner_name"),
    "member": "created_by_name",
}


def _categories(df: pd.DataFrame, by: str | None) -> pd.Series:
    """One label per row for the split ``by`` (plain Python strings, missing -> "(none)")."""
    if by is None:
        return pd.Series("all", index=df.index, dtype=object)
    if not isinstance(by, str):
        raise ConfigError(
            f"by={by!r} must be one of {choices_text(BY_CHOICES)}, None or a column name."
        )
    if by in _BY_COLUMN:
        if _BY_COLUMN[by] not in df.columns:
            raise ConfigError(
                f"by={by!r} needs a {_BY_COLUMN[by]!r} column; this frame has {columns_text(df)}."
            )
        col = df[_BY_COLUMN[by]]
    elif by == "location" and "location_name" in df.columns:  # the frames' own choice
        col = df["location_name"]
    elif by == "location":
        sides = [df[c] for c in ("to_location_name", "from_location_name") if c in df.columns]
        if not sides:
            raise ConfigError(
                f"by='location' needs a 'to_location_name' or 'from_location_name' column; "
                f"this frame has {columns_text(df)}."
            )
        col = sides[0].astype(object)
        if len(sides) == 2:  # the destination, else the source
            col = col.where(col.notna(), sides[1].astype(object))
    elif by == "item":
        if "item_name" not in df.columns and "item_id" not in df.columns:
            raise ConfigError(
                "by='item' needs a lines frame (one row per transaction line, with 'item_name'), "
                "e.g. invtools.frames.lines_df(details); a transactions frame has one row per "
                "transaction and no items. Split it by 'type', 'location', 'partner' or 'member' "
                "instead."
            )
        col = df["item_name"] if "item_name" in df.columns else df["item_id"]
        if "item_deleted" in df.columns:  # what happened happened: counted, and labelled
            gone = df["item_deleted"].fillna(False).to_numpy(dtype=bool)
            col = col.astype("string").mask(gone, col.astype("string") + " (deleted)")
    elif by in df.columns:
        col = df[by]
    else:
        raise ConfigError(
            f"by={by!r} is not one of {choices_text(BY_CHOICES)} or None, nor a column of this "
            f"frame ({columns_text(df)})."
        )
    # Vectorised to text (categories, ids, names alike), so labels are plain str.
    return col.astype("string").fillna(NONE).astype(object)


def _values(df: pd.DataFrame, metric: str, signed: bool = False) -> pd.Series:
    if metric == "count":
        return pd.Series(1, index=df.index, dtype="int64")
    column = "total_quantity" if "total_quantity" in df.columns else "quantity"
    if column not in df.columns:
        raise ConfigError(
            "metric='quantity' needs a 'total_quantity' column (transactions frame) or a "
            f"'quantity' column (lines frame); this frame has {columns_text(df)}. Use "
            "metric='count'."
        )
    q = pd.to_numeric(df[column], errors="coerce").astype("float64")
    return (q if signed else q.abs()).fillna(0.0)


# ------------------------------------------------------------------------------- range, periods


def _time_range(since: Any, until: Any, tz: str, who: str):
    """(since, until, the last instant included) as UTC timestamps, None where open; naive
    values in ``tz``. An ``until`` at midnight (a date, or a time of 00:00) includes that
    whole day."""
    zone = pd.Timestamp(0, tz=tz).tzinfo  # the zone pandas cuts periods in, for the parser too

    def bound(value: Any, name: str) -> pd.Timestamp | None:
        if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):  # NaT: open
            return None
        try:  # the frames' times are nanoseconds: years 1677 to 2262
            return pd.Timestamp(parse_time(value, name=f"{who}: {name}", tz=zone)).as_unit("ns")
        except (OverflowError, pd.errors.OutOfBoundsDatetime):
            raise ConfigError(f"{who}: {name} ({value}) is further off than a chart goes") from None

    lo, hi = bound(since, "since"), bound(until, "until")
    if lo is not None and hi is not None and hi < lo:
        raise ConfigError(
            f"{who}: until ({until}) is before since ({since}); give an until on or after the "
            "since."
        )
    last_in = hi
    if hi is not None and (local := hi.tz_convert(tz)) == local.normalize():  # a date
        last_in = (local + pd.Timedelta(days=1)).tz_convert("UTC") - pd.Timedelta(1, "ns")
    return lo, hi, last_in


def _top(
    table: pd.DataFrame, top: int | None, by: str | None, *, other: bool = True
) -> pd.DataFrame:
    """Keep the ``top`` largest columns, sum the rest into "other" (``other=False``: leave
    them out); order the columns."""
    totals = table.abs().sum(axis=0)  # signed quantities: the most activity, either way
    # Largest first, ties by name so the order (and the colours) never depend on input order.
    ranked = sorted(table.columns, key=lambda c: (-totals[c], str(c)))
    if top is not None and len(ranked) > top:
        rest = table[ranked[top:]].sum(axis=1)
        ranked = ranked[:top]
        # a real category called "other" is merged with the rest rather than clashing;
        # other=False: the top N alone (a real "other" among them kept, in its place)
        table = table[ranked]
        if other:
            table = table.assign(**{OTHER: table[OTHER] + rest if OTHER in ranked else rest})
    if by == "type":
        ranked = sorted(ranked, key=lambda c: TX_TYPES.index(c) if c in TX_TYPES else 99)
    if not other:
        return table[ranked]
    return table[[c for c in ranked if c != OTHER] + ([OTHER] if OTHER in table.columns else [])]
