"""The context a frame's numbers are computed in, decided once where the frame is built and read
through one function, :func:`context_of`: which team (the service *and* the team id), which
grain (``"transactions"``, ``"lines"``, ``"stock"``, ``"items"``, ``"history"``, ...), the
window of transaction times it holds, and the one moment it is as of, on the service's clock
(docs/explanation/now.md).

The builders write it into ``df.attrs`` as part of the frame's provenance
(:mod:`invtools.frames.provenance`): the client's frames, the mirror's, ``stock_history``.
Every analysis and plot reads it here, so a filter (``item_ids=``, a slice) that keeps
``attrs`` never moves the moment a frame is as of. :func:`fit_window` is the one rule for what
a frame asked for a window holds; it records the first and last transaction time the window
held, and :func:`context_of` checks the window against them: rows cut by time after the fetch
(they start after the first, or end before the last) hold only their own span, and that is
the window read (``Context.claimed`` keeps the one the frame claims).

>>> df = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-10-30", "2026-10-01"], utc=True)})
>>> df.attrs.update(source="api", team_id=7, base_url="https://rest.boxhero-app.com",
...                 grain="lines", as_of="2026-10-31T17:10:00.000Z")
>>> ctx = context_of(df.iloc[:1])                 # a slice keeps the moment
>>> ctx.team, ctx.grain, ctx.as_of
(('https://rest.boxhero-app.com', 7), 'lines', Timestamp('2026-10-31 17:10:00+0000', tz='UTC'))
>>> context_of(pd.DataFrame({"transaction_time": df["transaction_time"]})).as_of   # no record
>>> df.attrs["window"] = held(df, None, pd.Timestamp("2026-10-31", tz="UTC"))
>>> context_of(df[df["transaction_time"] < "2026-10-15"]).window[1]   # cut: its own span
Timestamp('2026-10-01 00:00:00+0000', tz='UTC')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from invtools.errors import ArgumentTypeError

__all__ = [
    "Context",
    "context_of",
    "own_attrs",
    "window_of",
    "fit_window",
    "held",
    "aligned",
    "team_label",
]

TeamKey = tuple[Any, Any]  # (base_url, team_id)


def _stamp(value: Any) -> pd.Timestamp | None:
    if value is None:
        return None
    try:
        when = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if when is pd.NaT:
        return None
    return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")


def aligned(value: Any, like: Any) -> list[Any]:
    """``value`` as one entry per team of a record whose ``team_id`` is ``like``: a list that
    does not align with the ids is no team's (None each), so no team is dropped.

    >>> aligned("Shop", [7, 9]), aligned(["Shop"], [7, 9]), aligned(["a", "b"], [7, 9])
    (['Shop', 'Shop'], [None, None], ['a', 'b'])
    """
    n = len(like) if isinstance(like, list) else 1
    if isinstance(value, list) and len(value) == n:
        return value
    return [None if isinstance(value, list) else value] * n


@dataclass(frozen=True)
class Context:
    """What :func:`context_of` reads from a frame. ``teams``: ``(base_url, team_id)`` of each
    team whose rows it holds (empty: unknown), ``team_names`` aligned with them; ``grain``: what
    one row is (several, merged: a list); ``window``: ``(since, until)`` of the transaction
    times it holds (since None: from the list's start; None: not asked for one); ``as_of``: the
    moment it is as of, on the service's clock (None: not recorded -- an analysis then takes the
    newest time in the data); ``data_as_of``: when the oldest answer it came from left the
    server, on that clock; ``claimed``: the window the frame claims when its rows no longer
    fill it (cut by time after the fetch; ``window`` is then the span they hold), else None."""

    teams: tuple[TeamKey, ...] = ()
    team_names: tuple[Any, ...] = ()
    grain: Any = None
    window: tuple[pd.Timestamp | None, pd.Timestamp] | None = None
    as_of: pd.Timestamp | None = None
    data_as_of: pd.Timestamp | None = None
    claimed: tuple[pd.Timestamp | None, pd.Timestamp] | None = None

    @property
    def team(self) -> TeamKey | None:
        """The one team's ``(base_url, team_id)``; None when unknown or several."""
        return self.teams[0] if len(self.teams) == 1 else None

    def describe(self) -> str:
        """The teams, as a message names them."""
        return ", ".join(
            team_label(key, name) for key, name in zip(self.teams, self.team_names, strict=False)
        )


def team_label(key: TeamKey, name: Any = None) -> str:
    """A team as a message names it: ``'Shop' (team 7 at http://...)``."""
    base_url, team_id = key
    where = f" at {base_url}" if base_url else ""
    return f"{name!r} (team {team_id}{where})" if name else f"team {team_id}{where}"


def own_attrs(frame: Any) -> Mapping[str, Any]:
    """``frame.attrs``; of a stack of teams (``TeamResults.frame()``, which keeps each team's
    own in ``attrs["teams"]``) cut down to one team's rows (its ``team`` column holds one
    name), that team's own: the rows are of that team only, and so is their context.

    >>> stack = pd.DataFrame({"team": ["york", "york"]})
    >>> stack.attrs.update(source="api", team_id=[7, 9], teams={"shop": {"source": "api",
    ...     "team_id": 7}, "york": {"source": "api", "team_id": 9}})
    >>> own_attrs(stack)["team_id"]
    9
    """
    attrs = getattr(frame, "attrs", None)
    if not isinstance(attrs, Mapping):
        return {}
    teams = attrs.get("teams")
    column = frame.get("team") if isinstance(frame, pd.DataFrame) else None
    if isinstance(teams, Mapping) and column is not None and len(column):
        names = pd.unique(column.dropna())
        if len(names) == 1 and isinstance(teams.get(names[0]), Mapping):
            return teams[names[0]]
    return attrs


