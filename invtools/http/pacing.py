"""Pacing: a request waits on the client side until its token's budget has room; every wait is
bounded, said when long (stderr), and stoppable. Per bucket (an endpoint, or all: ``"token"``):

- **The configured rate paces a silent server**: a request every ``(1 + margin) / rate`` s. A
  429 slows it (x0.9), other answers speed it back (+0.3 %): with arrivals jittered by +-0.2 s,
  4 % of requests meet a 429 instead of 15 % (``benchmarks/bench_budgets.py``).
- **A 429 holds its bucket** from when it was sent until the reset the caller read.
- **A statement is evidence, not a schedule**: ``X-Ratelimit-Remaining``/``-Reset`` hold until
  the bucket's next answer or the reset; the room (less what went since) goes at once, none
  left waits for the reset. A reset in whole seconds may come a second sooner; ``Remaining``
  above ``Limit`` is not believed; a reset beyond ``max_wait`` is not kept: the next request
  raises :class:`~invtools.errors.RateLimitError` naming when the budget comes back. A reset
  no rate limit means (more than a year ahead, ``inf``, in the past) states nothing.
- **A service may state that it has no limit** (``X-Ratelimit-Limit: unlimited``, as the
  stand-in at ``rate_limit=0`` does): then nothing waits and no cost is announced, for every
  bucket, until an answer states a limit (a number) or a 429 comes. An answer saying nothing
  of it changes nothing; a service that never says it is paced as configured.

Times are the wall-clock times requests were sent, shared by the processes of a cache folder in
``budgets.sqlite`` (a row per bucket, named by a salted hash of the token); a time further ahead
than ``max_wait`` is another clock's (before a reboot) and is forgotten. A file SQLite cannot
use (after ``timeout`` s) warns, naming it, and the budget goes on in this process.

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
from invtools.http.budgetstore import BudgetView, State, Store, describe
from invtools.http.retries import FURTHEST_RESET, MAX_RATE_LIMIT_WAIT, comes_back, wait_seconds

__all__ = ["RATE_LIMIT_SCOPES", "PACING_MARGIN", "SEEN_LEAST", "SAY_AFTER", "Admission", "State"]
__all__ += ["Budget", "BudgetView", "describe", "bucket_of", "stated_of", "shared_budget"]
__all__ += ["PacingMixin", "states_no_limit"]

#: "endpoint": one budget per endpoint (the service's documented rule); "token": one budget
#: shared by every endpoint (what one production client reports).
RATE_LIMIT_SCOPES = ("endpoint", "token")
#: How much longer (a fraction) than the server's spacing a request counts in the client's.
PACING_MARGIN = 0.02
#: The fewest answers of a batch that tell the pace the next estimate expects.
SEEN_LEAST = 20
#: A wait longer than this (seconds) says so on stderr.
SAY_AFTER = 5.0
#: The pace after a 429 (times the current one), its floor, and each other answer's step back.
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

    >>> bucket_of("http://h/v1/location-txs/7?revision=2", "endpoint"), bucket_of("/v1/x", "token")
    ('/v1/location-txs/{id}', 'all-endpoints')
    """
    return "all-endpoints" if scope == "token" else route_of(urlsplit(url).path)


def stated_of(headers: Mapping[str, str], *, now: float) -> tuple[int, float, int | None] | None:
    """``(remaining, seconds until the room may come back, limit)`` if ``headers`` state a
    budget, else None; ``Reset`` in seconds, an epoch time or an HTTP date (``now``: the wall
    clock). In whole seconds, rounded up, it may come a second sooner. A reset in the past or
    beyond :data:`~invtools.http.retries.FURTHEST_RESET` (``1e308``, ``inf``, the year 9999)
    is a broken header, not a budget: None, as if the answer stated nothing.

    >>> stated_of({"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "0.25"}, now=0.0)
    (0, 0.25, None)
    >>> stated_of({"X-Ratelimit-Remaining": "9", "X-Ratelimit-Reset": "3",
    ...            "X-Ratelimit-Limit": "300"}, now=0.0)
    (9, 2.0, 300)
    >>> stated_of({"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "1e308"}, now=0.0) is None
    True
    """
    raw = str(headers.get("X-Ratelimit-Reset", ""))
    reset = wait_seconds(raw, now=now)
    try:
        remaining = int(headers["X-Ratelimit-Remaining"])
        limit = int(headers["X-Ratelimit-Limit"]) if "X-Ratelimit-Limit" in headers else None
    except (KeyError, TypeError, ValueError):
        return None
    if reset is None or not 0 <= reset <= FURTHEST_RESET:
        return None
    if remaining < 0 or (limit is not None and remaining > limit):
        return None
    return remaining, reset if "." in raw else max(0.0, reset - 1), limit


