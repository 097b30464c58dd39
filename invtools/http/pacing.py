"""Pacing: a request waits on the client side until its budget has room, so the server never
needs to answer 429.

A :class:`Budget` belongs to a token, not to one client: every client of the same token (and
base URL, rate and scope) in this process shares one (:func:`shared_budget`), so a re-run
notebook cell or the token picker making a second client does not double the rate. A budget
counts requests in a rolling window per bucket -- one bucket per endpoint (the service's
documented rule) or one for all endpoints (``scope="token"``) -- with pyrate-limiter's
in-memory log; waiting is done here, on an injectable clock, so tests need not sleep. After a
429 the budget is *held* for the reset the server asked for, and every request of the token
waits it out (no 429 storm from the other threads).

>>> from invtools._clock import SYSTEM_CLOCK
>>> b = Budget(5, clock=SYSTEM_CLOCK)
>>> [b.acquire("/v1/items") for _ in range(5)]      # five fit in the first second
[0.0, 0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import threading
import weakref
from fractions import Fraction
from typing import Any
from urllib.parse import urlsplit

from pyrate_limiter import InMemoryBucket, Rate, RateItem

from invtools._clock import SYSTEM_CLOCK, current_cancel
from invtools._types import route_of
from invtools.errors import Cancelled

__all__ = ["RATE_LIMIT_SCOPES", "PACING_MARGIN", "Budget", "shared_budget", "bucket_of", "rate",
           "PacingMixin"]

#: "endpoint": one budget per endpoint (the service's documented rule); "token": one budget
#: shared by every endpoint (what one production client reports).
RATE_LIMIT_SCOPES = ("endpoint", "token")

#: How much longer (s) than the server's second a request counts in the client's window, so
#: that a request which reached the server late (network jitter, a thread not yet scheduled)
#: has left the server's window too when the client sends the next one.
PACING_MARGIN = 0.05


def rate(per_second: float) -> Rate:
    """``per_second`` as a whole number of requests per whole number of milliseconds.

    >>> rate(5).limit, rate(5).interval, rate(0.5).limit, rate(0.5).interval
    (5, 1000, 1, 2000)
    """
    frac = Fraction(per_second).limit_denominator(1000)
    return Rate(frac.numerator, 1000 * frac.denominator)


def bucket_of(url: str, scope: str) -> str:
    """The bucket a request to ``url`` spends from.

    >>> bucket_of("http://h/v1/location-txs/7?revision=2", "endpoint")
    '/v1/location-txs/{id}'
    >>> bucket_of("http://h/v1/items", "token")
    'all-endpoints'
    """
    return "all-endpoints" if scope == "token" else route_of(urlsplit(url).path)


class Budget:
    """``per_second`` requests per rolling second in each bucket, waited for on ``clock``;
    a request counts for ``margin`` seconds more than the server's second."""

    def __init__(self, per_second: float, *, clock: Any = SYSTEM_CLOCK,
                 margin: float = PACING_MARGIN) -> None:
        self.per_second = float(per_second)
        self.clock = clock
        # The window itself is longer, not just the wait of whoever waits: with several
        # threads, one woken for a slot freeing at t may take a slot freeing at t - margin.
        server = rate(per_second)
        self._rate = Rate(server.limit, server.interval + round(margin * 1000))
        self._buckets: dict[str, InMemoryBucket] = {}
        self._lock = threading.Lock()
        self._held_until = float("-inf")

    def __repr__(self) -> str:
        return f"Budget({self.per_second:g}/s)"

    def acquire(self, bucket: str, cancel: threading.Event | None = None) -> float:
        """Wait until a request in ``bucket`` may go; return the seconds waited. Returns at
        once (having waited less) when ``cancel`` is set."""
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock.monotonic()
                wait = self._held_until - now
                if wait <= 0:
                    wait = self._try(bucket, now)
                    if wait <= 0:
                        return waited
            if self.clock.wait(cancel, wait):
                return waited
            waited += wait

    def _try(self, bucket: str, now: float) -> float:
        log = self._buckets.get(bucket)
        if log is None:
            log = self._buckets[bucket] = InMemoryBucket([self._rate])
        now_ms = int(now * 1000)
        log.leak(now_ms)
        item = RateItem(bucket, now_ms)
        if log.put(item):
            return 0.0
        return max(log.waiting(item), 1) / 1000

    def hold(self, seconds: float) -> None:
        """The server answered 429 and asked for ``seconds``: nobody sends before then."""
        with self._lock:
            self._held_until = max(self._held_until, self.clock.monotonic() + seconds)


_shared: weakref.WeakValueDictionary[tuple, Budget] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared_budget(owner: str, per_second: float, *, clock: Any = SYSTEM_CLOCK) -> Budget:
    """The process's one :class:`Budget` for ``owner`` (a hash naming the token and service,
    never the token itself) at this rate; made on first use, gone when no client holds it."""
    key = (owner, float(per_second), id(clock))
    with _shared_lock:
        budget = _shared.get(key)
        if budget is None:
            budget = _shared[key] = Budget(per_second, clock=clock)
        return budget


class PacingMixin:
    """Session mixin: ``send()`` first waits on ``self.budget`` for the request's bucket.

    It sits *below* requests-cache's mixin, so a cache hit never reaches it and costs no
    budget. Inside a :func:`~invtools._clock.cancel_scope` whose event is set (a stopped
    batch of worker threads) nothing is sent: the wait ends at once and
    :class:`~invtools.errors.Cancelled` is raised."""

    budget: Budget | None = None
    rate_limit_scope: str = "endpoint"

    def send(self, request, **kwargs):
        cancel = current_cancel()
        if self.budget is not None:
            self.budget.acquire(bucket_of(request.url, self.rate_limit_scope), cancel)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"not sent, the batch was stopped: GET {urlsplit(request.url).path}")
        return super().send(request, **kwargs)
