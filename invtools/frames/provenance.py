"""Where a frame came from, recorded in ``df.attrs``.

>>> with_provenance(pd.DataFrame(), endpoint="/v1/members").attrs
{'endpoint': '/v1/members'}
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["PROVENANCE_KEYS", "with_provenance"]

#: Keys :func:`with_provenance` accepts, and what they mean.
PROVENANCE_KEYS: dict[str, str] = {
    "team_id": "id of the team whose data this is",
    "team_name": "that team's name",
    "endpoint": "API path the rows came from, e.g. '/v1/location-txs'",
    "filters": "query filters used (dict), without cursor/limit",
    "fetched_at": "when the rows were fetched (tz-aware UTC Timestamp)",
    "pages": "number of pages walked",
    "requests": "number of HTTP requests actually sent (cache hits excluded)",
    "from_cache": "how many of its responses came from the local cache",
}


def with_provenance(df: pd.DataFrame, **info: Any) -> pd.DataFrame:
    """Record where ``df`` came from in ``df.attrs`` and return ``df`` (the same object).

    Accepted keys (see :data:`PROVENANCE_KEYS`): team_id, team_name, endpoint, filters,
    fetched_at, pages, requests, from_cache. An unknown key raises ``TypeError`` so a typo
    does not silently drop information. pandas carries ``attrs`` through most operations.

    >>> df = with_provenance(pd.DataFrame(), team_name="Shop", endpoint="/v1/members", pages=1)
    >>> df.attrs["endpoint"], df.attrs["pages"]
    ('/v1/members', 1)
    """
    unknown = sorted(set(info) - set(PROVENANCE_KEYS))
    if unknown:
        raise TypeError(f"with_provenance() got unknown key(s) {unknown}; "
                        f"known keys: {', '.join(PROVENANCE_KEYS)}")
    df.attrs.update(info)
    return df
