"""Where a frame came from, in ``df.attrs``: one :class:`Provenance` -- the same record for a
frame from the API (``client.items_df()``) and one from a mirror (``mirror.transactions_df()``).

:func:`with_provenance` writes the record as plain JSON values (text, numbers, lists), so a
frame keeps its provenance through ``to_parquet``/``read_parquet``, ``to_pickle`` and a JSON
dump; ``Provenance.from_attrs(df.attrs)`` reads it back. :data:`PROVENANCE_KEYS` names its
fields. It never holds a token. A result computed from several frames (an analysis of lines
and items, the frames of several teams stacked) takes their records merged by one rule,
:func:`merge_provenance`.

>>> df = with_provenance(pd.DataFrame({"id": [1]}), team_id=7, endpoint="/v1/members",
...                      fetched_at=pd.Timestamp("2026-05-02T01:10:00Z"))
>>> df.attrs["source"], df.attrs["endpoint"], df.attrs["fetched_at"]
('api', '/v1/members', '2026-05-02T01:10:00.000Z')
>>> Provenance.from_attrs(df.attrs).team_id
7
>>> p = Provenance(source="api", filters={"since": __import__("datetime").date(2026, 5, 1)})
>>> p.as_attrs()["filters"]
{'since': '2026-05-01'}
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType
from typing import Any

import pandas as pd

from invtools.errors import ArgumentTypeError
from invtools.frames.context import aligned, own_attrs

__all__ = [
    "Provenance",
    "PROVENANCE_KEYS",
    "with_provenance",
    "merge_provenance",
    "json_safe",
    "utc_stamp",
]


def utc_stamp(when: datetime | None = None) -> str:
    """A time as ISO 8601 UTC with a ``Z`` (now when None), to the millisecond. A time without
    a zone is UTC (as :func:`~invtools.frames.context_of` reads one), not this machine's.

    >>> utc_stamp(datetime.fromisoformat("2026-05-02T10:10:00+09:00"))
    '2026-05-02T01:10:00.000Z'
    >>> utc_stamp(datetime(2026, 5, 2, 1, 10))
    '2026-05-02T01:10:00.000Z'
    """
    when = datetime.now(UTC) if when is None else when
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_safe(value: Any) -> Any:
    """``value`` made of JSON types only: times become ISO UTC text (:func:`utc_stamp`), tuples
    lists, sets lists in the order of their text, numpy and pandas scalars Python numbers,
    anything else its ``str``.

    >>> json_safe({"ids": (3, 1), "until": datetime(2026, 5, 2, tzinfo=UTC)})
    {'ids': [3, 1], 'until': '2026-05-02T00:00:00.000Z'}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, datetime):
        return utc_stamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [json_safe(v) for v in items]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        with contextlib.suppress(TypeError, ValueError):
            return json_safe(item())
    return str(value)


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a frame's rows came from.

    ``source``: ``"api"`` (fetched through a client) or ``"mirror"`` (read from a local
    mirror file); ``team_id``/``team_name``/``base_url``: whose data, from which service (a
    demo frame and a real frame of the same team id differ here); ``endpoint`` and
    ``filters``: what was asked; ``window``: the transaction times a frame asked for a
    window holds (``since``, None for the list's start, and ``until``: the ``until=`` given,
    else when its data left the server or its newest row, if later; ISO UTC; ``first`` and
    ``last``: the times of the rows it held, what the window is checked against when used),
    what an analysis of it may look back over; ``grain``: what one row is (``"transactions"``,
    ``"lines"``, ``"items"``, ``"stock"``, ``"history"``, ...); ``as_of``: the one moment the
    frame is as of, on the service's clock, what its analyses measure to
    (docs/explanation/now.md);
    ``fetched_at``: when the rows were read (this machine's clock, ISO UTC);
    ``data_as_of``: when the oldest answer they came from left the server (a cached walk
    is as old as its first page), on the service's clock: how old the data is;
    ``pages``, ``rows``, ``requests`` (sent over the network), ``from_cache`` (answered by the
    local cache) and ``retries`` of the call that built the frame.

    A record merged from several frames (:func:`merge_provenance`: an analysis of lines and
    items, two teams' frames stacked) keeps every field a JSON value; where its inputs differ,
    ``team_id``, ``team_name`` and ``base_url`` are lists, entry *i* of each one team (a team is
    its service and its id); ``endpoint`` and ``filters`` lists, entry *i* of both what one
    input asked; ``source`` and ``grain`` lists of the distinct values. ``window`` is the first
    input's (of several teams: a list, one per team), ``as_of``, ``fetched_at`` and
    ``data_as_of`` the oldest input's, the counts their sums.
    """

    # lists: merged from frames that differ here (merge_provenance)
    source: str | list[str]
    team_id: int | list[int | None] | None = None
    team_name: str | list[str | None] | None = None
    base_url: str | list[str] | None = None
    endpoint: str | list[str | None] | None = None
    filters: Mapping[str, Any] | list[Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    window: Mapping[str, Any] | list[Any] | None = None
    grain: str | list[str] | None = None
    # a datetime given is kept as its ISO UTC text (__post_init__)
    as_of: str | datetime | list[Any] | None = None
    fetched_at: str | datetime | None = None
    data_as_of: str | datetime | None = None
    pages: int = 0
    rows: int = 0
    requests: int = 0
    from_cache: int = 0
    retries: int = 0

    def __post_init__(self) -> None:
        merged = isinstance(self.filters, list)  # one mapping per input asked (merged)
        given: list[Any] = list(self.filters) if merged else [self.filters]
        if not all(isinstance(f, Mapping | None) for f in given):
            raise ArgumentTypeError(
                f"Provenance(filters) is a mapping of filter name -> value (merged: a list of "
                f"them), not {type(self.filters).__name__}"
            )
        kept = [json_safe({k: v for k, v in dict(f or {}).items() if v is not None}) for f in given]
        object.__setattr__(self, "filters", kept if merged else kept[0])
        for name in ("as_of", "fetched_at", "data_as_of"):
            if isinstance(getattr(self, name), datetime):
                object.__setattr__(self, name, utc_stamp(getattr(self, name)))

    def as_attrs(self) -> dict[str, Any]:
        """The record as ``df.attrs`` holds it: a flat dict of JSON values."""
        return {f.name: json_safe(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> Provenance | None:
        """The record kept in a frame's ``attrs`` (None when it has none)."""
        if "source" not in attrs:
            return None
        return cls(**{k: v for k, v in attrs.items() if k in PROVENANCE_KEYS})


#: The fields of :class:`Provenance` (the keys :func:`with_provenance` accepts and writes), in
#: order, and what each means.
PROVENANCE_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "source": "'api' (fetched through a client) or 'mirror' (read from a local mirror file)",
        "team_id": "id of the team whose data this is (merged from several teams: a list, one "
        "id per team, in the order of team_name)",
        "team_name": "that team's name (merged from several teams: a list, one per team)",
        "base_url": "the service the rows came from (a demo server and the real one differ "
        "here; merged from several: a list of the distinct ones)",
        "endpoint": "API path the rows came from, e.g. '/v1/location-txs' (merged from frames "
        "asked differently: a list, one per way asked, in the order of filters)",
        "filters": "query filters used (dict of JSON values), without cursor/limit (merged: a "
        "list of dicts, entry i those of endpoint i)",
        "window": "the transaction times the frame holds, {'since': ..., 'until': ...} (ISO "
        "8601 UTC text; since None: from the list's start), when it was asked for a window, "
        "with 'first' and 'last', the times of the rows it held (merged: the first input's; "
        "of several teams, a list, one per team)",
        "grain": "what one row is: 'transactions', 'lines', 'items', 'stock', 'history', ... "
        "(merged: a list of the distinct ones)",
        "as_of": "the one moment the frame is as of, on the service's clock (ISO 8601 UTC "
        "text): what its analyses measure to (merged: the oldest input's)",
        "fetched_at": "when the rows were fetched, on this machine's clock (ISO 8601 UTC text, "
        "'2026-05-02T01:10:00.000Z'; merged: the oldest input's)",
        "data_as_of": "when the oldest answer they came from left the server (a cached walk is "
        "as old as its first page), on the service's clock (ISO 8601 UTC text): how old the "
        "data is (merged: the oldest input's)",
        "pages": "number of pages walked (merged: the inputs' sum, as for the counts below)",
        "rows": "number of rows read",
        "requests": "number of HTTP requests actually sent (cache hits excluded)",
        "from_cache": "how many of its responses came from the local cache",
        "retries": "how many requests had to be retried (rate limit, server errors)",
    }
)


