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
from dataclasses import dataclass, field, fields
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


@dataclass(eq=False)
class Measurement:
    """Request counts of one ``with client.measure() as m:`` block (those of
    :class:`RequestStats`) -- live inside it, fixed after it -- plus when it started and
    finished (UTC) and ``data_as_of``: when the oldest response used was fetched from the server
    (a cached one: when it was stored), that is how old the data is; None until one is used."""

    sent: int = 0
    from_cache: int = 0
    pages: int = 0
    rows: int = 0
    retries: int = 0
    rate_limited: int = 0
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC), repr=False)
    finished_at: datetime | None = field(default=None, repr=False)
    data_as_of: datetime | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def stats(self) -> RequestStats:
        """The counts so far, as one snapshot."""
        with self._lock:
            return RequestStats(**{name: getattr(self, name) for name in _NAMES})

    def _add(self, deltas: dict[str, int]) -> None:
        with self._lock:
            for name, n in deltas.items():
                setattr(self, name, getattr(self, name) + n)

    def _saw(self, when: datetime) -> None:
        with self._lock:
            if self.data_as_of is None or when < self.data_as_of:
                self.data_as_of = when


#: The measurements open in this context, per Counters (outermost first).
_OPEN: contextvars.ContextVar[tuple[tuple[int, Measurement], ...]] = contextvars.ContextVar(
    "invtools_measurements", default=()
)


class Counters:
    """A client's running totals, and the measurements open on it."""

    def __init__(self) -> None:
        self._totals = Measurement()

    def _open(self) -> list[Measurement]:
        return [measurement for owner, measurement in _OPEN.get() if owner == id(self)]

    def add(self, **deltas: int) -> None:
        for measurement in [self._totals, *self._open()]:
            measurement._add(deltas)

    def snapshot(self) -> RequestStats:
        return self._totals.stats

    def saw_data_from(self, when: datetime) -> None:
        """A response fetched (or, from the cache, stored) at ``when`` was used: the open
        measurements' ``data_as_of`` is the oldest such time."""
        for measurement in self._open():
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
