"""make_session(): one pooled HTTP session with an on-disk cache and pacing.

The layers, top to bottom (a request goes down only as far as it must)::

    CacheMixin      requests-cache: a fresh cached 200 is answered here -- nothing below runs
    PacingMixin     waits until the request's budget has room (invtools.http.pacing)
    Session         requests: one connection pool, finite timeouts set by the caller

Because pacing sits *below* the cache, a cache hit costs no rate-limit budget. Retries are not
here: the client's one request path retries, so every attempt passes through the cache and the
pacing again and shows in the client's stats.

>>> s = make_session(cache_path=None)
>>> s.cache_keys is None
True
>>> s.close()
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests_cache import CacheMixin
from urllib3 import HTTPConnectionPool

from invtools.errors import ConfigError
from invtools.http.cache import NEVER_EXPIRE, CacheKeys, open_cache_file, storable
from invtools.http.cachefile import LOCK_WAIT, CacheFile
from invtools.http.pacing import RATE_LIMIT_SCOPES, Budget, PacingMixin
from invtools.http.retries import MAX_RATE_LIMIT_WAIT

__all__ = ["make_session", "POOL_SIZE"]

logger = logging.getLogger("invtools")

#: Connections kept per host: at least as many as requests the client has in flight, or
#: urllib3 warns and throws connections away (library-notes: latency). The default covers a
#: client's 8 detail requests in flight (``Client(concurrency=8)``), a list walk and another
#: call at once; a client with more in flight asks for twice its ``concurrency``.
POOL_SIZE = 16


class _CachedPacedSession(CacheMixin, PacingMixin, requests.Session):
    _release: weakref.finalize  # this session's hold on its backend (see _cached_session)

    def close(self) -> None:
        # Its connection pool, but not (as CacheMixin.close would) the backend: that is shared
        # (see _cached_session) and closes with the last session using it.
        requests.Session.close(self)
        self._release()


class _PacedSession(PacingMixin, requests.Session):
    cache_keys = None  # no cache


class _EagerHTTPConnectionPool(HTTPConnectionPool):
    """Plain-HTTP pool that connects *before* the request's headers are encoded, as urllib3's
    HTTPS pool does: a refused connection then fails with no frame on the stack holding the
    encoded ``Authorization`` header (http.client's ``msg`` bytes), so a traceback printed
    with its locals shows no token."""

    def _validate_conn(self, conn) -> None:
        super()._validate_conn(conn)
        if conn.is_closed:
            conn.connect()


class _EagerHTTPAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            **self.poolmanager.pool_classes_by_scheme,
            "http": _EagerHTTPConnectionPool,
        }


#: cache file -> (its one backend in this process, the sessions using it: a token each).
_backends: dict[str, tuple[CacheFile, set[object]]] = {}
_backends_lock = threading.Lock()
#: Sessions let go of (a key and a token each), not yet taken out of ``_backends``.
_released: deque[tuple[str, object]] = deque()


def _cached_session(path: Path, lock_wait: float, **settings: Any) -> _CachedPacedSession:
    """A session over the process's one requests-cache backend (one SQLite connection) for the
    cache file at ``path``, shared by every session of that file: two connections of one
    process writing the same file wait on each other's write lock (SQLite's), which made two
    clients filling one cache 20 to 60 times slower than one (and several teams at once slower
    than one after another). The backend closes when the last session using it closes or is
    garbage; a session made after that gets a new one, never a closing one. It waits for the
    file's lock at most the shortest ``lock_wait`` of its sessions."""
    key = str(path)
    with _backends_lock:
        if key not in _backends:
            # WAL with synchronous=NORMAL: a commit per stored response no longer waits for
            # the disk (7 ms each, most of a local 4,000-detail fetch); readers do not block
            # writers. A crash of the process loses nothing committed.
            _backends[key] = (CacheFile(path, lock_wait=lock_wait, wal=True), set())
        backend, users = _backends[key]
        backend.lock_wait = min(backend.lock_wait, lock_wait)
        session = _CachedPacedSession(backend=backend, **settings)
        token = object()
        users.add(token)
    _close_released()
    session._release = weakref.finalize(session, _release, key, token)
    return session