def with_provenance(
    df: pd.DataFrame, provenance: Provenance | Mapping[str, Any] | None = None, /, **fields: Any
) -> pd.DataFrame:
    """Record where ``df`` came from in ``df.attrs`` and return ``df`` (the same object).

    ``provenance`` is a :class:`Provenance` or a mapping of its fields;
    keyword ``fields`` (see :data:`PROVENANCE_KEYS`: source, team_id, team_name, base_url,
    endpoint, filters, window, grain, as_of, fetched_at, data_as_of, pages, rows, requests,
    from_cache, retries) are added to it or replace its values. ``source`` is ``"api"``
    unless given. An unknown key raises ``TypeError`` so a typo does not silently drop
    information.

    ``df.attrs`` receives every field as JSON values (``fetched_at`` as ISO text, filters as
    text and numbers), other keys already there are kept. pandas carries ``attrs`` through
    most operations, and they survive ``to_parquet`` and ``to_pickle``.

    >>> df = with_provenance(pd.DataFrame(), team_name="Shop", endpoint="/v1/members", pages=1)
    >>> df.attrs["endpoint"], df.attrs["pages"], df.attrs["requests"]
    ('/v1/members', 1, 0)
    >>> with_provenance(df, team_nmae="Shop")
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: with_provenance() got unknown key(s) ['team_nmae']; known keys: source, team_id, team_name, base_url, endpoint, filters, window, grain, as_of, fetched_at, data_as_of, pages, rows, requests, from_cache, retries
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if not isinstance(df, pd.DataFrame):
        raise ArgumentTypeError(f"with_provenance() takes a DataFrame, not {type(df).__name__}")
    if not isinstance(provenance, (Provenance, Mapping, type(None))):
        raise ArgumentTypeError(
            "with_provenance() takes a Provenance or a mapping of its fields, not "
            f"{type(provenance).__name__}"
        )
    if isinstance(provenance, Provenance):
        provenance = provenance.as_attrs()
    given = {**(provenance or {}), **fields}
    unknown = sorted(set(given) - set(PROVENANCE_KEYS), key=str)
    if unknown:
        raise ArgumentTypeError(
            f"with_provenance() got unknown key(s) {unknown}; "
            f"known keys: {', '.join(PROVENANCE_KEYS)}"
        )
    given.setdefault("source", "api")
    df.attrs.update(Provenance(**given).as_attrs())
    return df


_COUNTS = ("pages", "rows", "requests", "from_cache", "retries")


def merge_provenance(frames: Any) -> dict[str, Any]:
    """The provenance of a result computed from ``frames`` (a list of DataFrames or Series;
    None and frames without provenance are passed over, a frame given twice counts once), as
    ``attrs`` hold it; ``{}`` when none of them has any. What every analysis of
    :mod:`invtools.analysis`, :func:`~invtools.viz.activity_table` and
    :meth:`TeamResults.frame() <invtools.notebook.teams.TeamResults.frame>` write on their
    results.

    One frame's record is kept as it is. Of several, each field is merged:

    - a field all of them agree on keeps its one value;
    - ``team_id``, ``team_name`` and ``base_url`` of several teams become lists, one entry per
      team (entry *i* of each is one team; a team is its service and its id), in the order
      given: both teams are named, and each keeps its own ``window``;
    - ``endpoint`` and ``filters`` asked differently become lists, one entry per way asked
      (entry *i* of both is one input: ``movement(lines, items)`` came from
      ``['/v1/location-txs', '/v1/items']``); ``source`` and ``grain`` lists of the distinct
      values; a frame that names none of them adds nothing to them;
    - ``window``: the first input's that has one, the frame measured: ``movement(lines,
      items)`` keeps the lines' window (docs/explanation/now.md);
    - ``as_of``, ``fetched_at`` and ``data_as_of``: the oldest input's, so the result is as
      old as its oldest part;
    - ``pages``, ``rows``, ``requests``, ``from_cache``, ``retries``: their sums.

    >>> lines = with_provenance(pd.DataFrame(), team_id=7, team_name="Shop",
    ...     endpoint="/v1/location-txs", filters={"since": "90D"},
    ...     window={"since": "2026-08-02T17:10:00.000Z", "until": "2026-10-31T17:10:00.000Z"},
    ...     data_as_of="2026-10-31T17:10:00.000Z")
    >>> items = with_provenance(pd.DataFrame(), team_id=7, team_name="Shop", endpoint="/v1/items",
    ...     data_as_of="2026-10-31T17:09:00.000Z")
    >>> both = merge_provenance([lines, items])
    >>> both["team_name"], both["endpoint"], both["filters"], both["data_as_of"]
    ('Shop', ['/v1/location-txs', '/v1/items'], [{'since': '90D'}, {}], '2026-10-31T17:09:00.000Z')
    >>> both["window"] == lines.attrs["window"]
    True
    >>> york = with_provenance(pd.DataFrame(), team_id=9, team_name="York", endpoint="/v1/items")
    >>> two = merge_provenance([items, york])
    >>> two["team_id"], two["team_name"], two["endpoint"]
    ([7, 9], ['Shop', 'York'], '/v1/items')
    """
    if isinstance(frames, pd.DataFrame | pd.Series):
        frames = [frames]
    if isinstance(frames, str | bytes | Mapping) or not isinstance(frames, Iterable):
        raise ArgumentTypeError(
            "merge_provenance(frames) takes a list of the DataFrames a result was computed "
            f"from, not {type(frames).__name__}"
        )
    records: list[dict[str, Any]] = []
    seen: set[int] = set()
    for frame in frames:
        if frame is None or id(frame) in seen:
            continue
        if not isinstance(frame, pd.DataFrame | pd.Series):
            raise ArgumentTypeError(
                f"merge_provenance(frames) takes DataFrames (or Series), not a "
                f"{type(frame).__name__} among them"
            )
        seen.add(id(frame))
        record = Provenance.from_attrs(own_attrs(frame))
        if record is not None:
            records.append(record.as_attrs())
    if len(records) <= 1:
        return records[0] if records else {}
    teams = _teams(records)
    asked = _distinct(_pairs(records, "endpoint", "filters"), empty=(None, {}))
    several = len(teams) > 1
    merged: dict[str, Any] = {
        "source": _one_or_all(_flat(records, "source")),
        # one team (one way asked): its values; several: aligned lists
        **{k: [t[k] for t in teams] if several else teams[0][k] for k in _TEAM},
        "endpoint": [a[0] for a in asked] if len(asked) > 1 else asked[0][0],
        "filters": [a[1] for a in asked] if len(asked) > 1 else asked[0][1],
        # each team is measured on its own clock: a stack keeps each team's window
        "window": [t["window"] for t in teams] if several else teams[0]["window"],
        "grain": _one_or_all(_flat(records, "grain")),
        **{k: _oldest(_flat(records, k)) for k in ("as_of", "fetched_at", "data_as_of")},
        **{k: sum(int(r[k] or 0) for r in records) for k in _COUNTS},
    }
    return Provenance(**merged).as_attrs()


_TEAM = ("team_id", "team_name", "base_url")


def _teams(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each team of ``records`` once, in order -- a team is its service and its id, so team 1
    of the demo server and team 1 of the real one are two -- with its name and the windows of
    its records. A record naming no service joins a team of the same id; one naming no team
    joins the first team (items of your own, say)."""
    teams: list[dict[str, Any]] = []
    loose: list[Any] = []
    for r in records:
        entries = zip(*(aligned(r[k], r["team_id"]) for k in (*_TEAM, "window")), strict=True)
        for team_id, name, url, window in entries:
            if team_id is None:
                loose.append(window)
                continue
            found = next(
                (t for t in teams if t["team_id"] == team_id and url in (t["base_url"], None)),
                None,
            )
            if found is None and url is not None:  # one of the same id named no service yet
                found = next(
                    (t for t in teams if t["team_id"] == team_id and t["base_url"] is None), None
                )
            if found is None:
                found = {"team_id": team_id, "team_name": name, "base_url": url, "windows": []}
                teams.append(found)
            found["base_url"] = found["base_url"] or url
            found["team_name"] = found["team_name"] or name
            found["windows"].append(window)
    if not teams:
        teams.append({"team_id": None, "team_name": None, "base_url": None, "windows": []})
    teams[0]["windows"].extend(loose)
    for t in teams:
        t["window"] = _first_window(t["windows"])
    return teams


