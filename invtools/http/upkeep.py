"""Keeping a response cache file small, through requests-cache's public API only:
:func:`prune`, :func:`maybe_prune`, and :func:`open_cache` / :func:`scan` to look inside.

A cache file only grows unless something removes what no client will read again. Pruning
removes **only entries invtools wrote** (keys of :class:`~invtools.http.cache.CacheKeys`
shape, see :func:`~invtools.http.cache.is_own_key`) that are:

- **expired** (their expiry passed);
- **older** than the caller's ``older_than=``, when given;
- answers of a **local** server (127.0.0.1, localhost) older than a day: a stand-in server's
  port and data change at every start, so they would never be asked for again;
- **superseded**, when the caller says which URLs are versions of one thing (``versions=``):
  every version of a thing but the newest, per token.

Anything else in the file is **left alone**: another program's entries (a cache file may be
shared) and entries this requests-cache cannot read (e.g. written by a release with another
serializer: they are another program's as far as we can tell). They are counted, not removed.

A client's creation runs a **quick** prune at most once a day (:func:`maybe_prune`): only the
entries that expire are read, and expired ones go. Reading an entry through requests-cache costs
about 50 us (it builds the response object), so reading the thousands of details kept for good
every day would make creating a client slow; the full prune is ``invtools.prune_cache()``.

Entries are read as requests-cache's ``CachedResponse`` objects (``created_at``, ``expires``,
``url``, ``size``) and removed with its bulk delete, through
:class:`~invtools.http.cachefile.CacheFile` (whose wait for the file's lock is bounded, and
whose failures are :class:`~invtools.errors.CacheError`); nothing here reads or writes the
``responses`` table itself. A file that cannot be read, or is another program's database, is
said to be so (:class:`~invtools.errors.CacheError`), never called empty. Compacting the file
(``VACUUM``) happens only when asked (``compact=True``): it rewrites the whole file and waits
for other processes using it.

Nothing here knows about endpoints or teams: which URLs are versions of one thing is the
caller's knowledge (:mod:`invtools.api.cacheinfo`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Generator, Hashable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

from requests_cache import CachedResponse

from invtools.errors import CacheError
from invtools.http.cache import is_own_key
from invtools.http.cachefile import CacheFile, file_errors, is_cache_file

__all__ = ["prune", "maybe_prune", "open_cache", "scan", "file_size", "as_utc", "REPORT_KEYS"]

logger = logging.getLogger("invtools")

#: How often a client's creation prunes its cache file.
PRUNE_EVERY = timedelta(days=1)
#: How long answers of a server on this machine are kept.
LOCAL_MAX_AGE = timedelta(days=1)
#: The counts a :func:`prune` report holds, with ``bytes_before`` and ``bytes_after``.
REPORT_KEYS = ("expired", "older", "local", "superseded", "removed", "left_alone")

#: ``url -> (thing, version)`` when the URL is one version of a thing (only the newest version
#: of a thing is kept, per token), else None.
Versions = Callable[[str], tuple[Hashable, int] | None]

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def file_size(path: str | os.PathLike) -> int:
    """Bytes on disk of a cache file and its write-ahead log (0 when there is none).

    >>> file_size("/nonexistent/responses.sqlite")
    0
    """
    path = Path(path)
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


@contextmanager
def open_cache(path: str | os.PathLike) -> Iterator[CacheFile | None]:
    """The cache file at ``path``, closed afterwards; None when there is no cache there
    (looking never makes one). Raises :class:`~invtools.errors.CacheError` naming the file
    when it cannot be read or is another program's database."""
    if not is_cache_file(Path(path)):
        yield None
        return
    # No journal mode asked for: a file in WAL mode stays so, another program's file as it was.
    with closing(CacheFile(Path(path))) as cache:
        yield cache


