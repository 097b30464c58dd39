"""What is worth sending again, and how long to wait first.

A 429 waits for the reset the server gives (``X-Ratelimit-Reset``, else ``Retry-After``:
seconds, an epoch timestamp or an HTTP date), a little past it; 500/502/503/504 and dropped
connections wait an exponential backoff with jitter. A reset longer than
:data:`MAX_RATE_LIMIT_WAIT` is not waited for: the client raises instead of blocking a notebook.

>>> wait_seconds("2.5", now=0.0)
2.5
>>> wait_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0)
6.0
"""

from __future__ import annotations

import math
import random
from typing import Any

from invtools._types import parse_time
from invtools.errors import ConfigError

__all__ = [
    "RETRY_STATUSES",
    "MAX_RATE_LIMIT_WAIT",
    "MAX_BACKOFF",
    "RESET_HEADERS",
    "backoff",
    "wait_seconds",
    "rate_limit_wait",
]

#: Statuses worth sending again. 500 is included: every request here is a GET, so a retry
#: cannot do harm, and a 500 is as often a passing fault as a 502/503/504.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest wait a 429 may ask for before we give up instead of blocking a notebook.
MAX_RATE_LIMIT_WAIT = 120.0
MAX_BACKOFF = 30.0
#: Where a 429 says when to come back, in the order they are read.
RESET_HEADERS = ("X-Ratelimit-Reset", "Retry-After")
#: Past the reset, so a retry does not land a hair before it.
_PAST_RESET = 0.05


def backoff(attempt: int, base: float, *, rng: random.Random | Any = random) -> float:
    """Exponential backoff with 'equal jitter': half fixed, half random.

    >>> 0.5 <= backoff(2, 0.5) <= 1.0
    True
    """
    delay = min(MAX_BACKOFF, base * 2 ** (attempt - 1))
    return delay / 2 + rng.uniform(0, delay / 2)


def wait_seconds(value: str | None, *, now: float) -> float | None:
    """A reset header's wait in seconds: a number of seconds, an epoch timestamp (seconds
    since 1970, as some servers send) or an HTTP date; ``now`` is the wall-clock time
    (``time.time()``). None when the value says nothing usable."""
    if not value:
        return None
    try:
        secs = float(value)
    except ValueError:
        try:
            when = parse_time(value)  # its message is never shown: None instead
        except ConfigError:
            return None
        return when.timestamp() - now
    if not math.isfinite(secs):  # "nan", "inf"
        return None
    if secs > 1e9:  # some servers send the reset moment as a Unix timestamp
        secs -= now
    return secs


def rate_limit_wait(headers, *, now: float) -> tuple[float | None, str]:
    """``(seconds to wait, why)`` for a 429 from its headers; ``(None, why)`` when no header
    says, and ``(inf, why)`` when the wait is longer than :data:`MAX_RATE_LIMIT_WAIT`.

    >>> rate_limit_wait({"X-Ratelimit-Reset": "1"}, now=0.0)
    (1.05, '429, X-Ratelimit-Reset: 1')
    """
    for header in RESET_HEADERS:
        secs = wait_seconds(headers.get(header), now=now)
        if secs is not None:
            why = f"429, {header}: {headers[header]}"
            if secs > MAX_RATE_LIMIT_WAIT:
                return math.inf, why
            return max(secs, 0.0) + _PAST_RESET, why
    return None, "429 without a reset header"
