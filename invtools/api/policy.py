"""How long the client keeps each endpoint's answers: the expiry the session is built with
(:data:`EXPIRY`, :data:`DEFAULT_EXPIRY`) and how old a cached list walk may be by default
(:data:`TXS_LIST_MAX_AGE`, :func:`default_max_age`).

This is knowledge of the inventory API (which endpoint changes how often), so it lives here and
is handed to :func:`invtools.http.session.make_session`: the HTTP layer caches what it is told
and knows no endpoint.

>>> EXPIRY[next(iter(EXPIRY))] == NEVER_EXPIRE      # a detail at a revision: kept for good
True
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from invtools.http.cache import NEVER_EXPIRE

__all__ = ["EXPIRY", "DEFAULT_EXPIRY", "TXS_LIST_MAX_AGE", "default_max_age"]

_HOURS, _MINUTES = timedelta(hours=6), timedelta(minutes=10)
_SHORT = timedelta(seconds=60)

# How long a cached 200 stays fresh, per endpoint. First match wins; patterns see the URL
# without its scheme. A transaction fetched at an explicit revision never changes; the
# transactions list changes at its head whenever anyone records something, so it is short.
EXPIRY: dict[re.Pattern, Any] = {
    re.compile(r"/v1/(location-txs|transactions)/\d+\?(?:[^#]*&)?revision=\d+"): NEVER_EXPIRE,
    # The list is kept a day, but a walk uses it only while younger than its max_age
    # (TXS_LIST_MAX_AGE), and only as the one walk that read it (invtools.api.walks).
    re.compile(r"/v1/(location-txs|transactions)(\?|$)"): timedelta(days=1),
    re.compile(r"/v1/(location-txs|transactions)/\d+(\?|$)"): _SHORT,
    re.compile(r"/v1/teams/linked(\?|$)"): _HOURS,
    re.compile(r"/v1/item-attrs(/\d+)?(\?|$)"): _HOURS,
    re.compile(r"/v1/(items|locations|partners|members)(/\d+)?(\?|$)"): _MINUTES,
}
#: Anything not listed above.
DEFAULT_EXPIRY = _MINUTES

#: How old a cached walk of the transactions list may be unless the caller says otherwise
#: (``max_age=``): an analyst re-running a notebook within the hour gets the same rows at
#: once, instead of re-walking a list that takes minutes at the real service's pace.
#: Other lists: their expiry above.
TXS_LIST_MAX_AGE = timedelta(hours=1)
_TXS_LIST = re.compile(r"/v1/(location-txs|transactions)(\?|$)")


def default_max_age(url: str) -> timedelta | None:
    """How old a cached list walk at ``url`` may be by default (None: any age).

    >>> default_max_age("http://h/v1/location-txs?limit=100")
    datetime.timedelta(seconds=3600)
    >>> default_max_age("http://h/v1/items?limit=100")
    datetime.timedelta(seconds=600)
    """
    bare = url.split("://", 1)[-1]
    if _TXS_LIST.search(bare):
        return TXS_LIST_MAX_AGE
    for pattern, expiry in EXPIRY.items():
        if pattern.search(bare):
            return expiry if isinstance(expiry, timedelta) else None
    return DEFAULT_EXPIRY