@contextmanager
def _quiet_unreadable() -> Iterator[None]:
    # requests-cache logs an ERROR for each entry it cannot read; with no logging set up
    # Python prints each to stderr. Entries we leave alone on purpose are counted instead.
    quiet = logging.getLogger("requests_cache.backends.base")

    def drop(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize")

    quiet.addFilter(drop)
    try:
        yield
    finally:
        quiet.removeFilter(drop)


def scan(cache: CacheFile) -> Iterator[tuple[str, CachedResponse | None]]:
    """``(key, response)`` for every entry of ``cache``; ``response`` is None for an entry
    this requests-cache cannot read. Readable entries come in one query."""
    with file_errors(cache.db_path), _quiet_unreadable():
        keys = set(cache.held(prefix=""))
        for response in cache.filter():  # valid and expired alike; unreadable ones are skipped
            keys.discard(response.cache_key)
            yield response.cache_key, response
    for key in keys:
        yield key, None


def _expiring(cache: CacheFile) -> Iterator[tuple[str, CachedResponse | None]]:
    """``(key, response)`` for the readable entries that have an expiry, latest first. The
    ones kept for good (details at a revision: the bulk of a cache) are never read: their
    expiry is NULL, which SQLite sorts last in a descending order, so reading stops at the
    first of them."""
    # requests-cache annotates sorted() as an Iterator; it is a generator, closed here
    ordered = cast(
        "Generator[CachedResponse, None, None]", cache.sorted(key="expires", reversed=True)
    )
    with file_errors(cache.db_path), _quiet_unreadable(), closing(ordered) as entries:
        for response in entries:
            if response.expires is None:
                break
            yield response.cache_key, response


def as_utc(when: datetime | None) -> datetime | None:
    """A time of a ``CachedResponse`` as an aware UTC datetime (older releases wrote naive ones).

    >>> as_utc(datetime(2026, 5, 2)).isoformat(), as_utc(None)
    ('2026-05-02T00:00:00+00:00', None)
    """
    return when if when is None or when.tzinfo else when.replace(tzinfo=UTC)


def prune(
    cache: CacheFile,
    *,
    older_than: timedelta | None = None,
    now: float | None = None,
    versions: Versions | None = None,
    compact: bool = False,
    quick: bool = False,
) -> dict[str, int]:
    """Remove from ``cache`` the entries invtools wrote that no client will read again (see
    the module docstring); ``compact=True`` then compacts the file when something went.
    ``quick=True`` reads only the entries that expire (expired ones go): entries kept for good
    (details at a revision, the bulk of a cache) are not even read, so its cost grows with the
    list pages and such, not with the details (and ``older_than`` sees only those read).
    Returns how many entries went for each reason (``expired``, ``older``, ``local``,
    ``superseded``; ``removed`` in all), how many of those read were ``left_alone`` (not
    invtools', or unreadable), and the file's ``bytes_before``/``bytes_after``. ``now``
    (seconds since the epoch) is for tests."""
    path = Path(cache.db_path)
    report = dict.fromkeys(REPORT_KEYS, 0)
    report["bytes_before"] = file_size(path)
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    cutoff = None if older_than is None else moment - older_than
    stale: list[str] = []
    versioned: dict[tuple[str, Hashable], list[tuple[int, str]]] = {}  # (token, thing) -> versions
    for key, response in (_expiring if quick else scan)(cache):
        if response is None or not is_own_key(key):
            report["left_alone"] += 1
            continue
        reason = _reason(response, moment, cutoff)
        version = None if reason or versions is None else versions(response.url or "")
        if version is not None:
            versioned.setdefault((key.split(":", 1)[0], version[0]), []).append((version[1], key))
        elif reason is not None:
            stale.append(key)
            report[reason] += 1
    for found in versioned.values():  # all but the newest version (the first met of it)
        found.remove(max(found, key=lambda version: version[0]))
        stale += [key for _, key in found]
        report["superseded"] += len(found)
    cache.delete(*stale)
    report["removed"] = len(stale)
    if compact and stale:
        _compact(cache)
    report["bytes_after"] = file_size(path)
    logger.info(
        "pruned %d cached responses from %s (left alone: %d of other programs or unreadable)",
        report["removed"],
        path,
        report["left_alone"],
    )
    return report


def _reason(response: CachedResponse, moment: datetime, cutoff: datetime | None) -> str | None:
    expires = as_utc(response.expires)
    if expires is not None and expires <= moment:
        return "expired"
    created = as_utc(response.created_at) or moment
    if cutoff is not None and created <= cutoff:
        return "older"
    host = urlsplit(response.url or "").hostname or ""
    if (host in _LOCAL_HOSTS or host.startswith("127.")) and created <= moment - LOCAL_MAX_AGE:
        return "local"
    return None


def _compact(cache: CacheFile) -> None:
    # On a connection of its own, outside any transaction: requests-cache 1.3.0's vacuum()
    # runs VACUUM inside its write transaction, which SQLite refuses.
    try:
        with closing(sqlite3.connect(cache.db_path, timeout=1.0, isolation_level=None)) as con:
            con.execute("VACUUM")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the log's pages back to the file
    except sqlite3.OperationalError as exc:  # another process holds it: next time
        logger.debug("cache not compacted: %s", exc)


def maybe_prune(cache: CacheFile) -> dict | None:
    """A quick :func:`prune` of ``cache`` (expired entries only, never compacting) unless
    that was done less than :data:`PRUNE_EVERY` ago: a marker file next to the cache file says
    when. Never raises: a cache that cannot be pruned now is pruned another time. Returns the
    report, or None when it was not due."""
    path = Path(cache.db_path)
    marker = path.with_name(path.name + ".pruned")
    try:
        if marker.exists() and time.time() - marker.stat().st_mtime < PRUNE_EVERY.total_seconds():
            return None
        report = prune(cache, quick=True)
        marker.touch(mode=0o600)  # made, or its time now
        return report
    except (OSError, CacheError) as exc:
        logger.warning("could not prune the response cache %s: %s", path, exc)
        return None
