"""What is worth sending again, and how long to wait first.

A 429 waits for the reset the server gives (``X-Ratelimit-Reset``, else ``Retry-After``:
seconds, an epoch timestamp or an HTTP date), a little past it; 500/502/503/504 and dropped
connections wait an exponential backoff with jitter. A reset longer than
:data:`MAX_RATE_LIMIT_WAIT` is not waited for: the client raises instead of blocking a notebook.

What a reset may say, and how it is read (the same on a success's statement of the budget,
:func:`invtools.http.pacing.stated_of`):

- more than :data:`FURTHEST_RESET` (a year) ahead, infinity included (``1e308``, ``inf``, an
  epoch time in year 33658, a date in 9999): no rate limit's. A 429 saying it cannot be waited
  for, whatever ``max_wait``: a :class:`~invtools.errors.RateLimitError` at once, naming the
  header and its value; a success stating it states nothing (the configured pace goes on).
- in the past by more than ``max_wait`` (year 1, ``-1e308``, an epoch time an hour ago):
  another clock's or a broken header, as no header (a 429 backs off); a little past (``-4``, a
  second's skew): the budget is back, the retry goes at once.
- ``nan``, words, nothing: no header.

>>> wait_seconds("2.5", now=0.0)
2.5
>>> wait_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0)
6.0
>>> print(rate_limit_wait({"Retry-After": "1e12"}, now=0.0)[1])
429, Retry-After: 1e12: more than a year from now (in 1e+12 s), which no rate limit means: ...
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from typing import Any

from invtools._types import parse_time
from invtools.errors import ConfigError

__all__ = ["RETRY_STATUSES", "MAX_RATE_LIMIT_WAIT", "FURTHEST_RESET", "MAX_BACKOFF", "backoff"]
__all__ += ["wait_seconds", "rate_limit_wait", "comes_back"]  # what a 429 says

#: Statuses worth sending again. 500 is included: every request here is a GET, so a retry
#: cannot do harm, and a 500 is as often a passing fault as a 502/503/504.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest wait a 429 may ask for before we give up instead of blocking a notebook.
MAX_RATE_LIMIT_WAIT = 120.0
#: No rate limit's budget comes back further ahead than this (a year, in seconds): a reset
#: beyond it is a broken header, never a time to wait for or to name as a date.
FURTHEST_RESET = 366 * 86400.0
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
    (``time.time()``). ``inf`` for a wait of for ever (``"inf"``, ``"1e400"``); None when the
    value says nothing usable (``"nan"``, ``"-inf"``, words). Never raises.

    >>> wait_seconds("inf", now=0.0), wait_seconds("nan", now=0.0)
    (inf, None)
    """
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
    if math.isnan(secs) or secs == -math.inf:
        return None
    if secs > 1e9:  # some servers send the reset moment as a Unix timestamp
        secs -= now
    return secs


def rate_limit_wait(
    headers, *, now: float, max_wait: float = MAX_RATE_LIMIT_WAIT
) -> tuple[float | None, str]:
    """``(seconds to wait, why)`` for a 429 from its headers (the module docstring's rules);
    ``(None, why)`` when no header says anything usable, and ``(inf, why)`` when the wait is
    longer than ``max_wait`` or than :data:`FURTHEST_RESET`: ``why`` then names the header and
    its value, says when the budget comes back and what to do (a sentence of its own).

    >>> rate_limit_wait({"X-Ratelimit-Reset": "1"}, now=0.0)
    (1.05, '429, X-Ratelimit-Reset: 1')
    >>> rate_limit_wait({"Retry-After": "7200"}, now=0.0, max_wait=60)[1][24:]
    'the budget comes back at 1970-01-01 02:00:00 UTC (in 2 h), after max_wait=60 s. Try again...'
    """
    for header in RESET_HEADERS:
        secs = wait_seconds(headers.get(header), now=now)
        if secs is None or secs < -max_wait:  # long past: another clock's, or broken
            continue
        why = f"429, {header}: {headers[header]}"
        if secs > FURTHEST_RESET:
            return math.inf, (
                f"{why}: {comes_back(secs, now)}, which no rate limit means: the server's "
                "header is broken, so it was not waited for. Try again in a minute; if the "
                "server says it again, tell its support (quote the header)."
            )
        if secs > max_wait:
            back = f"the budget comes back at {comes_back(secs, now)}"
            return math.inf, (
                f"{why}: {back}, after max_wait={max_wait:g} s. "
                "Try again then, or raise max_wait= to wait for it."
            )
        return max(secs, 0.0) + _PAST_RESET, why
    return None, "429 without a reset header"


def comes_back(seconds: float, now: float) -> str:
    """When ``seconds`` from ``now`` (the wall clock) is, in UTC and from now; beyond
    :data:`FURTHEST_RESET`, no date (it may be past any calendar's).

    >>> comes_back(90061, 0.0)
    '1970-01-02 01:01:01 UTC (in 25 h)'
    >>> comes_back(1e308, 0.0)
    'more than a year from now (in 1e+308 s)'
    """
    if not seconds <= FURTHEST_RESET:
        return f"more than a year from now (in {seconds:.3g} s)"
    when = datetime.fromtimestamp(now + seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    hours, minutes = seconds / 3600, seconds / 60
    return f"{when} (in {f'{hours:.0f} h' if hours >= 2 else f'{minutes:.0f} min'})"
