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

from invtools._durations import counts_back, parse_duration
from invtools._types import parse_time
from invtools.errors import ArgumentTypeError, ConfigError, WindowWarning
from invtools.frames import (
    DELETED_NOTE,
    PROVENANCE_KEYS,
    context_of,
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
    "look_back_start",
    "spoken",
    "check_reach",
    "in_window",
    "carry_provenance",
    "without_deleted",
    "check_choice",
    "check_number",
    "newest_name",
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
    value: Any,
    times: pd.Series,
    *,
    who: str,
    name: str = "as_of",
    frame: Any = None,
    said: bool = True,
) -> pd.Timestamp | NaTType:
    """``value`` as a UTC time (naive means UTC: :func:`invtools._types.parse_time`); None:
    the moment ``frame`` is as of (:func:`invtools.frames.context_of`: when its data left the
    server, on the service's clock, or the ``until=`` it was asked for), else -- a frame
    with no recorded context (a merge, one built by hand) -- the newest of ``times`` (NaT if
    none), with a :class:`~invtools.errors.WindowWarning` saying to pass ``as_of=`` unless not
    ``said`` (an answer the moment does not change: a level after the newest row). A duration
    such as ``"90D"`` counts back from that same moment. The one place an analysis decides
    "as of when" (docs/explanation/now.md)."""
    if value is not None and not counts_back(value):
        return _time(value, who=who, name=name)
    moment = _moment(frame, times, who=who if said else None)
    if value is None:
        return pd.NaT if moment is None else moment
    return _time(value, who=who, name=name, now=moment)


def _moment(frame: Any, times: pd.Series, *, who: str | None) -> pd.Timestamp | None:
    """The moment ``frame`` is as of (its context), else the newest of ``times`` -- said
    (a :class:`WindowWarning`) when ``who`` names the analysis; None when neither is known."""
    moment = context_of(frame).as_of
    if moment is None and len(times) and not pd.isna(times.max()):
        moment = times.max()
        if who is not None:
            warnings.warn(
                f"{who}: the frame records no moment it is as of (a merge, pd.concat of "
                "frames that differ or a frame built by hand drops df.attrs): measured to its "
                f"newest row, {moment:%d %b %Y %H:%M}. Pass as_of= (client.now(), or "
                "context_of(frame_as_fetched).as_of), or join with client.lines_df("
                "item_columns=[...]), which keeps the context.",
                WindowWarning,
                stacklevel=4,
            )
    return moment


