"""Where a frame came from, in ``df.attrs``: one :class:`Provenance` -- the same record for a
frame from the API (``client.items_df()``) and one from a mirror (``mirror.transactions_df()``).

:func:`with_provenance` writes the record as plain JSON values (text, numbers, lists), so a
frame keeps its provenance through ``to_parquet``/``read_parquet``, ``to_pickle`` and a JSON
dump; ``Provenance.from_attrs(df.attrs)`` reads it back. :data:`PROVENANCE_KEYS` names its
fields. It never holds a token.

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
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType
from typing import Any

import pandas as pd

from invtools.errors import ArgumentTypeError

__all__ = [
    "Provenance",
    "PROVENANCE_KEYS",
    "with_provenance",
    "window_of",
    "json_safe",
    "utc_stamp",
]


def utc_stamp(when: datetime | None = None) -> str:
    """An aware time as ISO 8601 UTC with a ``Z`` (now when None), to the millisecond.

    >>> utc_stamp(datetime(2026, 5, 2, 1, 10, tzinfo=UTC))
    '2026-05-02T01:10:00.000Z'
    """
    when = datetime.now(UTC) if when is None else when.astimezone(UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_safe(value: Any) -> Any:
    """``value`` made of JSON types only: times become ISO text, tuples and sets lists, numpy
    and pandas scalars Python numbers, anything else its ``str``.

    >>> json_safe({"ids": (3, 1), "until": datetime(2026, 5, 2, tzinfo=UTC)})
    {'ids': [3, 1], 'until': '2026-05-02T00:00:00.000Z'}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, datetime):
        return utc_stamp(value if value.tzinfo else value.replace(tzinfo=UTC))
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
    window holds (``since``, None for the list's start, and ``until``, the service's clock when
    none was given; ISO UTC), what an analysis of it may look back over; ``fetched_at``: when
    the rows were read (ISO UTC);
    ``data_as_of``: when the oldest answer they came from left the server (a cached walk
    is as old as its first page; ISO UTC): how old the data is;
    ``pages``, ``rows``, ``requests`` (sent over the network), ``from_cache`` (answered by the
    local cache) and ``retries`` of the call that built the frame.
    """

    source: str
    team_id: int | None = None
    team_name: str | None = None
    base_url: str | None = None
    endpoint: str | None = None
    filters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    window: Mapping[str, Any] | None = None
    # a datetime given is kept as its ISO UTC text (__post_init__)
    fetched_at: str | datetime | None = None
    data_as_of: str | datetime | None = None
    pages: int = 0
    rows: int = 0
    requests: int = 0
    from_cache: int = 0
    retries: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.filters, Mapping | None):
            raise ArgumentTypeError(
                f"Provenance(filters) is a mapping of filter name -> value, "
                f"not {type(self.filters).__name__}"
            )
        object.__setattr__(
            self,
            "filters",
            json_safe({k: v for k, v in dict(self.filters or {}).items() if v is not None}),
        )
        for name in ("fetched_at", "data_as_of"):
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
        "team_id": "id of the team whose data this is",
        "team_name": "that team's name",
        "base_url": "the service the rows came from (a demo server and the real one differ here)",
        "endpoint": "API path the rows came from, e.g. '/v1/location-txs'",
        "filters": "query filters used (dict of JSON values), without cursor/limit",
        "window": "the transaction times the frame holds, {'since': ..., 'until': ...} (ISO "
        "8601 UTC text; since None: from the list's start), when it was asked for a window",
        "fetched_at": "when the rows were fetched (ISO 8601 UTC text, '2026-05-02T01:10:00.000Z')",
        "data_as_of": "when the oldest answer they came from left the server (a cached walk is "
        "as old as its first page; ISO 8601 UTC text): how old the data is",
        "pages": "number of pages walked",
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
    endpoint, filters, window, fetched_at, data_as_of, pages, rows, requests, from_cache,
    retries) are added to it or replace its values. ``source`` is ``"api"`` unless given. An
    unknown key raises ``TypeError`` so a typo does not silently drop information.

    ``df.attrs`` receives every field as JSON values (``fetched_at`` as ISO text, filters as
    text and numbers), other keys already there are kept. pandas carries ``attrs`` through
    most operations, and they survive ``to_parquet`` and ``to_pickle``.

    >>> df = with_provenance(pd.DataFrame(), team_name="Shop", endpoint="/v1/members", pages=1)
    >>> df.attrs["endpoint"], df.attrs["pages"], df.attrs["requests"]
    ('/v1/members', 1, 0)
    >>> with_provenance(df, team_nmae="Shop")
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: with_provenance() got unknown key(s) ['team_nmae']; known keys: source, team_id, team_name, base_url, endpoint, filters, window, fetched_at, data_as_of, pages, rows, requests, from_cache, retries
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


def window_of(df: Any) -> tuple[pd.Timestamp | None, pd.Timestamp] | None:
    """The window of transaction times ``df`` was fetched with (its provenance's ``window``:
    ``client.lines_df(since="90D")``), as UTC ``(since, until)``, since None for the list's
    start; None for a frame not asked for a window (a whole list, a mirror's, your own). Its
    ``until`` is the "now" an analysis of the frame measures to (docs/explanation/now.md).

    >>> df = pd.DataFrame(); df.attrs["window"] = {"since": None, "until": "2026-10-31T17:10Z"}
    >>> window_of(df)
    (None, Timestamp('2026-10-31 17:10:00+0000', tz='UTC'))
    """
    window = getattr(df, "attrs", {}).get("window")
    if not isinstance(window, Mapping) or window.get("until") is None:
        return None
    since = window.get("since")
    until = pd.to_datetime(window["until"], utc=True)
    return (None if since is None else pd.to_datetime(since, utc=True)), until
