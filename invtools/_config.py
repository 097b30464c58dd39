"""Configuration rules: environment names, the default base URL, and the checks of what a user
passes in (token, base URL, timeouts, numbers).

Pure functions: no HTTP, no files. Every message says what was expected and never repeats a
token. Imports nothing of invtools but :mod:`invtools.errors`.

>>> normalise_base_url("https://rest.boxhero-app.com/v1/")
'https://rest.boxhero-app.com'
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from invtools.errors import ArgumentTypeError, ConfigError

__all__ = [
    "TOKEN_ENV",
    "TEAM_TOKEN_PREFIX",
    "BASE_URL_ENV",
    "CACHE_DIR_ENV",
    "DEFAULT_BASE_URL",
    "TOKEN_HELP",
    "clean_token",
    "normalise_base_url",
    "redact_url",
    "is_loopback",
    "check_timeout",
    "check_whole",
    "check_path",
    "check_rate",
    "check_kind",
    "check_flag",
    "MIN_RATE_LIMIT",
]

#: The slowest pace a client takes: one request a minute (below it, pacing would wait hours).
MIN_RATE_LIMIT = 1 / 60

#: The token of the team to investigate (``Client()`` and ``connect()`` read it).
TOKEN_ENV = "INVTOOLS_TOKEN"
#: ``INVTOOLS_TOKEN_<NAME>``: more teams, offered by name by ``connect(name)`` and the picker.
TEAM_TOKEN_PREFIX = "INVTOOLS_TOKEN_"
#: Another API address (the stand-in server, say) for tokens read from the environment.
BASE_URL_ENV = "INVTOOLS_BASE_URL"
#: Where the response cache lives instead of the user cache directory.
CACHE_DIR_ENV = "INVTOOLS_CACHE_DIR"

DEFAULT_BASE_URL = "https://rest.boxhero-app.com"

TOKEN_HELP = (
    "API tokens are issued in the service's app, in Settings under Integrations (one token "
    f"per team). Pass it as Client(token=...) or set the {TOKEN_ENV} environment variable."
)


#: Quotes a paste may wrap a token in: plain ones, and what word processors and chat apps make.
_QUOTES = "\"'\u201c\u201d\u2018\u2019\u201e\u00ab\u00bb"


class Secret(str):
    """A ``str`` whose repr never shows it: the token (and the ``Bearer`` header made of it)
    travels in one from the moment it is read, so a traceback that prints locals
    (``%xmode Verbose``, ``capture_locals=True``) or a headers dict shows ``'<hidden>'``.
    Operations on it (``strip()``, slicing) give plain strings: wrap their results again.

    >>> s = Secret("tok_abc")
    >>> repr(s), {"Authorization": Secret("Bearer " + s)}, s == "tok_abc"
    ("'<hidden>'", {'Authorization': '<hidden>'}, True)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'<hidden>'"


def clean_token(token: Any) -> str:
    """Strip what a paste adds (whitespace, quotes, a ``Bearer`` prefix); refuse the rest.
    Returns a :class:`Secret`. Messages never contain the token.

    >>> clean_token("  Bearer abc123\\n")                  # a Secret: its repr is hidden
    '<hidden>'
    >>> str(clean_token("  Bearer abc123\\n")), str(clean_token("\u201cabc123\u201d"))
    ('abc123', 'abc123')
    >>> clean_token("abc\u2013123")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: The API token contains characters that are not plain ASCII (typographic quotes or dashes, say, added by a word processor or chat app); copy it again from Settings > Integrations.
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if token is None:
        raise ConfigError(f"No API token given. {TOKEN_HELP}")
    if not isinstance(token, str):
        raise ArgumentTypeError(
            f"The token must be a string, not {type(token).__name__}. {TOKEN_HELP}"
        )
    # Every step's result is wrapped again: no local of this frame holds the token in clear.
    value = Secret(token.strip())
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] in _QUOTES:
        value = Secret(value[1:-1].strip())  # "tok", 'tok', and what word processors make
    if re.match(r"(?i)bearer(\s|$)", value):
        value = Secret(value[6:].strip())
    if not value:
        raise ConfigError(f"The API token is empty. {TOKEN_HELP}")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ConfigError(
            "The API token contains spaces, line breaks or control characters; "
            "copy it again from Settings > Integrations."
        )
    if not value.isascii():
        # An HTTP header is Latin-1 at most; requests would fail with a UnicodeEncodeError
        # holding "Bearer <token>" (which error reporters capture).
        raise ConfigError(
            "The API token contains characters that are not plain ASCII "
            "(typographic quotes or dashes, say, added by a word processor or "
            "chat app); copy it again from Settings > Integrations."
        )
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (``localhost``, 127.0.0.0/8, ::1).

    >>> is_loopback("127.0.0.1"), is_loopback("example.com")
    (True, False)
    """
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redact_url(text: str) -> str:
    """A URL as it may appear in a message: no query, no fragment, no user name or password.

    >>> redact_url("https://me:secret@h.example/v1?token=abc")
    'https://***@h.example/v1'
    """
    text = re.split(r"[?#]", text, maxsplit=1)[0]
    # user-info up to the last '@', even where urlsplit would not see it (no scheme, '/' in it)
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)?.*@", r"\1***@", text, flags=re.S)


