"""Keeping a response cache small, and seeing what is in it: :func:`prune`, :func:`maybe_prune`,
:func:`cache_info`.

A cache file only grows unless something removes what no client will read again:

- **expired** answers (their expiry passed: lists after a day, items after 10 minutes, ...);
- **superseded** transaction details: a detail at revision 3 once revision 4 is stored for the
  same team and transaction (a client asks for the revision the list shows, the newest);
- answers of a **local** server (127.0.0.1, localhost) older than a day: a stand-in server's
  port and data change at every start, so they would never be asked for again;
- entries under a key no client of this version makes (an older invtools' key format) or that
  cannot be read ("foreign");
- with ``older_than=``, anything stored before then.

A client prunes its cache file when it is created, at most once a day (a ``.pruned`` marker
file next to the cache records when), and ``invtools.prune_cache()`` does it now. The file is
then compacted (SQLite ``VACUUM``) when something was removed and no other process holds it.

:func:`cache_info` says what a cache holds per team: the team's name when its
``/v1/teams/linked`` answer is in the cache, the service, the key prefix (a salted hash of
the token, never the token), entries, expired entries, bytes, oldest and newest.

Entries are read with :mod:`pickle`, the way requests-cache stores them in this private (0600)
file, without building response objects: about 10 us an entry.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from invtools._types import parse_duration
from invtools.http.cache import resolve_cache_path

__all__ = ["prune_cache", "cache_info", "prune", "maybe_prune", "read_info", "PRUNE_EVERY",
           "LOCAL_MAX_AGE", "INFO_COLUMNS"]

logger = logging.getLogger("invtools")

#: How often a client's creation prunes its cache file.
PRUNE_EVERY = timedelta(days=1)
#: How long answers of a server on this machine are kept.
LOCAL_MAX_AGE = timedelta(days=1)
#: The columns of :func:`cache_info`.
INFO_COLUMNS = ["team", "service", "prefix", "entries", "expired", "bytes", "oldest", "newest"]

_KEY = re.compile(r"^[0-9a-f]{16}:[0-9a-f]{32}$")  # invtools.http.cache.CacheKeys.key
_DETAIL = re.compile(r"/v1/(?:location-txs|transactions)/(\d+)\?(?:[^#]*&)?revision=(\d+)")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".pruned")


def _entries(con: sqlite3.Connection, where: str = "") -> Iterator[tuple[str, int, dict | None]]:
    """(key, stored bytes, the stored response as a dict or None if unreadable)."""
    for key, blob in con.execute(f"SELECT key, value FROM responses {where}"):
        try:
            raw = pickle.loads(blob)
        except Exception:  # noqa: BLE001 - a damaged entry: reported as unreadable
            raw = None
        yield key, len(blob or b""), raw if isinstance(raw, dict) else None


def _created(raw: dict | None) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(raw["created_at"]))
    except (TypeError, KeyError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _service(url: str) -> str:
    return urlsplit(url).netloc


def _is_local(url: str) -> bool:
    return (urlsplit(url).hostname or "") in _LOCAL_HOSTS or (
        urlsplit(url).hostname or "").startswith("127.")


def _open(path: Path) -> sqlite3.Connection | None:
    """The cache's SQLite file, or None when there is none (looking never makes one)."""
    if not path.exists():
        return None
    con = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        con.execute("SELECT 1 FROM responses LIMIT 1")
    except sqlite3.Error:
        con.close()
        return None
    return con


def prune(path: str | os.PathLike, *, older_than: timedelta | None = None,
          now: float | None = None) -> dict[str, int]:
    """Remove from the cache file at ``path`` what no client will read again (see the module
    docstring) and compact it; returns how many entries went for each reason, and the file's
    bytes before and after. ``now`` (seconds since the epoch) is for tests."""
    path = Path(path)
    now = time.time() if now is None else now
    report = {"expired": 0, "superseded": 0, "local": 0, "foreign": 0, "older": 0,
              "removed": 0, "bytes_before": _size(path), "bytes_after": 0}
    con = _open(path)
    if con is None:
        return report
    try:
        report["expired"] = con.execute(
            "DELETE FROM responses WHERE expires IS NOT NULL AND expires <= ?",
            (int(now),)).rowcount
        stale = _stale_keys(con, older_than, now, report)
        for i in range(0, len(stale), 500):
            chunk = stale[i:i + 500]
            con.execute(f"DELETE FROM responses WHERE key IN ({','.join('?' * len(chunk))})",
                        chunk)
        report["removed"] = sum(report[k] for k in ("expired", "superseded", "local",
                                                     "foreign", "older"))
        if report["removed"]:
            try:
                con.execute("VACUUM")
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError as exc:  # another process holds it: next time
                logger.debug("cache not compacted: %s", exc)
    finally:
        con.close()
    report["bytes_after"] = _size(path)
    logger.info("pruned %d cached responses from %s", report["removed"], path)
    return report


def _stale_keys(con: sqlite3.Connection, older_than: timedelta | None, now: float,
                report: dict[str, int]) -> list[str]:
    """Keys to remove besides the expired ones, counted by reason into ``report``."""
    stale: list[str] = []
    cutoff = None if older_than is None else now - older_than.total_seconds()
    local_cutoff = now - LOCAL_MAX_AGE.total_seconds()
    newest: dict[tuple[str, str, str], tuple[int, str]] = {}
    for key, _size_, raw in _entries(con):
        if raw is None or not _KEY.match(key):
            stale.append(key)
            report["foreign"] += 1
            continue
        url = str(raw.get("url") or "")
        created = _created(raw)
        stamp = created.timestamp() if created is not None else now
        if cutoff is not None and stamp <= cutoff:
            stale.append(key)
            report["older"] += 1
        elif _is_local(url) and stamp <= local_cutoff:
            stale.append(key)
            report["local"] += 1
        elif m := _DETAIL.search(url):
            ident = (key.split(":", 1)[0], _service(url), m.group(1))
            revision = int(m.group(2))
            kept = newest.get(ident)
            if kept is None or revision > kept[0]:
                if kept is not None:
                    stale.append(kept[1])
                    report["superseded"] += 1
                newest[ident] = (revision, key)
            else:
                stale.append(key)
                report["superseded"] += 1
    return stale


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal"))
               if p.exists())