def _release(key: str, token: object) -> None:
    # A finalizer: it may run at any allocation, also in a thread that holds _backends_lock
    # (a garbage collection while a backend is made). It never waits for that lock: the
    # lock's holder closes what was released when it lets go (issue 26: the kernel hung).
    _released.append((key, token))
    _close_released()


def _close_released() -> None:
    while _released:
        if not _backends_lock.acquire(blocking=False):
            return  # its holder comes here when it lets go
        unused: list[CacheFile] = []
        try:
            while _released:
                key, token = _released.popleft()
                entry = _backends.get(key)
                if entry is not None and token in entry[1]:
                    entry[1].discard(token)
                    if not entry[1]:
                        unused.append(_backends.pop(key)[0])
        finally:
            _backends_lock.release()
        for backend in unused:
            backend.close()


def make_session(
    *,
    cache_path: Path | None,
    budget: Budget | None = None,
    rate_limit_scope: str = "endpoint",
    pool_size: int = POOL_SIZE,
    expire_after: Any = NEVER_EXPIRE,
    urls_expire_after: Mapping[Any, Any] | None = None,
    max_wait: float = MAX_RATE_LIMIT_WAIT,
    lock_wait: float = LOCK_WAIT,
) -> requests.Session:
    """Build the session: cached at ``cache_path`` (None = no cache), paced by ``budget``
    per endpoint (or per token with ``rate_limit_scope="token"``; None = not paced), keeping
    up to ``pool_size`` connections per host (at least as many as requests in flight); a
    request waits ``max_wait`` seconds at most for its budget.

    How long a cached answer stays fresh is the caller's policy (the client passes
    :mod:`invtools.api.endpoints`): ``urls_expire_after`` maps URL patterns (matched without the
    scheme, first match wins) to an expiry, ``expire_after`` covers the rest; requests-cache's
    own defaults (never expire, no patterns) otherwise.

    ``session.cache_keys`` is the cache's :class:`~invtools.http.cache.CacheKeys` (None
    without a cache). A request waits for the cache file's lock at most ``lock_wait`` seconds,
    and every failure of the file is a :class:`~invtools.errors.CacheError` naming it
    (:mod:`invtools.http.cachefile`): also here, for a damaged file or another program's.
    Raises :class:`~invtools.errors.ConfigError` naming the path if no file can be made there.
    """
    if not isinstance(rate_limit_scope, str) or rate_limit_scope not in RATE_LIMIT_SCOPES:
        raise ConfigError(
            f"rate_limit_scope must be one of "
            f"{', '.join(map(repr, RATE_LIMIT_SCOPES))}, not {rate_limit_scope!r}"
        )
    if cache_path is None:
        session: Any = _PacedSession()
    else:
        cache_path = Path(cache_path)
        if not cache_path.suffix:  # requests-cache would add it, and use another file
            cache_path = cache_path.with_suffix(".sqlite")
        keys = CacheKeys(open_cache_file(cache_path))
        session = _cached_session(
            cache_path,
            lock_wait,
            expire_after=expire_after,
            urls_expire_after=urls_expire_after,
            allowable_codes=(200,),
            allowable_methods=("GET",),
            key_fn=keys.key_fn,
            # Never: it would serve a stale 200 for any error, even a revoked token's 401.
            stale_if_error=False,
            # Only a whole JSON object sticks in the cache: not a proxy's login page, not a
            # truncated or empty answer (issue 13: one bad answer poisoned the cache).
            filter_fn=storable,
        )
        session.cache_keys = keys
    session.budget = budget
    session.rate_limit_scope = rate_limit_scope
    session.max_wait = max_wait
    adapter = _EagerHTTPAdapter(pool_connections=4, pool_maxsize=pool_size)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    logger.debug("session: cache=%s budget=%s per %s", cache_path, budget, rate_limit_scope)
    return session
