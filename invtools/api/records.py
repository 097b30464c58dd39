"""What the last walk of a list left: its :class:`Record`, and where it is kept.

A list walked with keyset cursors is consistent only as a whole (library notes, "Caching a
cursor chain"), so a finished walk keeps every page body it read in one :class:`Record`, with
the plan that ran, how far it reached (the whole list, down to ``since``, or a prefix its
caller cut short) and, from the last whole walk, the seams where the next fresh walk's chains
start. Records are files beside the response cache (:class:`FileStore`: ``<cache>.walks/``,
one a token and list, named by the cache's salted token hash, never the token), written to a
temporary file and renamed over the old one: a reader sees the old record or the new one, and
no lock is taken. Without a cache, :class:`MemoryStore` keeps plan and seams in this process
(no replay: ``cache=False`` means fresh data). A record that cannot be read is no record; one
that cannot be written (read-only folder, disk full) is a warning on the log each time, and the
walk goes on.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from invtools._files import private_dirs
from invtools.api.plan import Key, Plan

__all__ = ["Record", "StoredPages", "WalkStore", "FileStore", "MemoryStore", "walks_folder"]
__all__ += ["Refusable", "clear_walks"]

logger = logging.getLogger("invtools")

_MAGIC = b"invtools-walk 2\n"
#: Compressed bytes of a record decompressed at a time (about 0.2 MiB of pages).
_READ = 16 << 10
#: A piece of a record: (chain, rows of the page that count or None for all, page body).
Kept = tuple[int, int | None, bytes]


@dataclass(frozen=True)
class Record:
    """One finished walk: when it ``began`` (how old its data is), the ``plan`` that ran, its
    ``pieces`` in walk order, whether it reached the list's end (``complete``) or stopped at
    ``since_ms`` (every row newer is held), and the ``seams`` of the last whole walk."""

    began: datetime
    plan: Plan
    pieces: Sequence[Kept]
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
        """The record compressed, its pages one after another (no copy of them all)."""
        head = {
            "began": self.began.isoformat(),
            "plan": self.plan.to_json(),
            "complete": self.complete,
            "since_ms": self.since_ms,
            "seams": None if self.seams is None else [list(k) for k in self.seams],
            "pieces": [[j, keep, len(body)] for j, keep, body in self.pieces],
        }
        z = zlib.compressobj(1)
        out = [_MAGIC, z.compress(json.dumps(head, separators=(",", ":")).encode() + b"\n")]
        out += [z.compress(body) for *_, body in self.pieces]
        return b"".join([*out, z.flush()])

    @classmethod
    def from_bytes(cls, data: bytes) -> Record | None:
        """A record as :meth:`to_bytes` wrote it, or None for anything else. Its pages are
        :class:`StoredPages`: read through once here (that they are whole), then again each
        time they are iterated, so that they are never all held at once."""
        try:
            pages = _stored(data)
            head = next(pages)
            for _ in pages:  # decompressed and let go: 100,000 rows' pages are 41 MiB
                pass
            began = datetime.fromisoformat(head["began"])
            if began.tzinfo is None:
                return None
            seams = head["seams"]
            return cls(
                began=began,
                plan=Plan.from_json(head["plan"]),
                pieces=StoredPages(data, len(head["pieces"])),
                complete=bool(head["complete"]),
                since_ms=None if head["since_ms"] is None else int(head["since_ms"]),
                seams=None if seams is None else tuple((int(ms), int(i)) for ms, i in seams),
            )
        except (ValueError, TypeError, KeyError, zlib.error):
            return None


class StoredPages(Sequence[Kept]):
    """A record's ``count`` pieces in its bytes, decompressed one by one each time they are
    iterated: a replay parses them as they come (issue 34: 100,000 rows' 41 MiB of pages held
    at once, and the holes they left, were a sixth of a ``lines_df()`` re-run's peak)."""

    def __init__(self, data: bytes, count: int) -> None:
        self._data, self._count = data, count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Kept]:
        yield from itertools.islice(_stored(self._data), 1, None)  # the head, then the pages

    def __getitem__(self, index: Any) -> Any:  # a Sequence's; all decompressed (tests only)
        return tuple(self)[index]

    def __eq__(self, other: object) -> bool:  # as a tuple is: to one of the same pieces
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


def _stored(data: bytes) -> Iterator[Any]:
    """A record's head (JSON), then its pieces one at a time; ValueError (or zlib.error) when
    the bytes are not what :meth:`Record.to_bytes` wrote, at the piece where that shows. Its
    bytes are decompressed :data:`_READ` at a time: what is held is a page and a read's."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a walk record")
    z, view, out = zlib.decompressobj(), memoryview(data), bytearray()
    reads = (view[at : at + _READ] for at in range(len(_MAGIC), len(view), _READ))

    def more() -> None:
        read = next(reads, None)
        if read is None:
            raise ValueError("a walk record cut short")
        out.extend(z.decompress(read))

    while (line := out.find(b"\n")) < 0:
        more()
    head = json.loads(bytes(out[:line]))
    del out[: line + 1]  # from a bytearray's front: no copy of the rest
    yield head
    for j, keep, size in head["pieces"]:
        while len(out) < size:
            more()
        body = bytes(out[:size])
        del out[:size]
        yield int(j), None if keep is None else int(keep), body
    for read in reads:
        out.extend(z.decompress(read))
    if out or not z.eof or z.unused_data:
        raise ValueError("a walk record with more than its pages")


class WalkStore(Protocol):
    """Where one list's record is found and left."""

    def load(self) -> Record | None: ...

    def save(self, record: Record) -> None: ...


_MEMORY: dict[str, Record] = {}


class MemoryStore:
    """What a client without a cache keeps of a list's record in this process, under ``key``:
    how it ran and its seams, not its pages -- no cache, no replay -- so that the next walk
    still starts its chains from the seams.

    >>> store = MemoryStore("k")
    >>> store.save(Record(datetime.now().astimezone(), Plan(), ((0, None, b"{}"),), seams=()))
    >>> store.load().pieces, store.load().seams, MemoryStore("other").load()
    ((), (), None)
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def load(self) -> Record | None:
        return _MEMORY.get(self.key)

    def save(self, record: Record) -> None:
        _MEMORY[self.key] = replace(record, pieces=())

    @staticmethod
    def forget() -> None:
        """Forget every record kept in this process (what a new process starts with)."""
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
            with suppress(OSError):  # not there, or its folder is not one
                tmp.unlink()
            logger.warning(
                "walk record not kept in %s (%s): the next run walks this list again",
                self.path.parent,
                exc.strerror or exc,
            )


class Refusable:
    """A ``store`` whose record is read without its pages while ``refused()`` (the service
    refused the token: :mod:`invtools.api.refusals`): a walk then replays nothing and sends
    its requests, its plan and seams still the record's; the record itself stays.

    >>> class Kept:
    ...     def load(self):
    ...         return Record(datetime.now().astimezone(), Plan(), ((0, None, b"{}"),), seams=())
    >>> [len(Refusable(Kept(), lambda: no).load().pieces) for no in (False, True)]
    [1, 0]
    """

    def __init__(self, store: WalkStore, refused: Callable[[], bool]) -> None:
        self.store, self.refused = store, refused

    def load(self) -> Record | None:
        record = self.store.load()
        return replace(record, pieces=()) if record is not None and self.refused() else record

    def save(self, record: Record) -> None:
        self.store.save(record)


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