def maybe_prune(path: str | os.PathLike, *, every: timedelta = PRUNE_EVERY) -> dict | None:
    """:func:`prune` the cache at ``path`` unless that was done less than ``every`` ago (a
    marker file next to it says when). Never raises: a cache that cannot be pruned now is
    pruned another time. Returns the report, or None when it was not due."""
    path = Path(path)
    marker = _marker(path)
    try:
        if marker.exists() and time.time() - marker.stat().st_mtime < every.total_seconds():
            return None
        report = prune(path)
        fd = os.open(marker, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        os.close(fd)
        os.utime(marker)
        return report
    except (OSError, sqlite3.Error) as exc:
        logger.warning("could not prune the response cache %s: %s", path, exc)
        return None


def read_info(path: str | os.PathLike | None) -> Any:
    """What the cache file at ``path`` holds, one row per team (key prefix): columns of
    :data:`INFO_COLUMNS`. ``team`` is the team's name when its ``/v1/teams/linked`` answer is
    in the cache (else <NA>), ``service`` the host it came from. ``attrs`` holds the file's
    ``path`` and ``file_bytes``. Never a token."""
    import pandas as pd

    path = None if path is None else Path(path)
    rows: dict[str, dict[str, Any]] = {}
    con = None if path is None else _open(path)
    now = datetime.now(timezone.utc)
    if con is not None:
        try:
            for key, size, raw in _entries(con):
                prefix = key.split(":", 1)[0] if _KEY.match(key) else "(other)"
                row = rows.setdefault(prefix, {"team": None, "service": None, "prefix": prefix,
                                               "entries": 0, "expired": 0, "bytes": 0,
                                               "oldest": None, "newest": None})
                row["entries"] += 1
                row["bytes"] += size
                if raw is None:
                    continue
                url = str(raw.get("url") or "")
                row["service"] = row["service"] or _service(url) or None
                expires = _created({"created_at": raw.get("expires")})
                row["expired"] += int(expires is not None and expires <= now)
                created = _created(raw)
                if created is not None:
                    row["oldest"] = min(filter(None, (row["oldest"], created)))
                    row["newest"] = max(filter(None, (row["newest"], created)))
                if urlsplit(url).path.endswith("/v1/teams/linked"):
                    row["team"] = _team_name(raw.get("_content")) or row["team"]
        finally:
            con.close()
    frame = pd.DataFrame(list(rows.values()), columns=INFO_COLUMNS)
    frame = frame.astype({"team": "string", "service": "string", "prefix": "string",
                          "entries": "int64", "expired": "int64", "bytes": "int64"})
    for col in ("oldest", "newest"):
        frame[col] = pd.to_datetime(frame[col], utc=True).astype("datetime64[ms, UTC]")
    frame = frame.sort_values("bytes", ascending=False, ignore_index=True)
    frame.attrs.update(path=None if path is None else str(path),
                       file_bytes=0 if path is None else _size(path))
    return frame


def _team_name(body: Any) -> str | None:
    try:
        team = json.loads(body)
    except (TypeError, ValueError):
        return None
    if isinstance(team, dict) and isinstance(team.get("item"), dict):
        team = team["item"]  # the wrapped form some deployments send
    name = team.get("name") if isinstance(team, dict) else None
    return name if isinstance(name, str) else None


# -- the public calls: invtools.prune_cache(), invtools.cache_info() ---------------------------

def prune_cache(cache: bool | str | os.PathLike = True, *, older_than: Any = None,
                now: float | None = None) -> dict[str, int] | None:
    """Prune a response cache now: the user's (``cache=True``, where every ``Client`` keeps
    its cache by default) or the file or folder given. Removes expired answers, transaction
    details superseded by a newer revision, answers of a local server older than a day, entries
    no client reads, and with ``older_than`` (``"30D"``, a timedelta) anything stored before
    then; then compacts the file. Returns how many entries went for each reason (``expired``,
    ``superseded``, ``local``, ``foreign``, ``older``, ``removed`` in all) and the file's
    ``bytes_before``/``bytes_after``; None for ``cache=False``. Clients do this by themselves
    when they are created, at most once a day.

    >>> prune_cache(False) is None
    True
    """
    path = resolve_cache_path(cache)
    if path is None:
        return None
    return prune(path, older_than=parse_duration(older_than, name="older_than", zero=True),
                 now=now)


def cache_info(cache: bool | str | os.PathLike = True) -> Any:
    """What a response cache holds, per team: a DataFrame with one row per token's entries
    (``team`` name when its team answer is cached, ``service``, ``prefix``: a salted hash of
    the token, never the token; ``entries``, ``expired``, ``bytes``, ``oldest``, ``newest``),
    largest first; ``attrs["path"]`` and ``attrs["file_bytes"]`` say where the file is and its
    size on disk. ``cache`` as for ``Client``: True is the user's cache.

    >>> info = cache_info()                              # the user's cache
    >>> info.columns.tolist()
    ['team', 'service', 'prefix', 'entries', 'expired', 'bytes', 'oldest', 'newest']
    """
    return read_info(resolve_cache_path(cache))
