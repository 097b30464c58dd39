"""Where a finished walk of a list is kept, so that any process can replay it: one
:class:`Record` per list (and filters), written whole in one step and read whole in one step.

A list walked with keyset cursors is consistent only as a whole (library notes, "Caching a
cursor chain"), so a walk keeps every page body it read, in one record: a replay reads that
record and nothing else -- never a cached head with a fresh tail. The record also says how the
walk ran (its plan), how far it reached (the whole list, down to ``since``, or a prefix its
caller cut short) and, from the last whole walk, the seams where the next fresh walk's chains
start.

Records are files beside the response cache (:class:`FileStore`: ``<cache>.walks/``, one file
per token and list, named by the cache's salted token hash, never the token), written to a
temporary file and renamed over the old one, so a reader sees the old record or the new one,
never half of one, and no lock is ever taken. A client without a cache keeps them in this
process (:class:`MemoryStore`): no replay across processes then, but the seams still spare the
next walk. A record that cannot be read (damaged, another format) is no record; one that
cannot be written (read-only folder, disk full) is said once on the log and the walk goes on.

>>> from datetime import datetime, timezone
>>> r = Record(datetime(2026, 5, 1, tzinfo=timezone.utc), Plan(), ((0, None, b'{"items":[]}'),),
...            complete=True)
>>> Record.from_bytes(r.to_bytes()) == r, r.serves(since_ms=None)
(True, True)
"""

from __future__ import annotations

import json
import logging
import os
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from invtools._files import private_dirs
from invtools.api.plan import Key, Plan

__all__ = ["Record", "WalkStore", "FileStore", "MemoryStore", "walks_folder", "clear_walks"]

logger = logging.getLogger("invtools")

_MAGIC = b"invtools-walk 2\n"
#: A piece of a record: (chain, rows of the page that count or None for all, page body).
Piece = tuple[int, int | None, bytes]


@dataclass(frozen=True)
class Record:
    """One finished walk: when it ``began`` (how old its data is), the ``plan`` that ran, its
    ``pieces`` in walk order, whether it reached the list's end (``complete``) or stopped at
    ``since_ms`` (every row newer is held), and the ``seams`` of the last whole walk."""

    began: datetime
    plan: Plan
    pieces: tuple[Piece, ...]
    complete: bool = False
    since_ms: int | None = None
    seams: tuple[Key, ...] | None = None

    def serves(self, *, since_ms: int | None) -> bool:
        """Whether it holds every row of a walk from ``since_ms`` (None: the whole list)
        whatever that walk's own trimming; a prefix may still serve a trimmed walk."""
        return self.complete or (
            self.since_ms is not None and since_ms is not None and since_ms >= self.since_ms
        )

    def to_bytes(self) -> bytes:
        head = {
            "began": self.began.isoformat(),
            "plan": self.plan.to_json(),
            "complete": self.complete,
            "since_ms": self.since_ms,
            "seams": None if self.seams is None else [list(k) for k in self.seams],
            "pieces": [[j, keep, len(body)] for j, keep, body in self.pieces],
        }
        text = json.dumps(head, separators=(",", ":")).encode()
        return _MAGIC + zlib.compress(b"".join([text, b"\n", *(b for *_, b in self.pieces)]), 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> Record | None:
        """A record as :meth:`to_bytes` wrote it, or None for anything else."""
        try:
            if not data.startswith(_MAGIC):
                return None
            raw = zlib.decompress(data[len(_MAGIC) :])
            text, _, bodies = raw.partition(b"\n")
            head = json.loads(text)
            pieces, at = [], 0
            for j, keep, size in head["pieces"]:
                pieces.append((int(j), None if keep is None else int(keep), bodies[at : at + size]))
                at += size
            began = datetime.fromisoformat(head["began"])
            if at != len(bodies) or began.tzinfo is None:
                return None
            seams = head["seams"]
            return cls(
                began=began,
                plan=Plan.from_json(head["plan"]),
                pieces=tuple(pieces),
                complete=bool(head["complete"]),
                since_ms=None if head["since_ms"] is None else int(head["since_ms"]),
                seams=None if seams is None else tuple((int(ms), int(i)) for ms, i in seams),
            )
        except (ValueError, TypeError, KeyError, zlib.error):
            return None


class WalkStore(Protocol):
    """Where one list's record is found and left."""

    def load(self) -> Record | None: ...

    def save(self, record: Record) -> None: ...


_MEMORY: OrderedDict[str, Record] = OrderedDict()
_MEMORY_LOCK = threading.Lock()
_MEMORY_AT_MOST = 64


class MemoryStore:
    """What a client without a cache keeps of a list's record in this process, under ``key``
    (the most recent 64 lists): how it ran and its seams, not its pages -- no cache, no
    replay -- so that the next walk still starts its chains from the seams.

    >>> store = MemoryStore("k")
    >>> store.save(Record(datetime.now().astimezone(), Plan(), ((0, None, b"{}"),), seams=()))
    >>> store.load().pieces, store.load().seams, MemoryStore("other").load()
    ((), (), None)
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def load(self) -> Record | None:
        with _MEMORY_LOCK:
            return _MEMORY.get(self.key)

    def save(self, record: Record) -> None:
        with _MEMORY_LOCK:
            _MEMORY[self.key] = replace(record, pieces=())
            _MEMORY.move_to_end(self.key)
            while len(_MEMORY) > _MEMORY_AT_MOST:
                _MEMORY.popitem(last=False)

    @staticmethod
    def forget() -> None:
        """Forget every record kept in this process (what a new process starts with)."""
        with _MEMORY_LOCK:
            _MEMORY.clear()


def walks_folder(cache_path: Path) -> Path:
    """The folder of walk records beside the cache file ``cache_path``."""
    return cache_path.with_name(cache_path.name + ".walks")


class FileStore:
    """A record in the file ``<folder>/<key>.walk`` (0600, its folder 0700); ``key`` is the
    token's salted prefix, a dash, and a hash of the list's first request."""

    def __init__(self, folder: Path, key: str) -> None:
        self.path = folder / f"{key}.walk"

    def load(self) -> Record | None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("walk record %s not read (%s): the list is walked again", self.path, exc)
            return None
        record = Record.from_bytes(data)
        if record is None:
            logger.warning("walk record %s is damaged: the list is walked again", self.path)
        return record

    def save(self, record: Record) -> None:
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            private_dirs(self.path.parent)
            fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(record.to_bytes())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            logger.warning(
                "walk record not kept in %s (%s): the next run walks this list again",
                self.path.parent,
                exc.strerror or exc,
            )


def clear_walks(folder: Path, prefix: str = "", *, older_than: float | None = None) -> int:
    """Delete the records in ``folder`` whose name starts with ``prefix`` (a token's; "" for
    all), or only those written before ``older_than`` (epoch seconds); how many went."""
    gone = 0
    try:
        found = list(folder.glob(f"{prefix}*.walk*"))
    except OSError:
        return 0
    for path in found:
        try:
            if older_than is None or path.stat().st_mtime < older_than:
                path.unlink()
                gone += path.suffix == ".walk"
        except OSError as exc:
            logger.info("walk record %s not deleted: %s", path, exc)
    return gone