def normalise_base_url(url: Any) -> str:
    """Canonical base URL: no trailing slash, no ``/v1`` (paths carry it), https unless
    the host is this machine. Messages never repeat a user name, password or query.

    >>> normalise_base_url("http://127.0.0.1:8765/")
    'http://127.0.0.1:8765'
    """
    if not isinstance(url, str) or not url.strip():
        shown = repr(url) if isinstance(url, str) or url is None else type(url).__name__
        raise ConfigError(f"base_url must be a URL such as {DEFAULT_BASE_URL!r}, not {shown}")
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unclosed [IPv6 address, say
        raise ConfigError(f"base_url is not a URL ({exc}): {redact_url(text)!r}") from None
    if "@" in parts.netloc:
        raise ConfigError(
            "base_url must not contain a user name or password; the token is passed separately."
        )
    shown = redact_url(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base_url must start with https:// and name a host, e.g. "
            f"{DEFAULT_BASE_URL!r}; got {shown!r}"
        )
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ConfigError(
            f"base_url has no valid port (a number from 1 to 65535 after the "
            f"host, or none at all): {shown!r}"
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            f"base_url must not have a query or fragment (after {shown!r}); "
            "filters are arguments of the methods, the token is token="
        )
    if scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigError(
            f"Refusing plain http:// to {parts.hostname}: the token would cross the network "
            "unencrypted. Use https:// (http:// is allowed only for this machine: "
            "localhost, 127.0.0.0/8, ::1)."
        )
    path = parts.path.rstrip("/")
    if path.lower().endswith("/v1"):
        path = path[:-3].rstrip("/")
    return f"{scheme}://{parts.netloc.lower()}{path}"


def check_timeout(timeout: Any) -> tuple[float, float]:
    """``(connect, read)`` seconds from seconds or a pair; finite and positive.

    >>> check_timeout(5)
    (5.0, 5.0)
    """
    pair = timeout if isinstance(timeout, (tuple, list)) else (timeout, timeout)
    try:
        connect, read = (float(x) for x in pair)
    except (TypeError, ValueError):
        raise ConfigError(
            f"timeout must be seconds or (connect, read) seconds, not {timeout!r}; "
            "waiting forever is not an option"
        ) from None
    if not (0 < connect < float("inf") and 0 < read < float("inf")):
        raise ConfigError(f"timeout must be finite and positive, not {timeout!r}")
    return connect, read


def check_whole(value: Any, name: str, *, least: int = 0, what: str = "") -> int:
    """``value`` if it is a whole number (not a bool) of at least ``least``.

    >>> check_whole(3, "retries")
    3
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ConfigError(f"{name} must be a whole number >= {least}{what}, not {value!r}")
    return value


def check_path(value: Any, name: str) -> Path:
    """``value`` as a :class:`~pathlib.Path` (``~`` expanded) if it is a path: a str or an
    ``os.PathLike`` of text; else :class:`ArgumentTypeError` naming ``name``.

    >>> check_path("~/x.sqlite", "cache").name
    'x.sqlite'
    >>> check_path(42, "TransactionMirror(path)")
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: TransactionMirror(path) must be a path (a str or pathlib.Path), not int
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if not isinstance(value, str | os.PathLike) or isinstance(os.fspath(value), bytes):
        raise ArgumentTypeError(
            f"{name} must be a path (a str or pathlib.Path), not {type(value).__name__}"
        )
    return Path(os.fspath(value)).expanduser()


def check_rate(value: Any) -> float:
    """Requests per second: 0 or None (off), or from :data:`MIN_RATE_LIMIT` up.

    >>> check_rate(5), check_rate(None)
    (5.0, 0.0)
    """
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or 0 < value < MIN_RATE_LIMIT
    ):
        raise ConfigError(
            f"rate_limit must be requests per second, 0 (off) or from {MIN_RATE_LIMIT:g} up, "
            f"e.g. 5; not {value!r}"
        )
    return float(value or 0)


def check_kind(value: Any, kind: Any, name: str, what: str) -> Any:
    """``value`` if it is an instance of ``kind`` (a type, a tuple of types, or ``callable``);
    else an :class:`ArgumentTypeError`: "``name`` must be ``what``, not <its type>".

    >>> check_kind({}, dict, "params", "a mapping")
    {}
    >>> check_kind(42, callable, "keep", "a function of a row")
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: keep must be a function of a row, not int
    """
    if not (callable(value) if kind is callable else isinstance(value, kind)):
        raise ArgumentTypeError(f"{name} must be {what}, not {type(value).__name__}")
    return value


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a ``bool`` if it is one (numpy's too) or 0 or 1; else an
    :class:`ArgumentTypeError` naming ``name``.

    >>> check_flag(True, "refresh"), check_flag(0, "refresh")
    (True, False)
    """
    whole = isinstance(value, int) and not isinstance(value, bool)
    if type(value).__name__ not in ("bool", "bool_") and not (whole and value in (0, 1)):
        raise ArgumentTypeError(f"{name} must be True or False, not {type(value).__name__}")
    return bool(value)
