"""How long the client keeps each endpoint's answers: the expiry the session is built with
(:data:`EXPIRY`, :data:`DEFAULT_EXPIRY`) and how old a list walk's record may be by default
(:func:`default_max_age`).

This is knowledge of the inventory API (which endpoint changes how often), so it lives here and
is handed to :func:`invtools.http.session.make_session`: the HTTP layer caches what it is told
and knows no endpoint. The pages of a paginated list are never stored one by one: a walk keeps
them all in one record (:mod:`invtools.api.walk`), since a list walked with cursors is
consistent only as a whole.

>>> EXPIRY[next(iter(EXPIRY))] == NEVER_EXPIRE      # a detail at a revision: kept for good
True
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from requests_cache import DO_NOT_CACHE

from invtools.http.cache import NEVER_EXPIRE

__all__ = ["EXPIRY", "DEFAULT_EXPIRY", "TXS_LIST_MAX_AGE", "LIST_MAX_AGE", "default_max_age"]

_HOURS, _MINUTES = timedelta(hours=6), timedelta(minutes=10)

# How long a cached 200 stays fresh, per endpoint. First match wins; patterns see the URL
# without its scheme. A transaction fetched at an explicit revision never changes.
EXPIRY: dict[re.Pattern, Any] = {
    re.compile(r"/v1/(location-txs|transactions)/\d+\?(?:[^#]*&)?revision=\d+"): NEVER_EXPIRE,
    re.compile(r"/v1/(location-txs|transactions)/\d+(\?|$)"): timedelta(seconds=60),
    re.compile(r"/v1/(location-txs|transactions|items|partners)(\?|$)"): DO_NOT_CACHE,
    re.compile(r"/v1/teams/linked(\?|$)"): _HOURS,
    re.compile(r"/v1/item-attrs(/\d+)?(\?|$)"): _HOURS,
    re.compile(r"/v1/(items|locations|members)(/\d+)?(\?|$)"): _MINUTES,
}
#: Anything not listed above.
DEFAULT_EXPIRY = _MINUTES

#: How old a walk of the transactions list may be replayed unless the caller says otherwise
#: (``max_age=``): an analyst re-running a notebook within the hour gets the same rows at
#: once, instead of re-walking a list that takes minutes at the real service's pace.
TXS_LIST_MAX_AGE = timedelta(hours=1)
#: ... and of any other list (items, partners).
LIST_MAX_AGE = _MINUTES
_TXS_LIST = re.compile(r"/v1/(location-txs|transactions)(\?|$)")


def default_max_age(url: str) -> timedelta:
    """How old a walk of the list at ``url`` may be replayed by default.

    >>> default_max_age("http://h/v1/location-txs?limit=100")
    datetime.timedelta(seconds=3600)
    >>> default_max_age("http://h/v1/items?limit=100")
    datetime.timedelta(seconds=600)
    """
    return TXS_LIST_MAX_AGE if _TXS_LIST.search(url.split("://", 1)[-1]) else LIST_MAX_AGE
