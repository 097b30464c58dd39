"""The provenance record: where a frame's rows came from, the same everywhere.

A frame from the API (``client.items_df()``) and a frame from a mirror
(``mirror.transactions_df()``) carry one :class:`Provenance` in ``df.attrs``, as plain JSON
values only (text, numbers, lists), so the frame survives ``to_parquet``/``read_parquet``,
``to_pickle`` and a JSON dump with its provenance intact. It never holds a token. Imports
nothing of invtools.

>>> p = Provenance(source="api", team_id=7, team_name="Shop", base_url="https://h",
...                endpoint="/v1/items", filters={"since": __import__("datetime").date(2026, 5, 1)})
>>> p.as_attrs()["filters"]
{'since': '2026-05-01'}
>>> Provenance.from_attrs(p.as_attrs()) == p.with_filters({"since": "2026-05-01"})
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

__all__ = ["Provenance", "json_safe", "utc_stamp"]


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
        try:
            return json_safe(item())
        except (TypeError, ValueError):
            pass
    return str(value)


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a frame's rows came from.

    ``source``: ``"api"`` (fetched through a client) or ``"mirror"`` (read from a local
    mirror file); ``team_id``/``team_name``/``base_url``: whose data, from which service (a
    demo frame and a real frame of the same team id differ here); ``endpoint`` and
    ``filters``: what was asked; ``fetched_at``: when the rows were read (ISO UTC);
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
    # a datetime given is kept as its ISO UTC text (__post_init__)
    fetched_at: str | datetime | None = None
    data_as_of: str | datetime | None = None
    pages: int = 0
    rows: int = 0
    requests: int = 0
    from_cache: int = 0
    retries: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "filters",
            json_safe({k: v for k, v in dict(self.filters or {}).items() if v is not None}),
        )
        for name in ("fetched_at", "data_as_of"):
            if isinstance(getattr(self, name), datetime):
                object.__setattr__(self, name, utc_stamp(getattr(self, name)))

    def with_filters(self, filters: Mapping[str, Any]) -> Provenance:
        return dataclasses.replace(self, filters=filters)

    def as_attrs(self) -> dict[str, Any]:
        """The record as ``df.attrs`` holds it: a flat dict of JSON values."""
        return {f.name: json_safe(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> Provenance | None:
        """The record kept in a frame's ``attrs`` (None when it has none)."""
        if "source" not in attrs:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in attrs.items() if k in names})
