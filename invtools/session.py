"""make_session(): one pooled HTTP session with an on-disk cache and rate limiting.

The layers, top to bottom (a request goes down only as far as it must)::

    CacheMixin      requests-cache: a fresh cached 200 is answered here -- nothing below runs
    RouteLimiter    requests-ratelimiter: waits until the endpoint's bucket has room
    Session         requests: one connection pool, finite timeouts set by the caller

Because the limiter sits *below* the cache, a cache hit costs no rate-limit budget.
Retries are not here: the client's one request function retries, so every attempt passes
through the cache and the limiter again and shows in the client's stats.

Cache entries are namespaced per token: the key is ``<prefix>:<requests-cache key>`` where
the prefix is a truncated sha256 of a per-cache salt and the request's Authorization
header. Two teams asking for the same URL therefore never share an entry, while the
Authorization header itself stays in requests-cache's default ``ignored_parameters`` and so
is redacted from the stored request. Nothing else is stored about the token.

>>> route_of("/v1/location-txs/123")
'/v1/location-txs/{id}'
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import sqlite3
import time
from datetime import timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import requests
from pyrate_limiter import Limiter, Rate
from requests_cache import CacheMixin
from requests_cache.policy.expiration import NEVER_EXPIRE
from requests_ratelimiter import LimiterMixin
from requests_ratelimiter.buckets import HostBucketFactory

from invtools.errors import ConfigError

__all__ = [
    "make_session",
    "route_of",
    "cache_prefix",
    "default_cache_path",
    "resolve_cache_path",
    "EXPIRY",
    "RATE_LIMIT_SCOPES",
    "is_json",
]

logger = logging.getLogger("invtools")

RATE_LIMIT_SCOPES = ("endpoint", "token")

#: Extra wait (ms) the limiter adds after a bucket frees up, so that a request does not reach
#: the server's rolling window a hair too early because of network jitter.
PACING_MARGIN_MS = 50

_HOURS, _MINUTES = timedelta(hours=6), timedelta(minutes=10)
_SHORT = timedelta(seconds=60)

# How long a cached 200 stays fresh, per endpoint. First match wins; patterns see the URL
# without its scheme. A transaction fetched at an explicit revision never changes; the
# transactions list changes at its head whenever anyone records something, so it is short.
EXPIRY: dict[re.Pattern, Any] = {
    re.compile(r"/v1/(location-txs|transactions)/\d+\?(?:[^#]*&)?revision=\d+"): NEVER_EXPIRE,
    re.compile(r"/v1/(location-txs|transactions)(/\d+)?(\?|$)"): _SHORT,
    re.compile(r"/v1/teams/linked(\?|$)"): _HOURS,
    re.compile(r"/v1/item-attrs(/\d+)?(\?|$)"): _HOURS,
    re.compile(r"/v1/(items|locations|partners|members)(/\d+)?(\?|$)"): _MINUTES,
}
#: Anything not listed above.
DEFAULT_EXPIRY = _MINUTES

_ID_SEGMENT = re.compile(r"/\d+(?=/|$)")


def route_of(path: str) -> str:
    """The route template of a path: numeric segments become ``{id}``, the query is dropped.

    >>> route_of("/v1/items/7?location_ids=1")
    '/v1/items/{id}'
    """
    path = path.split("?", 1)[0].split("#", 1)[0]
    return _ID_SEGMENT.sub("/{id}", path.rstrip("/") or "/")


def default_cache_path() -> Path:
    """Where the response cache lives unless told otherwise: the folder named by
    ``INVTOOLS_CACHE_DIR`` if set, else the user's cache directory
    (``~/.cache/invtools/responses.sqlite`` on Linux), never the notebook's folder.

    >>> default_cache_path().name
    'responses.sqlite'
    """
    from platformdirs import user_cache_dir

    folder = os.environ.get("INVTOOLS_CACHE_DIR") or user_cache_dir("invtools")
    return Path(folder) / "responses.sqlite"


def resolve_cache_path(cache: bool | str | os.PathLike) -> Path | None:
    """``True`` -> the default path, ``False`` -> None (no cache), a directory -> a file in
    it, anything else -> that file (``.sqlite`` added when it has no suffix).

    >>> resolve_cache_path(False) is None
    True
    """
    if cache is False or cache is None:
        return None
    if cache is True:
        return default_cache_path()
    path = Path(os.fspath(cache)).expanduser()
    if path.is_dir() or str(cache).endswith(("/", os.sep)):
        return path / "responses.sqlite"
    return path if path.suffix else path.with_suffix(".sqlite")


def _make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and any missing parents, each one we create readable by the user
    only (0700). A folder that already exists is left exactly as it is: it may be the
    user's own choice (``INVTOOLS_CACHE_DIR=/tmp``), shared with others, or not ours to
    change."""
    missing: list[Path] = []
    cur = folder
    while not cur.exists():
        missing.append(cur)
        if cur.parent == cur:
            break
        cur = cur.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:  # made by another process meanwhile: theirs, leave it
            pass


