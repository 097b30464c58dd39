"""Pacing: a request waits on the client side until the token's budget has room. Every wait is
bounded, said when it is long, and stoppable.

The real service's budget is not pinned down (5 requests a second per endpoint, documented; 300
a minute per token, reported). What a :class:`Budget` believes, per bucket -- one per
endpoint, or one for all endpoints (``scope="token"``):

- **The configured rate is the pace of a server that says nothing**: one request every
  ``(1 + margin) / rate`` seconds, evenly spaced (bursts bunch up when arrivals jitter). Each
  429 slows it (x0.9), each other answer brings it back a little (+0.3 %, up to the rate).
- **A 429 holds the bucket** until the reset the caller read from it, so that the other
  threads do not meet a 429 of their own.
- **A statement is evidence, not a schedule.** An answer saying ``X-Ratelimit-Remaining`` and
  ``X-Ratelimit-Reset`` is believed until the next answer of the bucket, or its reset: its room
  (less the requests sent since) goes at once, faster than the pace when a minute's budget
  has room; with none left, requests wait for its reset. A reset in whole seconds (rounded up,
  as coarse servers send it) may come a second sooner; ``Remaining`` above ``Limit`` is not
  believed; a reset beyond ``max_wait`` is not kept (nor shared): the next request raises
  :class:`~invtools.errors.RateLimitError` naming when the budget comes back.

Times are those of the request's *sending*, on the wall clock, so that other processes (through
``budgets.sqlite`` beside the cache, :mod:`invtools.http.budgetstore`) read them too; a time
further ahead than ``max_wait`` is another clock's and is forgotten.

>>> Budget(5).admit("/v1/items")                  # nothing sent yet: it goes at once
Admission(seq=1, at=..., waited=0.0)
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from invtools._clock import SYSTEM_CLOCK, current_cancel
from invtools._types import route_of
from invtools.errors import CacheError, Cancelled, RateLimitError
from invtools.http.budgetstore import BudgetView, FileStore, MemoryStore, State, describe
from invtools.http.retries import MAX_RATE_LIMIT_WAIT, comes_back, wait_seconds

__all__ = [
    "RATE_LIMIT_SCOPES",
    "PACING_MARGIN",
    "SAY_AFTER",
    "Admission",
    "Budget",
    "BudgetView",
    "describe",
    "bucket_of",
    "stated_of",
    "shared_budget",
    "PacingMixin",
]

#: "endpoint": one budget per endpoint (the service's documented rule); "token": one budget
#: shared by every endpoint (what one production client reports).
RATE_LIMIT_SCOPES = ("endpoint", "token")
#: How much longer (a fraction) than the server's spacing a request counts in the client's.
PACING_MARGIN = 0.02
#: A wait longer than this (seconds) says so on stderr.
SAY_AFTER = 5.0
#: The pace after a 429 (times the current one), the least it goes down to (of the configured
#: rate), and how much each answer that is not a 429 brings it back up.
SLOWER, SLOWEST, FASTER = 0.9, 0.3, 0.003


@dataclass(frozen=True)
class Admission:
    """A request let through: its bucket's send number ``seq``, when (``at``, wall clock),
    after waiting ``waited`` seconds."""

    seq: int
    at: float
    waited: float = 0.0


def bucket_of(url: str, scope: str) -> str:
    """The bucket a request to ``url`` spends from.

    >>> bucket_of("http://h/v1/location-txs/7?revision=2", "endpoint")
    '/v1/location-txs/{id}'
    >>> bucket_of("http://h/v1/items", "token")
    'all-endpoints'
    """
    return "all-endpoints" if scope == "token" else route_of(urlsplit(url).path)


def stated_of(headers: Mapping[str, str], *, now: float) -> tuple[int, float, int | None] | None:
    """``(remaining, seconds until the room may come back, limit)`` when ``headers`` state a
    budget, else None. ``Reset`` in seconds, an epoch time or an HTTP date (``now``: the wall
    clock); in whole seconds it may come a second sooner.

    >>> stated_of({"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "0.25"}, now=0.0)
    (0, 0.25, None)
    >>> stated_of({"X-Ratelimit-Remaining": "9", "X-Ratelimit-Reset": "1", "X-Ratelimit-Limit":
    ...            "300"}, now=0.0)
    (9, 0.0, 300)
    >>> stated_of({"X-Ratelimit-Remaining": "301", "X-Ratelimit-Reset": "9",
    ...            "X-Ratelimit-Limit": "300"}, now=0.0) is None     # more than the limit
    True
    """
    raw = str(headers.get("X-Ratelimit-Reset", ""))
    reset = wait_seconds(raw, now=now)
    try:
        remaining = int(headers["X-Ratelimit-Remaining"])
        limit = int(headers["X-Ratelimit-Limit"]) if "X-Ratelimit-Limit" in headers else None
    except (KeyError, TypeError, ValueError):
        return None
    if reset is None or reset < 0 or remaining < 0 or (limit is not None and remaining > limit):
        return None
    if "." not in raw:  # whole seconds, rounded up: the room may come back a second sooner
        reset = max(0.0, reset - 1)
    return remaining, reset, limit


def _wait(state: State, now: float, interval: float) -> tuple[float, str]:
    """Seconds before a request of this bucket may go (0: now), and why."""
    if state.held > now:
        return state.held - now, "held after a 429"
    if state.stated is not None and now < state.stated[2]:
        if state.stated[0] - (state.seq - state.stated[1]) > 0:
            return 0.0, "stated room"
        return state.stated[2] - now, "the server stated no room left"
    return max(0.0, state.last + interval / state.factor - now), "the configured pace"


class Budget:
    """``per_second`` requests a second per bucket for a server that says nothing, else what
    it states (see the module docstring); waited for on ``clock``. ``path``: a file sharing
    the budget with every process on the machine, its lock waited for ``timeout`` seconds at
    most; a file that cannot be used warns and leaves the budget to this process."""

    def __init__(
        self,
        per_second: float,
        *,
        clock: Any = SYSTEM_CLOCK,
        margin: float = PACING_MARGIN,
        path: Path | None = None,
        owner: str = "",
        timeout: float = 5.0,
    ) -> None:
        self.per_second = float(per_second)
        self.clock = clock
        self.interval = (1 + margin) / self.per_second
        self._store: MemoryStore | FileStore = MemoryStore()
        self._far: dict[str, float] = {}  # bucket -> a stated reset beyond max_wait
        self._said: dict[str, float] = {}  # bucket -> the end of the last wait said
        self._lock = threading.Lock()
        if path is not None:
            try:
                self._store = FileStore(path, owner, timeout)
            except CacheError as exc:
                self._unshared(exc)

    def __repr__(self) -> str:
        return f"Budget({self.per_second:g}/s{', shared by file' if self.shared else ''})"

    @property
    def shared(self) -> bool:
        """Whether other processes share it (through its file)."""
        return isinstance(self._store, FileStore)

    def _unshared(self, exc: CacheError) -> None:
        self._store = MemoryStore()
        warnings.warn(f"{exc} Pacing in this process only.", RuntimeWarning, stacklevel=5)

    def _with(self, bucket: str, now: float, horizon: float, fn: Any) -> Any:
        """``fn(state)`` on ``bucket``'s state, its times bounded; the file failing: in memory."""
        store = self._store
        try:
            with store.open(bucket) as state:
                state.bound(now, horizon)
                return fn(state)
        except CacheError as exc:
            with self._lock:
                if self._store is store:  # the first thread to meet it says so
                    self._unshared(exc)
            return self._with(bucket, now, horizon, fn)

    def admit(
        self, bucket: str, cancel: Any = None, *, max_wait: float = MAX_RATE_LIMIT_WAIT
    ) -> Admission | None:
        """Wait until a request in ``bucket`` may go and count it as sent; None when
        ``cancel`` was set while it waited (nothing may be sent then). Raises
        :class:`RateLimitError` when the latest answer stated a reset beyond ``max_wait``."""
        waited = 0.0
        while True:
            now = self.clock.time()
            far = self._far.pop(bucket, None)
            if far is not None and far > now:
                raise RateLimitError(
                    f"{bucket}: the server stated that no request may go until "
                    f"{comes_back(far - now, now)}: longer than max_wait={max_wait:g} s. Nothing "
                    "was sent. Try again then, or raise max_wait= to wait for it."
                )

            def take(state: State, now: float = now) -> tuple[float, str]:
                wait, why = _wait(state, now, self.interval)
                if wait <= 0:
                    state.seq, state.last = state.seq + 1, now
                    return -state.seq, why
                return wait, why

            wait, why = self._with(bucket, now, max_wait, take)
            if wait <= 0:
                return Admission(int(-wait), now, waited)
            wait = min(wait, max_wait)
            if wait > SAY_AFTER and abs(self._said.get(bucket, 0.0) - (now + wait)) > 1.0:
                self._said[bucket] = now + wait
                print(
                    f"invtools: waiting {wait:.0f} s for {bucket} ({why}); Ctrl-C stops it",
                    file=sys.stderr,
                    flush=True,
                )
            if self.clock.wait(cancel, wait):
                return None
            waited += wait

    def acquire(self, bucket: str, cancel: Any = None) -> float:
        """:meth:`admit`, returning the seconds waited."""
        admitted = self.admit(bucket, cancel)
        return 0.0 if admitted is None else admitted.waited

    def observe(
        self,
        bucket: str,
        sent: Admission,
        *,
        status: int,
        headers: Mapping[str, str],
        hold: float | None = None,
        max_wait: float = MAX_RATE_LIMIT_WAIT,
    ) -> None:
        """What the answer to the request ``sent`` says: a statement of the budget (replacing
        an older answer's), and for a 429 (whose reset the caller read: ``hold`` seconds) a
        slower pace and a hold from when it was sent."""
        now = self.clock.time()
        said = stated_of(headers, now=now)

        def learn(state: State) -> None:
            if status == 429:
                state.refused += 1
                state.factor = max(SLOWEST, state.factor * SLOWER)
                if hold is not None:
                    state.held = max(state.held, sent.at + hold)
            else:
                state.factor = min(1.0, state.factor + FASTER)
            if state.stated is not None and sent.seq < state.stated[1]:
                return  # an older answer than the statement's
            state.stated = None
            if said is not None and said[1] <= max_wait:
                state.stated = [said[0], sent.seq, sent.at + said[1], said[2]]
            elif said is not None and said[0] == 0 and status != 429:
                self._far[bucket] = sent.at + said[1]  # this process's, once

        self._with(bucket, now, max_wait, learn)

    def view(self, scope: str) -> BudgetView:
        """What it believes now, as a :class:`BudgetView` (``client.budget``)."""
        return BudgetView(self.per_second, scope, self.shared, self.summary())

    def _now(self, bucket: str) -> tuple[State, float]:
        now = self.clock.time()
        state = self._with(bucket, now, MAX_RATE_LIMIT_WAIT, lambda s: State.loads(s.dumps()))
        if state.stated is not None and now >= state.stated[2]:
            state.stated = None
        return state, now

    def expected_seconds(self, bucket: str, n: int, *, in_flight: float) -> float:
        """About how long ``n`` requests of ``bucket`` take when at most ``in_flight`` requests
        a second can be answered (requests in flight / latency): a stated room at that speed,
        the rest at the pace of a silent server (as it is now, 429s considered)."""
        state, _now = self._now(bucket)
        room = 0 if state.stated is None else max(0, state.stated[0] - state.seq + state.stated[1])
        fast = min(n, room)
        return fast / in_flight + (n - fast) / min(state.factor / self.interval, in_flight)

    def summary(self) -> dict[str, Any]:
        """What it believes, per bucket, as plain values: the pace of a silent server
        (requests a second), a statement's room and seconds to its reset, seconds still held,
        429s seen."""
        out: dict[str, Any] = {}
        for bucket in self._store.buckets():
            s, now = self._now(bucket)
            st = s.stated
            out[bucket] = {
                "pace": round(s.factor / self.interval, 3),
                "stated_room": None if st is None else max(0, st[0] - s.seq + st[1]),
                "stated_limit": None if st is None else st[3],
                "reset_in": None if st is None else round(st[2] - now, 3),
                "held_for": round(max(0.0, s.held - now), 3),
                "rate_limited": s.refused,
            }
        return out


_shared: weakref.WeakValueDictionary[tuple, Budget] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared_budget(
    owner: str,
    per_second: float,
    *,
    clock: Any = SYSTEM_CLOCK,
    path: Path | None = None,
    timeout: float = 5.0,
) -> Budget:
    """The process's one :class:`Budget` for ``owner`` (a salted hash naming the token and
    service, never the token itself) at this rate; made on first use, gone when no client holds
    it. ``path``: the file that shares it with the other processes of the machine, its lock
    waited for ``timeout`` seconds at most (the first client's)."""
    key = (owner, float(per_second), id(clock), None if path is None else str(path))
    with _shared_lock:
        budget = _shared.get(key)
        if budget is None:
            budget = Budget(per_second, clock=clock, path=path, owner=owner, timeout=timeout)
            _shared[key] = budget
        return budget


if TYPE_CHECKING:  # what PacingMixin is mixed into; at run time it stands alone
    _SessionBase = requests.Session
else:
    _SessionBase = object


class PacingMixin(_SessionBase):
    """Session mixin: ``send()`` first waits on ``self.budget`` for the request's bucket (at
    most ``self.max_wait`` seconds), then tells the budget what the answer said (a 429's hold
    is the caller's to give, see :mod:`invtools.api.requester`).

    It sits *below* requests-cache's mixin, so a cache hit never reaches it and costs no
    budget. Inside a :func:`~invtools._clock.cancel_scope` whose event is set (a stopped
    batch of worker threads) nothing is sent: the wait ends at once and
    :class:`~invtools.errors.Cancelled` is raised."""

    budget: Budget | None = None
    rate_limit_scope: str = "endpoint"
    max_wait: float = MAX_RATE_LIMIT_WAIT

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        cancel = current_cancel()
        budget, url = self.budget, str(request.url)
        bucket = bucket_of(url, self.rate_limit_scope)
        admitted = None
        if budget is not None:
            admitted = budget.admit(bucket, cancel, max_wait=self.max_wait)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"not sent, the batch was stopped: GET {urlsplit(url).path}")
        response = super().send(request, **kwargs)
        if admitted is not None and budget is not None:
            # the requester holds a 429's reset from the admission this marks
            setattr(response, "invtools_sent", (bucket, admitted))  # noqa: B010 - not a Response field
            if response.status_code != 429:
                budget.observe(
                    bucket,
                    admitted,
                    status=response.status_code,
                    headers=response.headers,
                    max_wait=self.max_wait,
                )
        return response
