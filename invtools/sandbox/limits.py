"""The stand-in server's rate limiter, fault injector and skewed clock: small, pure, clock
passed in.

Rate limit: at most ``limit`` accepted requests per rolling ``window`` seconds (1 by default)
per key (the server uses ``(token, route template)``, or ``(token, "*")`` under the
``shared_rate_limit`` quirk). A rejected request does not consume budget.

>>> rl = RateLimiter()
>>> [rl.hit("k", limit=2, now=t)[0] for t in (0.0, 0.1, 0.2, 1.05)]
[True, True, False, True]
>>> rl.hit("k", limit=2, now=1.06)
(False, 0, 0.04)
>>> rl.hit("m", limit=300, now=0.0, window=60.0)        # a minute's budget of 300
(True, 299, 60.0)
"""

from __future__ import annotations

import math
import random
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime


class RateLimiter:
    """Sliding-window log per key; thread-safe."""

    def __init__(self) -> None:
        self._hits: dict[object, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(
        self, key: object, *, limit: int, now: float, window: float = 1.0
    ) -> tuple[bool, int, float]:
        """Try to spend one request of ``key``'s budget at time ``now``.

        Returns ``(allowed, remaining, reset)``: ``remaining`` requests left in the window
        after this one, ``reset`` seconds until the oldest counted request leaves the window
        (rounded *up* to the millisecond, so waiting exactly that long is always enough).
        """
        with self._lock:
            q = self._hits.setdefault(key, deque())
            while q and q[0] <= now - window:
                q.popleft()
            allowed = len(q) < limit
            if allowed:
                q.append(now)
            reset = (q[0] + window - now) if q else 0.0
            # round(…, 6) first: float noise (0.0400000001) must not round up a whole ms
            return allowed, max(0, limit - len(q)), math.ceil(round(reset * 1000, 6)) / 1000

    def clear(self) -> None:
        with self._lock:
            self._hits.clear()


class Latency:
    """How long the stand-in takes to answer: ``mean`` seconds, each answer drawn uniformly
    within ``+-jitter`` of it (a fraction: 0.25 = +-25 %), seeded so a run is reproducible.
    The real service answers a page or a detail in about 0.7-1 s; ``Latency(0.8)`` is that.

    >>> lat = Latency(0.8, seed=1)
    >>> all(0.6 <= lat.draw() <= 1.0 for _ in range(100)), Latency(0).draw()
    (True, 0.0)
    """

    def __init__(self, mean: float = 0.0, *, jitter: float = 0.25, seed: int = 0) -> None:
        mean, jitter = float(mean), float(jitter)
        if not (math.isfinite(mean) and mean >= 0):
            raise ValueError(f"latency is seconds per answer, >= 0; got {mean!r}")
        if not (math.isfinite(jitter) and 0 <= jitter <= 1):
            raise ValueError(f"jitter is a fraction of the latency, 0..1; got {jitter!r}")
        self.mean, self.jitter = mean, jitter
        self._rng = random.Random(f"invtools-latency-{seed}")
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Latency({self.mean:g}, jitter={self.jitter:g})"

    def draw(self) -> float:
        with self._lock:
            return self.mean * (1 + self.jitter * (2 * self._rng.random() - 1))


#: Faults of the connection or the status (the default kinds of :class:`Faults`).
TRANSPORT_FAULTS = ("500", "502", "503", "slow", "drop")
#: Faults of a 200's body: cut in the middle, empty, ``{}``, or whole but labelled text/plain.
BODY_FAULTS = ("truncated", "empty", "empty_object", "mislabelled")
FAULT_KINDS = TRANSPORT_FAULTS + BODY_FAULTS


@dataclass
class Faults:
    """Faults the stand-in server injects, for testing a client's retries and timeouts.

    A request is faulty when its number (1-based, counted from when these faults were set on
    the server) is in ``on_requests``, or else with probability ``rate`` (seeded, so a run is
    reproducible). Its kind is drawn from ``kinds``: ``"500"``/``"502"``/``"503"`` answer that
    status with an HTML (non-JSON) body, ``"slow"`` waits ``slow_seconds`` and then answers
    normally, ``"drop"`` closes the connection without any response. Body faults
    (:data:`BODY_FAULTS`, not drawn unless asked for) answer 200 with the body damaged:
    ``"truncated"`` (cut in the middle, still labelled JSON), ``"empty"``, ``"empty_object"``
    (``{}``), ``"mislabelled"`` (the whole body, labelled ``text/plain``).

    >>> f = Faults(on_requests={2}, kinds=("503",))
    >>> [f.decide() for _ in range(3)]
    [None, '503', None]
    """

    rate: float = 0.0
    kinds: tuple[str, ...] = TRANSPORT_FAULTS
    on_requests: frozenset[int] | set[int] = frozenset()
    slow_seconds: float = 2.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.kinds or set(self.kinds) - set(FAULT_KINDS):
            raise ValueError(
                f"fault kinds must be a non-empty subset of {FAULT_KINDS}, "
                f"got {tuple(self.kinds)!r}"
            )
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate is a probability between 0 and 1, not {self.rate!r}")
        self.kinds = tuple(self.kinds)
        self.on_requests = frozenset(self.on_requests)
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Start counting requests (and drawing faults) from the beginning again."""
        self._count = 0
        self._rng = random.Random(self.seed)

    def decide(self) -> str | None:
        """Count one request and return the fault kind to inject, or None."""
        with self._lock:
            self._count += 1
            hit = self._count in self.on_requests or (
                self.rate > 0 and self._rng.random() < self.rate
            )
            return self._rng.choice(self.kinds) if hit else None


#: The ways of :class:`SkewedDate` that are not a shift by a duration.
DATE_SKEWS = ("missing", "unparseable", "jumping")
#: What ``"unparseable"`` states: a date no service means (year 1; a parser that reads two-digit
#: years takes it for 2001).
ABSURD_DATE = "Mon, 01 Jan 0001 00:00:00 GMT"
#: How far ``"jumping"`` moves every second answer: about 173 years (2026 -> 2199).
JUMP = timedelta(days=63_188)
#: The largest shift by a duration: a thousand years either way keeps the Date a real one.
MAX_SKEW = timedelta(days=365_250)


class SkewedDate:
    """What the ``Date`` of an answer states of a team's clock (``now_ms``: epoch ms), when
    the service's clock is off: ``skew`` is None (the team's clock itself), a
    :class:`~datetime.timedelta` (that much ahead; negative: behind), ``"missing"`` (no
    ``Date`` at all: :meth:`state` is None), ``"unparseable"`` (:data:`ABSURD_DATE`) or
    ``"jumping"`` (answers alternate, counted from when this was made: the first the team's
    clock, the second :data:`JUMP` ahead, the third the team's clock again...). Only what
    ``Date`` says moves: the data and their times do not.

    >>> end = 1_793_466_600_000                       # 31 Oct 2026 17:10 UTC
    >>> SkewedDate().state(end), SkewedDate(timedelta(days=-30)).state(end)
    ('Sat, 31 Oct 2026 17:10:00 GMT', 'Thu, 01 Oct 2026 17:10:00 GMT')
    >>> jumping = SkewedDate("jumping")
    >>> [jumping.state(end)[12:16] for _ in range(3)], SkewedDate("missing").state(end)
    (['2026', '2199', '2026'], None)
    >>> SkewedDate("late")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: date_skew is a datetime.timedelta (negative: behind) or one of ...; got 'late'
    """

    def __init__(self, skew: timedelta | str | None = None) -> None:
        if isinstance(skew, timedelta):
            if abs(skew) > MAX_SKEW:
                raise ValueError(
                    f"date_skew moves the Date by at most 1000 years either way; got {skew!r}. "
                    f"For a Date no clock means, use date_skew='unparseable'"
                )
        elif skew is not None and skew not in DATE_SKEWS:
            what = "date_skew is a datetime.timedelta (negative: behind) or one of " + ", ".join(
                map(repr, DATE_SKEWS)
            )
            if not isinstance(skew, str):
                raise TypeError(f"{what}; got {skew!r} ({type(skew).__name__})")
            raise ValueError(f"{what}; got {skew!r}")
        self.skew = skew
        self._answers = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SkewedDate({self.skew!r})"

    def state(self, now_ms: int) -> str | None:
        """The ``Date`` of one more answer of a team whose clock is at ``now_ms``; None: no
        ``Date`` header."""
        skew, shift = self.skew, timedelta(0)
        if skew == "missing":
            return None
        if skew == "unparseable":
            return ABSURD_DATE
        if skew == "jumping":
            with self._lock:
                self._answers += 1
                shift = JUMP if self._answers % 2 == 0 else shift
        elif isinstance(skew, timedelta):
            shift = skew
        when = datetime.fromtimestamp(now_ms / 1000, UTC).replace(microsecond=0)
        return format_datetime(when + shift, usegmt=True)
