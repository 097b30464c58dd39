"""The response cache's SQLite file: requests-cache's own storage (:class:`CacheFile`), with
every wait for the file bounded and every failure of the file the package's
:class:`~invtools.errors.CacheError`, naming the file and what to do.

requests-cache 1.3 writes under ``BEGIN IMMEDIATE`` tried again for ever, holding the lock
every reader of the process takes: a file that another notebook or script kept locked made any
call storing an answer hang, and cached reads in other threads with it. Here the wait for the
lock (Python's, then SQLite's) is at most ``lock_wait`` seconds, the client's connect timeout;
a failed write is rolled back and raised (requests-cache swallows some, and hides a full disk
under "cannot rollback - no transaction is active"). A file that is not a cache -- damaged, or
another program's database -- is refused before anything in it is changed (requests-cache's
set-up ALTERs a ``responses`` table it finds).

Every write of this process to a cache file goes through that file's one :class:`CacheFile`
connection, under its lock: no other connection of ours holds the file's write lock while
waiting for a lock of this process (the walk records are files of their own beside it;
``CONTRIBUTING.md``, "Writing to the cache file").

>>> file_error("/tmp/c.sqlite", sqlite3.DatabaseError("file is not a database")).__class__
<class 'invtools.errors.CacheError'>
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from requests_cache import SQLiteCache
from requests_cache.backends.base import BaseCache
from requests_cache.backends.sqlite import SQLiteDict

from invtools.errors import CacheError

__all__ = ["CacheFile", "file_errors", "file_error", "is_cache_file", "LOCK_WAIT"]
__all__ += ["stored_body"]

#: How long a write waits for the file's lock (seconds) unless told: requests-cache's default.
LOCK_WAIT = 5.0
#: Keys asked about in one query (SQLite allows 999 parameters).
_CHUNK = 500
#: What happened and what to do, by the start of SQLite's error name.
_ADVICE = {
    ("SQLITE_BUSY", "SQLITE_LOCKED"): "is busy: another program (a second notebook or script "
    "on this cache, a prune) held its lock for longer than this client waits{waited}. Wait "
    "for it and try again, or pass another file as cache=..., or cache=False",
    # a disk that fills under SQLite's journal often shows as an I/O error: the mirror's rule
    ("SQLITE_FULL", "SQLITE_IOERR"): "could not be written ({reason}): the disk is full (or "
    "your disk quota, or the size a file may have, is reached); nothing was half-written. "
    "Free some space (invtools.prune_cache() removes what no client reads again), or pass a "
    "file on another disk as cache=..., or cache=False",
    ("SQLITE_CORRUPT", "SQLITE_NOTADB"): "is damaged or not a database ({reason}). Delete it, "
    "with its -wal and -shm files if any (it holds only cached answers: they are fetched "
    "again), or pass another path as cache=..., or cache=False",
    ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM"): "cannot be written ({reason}): a "
    "read-only file, folder or disk. Pass a file you may write as cache=..., or cache=False",
}
_OTHER = "failed ({reason}). Pass another path as cache=..., or cache=False"


def file_error(path: Any, exc: BaseException, *, waited: float | None = None) -> CacheError:
    """The :class:`CacheError` for ``exc`` (an ``sqlite3`` error) of the cache file at
    ``path``: which file, what happened, what to do."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    advice = next((a for names, a in _ADVICE.items() if name.startswith(names)), _OTHER)
    waited_s = "" if waited is None else f" ({waited:g} s)"
    said = advice.format(reason=str(exc) or type(exc).__name__, waited=waited_s)
    return CacheError(f"The response cache file {str(path)!r} {said}.")


@contextmanager
def file_errors(path: Any, *, waited: float | None = None) -> Iterator[None]:
    """Turn an ``sqlite3`` error of the cache file at ``path`` into :func:`file_error`'s."""
    try:
        yield
    except sqlite3.Error as exc:
        raise file_error(path, exc, waited=waited) from exc


