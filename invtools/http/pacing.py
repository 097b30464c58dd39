"""Pacing: a request waits on the client side until the token's budget has room, following what
the service says of its budget and what it does, not only our model of it.

The real service's budget is not pinned down (documented as 5 requests a second per endpoint,
reported as 300 a minute per token; its ~0.8 s of latency may come before or after its
counter). What a :class:`Budget` believes, per bucket -- one per endpoint, or one for all
endpoints (``scope="token"``):

- **A stated budget is the truth.** A response that says ``X-Ratelimit-Remaining`` and
  ``X-Ratelimit-Reset`` states the room left and when it comes back. While a statement holds,
  its room (the remaining count less every request sent since the stated one) is spent as fast
  as the requests in flight allow -- faster than the configured pace when a minute's budget
  has room -- and never more: with no room left, requests wait for the stated reset. A long
  window the statements reveal (their limit and reset, and our own sends, give its length: a
  minute's 300) is then kept by counting our own sends in it, so that a statement grown old
  is never taken for a pace.
- **The configured rate is the pace of a server that says nothing**: ``rate_limit`` requests a
  second, evenly spaced (one every ``(1 + margin) / rate`` seconds: even spacing, unlike
  bursts, keeps arrivals apart when the network jitters). Each 429 slows that pace (x0.9) and
  every answer that is not a 429 speeds it back up a little (+0.3 % of the configured rate, up
  to it): additive increase, multiplicative decrease, which settles where about 4 % of the
  requests meet a 429 when arrivals jitter by +-0.2 s, instead of a fifth of them.
- **A 429 holds the bucket** until the reset it gives (``X-Ratelimit-Reset``, else
  ``Retry-After``, else a backoff), so the other threads do not meet a 429 of their own.

Every time is taken in the frame of when a request was *sent*: a statement or a reset answers
the request sent at ``t``, whether the server counted it on arrival or after the network's
latency, so "the room comes back ``reset`` seconds after ``t``" holds in both cases -- a
request sent then reaches the counter after the same delay the stated one did.

One budget per token for every client in this process (:func:`shared_budget`) and, with a
``path`` (the client's cache folder), for every process on the machine: the state lives in a
small SQLite file, its rows named by a salted hash of the token (never the token), whose write lock
(``BEGIN IMMEDIATE``) makes each admission atomic across processes. Waiting is done here, on
an injectable clock, so tests need not sleep.

>>> from invtools._clock import SYSTEM_CLOCK
>>> b = Budget(5, clock=SYSTEM_CLOCK, margin=0.0)
>>> [round(b.try_send("/v1/items", now=t)[0], 2) for t in (0.0, 0.1, 0.2, 0.3)]  # 0: sent
[0.0, 0.1, 0.0, 0.1]
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
import weakref
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from invtools._clock import SYSTEM_CLOCK, current_cancel
from invtools._types import route_of
from invtools.errors import Cancelled
from invtools.http.budgetstore import (
    Admission,
    BucketState,
    BudgetView,
    FileStore,
    MemoryStore,
    Sends,
    Stated,
    describe,
    state_from_json,
    stated_of,
)

__all__ = [
    "RATE_LIMIT_SCOPES",
    "PACING_MARGIN",
    "Budget",
    "BudgetView",
    "BucketState",
    "Stated",
    "Admission",
    "shared_budget",
    "bucket_of",
    "stated_of",
    "sent_since",
    "wait_for",
    "learn_window",
    "describe",
    "PacingMixin",
]

logger = logging.getLogger("invtools")

#: "endpoint": one budget per endpoint (the service's documented rule); "token": one budget
#: shared by every endpoint (what one production client reports).
RATE_LIMIT_SCOPES = ("endpoint", "token")
#: How much longer (a fraction) than the server's spacing a request counts in the client's,
#: so that a request which reached the server late has left the server's window too.
PACING_MARGIN = 0.02
#: The pace after a 429 (times the current one), the least it goes down to (of the configured
#: rate), and how much each answer that is not a 429 brings it back up.
SLOWER, SLOWEST, FASTER = 0.9, 0.3, 0.003
#: A stated window at least this long (seconds) is paced by its own count, not by a spacing;
#: and the slack added to it for the network's jitter.
LONG_WINDOW, WINDOW_SLACK = 2.0, 0.5


def bucket_of(url: str, scope: str) -> str:
    """The bucket a request to ``url`` spends from.

    >>> bucket_of("http://h/v1/location-txs/7?revision=2", "endpoint")
    '/v1/location-txs/{id}'
    >>> bucket_of("http://h/v1/items", "token")
    'all-endpoints'
    """
    return "all-endpoints" if scope == "token" else route_of(urlsplit(url).path)


def wait_for(state: BucketState, sends: Sends, now: float, interval: float) -> float:
    """Seconds to wait before a request of this bucket may go (0: now). ``sends``: the
    bucket's sends; ``interval``: the configured spacing.

    - held after a 429: until then;
    - a stated room (the latest statement, less what was sent since): spent at once; none
      left: until the stated reset;
    - a long window the server's statements revealed (a minute's 300): as many as it allows
      in any such window of our own sends, at once -- a statement grown old is not a pace;
    - else the configured spacing, slowed after 429s.

    >>> s = BucketState(stated=Stated(remaining=2, reset_at=60.0, seq=1))
    >>> wait_for(s, [(1, 1.0), (2, 1.5)], now=2.0, interval=0.2)        # 1 left of 2
    0.0
    >>> wait_for(s, [(1, 1.0), (2, 1.5), (3, 1.9)], now=2.0, interval=0.2)   # none: reset
    58.0
    >>> s = BucketState(window=60.0, window_limit=2)                    # 2 a minute, learned
    >>> round(wait_for(s, [(1, 1.0), (2, 1.5)], now=2.0, interval=0.2), 1)   # 60 s, and slack
    60.7
    """
    if state.held_until > now:
        return state.held_until - now
    stated = state.stated
    if stated is not None and now < stated.reset_at:
        room = stated.remaining - sent_since(sends, stated.seq)
        if room <= 0:
            return stated.reset_at - now
        if not _long(state):
            return 0.0
    window, limit = state.window, state.window_limit
    if window is not None and limit and window >= LONG_WINDOW:  # _long(state), narrowed
        span = window * (1 + PACING_MARGIN) + WINDOW_SLACK
        recent = [at for _n, at in sends if at > now - span]
        if len(recent) < limit:
            return 0.0
        return max(0.0, recent[-limit] + span - now)
    last = sends[-1][1] if sends else -math.inf
    return max(0.0, last + interval / state.factor - now)


def _long(state: BucketState) -> bool:
    return bool(state.window and state.window_limit and state.window >= LONG_WINDOW)


def learn_window(
    state: BucketState,
    sends: Sends,
    sent: Admission,
    remaining: int,
    reset: float,
    limit: int | None,
) -> None:
    """What a statement of a success tells of the server's window: it holds ``limit -
    remaining`` requests, the oldest of them ours, sent ``limit - remaining - 1`` sends before
    this one; it leaves in ``reset`` seconds, so the window is ``reset`` plus how long ago that
    one went. (Another client of the token elsewhere would make it look longer: it is kept
    only while it says so again.)

    >>> st = BucketState()
    >>> learn_window(st, [(1, 0.0), (2, 2.0), (3, 5.0)], Admission(3, 5.0), 297, 55.0, 300)
    >>> st.window, st.window_limit
    (60.0, 300)
    """
    if not limit or remaining >= limit:
        return
    oldest = sent.seq - (limit - remaining - 1)
    at = next((a for n, a in sends if n == oldest), None)
    if at is not None:
        state.window, state.window_limit = reset + (sent.at - at), limit


def sent_since(sends: Sends, seq: int) -> int:
    """How many of ``sends`` went after send number ``seq``.

    >>> sent_since([(1, 1.0), (2, 2.0), (3, 2.0)], 1)
    2
    """
    return sum(1 for n, _at in sends if n > seq)


class Budget:
    """``per_second`` requests a second per bucket for a server that says nothing, else what
    it states (see the module docstring); waited for on ``clock``. ``path``: a file that
    shares the budget with every process on the machine (None: this process only)."""

    def __init__(
        self,
        per_second: float,
        *,
        clock: Any = SYSTEM_CLOCK,
        margin: float = PACING_MARGIN,
        path: Path | None = None,
        owner: str = "",
    ) -> None:
        self.per_second = float(per_second)
        self.clock = clock
        self.interval = (1 + margin) / self.per_second
        self._store: MemoryStore | FileStore = MemoryStore()
        if path is not None:
            try:
                self._store = FileStore(path, owner)
            except (OSError, sqlite3.Error) as exc:  # a read-only folder, say
                logger.info("budget not shared with other processes (%s): %s", path, exc)

    def __repr__(self) -> str:
        return f"Budget({self.per_second:g}/s{', shared by file' if self.shared else ''})"

    @property
    def shared(self) -> bool:
        """Whether other processes share it (through its file)."""
        return isinstance(self._store, FileStore)

    def try_send(self, bucket: str, *, now: float) -> tuple[float, int | None]:
        """Admit a request of ``bucket`` at ``now``: ``(0.0, its send number)``, and it counts
        as sent; or ``(seconds to wait first, None)``.

        >>> Budget(5).try_send("b", now=0.0)
        (0.0, 1)
        """
        with self._store.open(bucket, now) as (state, sends):
            wait = wait_for(state, sends, now, self.interval)
            if wait > 0:
                return wait, None
            seq = (sends[-1][0] if sends else state.last_seq) + 1
            state.last_seq = seq
            sends.append((seq, now))
            return 0.0, seq

    def admit(self, bucket: str, cancel: Any = None) -> Admission | None:
        """Wait until a request in ``bucket`` may go and count it as sent; None when
        ``cancel`` was set while it waited (nothing may be sent then)."""
        waited = 0.0
        while True:
            now = self.clock.monotonic()
            wait, seq = self.try_send(bucket, now=now)
            if seq is not None:
                return Admission(seq, now, waited)
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
    ) -> None:
        """What the answer to the request ``sent`` says: a statement of the budget, and for a
        429 (whose reset the caller read: ``hold`` seconds) a slower pace and a hold from when
        it was sent; any other answer speeds the pace back up a little."""
        said = stated_of(headers)
        with self._store.open(bucket, sent.at) as (state, sends):
            if status == 429:
                state.rate_limited += 1
                state.factor = max(SLOWEST, state.factor * SLOWER)
                if hold is not None:
                    state.held_until = max(state.held_until, sent.at + hold)
            else:
                state.factor = min(1.0, state.factor + FASTER)
            if said is not None and (state.stated is None or sent.seq > state.stated.seq):
                remaining, reset, limit = said
                state.stated = Stated(remaining, sent.at + reset, sent.seq, limit)
                if status != 429:
                    learn_window(state, sends, sent, remaining, reset, limit)

    def state(self, bucket: str) -> BucketState:
        """A copy of what it believes of ``bucket`` now."""
        with self._store.open(bucket, self.clock.monotonic()) as (state, _sends):
            return state_from_json(json.dumps(asdict(state)))

    def view(self, scope: str) -> BudgetView:
        """What it believes now, as a :class:`BudgetView` (``client.budget``)."""
        return BudgetView(self.per_second, scope, self.shared, self.summary())

    def expected_seconds(self, bucket: str, n: int, *, in_flight: float) -> float:
        """About how long ``n`` requests of ``bucket`` take when at most ``in_flight`` requests
        a second can be answered (requests in flight / latency): a stated room at that speed,
        the rest at the pace of a silent server (as it is now, 429s considered)."""
        now = self.clock.monotonic()
        with self._store.open(bucket, now) as (state, sends):
            stated = state.stated if state.stated and now < state.stated.reset_at else None
            room = 0 if stated is None else max(0, stated.remaining - sent_since(sends, stated.seq))
            pace = state.factor / self.interval
        fast = min(n, room)
        return fast / in_flight + (n - fast) / min(pace, in_flight)

    def summary(self) -> dict[str, Any]:
        """What it believes, per bucket, as plain values: the pace of a silent server
        (requests a second), a statement's room and seconds to its reset, seconds still held,
        429s seen."""
        now = self.clock.monotonic()
        out: dict[str, Any] = {}
        for bucket in self._store.buckets():
            with self._store.open(bucket, now) as (s, sends):
                stated = s.stated if s.stated is not None and now < s.stated.reset_at else None
                out[bucket] = {
                    "pace": round(s.factor / self.interval, 3),
                    "stated_room": None
                    if stated is None
                    else max(0, stated.remaining - sent_since(sends, stated.seq)),
                    "stated_limit": None if stated is None else stated.limit,
                    "reset_in": None if stated is None else round(stated.reset_at - now, 3),
                    "held_for": round(max(0.0, s.held_until - now), 3),
                    "rate_limited": s.rate_limited,
                }
        return out


_shared: weakref.WeakValueDictionary[tuple, Budget] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared_budget(
    owner: str, per_second: float, *, clock: Any = SYSTEM_CLOCK, path: Path | None = None
) -> Budget:
    """The process's one :class:`Budget` for ``owner`` (a salted hash naming the token and
    service, never the token itself) at this rate; made on first use, gone when no client holds
    it. ``path``: the file that shares it with the other processes of the machine."""
    key = (owner, float(per_second), id(clock), None if path is None else str(path))
    with _shared_lock:
        budget = _shared.get(key)
        if budget is None:
            budget = _shared[key] = Budget(per_second, clock=clock, path=path, owner=owner)
        return budget


if TYPE_CHECKING:  # what PacingMixin is mixed into; at run time it stands alone
    _SessionBase = requests.Session
else:
    _SessionBase = object


class PacingMixin(_SessionBase):
    """Session mixin: ``send()`` first waits on ``self.budget`` for the request's bucket, then
    tells the budget what the answer said (:meth:`Budget.observe`; a 429's hold is the
    caller's to give, see :mod:`invtools.api.requester`).

    It sits *below* requests-cache's mixin, so a cache hit never reaches it and costs no
    budget. Inside a :func:`~invtools._clock.cancel_scope` whose event is set (a stopped
    batch of worker threads) nothing is sent: the wait ends at once and
    :class:`~invtools.errors.Cancelled` is raised."""

    budget: Budget | None = None
    rate_limit_scope: str = "endpoint"

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        cancel = current_cancel()
        budget = self.budget
        url = str(request.url)
        bucket = bucket_of(url, self.rate_limit_scope)
        admitted = None if budget is None else budget.admit(bucket, cancel)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"not sent, the batch was stopped: GET {urlsplit(url).path}")
        response = super().send(request, **kwargs)
        if admitted is not None:
            # the requester holds a 429's reset from the admission this marks
            setattr(response, "invtools_sent", (bucket, admitted))  # noqa: B010 - not a Response field
            if response.status_code != 429 and budget is not None:
                budget.observe(
                    bucket, admitted, status=response.status_code, headers=response.headers
                )
        return response
