"""Where a pacing budget keeps what it believes of each bucket (:class:`State`): a SQLite file
every process using the cache folder shares (``budgets.sqlite``), or ``:memory:`` for this
process alone (:class:`Store`); and how it is shown (:class:`BudgetView`, :func:`describe`).
The rules are :mod:`invtools.http.pacing`'s. Every time kept is wall-clock time; a row of
another shape reads as a fresh state; a file SQLite cannot use raises
:class:`~invtools.errors.CacheError` naming it and what to do.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from invtools._files import private_file
from invtools.errors import CacheError

__all__ = ["State", "Store", "BudgetView", "describe"]


@dataclass
class State:
    """A bucket: ``seq`` sent, the ``last`` at; ``held`` until; ``stated``: ``[remaining, after
    send number, until, limit]``; 429s ``refused``; ``factor``: of the configured pace;
    ``seen``: ``[answers a second, seconds to the first answer]`` of the last batch of details.

    >>> State.loads('"another shape"') == State()          # another version's: afresh
    True
    """

    seq: int = 0
    last: float = 0.0
    held: float = 0.0
    stated: list | None = None
    refused: int = 0
    factor: float = 1.0
    seen: list | None = None

    def room(self) -> int:
        return 0 if self.stated is None else self.stated[0] - (self.seq - self.stated[1])

    def bound(self, now: float, horizon: float) -> State:
        """Forget times further ahead than ``horizon`` s (another clock's); and a past reset. A
        last send ahead of ``now`` is another clock's reading (another process's, or this one's
        before it was set back): it was sent now at the latest, so the pace waits one interval
        from now, never that clock's lead."""
        self.last = 0.0 if self.last > now + horizon else min(self.last, now)
        self.held = 0.0 if self.held > now + horizon else self.held
        if self.stated is not None and not now < self.stated[2] <= now + horizon:
            self.stated = None
        return self

    @classmethod
    def loads(cls, text: str) -> State:
        try:
            d = json.loads(text)
            s = cls(int(d["seq"]), float(d["last"]), float(d["held"]), None, int(d["refused"]))
            s.factor = float(d["factor"])
            if d["stated"] is not None:
                left, seq, until, limit = d["stated"]
                s.stated = [int(left), int(seq), float(until), limit and int(limit)]
            if d["seen"] is not None:
                pace, first = d["seen"]
                s.seen = [float(pace), float(first)]
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()
        times = [s.last, s.held, s.factor, *(s.stated[2:3] if s.stated else []), *(s.seen or [])]
        seen = s.seen is None or (s.seen[0] > 0 and s.seen[1] >= 0)
        return s if all(map(math.isfinite, times)) and 0 < s.factor <= 1 and seen else cls()


class Store:
    """A budget's states in SQLite: ``budgets.sqlite`` shared by the machine's processes, or
    ``:memory:`` for this one; a row per bucket, ``<owner>:<bucket>``. Each ``open`` is one write
    transaction (``BEGIN IMMEDIATE``), so an admission is atomic across processes."""

    def __init__(self, path: Path | str = ":memory:", owner: str = "", timeout: float = 5.0):
        self.path, self.owner, self._lock = path, owner, threading.Lock()
        with self._failing():
            if path != ":memory:":
                private_file(Path(path))
            self._con = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            weakref.finalize(self, self._con.close)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("CREATE TABLE IF NOT EXISTS buckets (bucket TEXT PRIMARY KEY, state)")

    @contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except (OSError, sqlite3.Error) as exc:
            name = Path(self.path).name
            raise CacheError(
                f"The rate-limit budget file {self.path} cannot be used ({exc}). Another "
                "program may hold it locked, or it is damaged or not invtools': close the other "
                f"notebooks using this cache folder, or delete {name} (pacing state only)."
            ) from exc

    def buckets(self) -> list[str]:
        with self._lock, self._failing():
            rows = self._con.execute("SELECT bucket FROM buckets ORDER BY bucket").fetchall()
        return [b.split(":", 1)[1] for (b,) in rows if b.startswith(f"{self.owner}:")]

    @contextmanager
    def open(self, bucket: str) -> Iterator[State]:
        key, con = f"{self.owner}:{bucket}", self._con
        with self._lock, self._failing():
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT state FROM buckets WHERE bucket = ?", (key,)).fetchone()
                state = State.loads(row[0]) if row else State()
                yield state
                con.execute("REPLACE INTO buckets VALUES (?, ?)", (key, json.dumps(asdict(state))))
                con.execute("COMMIT")
            finally:
                if con.in_transaction:
                    con.execute("ROLLBACK")


@dataclass(frozen=True)
class BudgetView:
    """What a client believes of its token's budget (``client.budget``): the configured
    ``rate_limit`` (the pace of a silent server), its ``scope``, whether ``shared`` with other
    processes (a file beside the cache), per bucket what
    :meth:`~invtools.http.pacing.Budget.summary` says, and whether the service's latest word
    was that it has no limit (``unlimited``: nothing waits). No token.

    >>> BudgetView(5.0, "token", True, {"all-endpoints": {"pace": 4.1, "stated_room": None,
    ...     "stated_limit": None, "reset_in": None, "held_for": 0.0, "rate_limited": 3}})
    BudgetView(5/s per token, shared with other processes; all-endpoints: 4.1/s, 3 x 429)
    >>> BudgetView(5.0, "endpoint", False, {}, unlimited=True)
    BudgetView(no limit stated by the service: not paced (5/s per endpoint if it states one))
    """

    rate_limit: float
    scope: str
    shared: bool
    buckets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    unlimited: bool = False

    def __repr__(self) -> str:
        head = f"{self.rate_limit:g}/s per {self.scope}"
        if self.unlimited:
            head = f"no limit stated by the service: not paced ({head} if it states one)"
        head += ", shared with other processes" if self.shared else ""
        parts = [head] + [f"{bucket}: {describe(b)}" for bucket, b in self.buckets.items()]
        return f"BudgetView({'; '.join(parts)})"


def describe(bucket: Mapping[str, Any]) -> str:
    """One bucket of :meth:`~invtools.http.pacing.Budget.summary` in words.

    >>> describe({"pace": 4.762, "stated_room": 287, "stated_limit": 300, "reset_in": 41.2,
    ...           "held_for": 0.0, "rate_limited": 0})
    '4.76/s, stated 287 of 300 left (reset in 41 s)'
    """
    text = f"{bucket['pace']:.3g}/s"
    if bucket.get("stated_room") is not None:
        of = f" of {bucket['stated_limit']}" if bucket.get("stated_limit") else ""
        text += f", stated {bucket['stated_room']}{of} left (reset in {bucket['reset_in']:.0f} s)"
    if bucket.get("held_for"):
        text += f", held {bucket['held_for']:.1f} s"
    if bucket.get("rate_limited"):
        text += f", {bucket['rate_limited']} x 429"
    if bucket.get("seen"):
        text += f", {bucket['seen']:.3g}/s seen"
    return text
