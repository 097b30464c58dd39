"""What every analysis shares: checking the arguments it was given, reading "as of" times and
windows, and carrying the provenance of its inputs, merged, onto its result.

Public names here are shared inside :mod:`invtools.analysis` only (not in its ``__all__``).
The checks follow the package's vocabulary: a wrong kind of object is an
:class:`~invtools.errors.ArgumentTypeError` (a ``TypeError``), a bad value a
:class:`~invtools.errors.ConfigError`, and every message begins with the name of the function
the user called.

>>> as_of_time("2026-07-01", pd.Series([], dtype="datetime64[ms, UTC]"), who="stock_at")
Timestamp('2026-07-01 00:00:00+0000', tz='UTC')
>>> need([1, 2], "history", "item_id stock", who="stock_at")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
invtools.errors.ArgumentTypeError: stock_at: history must be a DataFrame, not list. Pass ...
"""

from __future__ import annotations

import numbers
import warnings
from datetime import date, datetime, timedelta
from typing import Any, cast

import numpy as np
import pandas as pd
from pandas.api.typing import NaTType

from invtools._types import parse_time
from invtools.errors import ArgumentTypeError, ConfigError, WindowWarning
from invtools.frames import (
    DELETED_NOTE,
    PROVENANCE_KEYS,
    deleted_items,
    leave_out_deleted,
    merge_provenance,
    window_of,
)
from invtools.frames.reader import check_times

__all__ = [
    "DAY",
    "need",
    "as_of_time",
    "check_reach",
    "in_window",
    "carry_provenance",
    "without_deleted",
    "check_choice",
    "check_number",
]

DAY = pd.Timedelta(days=1)

#: What to pass instead, by the name of the frame an analysis was given.
_HINTS = {
    "history": (
        "Pass invtools.frames.stock_history(lines) (by_location=True for each location) or "
        "mirror.stock_history()."
    ),
    "lines": "Pass a lines frame: client.lines_df() or mirror.lines_df().",
    "items": "Pass an items frame: client.items_df().",
    "stock": "Pass client.stock_df().",
    "partners": "Pass client.partners_df().",
    "transactions": "Pass client.transactions_df() or mirror.transactions_df().",
}
_TIME_KINDS = (str, date, timedelta, np.datetime64)  # datetime, Timestamp, Timedelta too


def need(df: Any, what: str, columns: str, *, who: str) -> None:
    """Refuse an object that is not a DataFrame (:class:`ArgumentTypeError`) or a frame that
    lacks one of ``columns`` (space-separated; :class:`ConfigError`), saying what to pass instead
    of ``what`` (``"history"``, ``"lines"``, ``"items"``, ``"stock"``, ``"partners"`` or
    ``"transactions"``); or whose time columns among them hold no time zone
    (:func:`invtools.frames.reader.check_times`: the one rule, with the line that fixes it)."""
    if not isinstance(df, pd.DataFrame):
        raise ArgumentTypeError(
            f"{who}: {what} must be a DataFrame, not {type(df).__name__}. {_HINTS[what]}"
        )
    missing = [c for c in columns.split() if c not in df.columns]
    if missing:
        raise ConfigError(f"{who}: {what} lacks the column(s) {missing}. {_HINTS[what]}")
    check_times(df, columns, who=who, what=what)  # tz-naive or text times: refused


def _time(value: Any, *, who: str, name: str, end: bool = False, now: Any = None) -> pd.Timestamp:
    if not isinstance(value, _TIME_KINDS):
        raise ArgumentTypeError(
            f"{who}: {name} must be a time (a date, a datetime, text such as "
            f"'2026-05-01', or a duration back from now such as '90D'), not "
            f"{type(value).__name__}"
        )
    # not None: only None parses to None
    when = pd.Timestamp(cast(datetime, parse_time(value, end=end, name=f"{who}: {name}", now=now)))
    if not _EARLIEST <= when <= _LATEST:  # pandas 2 counts times in ns: it overflows outside
        raise ConfigError(
            f"{who}: {name}={value!r} is outside the years 1678 to 2261 that pandas' times "
            "hold; give a time within them"
        )
    return when


_EARLIEST, _LATEST = pd.Timestamp("1678-01-01", tz="UTC"), pd.Timestamp("2261-12-31", tz="UTC")


def as_of_time(
    value: Any, times: pd.Series, *, who: str, name: str = "as_of", frame: Any = None
) -> pd.Timestamp | NaTType:
    """``value`` as a UTC time (naive means UTC; a duration such as ``"90D"`` counts back from
    now: :func:`invtools._types.parse_time`); None: the end of ``frame``'s window
    (:func:`window_of`: the service's clock when it was fetched; durations count back from
    it too), else the newest of ``times`` (NaT if none)."""
    window = window_of(frame)
    if value is None:
        if window is not None:
            return window[1]
        return times.max() if len(times) else pd.NaT
    return _time(value, who=who, name=name, now=None if window is None else window[1])


