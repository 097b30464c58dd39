"""The on-disk response cache: where it lives, how entries are keyed per token, and reading,
forgetting or clearing one token's entries. How long each endpoint's answers stay fresh is the
API's knowledge (:mod:`invtools.api.endpoints`), handed to
:func:`~invtools.http.session.make_session`.

Entries are namespaced per token: the key is ``<prefix>:<hash of method and URL>`` where the
prefix is a truncated sha256 of a per-cache salt and the request's Authorization header. Two
teams asking for the same URL therefore never share an entry, while the Authorization header
itself stays in requests-cache's default ``ignored_parameters`` and so is redacted from the
stored request (``library-notes.md``: requests-cache and Bearer tokens). Nothing else is stored
about the token.

>>> keys = CacheKeys(b"salt")
>>> keys.key("Bearer a", "GET", "http://h/v1/items") == keys.key("Bearer b", "GET", "http://h/v1/items")
False
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

import orjson
from requests_cache.policy.expiration import NEVER_EXPIRE

from invtools._config import CACHE_DIR_ENV, check_path
from invtools._files import private_file
from invtools.errors import ConfigError

__all__ = ["NEVER_EXPIRE", "CacheKeys", "is_own_key", "resolve_cache_path", "open_cache_file"]
__all__ += [
    "json_of",
    "decode_json",
    "decode_stored",
    "MAX_DEPTH",
    "sound_response",
    "looks_json",
    "storable",
]  # an answer
__all__ += ["held", "cached_bodies", "forget", "clear_entries"]  # one token's entries


def resolve_cache_path(cache: bool | str | os.PathLike) -> Path | None:
    """``True`` -> the default path, ``False`` -> None (no cache), a directory -> a file in
    it, anything else -> that file (``.sqlite`` added when it has no suffix).

    The default path: ``responses.sqlite`` in the folder named by ``INVTOOLS_CACHE_DIR`` if
    set, else in the user's cache directory (``~/.cache/invtools/`` on Linux), never the
    notebook's folder.

    >>> resolve_cache_path(False) is None, resolve_cache_path(True).name
    (True, 'responses.sqlite')
    """
    if cache is False or cache is None:
        return None
    if cache is True:
        from platformdirs import user_cache_dir

        folder = os.environ.get(CACHE_DIR_ENV) or user_cache_dir("invtools")
        return Path(folder) / "responses.sqlite"
    path = check_path(cache, "cache (True, False or a file or folder)")
    if not os.fspath(cache).strip():  # Path("") is the current folder: never write there
        raise ConfigError("cache must be True, False or a path, not an empty string")
    if path.is_dir() or str(cache).endswith(("/", os.sep)):
        return path / "responses.sqlite"
    return path if path.suffix else path.with_suffix(".sqlite")


def open_cache_file(path: Path) -> bytes:
    """Create the cache file (0600, missing folders 0700) and return its salt, made on first
    use. Raises :class:`ConfigError` naming the path when either cannot be made."""
    try:
        private_file(path)
        return _salt_for(path)
    except OSError as exc:
        raise ConfigError(
            f"Cannot use the response cache at {str(path)!r}: {exc.strerror or exc}. Pass "
            f"cache=False to work without a cache, or another folder or file as cache=... (or "
            f"set {CACHE_DIR_ENV}) where you may create files."
        ) from exc


def _read_salt(salt_path: Path) -> bytes:
    """The salt in ``salt_path``; empty when there is none yet, or it is not hex."""
    try:
        return bytes.fromhex(salt_path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return b""


def _salt_for(path: Path) -> bytes:
    """The random salt kept next to the cache file (0600), made on first use.

    Made with ``O_EXCL``: when two processes open a new cache at once, one writes the salt
    and the other reads it, so both key their entries the same way.
    """
    salt_path = path.with_name(path.name + ".salt")
    for _ in range(100):
        try:
            return _write_salt(salt_path, os.O_EXCL)
        except FileExistsError:
            if salt := _read_salt(salt_path):
                return salt
            time.sleep(0.01)  # another process may be writing it right now
    # Still empty or not hex after a second: a damaged file, not a writer at work. Replace
    # it whole (a temporary file renamed over it), then use whatever is there now.
    tmp = salt_path.with_name(f"{salt_path.name}.{os.getpid()}.tmp")
    salt = _write_salt(tmp, os.O_TRUNC)
    os.replace(tmp, salt_path)
    return _read_salt(salt_path) or salt


def _write_salt(path: Path, flag: int) -> bytes:
    """A new salt written to ``path`` (made 0600; ``flag``: ``O_EXCL`` or ``O_TRUNC``)."""
    salt = secrets.token_bytes(16)
    with os.fdopen(os.open(path, os.O_CREAT | flag | os.O_WRONLY, 0o600), "w") as fh:
        fh.write(salt.hex())
    return salt


class CacheKeys:
    """How entries of one cache file are keyed: a per-token prefix (a salted hash of the
    Authorization header value) and a hash of method and URL.

    The client's requests differ only by method and URL (no bodies, no varying headers) and it
    always builds a query in the same order, so requests-cache's normalising ``create_key``
    (about half a millisecond a call: most of a warm walk) is not needed.
    """

    def __init__(self, salt: bytes) -> None:
        self._salt = salt

    def __repr__(self) -> str:
        return "CacheKeys(<salted>)"

    def prefix(self, authorization: str | None) -> str:
        """The namespace of one Authorization header value (16 hex chars).

        >>> len(CacheKeys(b"s").prefix("Bearer abc"))
        16
        """
        digest = hashlib.sha256(self._salt + b"\0" + (authorization or "").encode("utf-8"))
        return digest.hexdigest()[:16]

    def key(self, authorization: str | None, method: str, url: str) -> str:
        """The key a response to ``method url`` sent with ``authorization`` is stored under."""
        return self.keys(authorization, method, [url])[0]

    def keys(self, authorization: str | None, method: str, urls: list[str]) -> list[str]:
        """:meth:`key` of each of ``urls``, the prefix hashed once (a re-run keys every
        transaction's detail: 100,000 of them)."""
        prefix, method = self.prefix(authorization), method.upper()
        return [
            f"{prefix}:{hashlib.blake2b(f'{method} {url}'.encode(), digest_size=16).hexdigest()}"
            for url in urls
        ]

    def key_fn(self, request, **_kwargs) -> str:
        """requests-cache's ``key_fn``: the stored request's Authorization header itself stays
        redacted (an ignored parameter); only its salted hash is in the key."""
        return self.key(request.headers.get("Authorization"), request.method, request.url)


def is_json(response) -> bool:
    """Whether a response says it holds JSON."""
    return "json" in response.headers.get("Content-Type", "")


def json_of(response) -> tuple[bool, Any]:
    """``(decoded, value)``: the response's body decoded as JSON, once per response. The cache's
    filter and the client's checks both need it; a page is not parsed two or three times.

    >>> import requests
    >>> r = requests.Response(); r._content = b'{"item": {"id": 1}}'
    >>> json_of(r), sound_response(r)
    ((True, {'item': {'id': 1}}), True)
    """
    memo = getattr(response, "invtools_json", None)
    if memo is None:
        memo = decode_json(response.content)
        with contextlib.suppress(AttributeError):  # a response class without a __dict__
            response.invtools_json = memo
    return memo


def decode_json(content: Any) -> tuple[bool, Any]:
    """``(decoded, value)`` of a body, as :func:`json_of` reads every answer (NaN, Infinity,
    fractions beyond 2**53 and values nested deeper than :data:`MAX_DEPTH` refused).

    >>> decode_json(b'{"n": 1.5}'), decode_json(b'{"n": NaN}'), decode_json(b"[" * 990 + b"]" * 990)
    ((True, {'n': 1.5}), (False, None), (False, None))
    """
    try:
        value = json.loads(content, parse_constant=_not_json, parse_float=_counted)
    except (ValueError, TypeError, RecursionError):  # RecursionError: nested too deep
        return False, None
    return _within_depth(content, value)


def decode_stored(body: bytes | None) -> tuple[bool, Any]:
    """:func:`decode_json` of a body (a stored answer), four times faster (100,000 cached
    details: 1.1 s against 4.3 s): read by orjson, except a body :func:`decode_json` might read
    otherwise -- one with a run of 16 digits or a digit before an ``e`` (an integer beyond 64
    bits, which orjson reads as a float; a fraction beyond 2**53, which it refuses) -- or that
    orjson refuses (NaN, text that is not UTF-8): those are read by :func:`decode_json`. None
    (nothing stored) is not decoded.

    >>> decode_stored(b'{"n": 1.5}'), decode_stored(b'{"n": -9223372036854775809}')
    ((True, {'n': 1.5}), (True, {'n': -9223372036854775809}))
    """
    if body is None:
        return False, None
    shape = body.translate(_SHAPE)  # in C: a regular expression takes as long as orjson
    if b"0000000000000000" not in shape and b"0e" not in shape:
        try:
            return _within_depth(body, orjson.loads(body))
        except orjson.JSONDecodeError:
            pass
    return decode_json(body)


#: How deep a value of an answer may nest: the API's nest 5 deep at most (a detail, its
#: lines, a line; a page, its rows, a row's partner), and Python's decoder and encoder spend a
#: frame of its recursion limit (1000, some already used by the caller) on each level, so a
#: value nested 990 deep is read or not by where it is read, and written back (the mirror's
#: JSON) not at all. 100 is far from both: one limit, the same wherever the body is read.
MAX_DEPTH = 100
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def _within_depth(body: Any, value: Any) -> tuple[bool, Any]:
    """``(True, value)`` when ``value`` (``body`` decoded) nests at most :data:`MAX_DEPTH`
    deep, else ``(False, None)``. It cannot when ``body`` opens no more arrays and objects
    than that (almost every detail); else the brackets outside its strings (each ``"`` is a
    string's end when no ``\\"`` is in it) lose their innermost pairs a level at a time, in
    C; only a body with an escaped quote has its value walked."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return True, value
    if b'\\"' in raw:
        return (True, value) if _depth(value) <= MAX_DEPTH else (False, None)
    brackets = b"".join(raw.split(b'"')[::2]).translate(_SQUARE, _NOT_BRACKETS)
    for _level in range(MAX_DEPTH):
        if not brackets:
            break
        brackets = brackets.replace(b"[]", b"")
    return (False, None) if brackets else (True, value)


def _depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` 1), walked without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        inner = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if inner is not None:
            deepest = max(deepest, level)
            todo.extend((x, level + 1) for x in inner)
    return deepest


#: A body's shape, for what orjson may read otherwise than the standard library's decoder:
#: digits as ``0``, ``e`` and ``E`` as ``e``, anything else a space (a false alarm, such as a
#: barcode of 16 digits, only costs the slower read).
_SHAPE = bytes(
    0x30 if chr(i).isdigit() and i < 128 else 0x65 if chr(i) in "eE" else 0x20 for i in range(256)
)


def _not_json(name: str) -> None:
    """NaN and Infinity, which Python's json reads and JSON does not have: a broken answer."""
    raise ValueError(f"{name} is not JSON")


def _counted(text: str) -> float:
    """A JSON fraction as a float, refused beyond 2**53 where a float no longer counts in
    units (``1e30 + 1 == 1e30``): no quantity of the API is that large, and every sum over
    one would be wrong. Money comes as text, ids as integers: neither is read here."""
    value = float(text)
    if not abs(value) < 2**53:
        raise ValueError(f"{text} is beyond what a float counts exactly")
    return value


def sound_response(response) -> bool:
    """Whether the body is a whole, non-empty JSON object: every answer of the API is one. A
    truncated, empty or ``{}`` body is not (a dropped connection, a failing proxy).

    >>> import requests
    >>> def answer(body):
    ...     r = requests.Response(); r._content = body; return r
    >>> [sound_response(answer(b)) for b in (b'{"items": []}', b'{"items": [', b"{}", b"")]
    [True, False, False, False]
    """
    ok, value = json_of(response)
    return ok and isinstance(value, dict) and bool(value)


def looks_json(response) -> bool:
    """Whether a response says, or looks like, it holds JSON. One that does but is not
    :func:`sound_response` is damaged: the server's fault, retried like a 5xx and never stored.
    (A 2xx that is not JSON at all -- a proxy's login page -- means the wrong server.)"""
    return is_json(response) or response.content[:1] in (b"{", b"[")


def storable(response) -> bool:
    """requests-cache's ``filter_fn``: only a whole JSON object labelled JSON is stored, so one
    bad answer can never stick in the cache (a detail at a revision is kept for good)."""
    return is_json(response) and sound_response(response)


#: What :meth:`CacheKeys.key` makes.
_KEY = re.compile(r"[0-9a-f]{16}:[0-9a-f]{32}")


def is_own_key(key: str) -> bool:
    """Whether ``key`` has the shape of a key :class:`CacheKeys` makes. Anything else in a
    cache file was written by another program (or an older invtools), and is not ours to
    remove.

    >>> is_own_key(CacheKeys(b"s").key("Bearer t", "GET", "http://h/v1/items"))
    True
    >>> is_own_key("d0a5ce12ab4f5e84")                   # requests-cache's own key shape
    False
    """
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def held(session, authorization: str, urls: list[str]) -> list[bool]:
    """For each ``GET url`` sent with this Authorization, whether the cache holds an answer,
    fresh or not: meant for answers that never expire (a transaction detail at a revision),
    where held means it will be answered from the cache. Reads keys only, never a response;
    sends nothing. Without a cache, all False.

    >>> from invtools.http.session import make_session
    >>> held(make_session(cache_path=None), "Bearer t", ["http://h/v1/items"])
    [False]
    """
    keys = getattr(session, "cache_keys", None)
    if keys is None:
        return [False] * len(urls)
    wanted = keys.keys(authorization, "GET", urls)
    found = set(session.cache.held(wanted))
    return [k in found for k in wanted]


def cached_bodies(session, authorization: str, urls: list[str]) -> list[bytes | None]:
    """For each ``GET url`` sent with this Authorization, the body of the fresh 200 answer the
    cache holds (None: none, or one only requests-cache's own lookup reads), read in bulk:
    one query for hundreds of answers, where a lookup each costs about a millisecond. Sends
    nothing; other tokens' entries are never read. Without a cache, all None.

    >>> from invtools.http.session import make_session
    >>> cached_bodies(make_session(cache_path=None), "Bearer t", ["http://h/v1/items"])
    [None]
    """
    keys = getattr(session, "cache_keys", None)
    if keys is None:
        return [None] * len(urls)
    wanted = keys.keys(authorization, "GET", urls)
    found = dict(session.cache.bodies(wanted))
    return [found.get(k) for k in wanted]


def forget(session, authorization: str, urls: list[str]) -> None:
    """Delete the cached answers to ``GET url`` sent with this Authorization, for each of
    ``urls`` (those not cached are skipped; when none is, nothing is written): e.g. a
    transaction's older revisions once a newer one is stored, since nothing asks for them
    again. Other tokens' entries stay. Never compacts the file. Without a cache, nothing
    happens. Raises :class:`~invtools.errors.CacheError` when the file stays locked (the
    answers stay; nothing else is lost).

    >>> from invtools.http.session import make_session
    >>> forget(make_session(cache_path=None), "Bearer t", ["http://h/v1/items"])
    """
    keys = getattr(session, "cache_keys", None)
    if keys is not None and urls:
        session.cache.delete(*keys.keys(authorization, "GET", urls))


def clear_entries(session, authorization: str) -> int:
    """Delete every cached response of one Authorization value; returns how many."""
    keys = getattr(session, "cache_keys", None)
    if keys is None:
        return 0
    found = session.cache.held(prefix=keys.prefix(authorization) + ":")
    session.cache.delete(*found)
    return len(found)
