"""What a response cache holds per team, and pruning it: :func:`cache_info`,
:func:`prune_cache` (the public calls ``invtools.cache_info()`` / ``invtools.prune_cache()``)
and :func:`prune_if_due` (what a client does when it is created).

Pruning itself is :func:`invtools.http.upkeep.prune`: only entries invtools wrote, through
requests-cache's public API. What it needs to know of the API is here: a transaction detail at
``?revision=N`` is one version of that transaction, so a stored newer revision supersedes it.
(A client already forgets the older revisions when it fetches a newer one,
:meth:`~invtools.api.client.Client.transaction`; pruning also catches those stored
before that, or by another process.)

>>> _revision_of("http://h/v1/location-txs/7?revision=2")
(('h', '7'), 2)
>>> _revision_of("http://h/v1/location-txs/7") is None      # the current version: expires
True
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Hashable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from invtools._durations import parse_duration
from invtools._types import TEAM_PATH
from invtools.api.endpoints import AT_REVISION, Team
from invtools.api.records import clear_walks, walks_folder
from invtools.errors import APIError, ArgumentTypeError
from invtools.http import upkeep
from invtools.http.cache import is_own_key, resolve_cache_path

if TYPE_CHECKING:  # pandas is imported when a frame is made
    import pandas as pd

__all__ = ["cache_info", "prune_cache", "prune_if_due", "INFO_COLUMNS"]

#: How long a walk record is kept (seconds): a day, as the transactions list's pages.
RECORDS_KEPT = 86_400.0
#: The columns of :func:`cache_info`.
INFO_COLUMNS = ["team", "service", "prefix", "entries", "expired", "bytes", "oldest", "newest"]

_BLANK = dict.fromkeys(INFO_COLUMNS) | {"entries": 0, "expired": 0, "bytes": 0}


def _revision_of(url: str) -> tuple[Hashable, int] | None:
    """``((service, transaction id), revision)`` of a detail at a revision, else None."""
    m = AT_REVISION.search(url)
    return None if m is None else ((urlsplit(url).netloc, m.group(1)), int(m.group(2)))


def prune_if_due(cache: Any) -> None:
    """Remove the expired entries invtools wrote from a client's open cache (its session's
    ``SQLiteCache``), and walk records older than a day (the lists they name expire by then),
    unless that was done less than a day ago. Reads only entries that expire and never
    compacts (rewrites) the file, so creating a client stays cheap. Never raises."""
    if upkeep.maybe_prune(cache) is not None:  # it was due
        clear_walks(walks_folder(Path(cache.db_path)), older_than=time.time() - RECORDS_KEPT)


def prune_cache(
    cache: bool | str | os.PathLike = True, *, older_than: Any = None, now: float | None = None
) -> dict[str, int] | None:
    """Prune a response cache now: the user's (``cache=True``, where every ``Client`` keeps
    its cache by default) or the file or folder given. Removes only entries invtools wrote:
    expired answers, transaction details superseded by a newer revision, answers of a local
    server older than a day, and with ``older_than`` (``"30D"``, a timedelta) anything stored
    before then. Entries of other programs sharing the file, and entries that cannot be read,
    are left alone. Then, when something was removed, compacts the file (SQLite ``VACUUM``:
    it rewrites the file, and is skipped while another process holds it).

    Returns how many entries went for each reason (``expired``, ``superseded``, ``local``,
    ``older``; ``removed`` in all), how many were ``left_alone``, and the file's
    ``bytes_before``/``bytes_after``; None for ``cache=False``. Clients prune their cache
    file by themselves when they are created, at most once a day, without compacting it.

    >>> prune_cache(False) is None
    True
    """
    path = resolve_cache_path(cache)
    if path is None:
        return None
    older = parse_duration(older_than, name="older_than", zero=True)
    with upkeep.open_cache(path) as opened:
        if opened is None:
            size = dict.fromkeys(["bytes_before", "bytes_after"], upkeep.file_size(path))
            return dict.fromkeys(upkeep.REPORT_KEYS, 0) | size
        now = time.time() if now is None else now
        if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
            raise ArgumentTypeError(f"prune_cache: now is seconds since the epoch, not {now!r}")
        kept = RECORDS_KEPT if older is None else min(RECORDS_KEPT, older.total_seconds())
        clear_walks(walks_folder(path), older_than=now - kept)
        return upkeep.prune(opened, older_than=older, now=now, versions=_revision_of, compact=True)


def cache_info(cache: bool | str | os.PathLike = True) -> pd.DataFrame:
    """What a response cache holds, per team: a DataFrame with one row per token's entries
    (``team`` name when its team answer is cached, ``service``, ``prefix``: a salted hash of
    the token, never the token; ``entries``, ``expired``, ``bytes`` of the cached bodies,
    ``oldest``, ``newest``), largest first. Entries another program wrote, or that cannot be
    read, are one row with prefix ``"(other)"``. ``attrs["path"]`` and
    ``attrs["file_bytes"]`` say where the file is and its size on disk. ``cache`` as for
    ``Client``: True is the user's cache. Looking never makes a cache file.

    >>> info = cache_info()                              # the user's cache
    >>> info.columns.tolist()
    ['team', 'service', 'prefix', 'entries', 'expired', 'bytes', 'oldest', 'newest']
    """
    import pandas as pd

    path = resolve_cache_path(cache)
    rows: dict[str, dict[str, Any]] = {}
    if path is not None:
        with upkeep.open_cache(path) as opened:
            if opened is not None:
                _count(opened, rows)
    frame = pd.DataFrame(list(rows.values()), columns=INFO_COLUMNS)
    types = dict.fromkeys(["team", "service", "prefix"], "string")
    frame = frame.astype(types | dict.fromkeys(["entries", "expired", "bytes"], "int64"))
    for col in ("oldest", "newest"):
        frame[col] = pd.to_datetime(frame[col], utc=True).astype("datetime64[ms, UTC]")
    frame = frame.sort_values("bytes", ascending=False, ignore_index=True)
    frame.attrs.update(
        path=None if path is None else str(path),
        file_bytes=0 if path is None else upkeep.file_size(path),
    )
    return frame


def _count(cache: Any, rows: dict[str, dict[str, Any]]) -> None:
    now = datetime.now(UTC)
    for key, response in upkeep.scan(cache):
        ours = response is not None and is_own_key(key)
        prefix = key.split(":", 1)[0] if ours else "(other)"
        row = rows.setdefault(prefix, {**_BLANK, "prefix": prefix})
        row["entries"] += 1
        if response is None:
            continue
        row["bytes"] += response.size
        if not ours:
            continue
        url = response.url or ""
        row["service"] = row["service"] or urlsplit(url).netloc or None
        expires = upkeep.as_utc(response.expires)
        row["expired"] += int(expires is not None and expires <= now)
        created = upkeep.as_utc(response.created_at)
        if created is not None:
            row["oldest"] = min(filter(None, (row["oldest"], created)))
            row["newest"] = max(filter(None, (row["newest"], created)))
        if urlsplit(url).path.endswith(TEAM_PATH):
            row["team"] = _team_name(response.content) or row["team"]


def _team_name(body: Any) -> str | None:
    try:
        name = Team.from_body(json.loads(body)).name
    except (TypeError, ValueError, APIError):
        return None
    return name if isinstance(name, str) else None
