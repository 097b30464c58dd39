"""Request statistics: what a client sent, what the cache answered, per client and per call.

Every count goes to the client's running totals (:attr:`Client.stats`) and to each
measurement open *in the calling context* (``with client.measure() as m:``). A measurement
therefore counts its own call's requests even while other threads use the same client: four
threads building four frames at once each see their own numbers. Work a call hands to worker
threads runs in a copy of the caller's context (``contextvars.copy_context()``), so it is
counted in the caller's measurement too.

>>> c = Counters()
>>> with c.measure() as m:
...     c.add(sent=2)
>>> c.add(sent=1)
>>> m.sent, c.snapshot().sent
(2, 3)
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime

__all__ = ["RequestStats", "Measurement", "Counters"]


@dataclass(frozen=True)
class RequestStats:
    """Request counts.

    ``sent``: HTTP requests that went to the server (every attempt); ``from_cache``:
    responses answered by the local cache; ``pages``/``rows``: list pages and rows handed
    out by walks; ``retries``: attempts that were retries; ``rate_limited``: 429 answers
    received.

    >>> RequestStats(sent=3) - RequestStats(sent=1)
    RequestStats(sent=2, from_cache=0, pages=0, rows=0, retries=0, rate_limited=0)
    """

    sent: int = 0
    from_cache: int = 0
    pages: int = 0
    rows: int = 0
    retries: int = 0
    rate_limited: int = 0

    def __sub__(self, other: RequestStats) -> RequestStats:
        return RequestStats(
            **{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)}
        )


_NAMES = tuple(f.name for f in fields(RequestStats))


class _Tally:
    """A set of counts behind a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys(_NAMES, 0)

    def add(self, deltas: dict[str, int]) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._values[k] += v

    def snapshot(self) -> RequestStats:
        with self._lock:
            return RequestStats(**self._values)


class Measurement:
    """Request counts of one ``with client.measure() as m:`` block -- live inside it, fixed
    after it -- plus when it started and finished (UTC)."""

    def __init__(self) -> None:
        self._tally = _Tally()
        self.started_at = datetime.now(UTC)
        self.finished_at: datetime | None = None
        #: When the oldest response used was fetched from the server (a cached one: when it
        #: was stored): how old the data is. None until a response is used.
        self.data_as_of: datetime | None = None
        self._lock = threading.Lock()

    def _saw(self, when: datetime) -> None:
        with self._lock:
            if self.data_as_of is None or when < self.data_as_of:
                self.data_as_of = when

    @property
    def stats(self) -> RequestStats:
        return self._tally.snapshot()

    sent = property(lambda self: self.stats.sent)
    from_cache = property(lambda self: self.stats.from_cache)
    pages = property(lambda self: self.stats.pages)
    rows = property(lambda self: self.stats.rows)
    retries = property(lambda self: self.stats.retries)
    rate_limited = property(lambda self: self.stats.rate_limited)

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"Measurement(sent={s.sent}, from_cache={s.from_cache}, pages={s.pages}, "
            f"rows={s.rows}, retries={s.retries}, rate_limited={s.rate_limited})"
        )


#: The measurements open in this context, per Counters (outermost first).
_OPEN: contextvars.ContextVar[tuple[tuple[int, Measurement], ...]] = contextvars.ContextVar(
    "invtools_measurements", default=()
)


class Counters:
    """A client's running totals, and the measurements open on it."""

    def __init__(self) -> None:
        self._totals = _Tally()

    def add(self, **deltas: int) -> None:
        self._totals.add(deltas)
        me = id(self)
        for owner, measurement in _OPEN.get():
            if owner == me:
                measurement._tally.add(deltas)

    def snapshot(self) -> RequestStats:
        return self._totals.snapshot()

    def saw_data_from(self, when: datetime) -> None:
        """A response fetched (or, from the cache, stored) at ``when`` was used: the open
        measurements' ``data_as_of`` is the oldest such time."""
        me = id(self)
        for owner, measurement in _OPEN.get():
            if owner == me:
                measurement._saw(when)

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        m = Measurement()
        token = _OPEN.set((*_OPEN.get(), (id(self), m)))
        try:
            yield m
        finally:
            _OPEN.reset(token)
            m.finished_at = datetime.now(UTC)
