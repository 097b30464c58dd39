"""How the transactions were recorded: :func:`audit` -- the rows edited since (``revision`` > 0)
and the rows recorded well after their transaction time (backdated), per member who recorded
them, with the lag.

What the API can tell and what it cannot (docs/how-to/audit.md): each transaction row has
``created_at`` (when it was recorded), ``created_by`` (who recorded it) and ``revision`` (how
many times it was edited since); it has no editor and no edit time. ``since=`` on the client
cuts on transaction time, so a row recorded from ``recorded_since`` on but dated before it is
only in a frame fetched from further back.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import pandas as pd

from invtools._durations import counts_back, parse_duration
from invtools._types import parse_time
from invtools.analysis.common import (
    DAY,
    as_of_time,
    carry_provenance,
    check_choice,
    need,
)
from invtools.errors import ConfigError, WindowWarning
from invtools.frames import TIME_DTYPE, window_of

__all__ = ["audit", "AUDIT_BY", "LOOK_BACK"]

#: ``by=`` of :func:`audit`: None (one row per flagged transaction) or ``"member"``.
AUDIT_BY = ("member",)

#: How far before ``recorded_since`` a frame should reach, for :func:`audit` to stay silent:
#: the rows backdated up to this long are in it.
LOOK_BACK = pd.Timedelta(days=30)

_COLUMNS = "transaction_id type transaction_time created_at revision created_by_id created_by_name"


def _recorded_span(tx: pd.DataFrame, since: Any, until: Any, *, who: str):
    """``since``/``until`` as UTC times (None: open); durations count back from the moment the
    frame is as of (:func:`as_of_time`), else from the newest ``created_at``."""
    relative = any(counts_back(v) for v in (since, until) if v is not None)
    now = as_of_time(None, tx["created_at"], who=who, frame=tx, said=relative)
    clock = None if pd.isna(now) else now.to_pydatetime()
    bounds = []
    for value, name, end in ((since, "recorded_since", False), (until, "recorded_until", True)):
        when = parse_time(value, end=end, name=f"{who}: {name}", now=clock)
        bounds.append(None if when is None else pd.Timestamp(when))
    return bounds


def _say_missed(tx: pd.DataFrame, since: pd.Timestamp | None, *, who: str, strict: bool) -> None:
    """Say so when the frame's window starts less than :data:`LOOK_BACK` before ``since`` (or
    than its own start, with no ``since``): rows recorded from ``since`` but dated that much
    before it are not in the frame (``since=`` cuts on transaction time)."""
    window = window_of(tx)
    if window is None or window[0] is None:
        return
    start = window[0]
    since = start if since is None else since
    if start <= since - LOOK_BACK:
        return
    fetch = since - LOOK_BACK
    said = (
        f"{who}: the transactions start {start:%d %b %Y} (since= cuts on transaction time); "
        f"rows recorded from {since:%d %b %Y} but dated before {start:%d %b %Y} are not in "
        f'the frame. Fetch from further back (client.transactions_df(since="{fetch:%Y-%m-%d}") '
        f"finds those backdated up to {LOOK_BACK.days} days; client.transactions_df() all), "
        "or pass a later recorded_since"
    )
    if strict:
        raise ConfigError(f"{said}.")
    warnings.warn(f"{said}; strict=True makes this an error.", WindowWarning, stacklevel=3)


def audit(
    transactions: pd.DataFrame,
    *,
    recorded_since: Any = None,
    recorded_until: Any = None,
    late: Any = "1D",
    by: str | None = None,
    strict: bool = False,
) -> pd.DataFrame:
    """The transactions edited (``revision`` > 0) or backdated (recorded -- ``created_at`` --
    more than ``late`` after their ``transaction_time``), among those recorded from
    ``recorded_since`` to ``recorded_until``, by the member who recorded them, with the lag.

    ``transactions`` is a transactions frame (``client.transactions_df()``,
    ``mirror.transactions_df()``; one of ``with_lines=True`` counts each transaction once).
    ``recorded_since``/``recorded_until`` cut on ``created_at`` (both included; a date, a
    month, or a duration back from the moment the frame is as of, else from its newest
    ``created_at``; None: open). ``late`` is a duration with its unit, as every
    analysis takes one (``"1D"``, the frames' ``backdated`` rule; ``"36h"``, a ``timedelta``;
    ``"0s"``: any lag; a bare ``1`` is refused).

    What the API cannot tell: **who edited a row, and when**. A row has ``created_by`` (who
    recorded it) and ``created_at`` (when), both of the first recording, and ``revision``
    (how many edits since), but no editor and no edit time; ``created_by`` is who recorded it,
    not who edited it. An edit of the transaction time moves the lag too (the lag is of the
    current revision). A mirror synced regularly bounds an edit's time: it appears in
    ``mirror.changes_df()`` (``change == "edited"``) at the first sync after it.

    ``since=`` on the client cuts on **transaction time**: a row recorded from
    ``recorded_since`` on but dated before it is in a frame fetched from before its date
    only. Fetch from ``recorded_since`` minus the longest lag you want to catch (say 30 days:
    ``client.transactions_df(since="2026-07-02")`` for rows recorded from 1 August), or the
    whole list (rows only, no details: ``client.transactions_df()``). A frame fetched with a
    window that starts less than 30 days before ``recorded_since`` (or, with none, before its
    own start) is said: a :class:`~invtools.errors.WindowWarning` with the ``since=`` to fetch
    (``strict=True``: a :class:`~invtools.errors.ConfigError`).

    ``by=None``: one row per flagged transaction -- transaction_id, type, transaction_time,
    created_at, created_by_id, created_by_name, revision, edited, backdated, lag_days
    (created_at - transaction_time in days; negative: dated after it was recorded) -- by
    member, then recorded first. ``by="member"``: one row per member who recorded something
    from ``recorded_since`` to ``recorded_until`` -- created_by_id, created_by_name, recorded
    (transactions recorded), edited, backdated, flagged (edited or backdated), flagged_share
    (flagged / recorded), median_lag_days and max_lag_days (of the backdated ones; NaN:
    none) -- most flagged first.

    >>> tx = client.transactions_df()                  # the whole list: rows only, no details
    >>> flagged = audit(tx, recorded_since="2026-01-01")
    >>> flagged.columns.tolist()                     # doctest: +NORMALIZE_WHITESPACE
    ['transaction_id', 'type', 'transaction_time', 'created_at', 'created_by_id',
     'created_by_name', 'revision', 'edited', 'backdated', 'lag_days']
    >>> bool((flagged["edited"] | flagged["backdated"]).all())
    True
    >>> who = audit(tx, recorded_since="2026-01-01", by="member")
    >>> who.columns.tolist()                         # doctest: +NORMALIZE_WHITESPACE
    ['created_by_id', 'created_by_name', 'recorded', 'edited', 'backdated', 'flagged',
     'flagged_share', 'median_lag_days', 'max_lag_days']
    """
    who = "audit"
    if by is not None:
        check_choice(by, AUDIT_BY, who=who, name="by")
    need(transactions, "transactions", _COLUMNS, who=who)
    threshold = pd.Timedelta(parse_duration(late, name=f"{who}: late", zero=True))
    since, until = _recorded_span(transactions, recorded_since, recorded_until, who=who)
    _say_missed(transactions, since, who=who, strict=strict)
    # one row per transaction: a frame of lines (transactions_df(with_lines=True)) holds a
    # transaction once per line, and it was recorded once
    tx = (
        transactions.drop_duplicates("transaction_id")
        if transactions["transaction_id"].duplicated().any()
        else transactions
    )
    recorded = tx["created_at"].notna()
    if since is not None:
        recorded &= tx["created_at"] >= since
    if until is not None:
        recorded &= tx["created_at"] <= until
    tx = tx[recorded.fillna(False).to_numpy(dtype=bool)]
    # differences of times: durations
    lag = cast("pd.Series[pd.Timedelta]", tx["created_at"] - tx["transaction_time"]) / DAY
    rows = pd.DataFrame(
        {
            "transaction_id": tx["transaction_id"].astype("Int64").array,
            "type": tx["type"].astype("string").array,
            "transaction_time": tx["transaction_time"].astype(TIME_DTYPE).array,
            "created_at": tx["created_at"].astype(TIME_DTYPE).array,
            "created_by_id": tx["created_by_id"].astype("Int64").array,
            "created_by_name": tx["created_by_name"].astype("string").array,
            "revision": tx["revision"].astype("Int64").array,
            "edited": pd.array(
                (tx["revision"] > 0).fillna(False).to_numpy(dtype=bool), dtype="boolean"
            ),
            "backdated": pd.array(
                (lag > threshold / DAY).fillna(False).to_numpy(dtype=bool), dtype="boolean"
            ),
            "lag_days": lag.astype("float64").to_numpy(),
        }
    )
    if by == "member":
        return carry_provenance(_per_member(rows), transactions, who="audit")
    flagged = rows[(rows["edited"] | rows["backdated"]).to_numpy(dtype=bool)]
    flagged = flagged.sort_values(
        ["created_by_id", "created_at", "transaction_id"], na_position="last", ignore_index=True
    )
    return carry_provenance(flagged, transactions, who="audit")


def _per_member(rows: pd.DataFrame) -> pd.DataFrame:
    """The per-member summary of :func:`audit`'s rows (all rows recorded in the span asked)."""
    rows = rows.assign(
        flagged=rows["edited"] | rows["backdated"],
        backdated_lag=rows["lag_days"].where(rows["backdated"].to_numpy(dtype=bool)),
    )
    g = rows.groupby("created_by_id", sort=True, dropna=False)
    out = pd.DataFrame(
        {
            "created_by_name": g["created_by_name"].last(),
            "recorded": g["transaction_id"].count().astype("int64"),
            "edited": g["edited"].sum().astype("int64"),
            "backdated": g["backdated"].sum().astype("int64"),
            "flagged": g["flagged"].sum().astype("int64"),
        }
    )
    out["flagged_share"] = (out["flagged"] / out["recorded"]).astype("float64")
    out["median_lag_days"] = g["backdated_lag"].median().astype("float64")
    out["max_lag_days"] = g["backdated_lag"].max().astype("float64")
    out.index = pd.Index(out.index, dtype="Int64", name="created_by_id")
    out["created_by_name"] = out["created_by_name"].astype(object).astype("string")
    out = out.reset_index().sort_values(
        ["flagged", "created_by_id"], ascending=[False, True], ignore_index=True
    )
    return out
