"""``activity_explorer()``: an :class:`~invtools.notebook.explorer.ActivityExplorer` of a
transactions frame, or of a client's transactions in a window (fetched: only that window).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools._types import parse_time
from invtools.errors import ConfigError
from invtools.notebook.explorer import ActivityExplorer
from invtools.viz.common import check_tz

__all__ = ["activity_explorer"]


def activity_explorer(
    df_or_client: Any,
    *,
    since: Any = None,
    until: Any = None,
    lines: pd.DataFrame | None = None,
    tz: str | None = None,
    top: int | None = 8,
) -> ActivityExplorer:
    """Explore transaction activity: :func:`~invtools.viz.plot_activity` with controls.

    ``df_or_client``: a transactions frame (``client.transactions_df()`` or
    :func:`invtools.frames.transactions_df`; no network), or a Client, whose transactions are
    fetched once (with a progress bar; cached like every request). ``lines``: a lines frame
    (:func:`invtools.frames.lines_df`) to allow splitting by item. ``tz``: the time zone days
    and weeks are cut in (default UTC); ``top``: most categories drawn, the rest is "other".

    ``since``/``until``: the window, spelled as for the client's methods -- a duration back
    from now (``"90D"``, ``"12W"``, a ``Timedelta``), a month (``"2026-10"``: all of it), a
    date, a time. A Client is asked for that window only (``client.transactions_df(since=...,
    until=...)``: the values are passed through as given, or, with a ``tz`` other than UTC,
    as the moments they stand for in ``tz``); a frame, and ``lines``, are cut to it. Dates
    and months are days of ``tz``.

    Controls: date range (from the frame's first to its last day, which are also the furthest
    the pickers go: a frame fetched with ``since=`` is explored from then, even split by item
    over longer ``lines``), per day/week/month, count or quantity, units absolute or signed
    (quantities), split by type/location/supplier/customer(/item: suppliers and customers
    never share a legend), transaction types (checkboxes), leave out the opening stock counts
    (:func:`~invtools.viz.opening_counts`), bars or lines. A start after the end is a message
    in words, not an exception. The picture and a summary (totals per category, the total --
    saying whether units are absolute or signed -- the busiest period, and the opening stock
    counts left out or, in a quantity view, their share) follow every change; the same
    numbers are in ``explorer.table`` and ``explorer.summary``.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-03-18"],
    ...                                                       utc=True),
    ...                    "type": ["in", "out"], "total_quantity": [5.0, 2.0]})
    >>> ex = activity_explorer(tx)
    >>> ex.freq.value = "M"
    >>> ex.table.to_dict("list")
    {'in': [1], 'out': [1]}
    >>> ex.metric.value = "quantity"
    >>> ex.units.value = "signed"
    >>> ex.summary_html.value.split(" in ")[0]
    '<b>Total:</b> 7 units (signed: as recorded, an adjustment of -5 subtracts 5)'
    >>> activity_explorer(tx, since="2026-03-10").data["type"].tolist()   # or "90D", "2026-03"
    ['out']
    """
    check_tz(tz, "activity_explorer")
    lo = parse_time(since, name="activity_explorer: since", tz=tz)
    hi = parse_time(until, end=True, name="activity_explorer: until", tz=tz)
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(
            f"activity_explorer: since={since!r} ({lo:%Y-%m-%d %H:%M} UTC) is "
            f"after until={until!r} ({hi:%Y-%m-%d %H:%M} UTC); give a since on "
            "or before the until"
        )
    if hasattr(df_or_client, "team") and hasattr(df_or_client, "transactions"):  # a Client
        if tz not in (None, "UTC"):  # the client reads dates in UTC: give it the moments
            since, until = lo, hi
        data = df_or_client.transactions_df(since=since, until=until)
    else:
        data = _window(df_or_client, lo, hi)
    lines = _window(lines, lo, hi, "lines")  # None stays None
    return ActivityExplorer(data, lines=lines, tz=tz, top=top)


def _window(df: Any, lo: Any, hi: Any, what: str = "the frame") -> Any:
    """The rows of ``df`` from ``lo`` to ``hi`` (aware datetimes or None) by their
    ``transaction_time``; ``df`` unchanged without a window (or when it is no frame: the
    explorer says so)."""
    if (lo is None and hi is None) or not isinstance(df, pd.DataFrame):
        return df
    if "transaction_time" not in df.columns:
        raise ConfigError(
            f"activity_explorer: since/until cut {what} by its transaction_time "
            f"column, which it has not"
        )
    times = pd.to_datetime(df["transaction_time"], utc=True)
    return df[times.between(lo or times.min(), hi or times.max()).to_numpy(dtype=bool)]