def _flat(records: list[dict[str, Any]], key: str) -> list[Any]:
    """The values of ``key``, a merged record's list taken entry by entry."""
    out: list[Any] = []
    for r in records:
        out.extend(r[key] if isinstance(r[key], list) else [r[key]])
    return out


def _pairs(records: list[dict[str, Any]], a: str, b: str) -> list[tuple[Any, Any]]:
    """(a, b) of each record, a merged record's lists taken entry by entry: a value that is not
    a list is every entry's, and the shorter list is padded with None (nothing dropped)."""
    out: list[tuple[Any, Any]] = []
    for r in records:
        n = max(len(r[k]) if isinstance(r[k], list) else 1 for k in (a, b))
        out.extend(zip(_padded(r[a], n), _padded(r[b], n), strict=True))
    return out


def _padded(value: Any, n: int) -> list[Any]:
    """``value`` as ``n`` entries: a list padded with None, anything else repeated."""
    return [*value, *[None] * (n - len(value))] if isinstance(value, list) else [value] * n


def _distinct(values: list[Any], empty: Any) -> list[Any]:
    """Each value once, in order; the ``empty`` one left out when another is there."""
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return [v for v in out if v != empty] or out  # else out is [empty]


def _one_or_all(values: list[Any]) -> Any:
    """The one value (None left out when another is there), else the list of distinct ones."""
    found = _distinct(values, empty=None)
    return found[0] if len(found) == 1 else found


def _oldest(stamps: list[Any]) -> Any:
    """The earliest of ISO times (kept as given), None when none is known."""
    known = [s for s in stamps if s is not None]
    return min(known, key=_instant) if known else None


def _instant(stamp: Any) -> pd.Timestamp:
    """An ISO time as the instant it names (one without a zone: UTC), to compare."""
    when = pd.Timestamp(stamp)
    return when.tz_localize(UTC) if when.tzinfo is None else when


def _first_window(windows: list[Any]) -> Any:
    """The first of ``windows`` (a frame without one holds every time): the window of the
    frame measured (an analysis's first frame, a join's lines), as recorded, with the rows it
    held (:func:`~invtools.frames.context_of` checks them); None when none has a window."""
    return next((w for w in windows if isinstance(w, Mapping) and w.get("until")), None)