def _prepare_cache_file(path: Path) -> None:
    """Create the cache file readable by the user only (0600): cached bodies are a team's
    inventory, stored unencrypted. Folders are made only when missing (0700)."""
    _make_private_dirs(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)  # SQLite gives its journal files the database file's mode


def _read_salt(salt_path: Path) -> bytes | None:
    try:
        salt = bytes.fromhex(salt_path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return salt or None


def _salt_for(path: Path) -> bytes:
    """The random salt kept next to the cache file (0600), made on first use.

    Made with ``O_EXCL``: when two processes open a new cache at once, one writes the salt
    and the other reads it, so both key their entries the same way.
    """
    salt_path = path.with_name(path.name + ".salt")
    for _ in range(100):
        try:
            fd = os.open(salt_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            salt = _read_salt(salt_path)
            if salt is not None:
                return salt
            time.sleep(0.01)  # another process may be writing it right now
            continue
        salt = secrets.token_bytes(16)
        with os.fdopen(fd, "w") as fh:
            fh.write(salt.hex())
        return salt
    # Still empty or not hex after a second: a damaged file, not a writer at work. Replace
    # it whole (a temporary file renamed over it), then use whatever is there now.
    salt = secrets.token_bytes(16)
    tmp = salt_path.with_name(f"{salt_path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(salt.hex())
    os.replace(tmp, salt_path)
    return _read_salt(salt_path) or salt


def _cache_error(path: Path, exc: BaseException) -> ConfigError:
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return ConfigError(
        f"Cannot use the response cache at {str(path)!r}: {reason}. Pass cache=False to work "
        "without a cache, or another folder or file as cache=... (or set INVTOOLS_CACHE_DIR) "
        "where you may create files.")


def cache_prefix(authorization: str | None, salt: bytes) -> str:
    """The cache-key namespace of one Authorization header value (16 hex chars).

    >>> len(cache_prefix("Bearer abc", b"salt"))
    16
    >>> cache_prefix("Bearer abc", b"salt") == cache_prefix("Bearer abd", b"salt")
    False
    """
    digest = hashlib.sha256(salt + b"\0" + (authorization or "").encode("utf-8"))
    return digest.hexdigest()[:16]


def is_json(response) -> bool:
    """Whether a response says it holds JSON: what the cache keeps, and what the client's raw
    (bytes) path hands on without decoding."""
    return "json" in response.headers.get("Content-Type", "")


def request_key(method: str, url: str) -> str:
    """The part of a cache key after the team prefix: a hash of the method and the full URL.

    The client's requests differ only by method and URL (no bodies, no varying headers) and it
    always builds a query in the same order, so requests-cache's normalising ``create_key``
    (about half a millisecond a call: most of a warm walk) is not needed.

    >>> request_key("GET", "http://h/v1/items?limit=100") == request_key("GET", "http://h/v1/items")
    False
    """
    return hashlib.blake2b(f"{method.upper()} {url}".encode("utf-8"), digest_size=16).hexdigest()


def _key_fn(salt: bytes):
    def key_fn(request, **kwargs) -> str:
        # The prefix is the hashed token, so each token gets its own entries; the stored
        # request's Authorization header itself stays redacted (an ignored parameter).
        prefix = cache_prefix(request.headers.get("Authorization"), salt)
        return f"{prefix}:{request_key(request.method, request.url)}"

    return key_fn


class RouteLimiterMixin(LimiterMixin):
    """LimiterMixin whose bucket is the route template (``/v1/location-txs/{id}``) -- one
    bucket per endpoint, as the service counts -- or a single bucket for all endpoints."""

    # Explicit keywords: CacheMixin passes on only the keywords this signature names.
    def __init__(self, *, limiter: Limiter, per_host: bool = False,
                 rate_limit_scope: str = "endpoint", **kwargs):
        self.rate_limit_scope = rate_limit_scope
        super().__init__(limiter=limiter, per_host=per_host, **kwargs)

    def _bucket_name(self, request) -> str:
        if self.rate_limit_scope == "token":
            return "all-endpoints"
        from urllib.parse import urlsplit

        return route_of(urlsplit(request.url).path)


def _rate(per_second: float) -> Rate:
    """``per_second`` as a whole number of requests per whole number of milliseconds."""
    frac = Fraction(per_second).limit_denominator(1000)
    return Rate(frac.numerator, 1000 * frac.denominator)


def make_session(
    *,
    cache_path: Path | None,
    rate_limit: float | None = 5.0,
    rate_limit_scope: str = "endpoint",
) -> requests.Session:
    """Build the session: cached at ``cache_path`` (None = no cache), paced at
    ``rate_limit`` requests per second per endpoint (or per token; 0/None = not paced).

    The session's ``close()`` also stops the limiter's background thread. Raises
    :class:`~invtools.errors.ConfigError` naming the path if the cache cannot be made there.

    >>> s = make_session(cache_path=None, rate_limit=0)
    >>> type(s).__name__
    'Session'
    >>> s.close()
    """
    if rate_limit_scope not in RATE_LIMIT_SCOPES:
        raise ConfigError(f"rate_limit_scope must be one of {RATE_LIMIT_SCOPES}, "
                          f"not {rate_limit_scope!r}")
    bases: list[type] = []
    kwargs: dict[str, Any] = {}
    salt = b""
    if cache_path is not None:
        cache_path = Path(cache_path)
        if not cache_path.suffix:  # requests-cache would add it, and use another file
            cache_path = cache_path.with_suffix(".sqlite")
        try:
            _prepare_cache_file(cache_path)
            salt = _salt_for(cache_path)  # read once; made here on first use
        except OSError as exc:
            raise _cache_error(cache_path, exc) from exc
        bases.append(CacheMixin)
        kwargs.update(
            cache_name=str(cache_path),
            backend="sqlite",
            expire_after=DEFAULT_EXPIRY,
            urls_expire_after=EXPIRY,
            allowable_codes=(200,),
            allowable_methods=("GET",),
            key_fn=_key_fn(salt),
            # Never: it would serve a stale 200 for any error, even a revoked token's 401.
            stale_if_error=False,
            # A 200 that is not JSON (a proxy's login page, say) must not stick in the cache.
            filter_fn=is_json,
        )
    limiter = None
    if rate_limit:
        factory = HostBucketFactory(rates=[_rate(float(rate_limit))])
        limiter = Limiter(factory, buffer_ms=PACING_MARGIN_MS)
        bases.append(RouteLimiterMixin)
        kwargs.update(limiter=limiter, per_host=False, rate_limit_scope=rate_limit_scope)
    if not bases:
        return requests.Session()
    cls = type("InvtoolsSession", (*bases, requests.Session), {})
    try:
        session = cls(**kwargs)
    except (OSError, sqlite3.Error) as exc:  # the file exists but SQLite cannot use it
        if limiter is not None:
            limiter.bucket_factory.close()
        if cache_path is None:
            raise
        raise _cache_error(cache_path, exc) from exc
    if cache_path is not None:
        #: Authorization header value -> this cache's key prefix (used to clear one team's entries).
        session.cache_prefix_for = lambda authorization: cache_prefix(authorization, salt)
        #: (Authorization value, method, full URL) -> the key its response is stored under.
        session.cache_key_for = lambda authorization, method, url: (
            f"{cache_prefix(authorization, salt)}:{request_key(method, url)}")
    if limiter is not None:
        original_close = session.close

        def close() -> None:
            original_close()
            limiter.bucket_factory.close()  # we built the limiter, so we stop its thread

        session.close = close
    logger.debug("session: cache=%s rate_limit=%s/s per %s", cache_path, rate_limit,
                 rate_limit_scope if rate_limit else "-")
    return session