def context_of(frame: Any) -> Context:
    """The context ``frame`` (a DataFrame or Series) carries in its ``attrs`` (:func:`own_attrs`:
    of a stack of teams cut to one team's rows, that team's); an empty :class:`Context` for
    one without (your own frame). The one reader of it: analyses, plots and the mirror go
    through here."""
    attrs = own_attrs(frame)
    if not attrs:
        return Context()
    ids = aligned(attrs.get("team_id"), attrs.get("team_id"))
    names, urls = (aligned(attrs.get(k), ids) for k in ("team_name", "base_url"))
    teams = tuple((u, i) for u, i in zip(urls, ids, strict=True) if i is not None)
    window = attrs.get("window")
    window = window if isinstance(window, Mapping) else {}
    span = claimed = None
    until = _stamp(window.get("until"))
    if until is not None:
        span = (_stamp(window.get("since")), until)
        rows = _span(frame)
        first, last = _stamp(window.get("first")), _stamp(window.get("last"))
        if rows is not None and first is not None and last is not None:
            cut = (rows[0] if rows[0] > first else span[0], rows[1] if rows[1] < last else until)
            span, claimed = (cut, span) if cut != span else (span, None)
    as_of = attrs.get("as_of")
    return Context(
        teams=teams,
        team_names=tuple(n for n, i in zip(names, ids, strict=True) if i is not None),
        grain=attrs.get("grain"),
        window=span,
        as_of=None if isinstance(as_of, list) else _stamp(as_of),
        data_as_of=_stamp(attrs.get("data_as_of")),
        claimed=claimed,
    )


def _span(frame: Any) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The first and last transaction time ``frame`` holds; None with none."""
    times = frame.get("transaction_time") if isinstance(frame, pd.DataFrame) else None
    known = None if times is None else pd.to_datetime(times.dropna(), utc=True)
    return None if known is None or not len(known) else (known.min(), known.max())


def held(df: pd.DataFrame, since: Any, until: Any) -> dict[str, Any]:
    """The window record of ``df`` holding the transaction times from ``since`` (None: the
    list's start) to ``until``: with the first and last time its rows hold, what
    :func:`context_of` checks the rows against when the frame is used.

    >>> df = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-10-02"], utc=True)})
    >>> held(df, None, "2026-10-31")["first"]
    Timestamp('2026-10-02 00:00:00+0000', tz='UTC')
    """
    first, last = _span(df) or (None, None)
    return {"since": since, "until": until, "first": first, "last": last}


def window_of(df: Any) -> tuple[pd.Timestamp | None, pd.Timestamp] | None:
    """The window of transaction times ``df`` holds (``context_of(df).window``:
    ``client.lines_df(since="90D")``), as UTC ``(since, until)``, since None for the list's
    start; None for a frame not asked for a window (a whole list, your own).

    >>> df = pd.DataFrame(); df.attrs.update(source="api", window={"since": None,
    ...                                                          "until": "2026-10-31T17:10Z"})
    >>> window_of(df)
    (None, Timestamp('2026-10-31 17:10:00+0000', tz='UTC'))
    """
    return context_of(df).window


def fit_window(
    df: pd.DataFrame,
    since: datetime | None,
    until: datetime | None,
    *,
    moment: datetime,
) -> tuple[pd.DataFrame, dict[str, Any] | None, datetime]:
    """What a frame asked for transaction times from ``since`` to ``until`` (None: open) holds,
    its data being as of ``moment``: ``(rows, window, as_of)``. The rows are those of ``df``
    within the bounds; the window ends at ``until``, or with none at ``moment`` or the newest
    row's time if later (a future-dated row): a frame never holds a row after its window's
    end, and its window never ends before its newest row; it records the first and last time
    of the rows (:func:`held`). ``as_of`` is ``moment``, or ``until`` when that is earlier.
    Both bounds None: no window.

    >>> df = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-11-05", "2026-10-20",
    ...                                                        "2026-09-01"], utc=True)})
    >>> rows, window, as_of = fit_window(df, pd.Timestamp("2026-10-01", tz="UTC"), None,
    ...                                  moment=pd.Timestamp("2026-10-31", tz="UTC"))
    >>> len(rows), window["until"], str(as_of.date())
    (2, Timestamp('2026-11-05 00:00:00+0000', tz='UTC'), '2026-10-31')
    """
    if not isinstance(df, pd.DataFrame) or "transaction_time" not in df:
        raise ArgumentTypeError(
            "fit_window(df) takes a frame with a transaction_time column (client.lines_df(), "
            f"client.transactions_df()), not {type(df).__name__}"
        )
    for name, when in (("since", since), ("until", until), ("moment", moment)):
        if not (isinstance(when, datetime) and when.tzinfo is not None) and (
            when is not None or name == "moment"
        ):
            raise ArgumentTypeError(
                f"fit_window({name}) must be a time with a zone (pd.Timestamp('2026-10-31', "
                f"tz='UTC')){'' if name == 'moment' else ' or None'}, not {when!r}"
            )
    if since is None and until is None:
        return df, None, moment
    times = df["transaction_time"]
    keep = times.notna()
    if since is not None:
        keep &= times >= pd.Timestamp(since)
    if until is not None:
        keep &= times <= pd.Timestamp(until)
    if not keep.all():
        df = df[keep.to_numpy(dtype=bool)].reset_index(drop=True)
    end = until if until is not None else max(moment, (_span(df) or (moment, moment))[1])
    as_of = moment if until is None or moment <= until else until
    return df, held(df, since, end), as_of
