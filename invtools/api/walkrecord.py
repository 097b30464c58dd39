"""The walk record: what one finished walk of a list read, so that any process can replay it
from the response cache -- whole, or not at all -- and the next fresh walk can plan its chains.

A list walked with keyset cursors is consistent only as a whole (library notes, "Caching a
cursor chain"): page 1 of one walk and page 40 of another may both hold a re-dated row, or
neither. So a walk is replayed from the cache only when every page it read is still there with
the very bytes it read (a digest of each body is recorded); one page missing, rewritten by a
later walk or older than the caller's ``max_age`` -- and the walk is fetched fresh from its
first page. Never a cached head with a fresh tail.

Records live beside the responses they describe: a small table of the cache file
(:class:`FileStore`, per team: keyed by the same salted token hash as the cache's entries,
never the token), in this process for a client without a cache (:class:`MemoryStore`), and in
the mirror's own file (``invtools.mirror.store.ListCursors``). Each list has three slots: the
last whole walk (``"whole"``, with the seams for the next one), the last window walk
(``"window"``, stopped at ``since``) and the last plain walk its caller stopped early
(``"prefix"``: ``max_pages``, ``max_rows``, ``stop_at``; a replay that needs a page past it
is no replay).

>>> from datetime import datetime, timezone
>>> from invtools.api.plan import Plan
>>> t = datetime(2026, 5, 1, tzinfo=timezone.utc)
>>> r = WalkRecord(began=t, ended=t, plan=Plan(), pages={"/v1/items?limit=100": digest(b"{}")})
>>> WalkRecord.from_json(r.to_json()) == r, r.serves(since_ms=None), r.serves(since_ms=5)
(True, True, True)
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from invtools.api.plan import Key, Plan

__all__ = [
    "WalkRecord",
    "WalkStore",
    "MemoryStore",
    "FileStore",
    "digest",
    "forget_walks",
    "SLOTS",
    "TABLE",
]

logger = logging.getLogger("invtools")

#: The last whole walk of a list, the last walk of a window of it, the last one stopped early.
SLOTS = ("whole", "window", "prefix")
#: The cache file's table of walk records.
TABLE = "invtools_walks"


def digest(body: bytes) -> str:
    """What a page's body is recorded as: 24 hex characters of its BLAKE2b hash.

    >>> digest(b'{"items": []}')
    '18e8e09c5c0ed82808823a2e'
    """
    return hashlib.blake2b(body, digest_size=12).hexdigest()


@dataclass(frozen=True)
class WalkRecord:
    """One finished walk: when it ``began`` (how old its data is) and ``ended``, its
    ``plan``, ``since_ms`` (the window's start; None: the whole list), the ``pages`` it read
    (request ``path?query`` -> digest of the body) and, for a whole walk, the ``seams`` where
    the next fresh walk's chains start (None: not known)."""

    began: datetime
    ended: datetime
    plan: Plan
    since_ms: int | None = None
    pages: Mapping[str, str] = field(default_factory=dict)
    seams: tuple[Key, ...] | None = None

    def serves(self, *, since_ms: int | None) -> bool:
        """Whether a replay of this walk holds every row a walk from ``since_ms`` (None: the
        whole list) needs."""
        return self.since_ms is None or (since_ms is not None and since_ms >= self.since_ms)

    def to_json(self) -> str:
        return json.dumps(
            {
                "began": self.began.isoformat(),
                "ended": self.ended.isoformat(),
                "plan": self.plan.to_json(),
                "since_ms": self.since_ms,
                "pages": dict(self.pages),
                "seams": None if self.seams is None else [list(k) for k in self.seams],
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> WalkRecord | None:
        """A record as :meth:`to_json` wrote it, or None for anything else (a damaged or
        unknown value is no record: the next walk is fetched fresh). The mirror's earlier
        ``{"next": [...]}`` gives a record with seams only.

        >>> WalkRecord.from_json('{"next": [[5, 41]]}').seams, WalkRecord.from_json("{oops")
        (((5, 41),), None)
        """
        try:
            data = json.loads(text or "")
            if set(data) == {"next"}:  # what mirrors wrote before records
                epoch = datetime.fromisoformat("1970-01-01T00:00:00+00:00")
                return cls(epoch, epoch, Plan(), seams=_keys(data["next"]))
            since = data["since_ms"]
            pages = {str(k): str(v) for k, v in data["pages"].items()}
            return cls(
                began=_aware(data["began"]),
                ended=_aware(data["ended"]),
                plan=Plan.from_json(data["plan"]),
                since_ms=None if since is None else int(since),
                pages=pages,
                seams=None if data["seams"] is None else _keys(data["seams"]),
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            return None


def _keys(data: Any) -> tuple[Key, ...]:
    return tuple((int(ms), int(i)) for ms, i in data)


def _aware(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError("a record's times are aware")
    return when


class WalkStore(Protocol):
    """Where one list's records are found and left."""

    def load(self, slot: str) -> WalkRecord | None: ...

    def save(self, slot: str, record: WalkRecord) -> None: ...


_MEMORY: OrderedDict[tuple[str, str], WalkRecord] = OrderedDict()
_MEMORY_LOCK = threading.Lock()
_MEMORY_AT_MOST = 256


class MemoryStore:
    """Records in this process, for a client without a cache (no replay is possible then,
    but the seams still spare the next walk).

    >>> from invtools.api.plan import Plan
    >>> m = MemoryStore("http://h:7:/v1/location-txs")
    >>> m.save("whole", WalkRecord.from_json('{"next": []}'))
    >>> m.load("whole").seams, m.load("window")
    ((), None)
    >>> forget_walks(); m.load("whole") is None
    True
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def load(self, slot: str) -> WalkRecord | None:
        with _MEMORY_LOCK:
            return _MEMORY.get((self.key, slot))

    def save(self, slot: str, record: WalkRecord) -> None:
        with _MEMORY_LOCK:
            _MEMORY[(self.key, slot)] = record
            _MEMORY.move_to_end((self.key, slot))
            while len(_MEMORY) > _MEMORY_AT_MOST:
                _MEMORY.popitem(last=False)


def forget_walks() -> None:
    """Forget the records kept in this process (those of clients without a cache)."""
    with _MEMORY_LOCK:
        _MEMORY.clear()


class FileStore:
    """Records in the cache file's :data:`TABLE`, under ``key`` (the token's salted prefix,
    then a hash of the list's first request: no token). Never fails a walk: a file that cannot
    be read or written (read-only, locked for long) means no record, said on the log."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key

    def load(self, slot: str) -> WalkRecord | None:
        try:
            with _connect(self.path) as con:
                row = con.execute(
                    f"SELECT record FROM {TABLE} WHERE key = ?", (f"{self.key}:{slot}",)
                ).fetchone()
        except sqlite3.Error as exc:
            logger.debug("walk record not read from %s: %s", self.path, exc)
            return None
        return None if row is None else WalkRecord.from_json(row[0])

    def save(self, slot: str, record: WalkRecord) -> None:
        try:
            with _connect(self.path) as con:
                con.execute(
                    f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?)",
                    (f"{self.key}:{slot}", record.to_json(), record.ended.timestamp()),
                )
        except sqlite3.Error as exc:
            logger.info("walk record not kept in %s (%s): the next run walks again", self.path, exc)

    @staticmethod
    def clear(path: Path, prefix: str, *, older_than: float | None = None) -> int:
        """Delete the records under ``prefix`` (a token's, or "" for all), or only those saved
        before ``older_than`` (epoch seconds); how many went."""
        try:
            with _connect(path) as con:
                return con.execute(
                    f"DELETE FROM {TABLE} WHERE substr(key, 1, ?) = ? AND saved < ?",
                    (len(prefix), prefix, float("inf") if older_than is None else older_than),
                ).rowcount
        except sqlite3.Error as exc:
            logger.debug("walk records not cleared in %s: %s", path, exc)
            return 0


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    """The cache file (the session made it) with the records table, then closed. In
    autocommit mode, each write one statement: the file's write lock is never held while
    this thread waits for Python's GIL, which froze the process beside requests-cache's
    shared connection (see :func:`invtools.http.cache.delete_keys`)."""
    con = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} "
            "(key TEXT PRIMARY KEY, record TEXT NOT NULL, saved REAL NOT NULL)"
        )
        yield con
    finally:
        con.close()