def states_no_limit(headers: Mapping[str, str], status: int = 200) -> bool | None:
    """Whether ``headers`` (of an answer of ``status``) state that the service has no limit:
    True, ``X-Ratelimit-Limit: unlimited``; False, a limit (any other value, or a 429); None
    when they say nothing of it.

    >>> states_no_limit({"X-Ratelimit-Limit": "Unlimited"}), states_no_limit({})
    (True, None)
    >>> states_no_limit({"X-Ratelimit-Limit": "300"}), states_no_limit({}, status=429)
    (False, False)
    """
    if status == 429:
        return False
    if "X-Ratelimit-Limit" not in headers:
        return None
    return str(headers["X-Ratelimit-Limit"]).strip().lower() == "unlimited"


def _wait(s: State, now: float, interval: float) -> tuple[float, str]:
    """Seconds before a request of this bucket may go (0: now), and why."""
    if s.held > now:
        return s.held - now, "held after a 429"
    if s.stated is not None:
        if s.room() > 0:
            return 0.0, "stated room"
        return s.stated[2] - now, "the server stated no room left"
    return max(0.0, s.last + interval / s.factor - now), "the configured pace"


class Budget:
    """``per_second`` requests a second per bucket for a server that says nothing, else what
    it states (see the module docstring), waited for on ``clock``; ``path``: a file sharing it
    with the machine's processes, its lock waited for ``timeout`` s at most."""

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
        self.per_second, self.clock = float(per_second), clock
        self.interval = (1 + margin) / self.per_second
        self._far: dict[str, float] = {}  # bucket -> a stated reset beyond max_wait
        self._said: dict[str, float] = {}  # bucket -> the end of the last wait said
        #: Whether the latest answer that said it stated that the service has no limit.
        self.unlimited = False
        self._lock = threading.Lock()
        self._store = Store()
        try:
            self._store = Store(path, owner, timeout) if path is not None else self._store
        except CacheError as exc:
            warnings.warn(f"{exc} Pacing in this process only.", RuntimeWarning, stacklevel=4)

    def __repr__(self) -> str:
        return f"Budget({self.per_second:g}/s{', shared by file' if self.shared else ''})"

    @property
    def shared(self) -> bool:
        """Whether other processes share it (through its file)."""
        return self._store.path != ":memory:"

    def _with(self, bucket: str, now: float, horizon: float, fn: Any) -> Any:
        """``fn(state)`` on ``bucket``'s state, its times bounded; the file failing: in memory."""
        store = self._store
        try:
            with store.open(bucket) as state:
                # bounded by the clock read under the file's lock: a send another thread or
                # process made while this one waited for it is not taken for another clock's
                return fn(state.bound(max(now, self.clock.time()), horizon))
        except CacheError as exc:
            with self._lock:
                if self._store is store:  # the first thread to meet it says so
                    self._store = Store()
                    warnings.warn(f"{exc} Pacing in this process only.", RuntimeWarning, 5)
            return self._with(bucket, now, horizon, fn)

    def admit(
        self, bucket: str, cancel: Any = None, *, max_wait: float = MAX_RATE_LIMIT_WAIT
    ) -> Admission | None:
        """Wait until a request in ``bucket`` may go and count it as sent; None when ``cancel``
        was set meanwhile (nothing may be sent). Raises :class:`RateLimitError` when the latest
        answer stated a reset beyond ``max_wait``."""
        waited = 0.0
        while True:
            now = self.clock.time()
            far = self._far.pop(bucket, now)
            if far > now:
                raise RateLimitError(
                    f"{bucket}: the server stated that no request may go until "
                    f"{comes_back(far - now, now)}, longer than max_wait={max_wait:g} s; nothing "
                    "was sent. Try again then, or raise max_wait= to wait for it."
                )

            def take(s: State, now: float = now) -> tuple[float, str]:
                wait, why = (0.0, "") if self.unlimited else _wait(s, now, self.interval)
                if wait <= 0:
                    s.seq, s.last = s.seq + 1, now
                    return -s.seq, why
                return min(wait, max_wait), why

            wait, why = self._with(bucket, now, max_wait, take)
            if wait <= 0:
                return Admission(int(-wait), now, waited)
            if wait > SAY_AFTER and abs(self._said.get(bucket, 0.0) - now - wait) > 1.0:
                self._said[bucket] = now + wait
                say = f"invtools: waiting {wait:.0f} s for {bucket} ({why}); Ctrl-C stops it"
                print(say, file=sys.stderr, flush=True)
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
        """What the answer to the request ``sent`` says: a statement of the budget (replacing an
        older answer's), and for a 429 (whose reset the caller read: ``hold`` seconds) a slower
        pace and a hold from when it was sent."""
        now = self.clock.time()
        said = stated_of(headers, now=now)
        unlimited = states_no_limit(headers, status)
        if unlimited is not None:
            self.unlimited = unlimited

        def learn(s: State) -> None:
            s.refused += status == 429
            s.factor = (
                max(SLOWEST, s.factor * SLOWER) if status == 429 else min(1, s.factor + FASTER)
            )
            if status == 429 and hold is not None:
                s.held = max(s.held, sent.at + hold)
            if s.stated is not None and sent.seq < s.stated[1]:
                return  # an older answer than the statement's
            s.stated = None
            if said is not None and said[1] <= max_wait:
                s.stated = [said[0], sent.seq, sent.at + said[1], said[2]]
            elif said is not None and said[0] == 0 and status != 429:
                self._far[bucket] = sent.at + said[1]  # this process's, for the next request

        self._with(bucket, now, max_wait, learn)

    def expected_seconds(
        self, bucket: str, n: int, *, in_flight: float, latency: float = 0.0
    ) -> float:
        """About how long ``n`` requests of ``bucket`` take, when at most ``in_flight``
        requests a second can be answered (requests in flight / latency): the wait for the
        first answer, then the pace the last batch :meth:`saw` (evidence beats the guesses:
        ``latency``, then the pace of a silent server as it is now, 429s considered). A stated
        room goes at that pace (before any seen: at ``in_flight``); more than the room waits
        for the stated reset first.

        >>> Budget(5, margin=0.0).expected_seconds("b", 100, in_flight=10.0, latency=0.8)
        20.8
        """
        now = self.clock.time()
        s = self._with(bucket, now, MAX_RATE_LIMIT_WAIT, lambda s: s)
        if s.seen is not None:  # the last batch's first answer, then its pace between answers
            (pace, first), rest = s.seen, max(0, n - 1)
            speed = pace
        else:  # one answer's latency; a stated room at the speed of the requests in flight
            pace, first, rest = min(s.factor / self.interval, in_flight), latency, n
            speed = in_flight
        if s.stated is None:
            return first + rest / pace
        room = max(0, s.room())
        if n <= room:
            return first + rest / speed
        return first + max(room / speed, s.stated[2] - now) + (rest - room) / pace

    def saw(self, bucket: str, n: int, *, first: float, last: float) -> None:
        """A batch of ``n`` requests of ``bucket`` had its first answer ``first`` s after it
        began and its last ``last`` s after: what the next estimate expects, in every process
        of the cache folder. Fewer than :data:`SEEN_LEAST` answers, or no time between the
        first and the last, tell no pace."""
        if n >= SEEN_LEAST and last > first >= 0:
            seen = [(n - 1) / (last - first), first]

            def keep(s: State) -> None:
                s.seen = seen

            self._with(bucket, self.clock.time(), MAX_RATE_LIMIT_WAIT, keep)

    def summary(self) -> dict[str, Any]:
        """What it believes, per bucket, as plain values: the pace of a silent server
        (requests a second), a statement's room and seconds to its reset, seconds still held,
        429s seen, the answers a second the last batch of details saw (None: none yet)."""
        out: dict[str, Any] = {}
        for bucket in self._store.buckets():
            now = self.clock.time()
            s = self._with(bucket, now, MAX_RATE_LIMIT_WAIT, lambda s: s)
            st = s.stated
            out[bucket] = {
                "pace": round(s.factor / self.interval, 3),
                "stated_room": None if st is None else max(0, s.room()),
                "stated_limit": None if st is None else st[3],
                "reset_in": None if st is None else round(st[2] - now, 3),
                "held_for": round(max(0.0, s.held - now), 3),
                "rate_limited": s.refused,
                "seen": None if s.seen is None else round(s.seen[0], 3),
            }
        return out

    def view(self, scope: str) -> BudgetView:
        """What it believes now, as a :class:`BudgetView` (``client.budget``)."""
        return BudgetView(self.per_second, scope, self.shared, self.summary(), self.unlimited)


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
    service, never the token) at this rate, while a client holds it; ``path``: the file sharing
    it with the machine's processes, its lock waited ``timeout`` s at most (the first client's)."""
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
    """Session mixin below requests-cache's (a cache hit never reaches it, and costs no budget):
    ``send()`` waits on ``self.budget`` for the request's bucket (``self.max_wait`` s at most),
    then tells it what the answer said; a 429's hold is the caller's to give
    (:mod:`invtools.api.requester`). In a :func:`~invtools._clock.cancel_scope` whose event is
    set, nothing is sent: :class:`~invtools.errors.Cancelled` is raised."""

    budget: Budget | None = None
    rate_limit_scope: str = "endpoint"
    max_wait: float = MAX_RATE_LIMIT_WAIT

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        cancel, budget, url = current_cancel(), self.budget, str(request.url)
        bucket = bucket_of(url, self.rate_limit_scope)
        admitted = budget and budget.admit(bucket, cancel, max_wait=self.max_wait)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"not sent, the batch was stopped: GET {urlsplit(url).path}")
        response = super().send(request, **kwargs)
        if admitted and budget is not None:
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
