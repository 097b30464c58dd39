"""Where a pacing budget keeps what it believes of a bucket (:class:`State`): in this process
(:class:`MemoryStore`) or in ``budgets.sqlite``, shared by every process using the cache folder
(:class:`FileStore`); and how it is shown (:class:`BudgetView`, :func:`describe`). The rules
are :mod:`invtools.http.pacing`'s.

Every time kept is wall-clock time (``time.time()``): another process reads it, after a reboot
too, when a monotonic clock would have started again near 0. A row that is not what this
version writes is read as a fresh state; a file SQLite cannot use raises
:class:`~invtools.errors.CacheError` naming it.

>>> State.loads('"another shape"') == State()
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
from invtools.errors import CacheError

__all__ = ["State", "MemoryStore", "FileStore", "BudgetView", "describe"]


@dataclass
class State:
    """A bucket: ``seq`` requests admitted so far, the ``last`` one when; ``held`` until
    (a 429's reset); ``stated``: ``[remaining, after send number, until, limit]`` of the latest
    answer that stated a budget; the ``refused`` (429s) seen; ``factor``: the pace of a server
    that says nothing, as a fraction of the configured one."""

    seq: int = 0
    last: float = 0.0
    held: float = 0.0
    stated: list | None = None
    refused: int = 0
    factor: float = 1.0

    def bound(self, now: float, horizon: float) -> None:
        """Forget a time further ahead than ``horizon`` seconds: another clock's (a month
        ahead, before a reboot), never a wait of this one's."""
        if self.last > now + horizon:
            self.last = 0.0
        if self.held > now + horizon:
            self.held = 0.0
        if self.stated is not None and self.stated[2] > now + horizon:
            self.stated = None

    def dumps(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def loads(cls, text: str) -> State:
        try:
            d = json.loads(text)
            s = cls(int(d["seq"]), float(d["last"]), float(d["held"]), None, int(d["refused"]))
            s.factor = float(d["factor"])
            if d["stated"] is not None:
                left, seq, until, limit = d["stated"]
                s.stated = [
                    int(left),
                    int(seq),
                    float(until),
                    None if limit is None else int(limit),
                ]
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()  # another version's, or damaged: start afresh
        numbers = [s.last, s.held, s.factor, *(s.stated[2:3] if s.stated else [])]
        return s if all(map(math.isfinite, numbers)) and 0 < s.factor <= 1 else cls()


class MemoryStore:
    """A budget's states in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, State] = {}

    def buckets(self) -> list[str]:
        with self._lock:
            return sorted(self._states)

    @contextmanager
    def open(self, bucket: str) -> Iterator[State]:
        with self._lock:
            yield self._states.setdefault(bucket, State())


class FileStore:
    """A budget's states in a SQLite file every process of the machine uses, one row per
    bucket named ``<owner>:<bucket>`` (``owner``: a salted hash of the token). Each ``open`` is
    one write transaction (``BEGIN IMMEDIATE``), so an admission is atomic across processes;
    the file's lock is waited for ``timeout`` seconds at most."""

    def __init__(self, path: Path, owner: str, timeout: float) -> None:
        self.path, self.owner = path, owner
        self._lock = threading.Lock()
        with self._failing():
            private_file(path)
            self._con = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            weakref.finalize(self, self._con.close)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS buckets (bucket TEXT PRIMARY KEY, state TEXT NOT NULL)"
            )

    @contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"The rate-limit budget file {self.path} cannot be used ({exc}). Another "
                "program may hold it locked, or it is damaged or not invtools': close the "
                f"other notebooks using this cache folder, or delete {self.path.name} (it "
                "holds only pacing state; invtools makes it again)."
            ) from exc

    def buckets(self) -> list[str]:
        mine = f"{self.owner}:"
        with self._lock, self._failing():
            rows = self._con.execute("SELECT bucket FROM buckets ORDER BY bucket").fetchall()
        return [b[len(mine) :] for (b,) in rows if str(b).startswith(mine)]

    @contextmanager
    def open(self, bucket: str) -> Iterator[State]:
        key = f"{self.owner}:{bucket}"
        with self._lock:
            con = self._con
            with self._failing():
                con.execute("BEGIN IMMEDIATE")
            try:
                with self._failing():
                    row = con.execute(
                        "SELECT state FROM buckets WHERE bucket = ?", (key,)
                    ).fetchone()
                state = State.loads(row[0]) if row else State()
                yield state
                with self._failing():
                    con.execute(
                        "INSERT OR REPLACE INTO buckets VALUES (?, ?)", (key, state.dumps())
                    )
                    con.execute("COMMIT")
            finally:
                if con.in_transaction:
                    con.execute("ROLLBACK")


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
        head = f"{self.rate_limit:g}/s per {self.scope}"
        head += ", shared with other processes" if self.shared else ""
        parts = [head] + [f"{bucket}: {describe(b)}" for bucket, b in self.buckets.items()]
        return f"BudgetView({'; '.join(parts)})"

    @property
    def rate_limited(self) -> int:
        """429s seen in all its buckets."""
        return sum(b["rate_limited"] for b in self.buckets.values())


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
    return text
