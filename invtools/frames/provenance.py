"""Where a frame came from, in ``df.attrs``: one :class:`invtools._provenance.Provenance`.

:func:`with_provenance` writes the record as plain JSON values (text, numbers, lists), so a
frame keeps its provenance through ``to_parquet``/``read_parquet`` and ``to_pickle``;
``Provenance.from_attrs(df.attrs)`` reads it back. :data:`PROVENANCE_KEYS` names its fields.

>>> df = with_provenance(pd.DataFrame({"id": [1]}), team_id=7, endpoint="/v1/members",
...                      fetched_at=pd.Timestamp("2026-05-02T01:10:00Z"))
>>> df.attrs["source"], df.attrs["endpoint"], df.attrs["fetched_at"]
('api', '/v1/members', '2026-05-02T01:10:00.000Z')
>>> Provenance.from_attrs(df.attrs).team_id
7
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pandas as pd

from invtools._provenance import Provenance
from invtools.errors import ArgumentTypeError

__all__ = ["PROVENANCE_KEYS", "with_provenance"]

_MEANINGS = {
    "source": "'api' (fetched through a client) or 'mirror' (read from a local mirror file)",
    "team_id": "id of the team whose data this is",
    "team_name": "that team's name",
    "base_url": "the service the rows came from (a demo server and the real one differ here)",
    "endpoint": "API path the rows came from, e.g. '/v1/location-txs'",
    "filters": "query filters used (dict of JSON values), without cursor/limit",
    "fetched_at": "when the rows were fetched (ISO 8601 UTC text, '2026-05-02T01:10:00.000Z')",
    "data_as_of": "when the oldest answer they came from left the server (a cached walk is as "
    "old as its first page; ISO 8601 UTC text): how old the data is",
    "pages": "number of pages walked",
    "rows": "number of rows read",
    "requests": "number of HTTP requests actually sent (cache hits excluded)",
    "from_cache": "how many of its responses came from the local cache",
    "retries": "how many requests had to be retried (rate limit, server errors)",
}

#: The fields of :class:`~invtools._provenance.Provenance` (the keys :func:`with_provenance`
#: accepts and writes), in order, and what each means.
PROVENANCE_KEYS: Mapping[str, str] = MappingProxyType(
    {
        field.name: _MEANINGS.get(field.name, "see invtools._provenance.Provenance")
        for field in dataclasses.fields(Provenance)
    }
)


def with_provenance(
    df: pd.DataFrame, provenance: Provenance | Mapping[str, Any] | None = None, /, **fields: Any
) -> pd.DataFrame:
    """Record where ``df`` came from in ``df.attrs`` and return ``df`` (the same object).

    ``provenance`` is a :class:`~invtools._provenance.Provenance` or a mapping of its fields;
    keyword ``fields`` (see :data:`PROVENANCE_KEYS`: source, team_id, team_name, base_url,
    endpoint, filters, fetched_at, data_as_of, pages, rows, requests, from_cache, retries) are
    added to it or replace its values. ``source`` is ``"api"`` unless given. An unknown key raises
    ``TypeError`` so a typo does not silently drop information.

    ``df.attrs`` receives every field as JSON values (``fetched_at`` as ISO text, filters as
    text and numbers), other keys already there are kept. pandas carries ``attrs`` through
    most operations, and they survive ``to_parquet`` and ``to_pickle``.

    >>> df = with_provenance(pd.DataFrame(), team_name="Shop", endpoint="/v1/members", pages=1)
    >>> df.attrs["endpoint"], df.attrs["pages"], df.attrs["requests"]
    ('/v1/members', 1, 0)
    >>> with_provenance(df, team_nmae="Shop")
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: with_provenance() got unknown key(s) ['team_nmae']; known keys: source, team_id, team_name, base_url, endpoint, filters, fetched_at, data_as_of, pages, rows, requests, from_cache, retries
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if provenance is None:
        given: dict[str, Any] = {}
    elif isinstance(provenance, Provenance):
        given = {name: getattr(provenance, name) for name in PROVENANCE_KEYS}
    elif isinstance(provenance, Mapping):
        given = dict(provenance)
    else:
        raise ArgumentTypeError(
            "with_provenance() takes a Provenance or a mapping of its fields, not "
            f"{type(provenance).__name__}"
        )
    given.update(fields)
    unknown = sorted(set(given) - set(PROVENANCE_KEYS), key=str)
    if unknown:
        raise ArgumentTypeError(
            f"with_provenance() got unknown key(s) {unknown}; "
            f"known keys: {', '.join(PROVENANCE_KEYS)}"
        )
    given.setdefault("source", "api")
    df.attrs.update(Provenance(**given).as_attrs())
    return df
