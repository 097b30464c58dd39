"""What a pacing budget believes of a bucket (:class:`BucketState`, :class:`Stated`), a request
it let through (:class:`Admission`), where it keeps that (:class:`MemoryStore` in this process,
:class:`FileStore` in a SQLite file every process of the machine shares), and how it is shown
(:class:`BudgetView`). The decisions are :mod:`invtools.http.pacing`'s.

>>> stated_of({"X-Ratelimit-Remaining": "4"}) is None     # no reset: not a statement
True
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

__all__ = [
    "BucketState",
    "Stated",
    "Admission",
    "Sends",
    "stated_of",
    "BudgetView",
    "describe",
    "MemoryStore",
    "FileStore",
    "state_from_json",
    "KEEP",
]

#: How long sends are remembered (seconds): enough for a minute's stated budget.
KEEP = 120.0
#: A bucket's sends, oldest first: ``(seq, at)``.
Sends = list[tuple[int, float]]


@dataclass
class Stated:
    """What a response said of its bucket: ``remaining`` after the request ``seq`` (the
    bucket's send number), room back at ``reset_at`` (in the frame of when requests are sent),
    the ``limit`` per window if said."""

    remaining: int
    reset_at: float
    seq: int
    limit: int | None = None


@dataclass(frozen=True)
class Admission:
    """A request let through: its bucket's send number ``seq``, when (``at``), after waiting
    ``waited`` seconds."""

    seq: int
    at: float
    waited: float = 0.0


@dataclass
class BucketState:
    """What a budget believes of one bucket (see the module docstring)."""

    held_until: float = -math.inf
    factor: float = 1.0  # the pace of a silent server, as a fraction of the configured
    stated: Stated | None = None
    rate_limited: int = 0  # 429s seen
    last_seq: int = 0  # the bucket's last send number (sends are forgotten after KEEP)
    window: float | None = None  # the stated budget's window (seconds), when learned
    window_limit: int | None = None  # ... and how many requests it allows


def stated_of(headers: Mapping[str, str]) -> tuple[int, float, int | None] | None:
    """``(remaining, reset seconds, limit)`` when the headers state a budget, else None.

    >>> stated_of({"X-Ratelimit-Remaining": "287", "X-Ratelimit-Reset": "41.5",
    ...            "X-Ratelimit-Limit": "300"})
    (287, 41.5, 300)
    >>> stated_of({"X-Ratelimit-Remaining": "4"}) is None     # no reset: not a statement
    True
    """
    try:
        remaining = int(headers["X-Ratelimit-Remaining"])
        reset = float(headers["X-Ratelimit-Reset"])
    except (KeyError, TypeError, ValueError):
        return None
    if remaining < 0 or not 0 <= reset < 1e6:  # an epoch timestamp is not read as seconds
        return None
    try:
        limit: int | None = int(headers["X-Ratelimit-Limit"])
    except (KeyError, TypeError, ValueError):
        limit = None
    return remaining, reset, limit


@dataclass(frozen=True)
class BudgetView:
    """What a client believes of its token's budget (``client.budget``): the configured
    ``rate_limit`` (the pace of a server that says nothing), its ``scope``, whether the budget
    is ``shared`` with other processes (through a file beside the cache), and per bucket: the
    ``pace`` now (requests a second; slower after 429s), a stated budget's ``stated_room`` and
    ``stated_limit``, seconds to its reset (``reset_in``), seconds the bucket is still held
    (``held_for``) and the 429s seen (``rate_limited``). No token.

    >>> BudgetView(5.0, "token", True, {"all-endpoints": {"pace": 4.1, "stated_room": None,
    ...     "stated_limit": None, "reset_in": None, "held_for": 0.0, "rate_limited": 3}})
    BudgetView(5/s per token, shared with other processes; all-endpoints: 4.1/s, 3 x 429)
    """

    rate_limit: float
    scope: str
    shared: bool
    buckets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        parts = [
            f"{self.rate_limit:g}/s per {self.scope}"
            + (", shared with other processes" if self.shared else "")
        ]
        parts += [f"{bucket}: {describe(b)}" for bucket, b in self.buckets.items()]
        return f"BudgetView({'; '.join(parts)})"

    @property
    def rate_limited(self) -> int:
        """429s seen in all its buckets."""
        return sum(b["rate_limited"] for b in self.buckets.values())


def describe(bucket: Mapping[str, Any]) -> str:
    """One bucket of :meth:`Budget.summary` in words.

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
    return text


class MemoryStore:
    """A budget's state in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, BucketState] = {}
        self._sends: dict[str, Sends] = {}

    def buckets(self) -> list[str]:
        with self._lock:
            return sorted(self._states)

    @contextmanager
    def open(self, bucket: str, now: float) -> Iterator[tuple[BucketState, Sends]]:
        with self._lock:
            state = self._states.setdefault(bucket, BucketState())
            sends = self._sends.setdefault(bucket, [])
            while sends and sends[0][1] < now - KEEP:
                sends.pop(0)
            yield state, sends


class FileStore:
    """A budget's state in a SQLite file every process on the machine uses, its buckets named
    ``<owner>:<bucket>`` (``owner``: a salted hash of the token): each ``open`` is one write
    transaction (``BEGIN IMMEDIATE``), so an admission is atomic across processes."""

    def __init__(self, path: Path, owner: str) -> None:
        private_file(path)
        self.path, self.owner = path, owner
        self._lock = threading.Lock()
        self._con = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=NORMAL")
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS state (bucket TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS sends (bucket TEXT NOT NULL, "
            "seq INTEGER NOT NULL, t REAL NOT NULL)"
        )
        self._con.execute("CREATE INDEX IF NOT EXISTS sends_at ON sends (bucket, t)")
        weakref.finalize(self, self._con.close)

    def buckets(self) -> list[str]:
        mine = f"{self.owner}:"
        with self._lock:
            return [
                b[len(mine) :]
                for (b,) in self._con.execute(
                    "SELECT bucket FROM state WHERE substr(bucket, 1, ?) = ? ORDER BY bucket",
                    (len(mine), mine),
                )
            ]

    @contextmanager
    def open(self, bucket: str, now: float) -> Iterator[tuple[BucketState, Sends]]:
        bucket = f"{self.owner}:{bucket}"
        with self._lock:
            con = self._con
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT value FROM state WHERE bucket = ?", (bucket,)).fetchone()
                state = state_from_json(row[0]) if row else BucketState()
                con.execute("DELETE FROM sends WHERE bucket = ? AND t < ?", (bucket, now - KEEP))
                sends = [
                    (n, t)
                    for n, t in con.execute(
                        "SELECT seq, t FROM sends WHERE bucket = ? ORDER BY seq", (bucket,)
                    )
                ]
                known = len(sends)
                yield state, sends
                con.executemany(
                    "INSERT INTO sends VALUES (?, ?, ?)", [(bucket, n, t) for n, t in sends[known:]]
                )
                con.execute(
                    "INSERT OR REPLACE INTO state VALUES (?, ?)",
                    (bucket, json.dumps(asdict(state))),
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise


def state_from_json(text: str) -> BucketState:
    try:
        data = json.loads(text)
        stated = data.pop("stated")
        return BucketState(**data, stated=None if stated is None else Stated(**stated))
    except (TypeError, ValueError, KeyError):
        return BucketState()  # a state written by another version: start afresh