def check_reach(frame: Any, start: Any, end: Any, *, question: str, who: str, strict: bool) -> None:
    """Say so when answering ``question`` needs transactions from ``start`` to ``end`` and
    ``frame`` was fetched with a window that does not hold them: a
    :class:`~invtools.errors.WindowWarning` naming the dates, or with ``strict`` a
    :class:`ConfigError`. Its answer would be wrong without a word (docs/explanation/now.md).

    >>> lines = pd.DataFrame(); lines.attrs["window"] = {"since": "2026-08-28", "until": "2026-10-31"}
    >>> check_reach(lines, pd.Timestamp("2026-08-02", tz="UTC"), pd.Timestamp("2026-10-31", tz="UTC"),
    ...             question="dead after 90 days as of 31 Oct 2026", who="movement", strict=True)
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: movement: the lines start 28 Aug 2026; dead after 90 days as of 31 Oct 2026 needs lines from 02 Aug 2026. Fetch them (client.lines_df(since="2026-08-02")), or ask about less.
    """  # noqa: E501 - the doctest shows the message whole
    window = window_of(frame)
    if window is None or pd.isna(start) or pd.isna(end):
        return
    since, until = window
    if since is not None and start < since:
        said = (
            f"the lines start {since:%d %b %Y}; {question} needs lines from {start:%d %b %Y}. "
            f'Fetch them (client.lines_df(since="{start:%Y-%m-%d}"))'
        )
    elif end > until:
        said = (
            f"the lines end {until:%d %b %Y %H:%M}; {question} needs lines up to "
            f"{end:%d %b %Y %H:%M}. Fetch them again (client.lines_df(since=...))"
        )
    else:
        return
    said = f"{who}: {said}, or ask about less"
    if strict:
        raise ConfigError(f"{said}.")
    warnings.warn(f"{said}; strict=True makes this an error.", WindowWarning, stacklevel=3)


def in_window(
    lines: pd.DataFrame, since: Any = None, until: Any = None, *, who: str
) -> pd.DataFrame:
    """The rows of ``lines`` whose ``transaction_time`` is within ``since``..``until`` (both
    included, a date or month ``until`` to its end, as the client's ``until=`` does; durations
    count back from now; None: open), rows without a time left out."""
    times = lines["transaction_time"]
    keep = times.notna()
    if since is not None:
        keep &= times >= _time(since, who=who, name="since")
    if until is not None:
        keep &= times <= _time(until, who=who, name="until", end=True)
    return lines[keep.fillna(False).to_numpy(dtype=bool)]


def check_choice(value: Any, choices, *, who: str, name: str) -> str:
    """``value`` if it is one of ``choices`` (text): else ArgumentTypeError (not text) or
    ConfigError."""
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{who}: {name} must be text, one of {', '.join(map(repr, choices))}; "
            f"not {type(value).__name__}"
        )
    if value not in choices:
        raise ConfigError(
            f"{who}: {name}={value!r} must be one of {', '.join(map(repr, choices))}."
        )
    return value


def check_number(value: Any, *, who: str, name: str, whole: bool = False) -> Any:
    """``value`` if it is a number (``whole``: an integer), booleans refused: else
    ArgumentTypeError. The range is the caller's to check (a ConfigError)."""
    kind = numbers.Integral if whole else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ArgumentTypeError(
            f"{who}: {name} must be {'a whole number' if whole else 'a number'}, "
            f"not {type(value).__name__}"
        )
    return value


def carry_provenance(result: pd.DataFrame, *sources: pd.DataFrame | None) -> pd.DataFrame:
    """``result`` with the provenance of the frames it was computed from, merged
    (:func:`invtools.frames.merge_provenance`: one team, or both named; the oldest
    ``data_as_of``; the lines' window), when any has one. What pandas carried over from the
    inputs' ``attrs`` (a walk's record, a stale provenance) is dropped; the result's own
    (such as ``deleted_items_excluded``) are kept. Returns ``result``.

    >>> lines = pd.DataFrame(); lines.attrs.update(source="api", team_name="Shop")
    >>> carry_provenance(pd.DataFrame(), lines, None).attrs["team_name"]
    'Shop'
    """
    inherited = {k for s in sources if s is not None for k in s.attrs} | set(PROVENANCE_KEYS)
    for key in inherited - {DELETED_NOTE}:
        result.attrs.pop(key, None)
    result.attrs.update(merge_provenance(sources))
    return result


def without_deleted(
    result: pd.DataFrame, source: pd.DataFrame, *, include: bool, who: str
) -> pd.DataFrame:
    """``result`` without the rows of the items ``source`` flags deleted, unless ``include``:
    :func:`invtools.frames.leave_out_deleted`, its warning pointing at the call of ``who``
    (the analysis that calls this)."""
    return leave_out_deleted(result, deleted_items(source), include=include, who=who, stacklevel=4)