def is_cache_file(path: Path, *, wait: float = LOCK_WAIT) -> bool:
    """Whether ``path`` holds a requests-cache ``responses`` table (False: no file, an empty
    one, or a database with no tables yet). Raises :class:`CacheError` when it cannot be read
    (damaged, not a database, locked) or is another program's database; only reads it."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with file_errors(path, waited=wait), closing(sqlite3.connect(path, timeout=wait)) as con:
        columns: dict[str, set[str]] = {}
        for table, column in con.execute(
            "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
            "WHERE m.type = 'table'"
        ):
            columns.setdefault(table, set()).add(column)
    ours = {"responses": {"key", "value", "expires"}, "redirects": {"key", "value"}}
    if columns and (
        "responses" not in columns or any(ours[t] - columns[t] for t in ours if t in columns)
    ):
        raise CacheError(
            f"The file {str(path)!r} is another program's database, not a response cache "
            f"(its tables: {', '.join(sorted(columns))}); nothing in it was changed. Pass "
            "another path as cache=..., or cache=False."
        )
    return bool(columns)


class _Table(SQLiteDict):
    """requests-cache's SQLite table of the cache ``file``, whose waits for the file's lock end
    after ``file.lock_wait`` seconds and whose failed writes are rolled back and raised."""

    def __init__(self, *args: Any, file: CacheFile, **kwargs: Any) -> None:
        self.file = file
        super().__init__(*args, timeout=file.lock_wait, **kwargs)

    @contextmanager
    def connection(self, commit: bool = False) -> Iterator[sqlite3.Connection]:
        started = time.monotonic()
        # requests-cache takes this lock for every read and holds it through every write
        if not self._lock.acquire(timeout=self.file.lock_wait):
            busy = sqlite3.OperationalError("database is locked")
            busy.sqlite_errorname = "SQLITE_BUSY"  # as SQLite says it
            raise file_error(self.db_path, busy, waited=self.file.lock_wait)
        try:
            with super().connection() as con:  # opened once, as requests-cache opens it
                pass
            if commit and not self._active_transaction:
                left = max(0.0, self.file.lock_wait - (time.monotonic() - started))
                with file_errors(self.db_path, waited=self.file.lock_wait):
                    con.execute(f"PRAGMA busy_timeout = {round(left * 1000)}")
                    con.execute("BEGIN IMMEDIATE")
                self._active_transaction = True
                try:
                    yield con
                    con.execute("COMMIT")  # con.commit() hides a full disk (SystemError)
                except BaseException:
                    if con.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            con.execute("ROLLBACK")
                    raise
                finally:
                    self._active_transaction = False
                return
        finally:
            self._lock.release()
        yield con  # a read: not under the lock, as requests-cache reads


class CacheFile(SQLiteCache):
    """requests-cache's SQLite cache of the file at ``path``: waits for the file's lock at
    most ``lock_wait`` seconds, and fails only with :class:`CacheError` (naming the file and
    what to do). A file that is not a cache (damaged, another program's) is refused
    unchanged. ``kwargs`` as for ``SQLiteCache`` (``wal=True``). ``lock_wait``: a client with
    a shorter timeout sharing the file lowers it."""

    def __init__(self, path: Path, *, lock_wait: float = LOCK_WAIT, **kwargs: Any) -> None:
        BaseCache.__init__(self, cache_name=str(path))
        self.lock_wait = lock_wait
        is_cache_file(Path(path), wait=lock_wait)
        with file_errors(path, waited=lock_wait):
            self.responses = _Table(path, table_name="responses", file=self, **kwargs)
            self.redirects = _Table(
                path,
                table_name="redirects",
                lock=self.responses._lock,
                serializer=None,
                file=self,
                **kwargs,
            )

    def get_response(self, key: str, default: Any = None) -> Any:
        with file_errors(self.db_path, waited=self.lock_wait):
            return super().get_response(key, default)

    def save_response(self, *args: Any, **kwargs: Any) -> None:
        with file_errors(self.db_path, waited=self.lock_wait):
            super().save_response(*args, **kwargs)

    def delete(self, *keys: str, **conditions: Any) -> None:
        """requests-cache's ``delete``; by keys alone, only those the file holds are deleted
        (requests-cache's deletes each key asked for and then rewrites the redirects table,
        two writes each time an answer is not stored) and nothing is written when it holds
        none. Never compacts the file unless ``vacuum=True``."""
        with file_errors(self.db_path, waited=self.lock_wait):
            if conditions:
                super().delete(*keys, **{"vacuum": False, **conditions})
            elif found := self.held(keys):
                self.responses.bulk_delete(found)

    def bodies(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """``(key, body)`` of each of ``keys`` the file holds a fresh 200 answer for (unexpired,
        as requests-cache would answer it), read in bulk on a short connection of its own (as
        :meth:`held`), a chunk of keys at a time: the bytes the server sent, without
        requests-cache's per-response lookup (about a millisecond each, most of a cached
        re-run's time). A stored answer in another shape is left out: requests-cache's own
        path answers it."""
        keys = list(keys)
        serializer = self.responses.serializer
        decode = serializer.load_stages[:-1] if serializer is not None else []  # not cattrs
        with (
            file_errors(self.db_path, waited=self.lock_wait),
            closing(sqlite3.connect(self.db_path, timeout=self.lock_wait)) as con,
        ):
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                found = con.execute(
                    f"SELECT key, value FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
                    " AND (expires IS NULL OR expires > ?)",
                    [*chunk, int(time.time())],
                ).fetchall()
                for key, value in found:
                    body = stored_body(value, decode)
                    if body is not None:
                        yield key, body

    def held(self, keys: Iterable[str] = (), *, prefix: str | None = None) -> list[str]:
        """Which of ``keys`` the file holds (or every key starting with ``prefix``): keys
        only, read on a short connection of its own (a multi-row read on requests-cache's,
        which every thread of the process shares, broke another thread's write at once:
        "another row available"). In WAL mode a writer does not block it."""
        keys = list(keys)
        chunks = [keys[start : start + _CHUNK] for start in range(0, len(keys), _CHUNK)]
        queries: list[tuple[str, list[Any]]] = [
            (f"key IN ({','.join('?' * len(chunk))})", chunk) for chunk in chunks
        ]
        if prefix is not None:
            queries.append(("substr(key, 1, ?) = ?", [len(prefix), prefix]))
        if not queries:
            return []
        with (
            file_errors(self.db_path, waited=self.lock_wait),
            closing(sqlite3.connect(self.db_path, timeout=self.lock_wait)) as con,
        ):
            return [
                key
                for where, args in queries
                for (key,) in con.execute(f"SELECT key FROM responses WHERE {where}", args)
            ]


def stored_body(value: Any, stages: Iterable[Any]) -> bytes | None:
    """The body of a stored 200 answer, decoded by ``stages`` (requests-cache's serializer
    stages before its cattrs one) into the dict requests-cache unstructures a response to;
    None for anything else (another status, a body requests-cache decoded into JSON itself,
    a value that does not decode)."""
    try:
        for stage in stages:
            value = stage(value)
    except Exception:  # noqa: BLE001 - requests-cache's own path reads (or refuses) it
        return None
    if not isinstance(value, dict) or value.get("status_code") != 200:
        return None
    body = value.get("_content")
    return body if isinstance(body, bytes) else None