def look_back_start(value: Any, as_of: Any, *, who: str) -> tuple[Any, timedelta]:
    """``(start, length)`` of an analysis's ``look_back=``: a duration with its unit
    (``"90D"``, ``"8W"``, ``"36h"``, a ``timedelta`` or ``pandas.Timedelta``) counted back from
    ``as_of`` -- the analysis's, whose default is the moment the frame is as of
    (:func:`as_of_time`); NaT stays NaT. A bare number is refused with the spelling that works
    (:func:`invtools._types.parse_duration`), as is a look-back reaching before the earliest
    time pandas holds.

    >>> look_back_start("8W", pd.Timestamp("2026-10-31", tz="UTC"), who="reorder")[0]
    Timestamp('2026-09-05 00:00:00+0000', tz='UTC')
    >>> look_back_start(90, pd.NaT, who="movement")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: movement: look_back=90 has no unit: write look_back="90D" for days or look_back="90s" for seconds (e.g. '90D', '12h', '30min' or a datetime.timedelta)
    """  # noqa: E501 - the doctest shows the message whole
    name = f"{who}: look_back"
    if value is None:  # parse_duration lets None through: here it is no length
        raise ArgumentTypeError(f'{name} must be a duration such as "90D", not None')
    length = parse_duration(value, name=name)
    if pd.isna(as_of):
        return as_of, length
    # in milliseconds, so the span from 1678 to 2261 does not overflow pandas' nanoseconds
    if length > (as_of.as_unit("ms") - _EARLIEST.as_unit("ms")).to_pytimedelta():
        raise ConfigError(
            f"{name}={value!r} reaches before 1678, the earliest time pandas holds, from "
            f'{as_of:%d %b %Y}; give a shorter one ("36500D" is a century)'
        )
    return as_of.as_unit("ms") - np.timedelta64(length // timedelta(milliseconds=1), "ms"), length


def spoken(length: timedelta) -> str:
    """A look-back as a question says it: ``"90 days"``, ``"1 day"``, ``"36 hours"``.

    >>> spoken(timedelta(days=56)), spoken(timedelta(hours=36)), spoken(timedelta(minutes=90))
    ('56 days', '36 hours', '1:30:00')
    """
    for unit, word in ((timedelta(days=1), "day"), (timedelta(hours=1), "hour")):
        if length % unit == timedelta(0):
            count = length // unit
            return f"{count} {word}{'' if count == 1 else 's'}"
    return str(length)


def check_reach(
    frame: Any, start: Any, end: Any, *, question: str, who: str, strict: bool, stacklevel: int = 3
) -> None:
    """Say so when answering ``question`` needs transactions from ``start`` to ``end`` and
    ``frame`` was fetched with a window that does not hold them: a
    :class:`~invtools.errors.WindowWarning` naming the dates, or with ``strict`` a
    :class:`ConfigError`. Its answer would be wrong without a word (docs/explanation/now.md).
    ``stacklevel``: where the warning points, 3 for the caller of the analysis that calls this.

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
    warnings.warn(f"{said}; strict=True makes this an error.", WindowWarning, stacklevel=stacklevel)


def in_window(
    lines: pd.DataFrame, since: Any = None, until: Any = None, *, who: str, strict: bool = False
) -> pd.DataFrame:
    """The rows of ``lines`` whose ``transaction_time`` is within ``since``..``until`` (both
    included, a date or month ``until`` to its end, as the client's ``until=`` does; durations
    count back from the moment the frame is as of, as :func:`as_of_time`'s do; None: open),
    rows without a time left out. A ``since`` before the window the lines were fetched with,
    or an ``until`` after it, is said (:func:`check_reach`; ``strict``: an error)."""
    times = lines["transaction_time"]
    keep = times.notna()
    relative = any(counts_back(v) for v in (since, until) if v is not None)
    moment = _moment(lines, times, who=who) if relative else None
    start = end = None
    if since is not None:
        start = _time(since, who=who, name="since", now=moment)
        keep &= times >= start
    if until is not None:
        end = _time(until, who=who, name="until", end=True, now=moment)
        keep &= times <= end
    window = window_of(lines)
    if window is not None and (start is not None or end is not None):
        asked = [f"from {start:%d %b %Y}"] if start is not None else []
        asked += [f"up to {end:%d %b %Y %H:%M}"] if end is not None else []
        first = start if start is not None else window[0] if window[0] is not None else window[1]
        last = end if end is not None else window[1]
        question = f"a count {' '.join(asked)}"
        check_reach(lines, first, last, question=question, who=who, strict=strict, stacklevel=4)
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


def newest_name(df: pd.DataFrame, key: str, name: str) -> pd.Series:
    """``key`` -> the ``name`` on its newest row (``transaction_time``): a partner, member or
    location renamed since keeps one name, today's."""
    named = df.dropna(subset=[name]).sort_values("transaction_time", kind="stable")
    return named.drop_duplicates(key, keep="last").set_index(key)[name]


def carry_provenance(result: pd.DataFrame, *sources: pd.DataFrame | None, who: str) -> pd.DataFrame:
    """``result`` with the provenance of the frames it was computed from, merged
    (:func:`invtools.frames.merge_provenance`: the team, the oldest ``as_of`` and
    ``data_as_of``, the lines' window), when any has one; ``rows`` is the result's. What pandas
    carried over from the inputs' ``attrs`` (a walk's record, a stale provenance) is dropped;
    the result's own (such as ``deleted_items_excluded``) are kept. Returns ``result``.

    An analysis is of one team: inputs of several (a stack of teams, or the lines of one shop
    with the items of another) are a :class:`ConfigError` naming them -- each team has its
    own clock, ids and stock, and a number computed across them means nothing.

    >>> lines = pd.DataFrame(); lines.attrs.update(source="api", team_name="Shop")
    >>> carry_provenance(pd.DataFrame(), lines, None, who="movement").attrs["team_name"]
    'Shop'
    >>> york = pd.DataFrame(); york.attrs.update(source="api", team_id=9, team_name="York")
    >>> lines.attrs["team_id"] = 7
    >>> carry_provenance(pd.DataFrame(), lines, york, who="reorder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: reorder: its frames are of 2 teams ('Shop' (team 7), ...
    """
    merged = merge_provenance(sources)
    if isinstance(merged.get("team_id"), list):
        named = pd.DataFrame()
        named.attrs.update(merged)
        teams = context_of(named).describe()
        raise ConfigError(
            f"{who}: its frames are of {len(merged['team_id'])} teams ({teams}); an analysis "
            "is of one team. Pass the frames of one team, or ask each team the same question "
            "and stack the answers: invtools.each_team(lambda c: ..., ...).frame(); a stack "
            "cut to one team's rows (stack[stack['team'] == 'shop']) is that team's."
        )
    inherited = {k for s in sources if s is not None for k in s.attrs} | set(PROVENANCE_KEYS)
    for key in inherited - {DELETED_NOTE}:  # a stack's "teams" too: the result is one team's
        result.attrs.pop(key, None)
    result.attrs.update(merged)
    if merged:
        result.attrs["rows"] = len(result)
    return result


def without_deleted(
    result: pd.DataFrame, source: pd.DataFrame, *, include: bool, who: str
) -> pd.DataFrame:
    """``result`` without the rows of the items ``source`` flags deleted, unless ``include``:
    :func:`invtools.frames.leave_out_deleted`, its warning pointing at the call of ``who``
    (the analysis that calls this)."""
    return leave_out_deleted(result, deleted_items(source), include=include, who=who, stacklevel=4)
