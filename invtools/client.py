"""Client: the token, the base URL, and the one place a response becomes data or an error.

>>> import invtools.client as ic
>>> ic.normalise_base_url("https://rest.boxhero-app.com/v1/")
'https://rest.boxhero-app.com'

A typical session in a notebook::

    c = Client()                      # token from INVTOOLS_TOKEN
    c.team()                          # Team(id=..., name='Corner Shop', mode=2, ...)
    rows = list(c.transactions(since="2026-04-01"))
    c.stats                           # RequestStats(sent=..., from_cache=..., ...)

Every request goes through :meth:`Client._send`, which retries what is worth retrying
(429 after the wait the server asks for; 500/502/503/504 and dropped connections with
exponential backoff) and hands the final response to :func:`Client._to_data`, the single
function that turns a response into decoded JSON or an :mod:`invtools.errors` exception.
"""

from __future__ import annotations

import html
import ipaddress
import logging
import os
import random
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode, urlsplit

import pandas as pd
import requests

from invtools import frames
from invtools.errors import (
    TEAM_MODE_TYPE,
    APIError,
    AuthenticationError,
    ConfigError,
    InvalidRequestError,
    NotFoundError,
    PaginationError,
    RateLimitError,
    ServerError,
    TeamModeError,
    TransportError,
    from_response,
)
from invtools.environment import TOKEN_ENV
from invtools.pagination import DEFAULT_LIMIT, Page, iter_pages, iter_raw_pages, with_progress
from invtools.session import (RATE_LIMIT_SCOPES, is_json, make_session, resolve_cache_path,
                              route_of)

__all__ = ["Client", "Team", "Page", "RequestStats", "Measurement", "normalise_base_url",
           "DEFAULT_BASE_URL", "TOKEN_ENV"]

logger = logging.getLogger("invtools")

DEFAULT_BASE_URL = "https://rest.boxhero-app.com"
TEAM_PATH = "/v1/teams/linked"
TXS_PATH = "/v1/location-txs"

MODE_NAMES = {0: "Basic", 1: "Unit", 2: "Location"}
LOCATION_MODE = 2

#: What a team that does not manage stock by location can still call.
EVERY_TEAM = ("team() /v1/teams/linked", "members() /v1/members", "partners() /v1/partners",
              "attributes() /v1/item-attrs")

#: Statuses worth sending again. 500 is included: every request here is a GET, so a retry
#: cannot do harm, and a 500 is as often a passing fault as a 502/503/504.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest wait a 429 may ask for before we give up instead of blocking a notebook.
MAX_RATE_LIMIT_WAIT = 120.0
MAX_BACKOFF = 30.0

_TOKEN_HELP = (
    "API tokens are issued in the service's app, in Settings under Integrations (one token "
    f"per team). Pass it as Client(token=...) or set the {TOKEN_ENV} environment variable."
)


# ---------------------------------------------------------------- configuration (pure)

def clean_token(token: Any) -> str:
    """Strip what a paste adds (whitespace, quotes, a ``Bearer`` prefix); refuse the rest.

    Messages never contain the token.

    >>> clean_token("  Bearer abc123\\n")
    'abc123'
    """
    if token is None:
        raise ConfigError(f"No API token given. {_TOKEN_HELP}")
    if not isinstance(token, str):
        raise ConfigError(f"The token must be a string, not {type(token).__name__}. {_TOKEN_HELP}")
    value = token.strip()
    if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2:
        value = value[1:-1].strip()
    if re.match(r"(?i)bearer(\s|$)", value):
        value = value[6:].strip()
    if not value:
        raise ConfigError(f"The API token is empty. {_TOKEN_HELP}")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ConfigError("The API token contains spaces, line breaks or control characters; "
                          "copy it again from Settings > Integrations.")
    return value


def _is_loopback(host: str) -> bool:
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _redact_url(text: str) -> str:
    """A URL as it may appear in a message: no query, no fragment, no user name or password.

    >>> _redact_url("https://me:secret@h.example/v1?token=abc")
    'https://***@h.example/v1'
    """
    text = re.split(r"[?#]", text, maxsplit=1)[0]
    head = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text)
    head_text = head.group(0) if head else ""
    rest = text[len(head_text):]
    if "@" in rest:  # user-info, even where urlsplit would not see it (no scheme, '/' in it)
        rest = "***@" + rest.rsplit("@", 1)[1]
    return head_text + rest


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
    parts = urlsplit(text)
    if parts.username or parts.password or "@" in parts.netloc:
        raise ConfigError("base_url must not contain a user name or password; the token is "
                          "passed separately.")
    shown = _redact_url(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base_url must start with https:// and name a host, e.g. "
                          f"{DEFAULT_BASE_URL!r}; got {shown!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ConfigError(f"base_url has no valid port (a number from 1 to 65535 after the "
                          f"host, or none at all): {shown!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"base_url must not have a query or fragment (after {shown!r}); "
                          "filters are arguments of the methods, the token is token=")
    if scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigError(
            f"Refusing plain http:// to {parts.hostname}: the token would cross the network "
            "unencrypted. Use https:// (http:// is allowed only for this machine: "
            "localhost, 127.0.0.0/8, ::1).")
    path = parts.path.rstrip("/")
    if path.lower().endswith("/v1"):
        path = path[:-3].rstrip("/")
    return f"{scheme}://{parts.netloc.lower()}{path}"


def _check_timeout(timeout: Any) -> tuple[float, float]:
    pair = timeout if isinstance(timeout, (tuple, list)) else (timeout, timeout)
    try:
        connect, read = (float(x) for x in pair)
    except (TypeError, ValueError):
        raise ConfigError(f"timeout must be seconds or (connect, read) seconds, not {timeout!r}; "
                          "waiting forever is not an option") from None
    if not (0 < connect < float("inf") and 0 < read < float("inf")):
        raise ConfigError(f"timeout must be finite and positive, not {timeout!r}")
    return connect, read


def parse_when(value: Any, *, end_of_day: bool = False) -> datetime | None:
    """A datetime, date or ISO string as an aware UTC datetime (naive means UTC). A bare
    date is its first moment, or with ``end_of_day`` its last.

    >>> parse_when("2026-05-02T01:10:00.000Z")
    datetime.datetime(2026, 5, 2, 1, 10, tzinfo=datetime.timezone.utc)
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = (date.fromisoformat(text) if len(text) == 10
                     else datetime.fromisoformat(text))
        except ValueError:
            raise ConfigError(f"not an ISO date or time: {value!r} "
                              "(e.g. '2026-05-02' or '2026-05-02T01:10:00Z')") from None
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None \
            else value.astimezone(timezone.utc)
    if isinstance(value, date):
        t = datetime.max.time() if end_of_day else datetime.min.time()
        return datetime.combine(value, t, tzinfo=timezone.utc)
    raise ConfigError(f"expected a datetime, date or ISO string, not {type(value).__name__}")


def _row_time(row: Mapping) -> datetime | None:
    raw = row.get("transaction_time")
    if not isinstance(raw, str):
        return None
    try:
        return parse_when(raw)
    except ConfigError:
        return None


def _ids(values: Any) -> list[int] | None:
    if values is None:
        return None
    if isinstance(values, (int, str)):
        values = [values]
    return [int(v) for v in values]


# ---------------------------------------------------------------- small value types

@dataclass(frozen=True)
class Team:
    """The team a token is bound to. ``mode``: 0 Basic, 1 Unit, 2 Location.

    >>> t = Team.from_body({"id": 7, "name": "Shop", "mode": 2})
    >>> t.uses_locations, t.mode_name
    (True, 'Location')
    """

    id: int
    name: str
    mode: int
    mode_name: str
    uses_locations: bool
    currency_symbol: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_body(cls, body: Any) -> Team:
        """Build from ``/v1/teams/linked``'s body, bare or wrapped in ``{"item": ...}``."""
        obj = body
        if isinstance(body, Mapping) and "mode" not in body and isinstance(body.get("item"),
                                                                          Mapping):
            obj = body["item"]
        if not isinstance(obj, Mapping) or not isinstance(obj.get("mode"), int):
            raise APIError(f"{TEAM_PATH} answered without a team (id, name, mode); "
                           "is base_url the inventory API?", status=200, path=TEAM_PATH)
        mode = obj["mode"]
        return cls(id=obj.get("id"), name=obj.get("name"), mode=mode,
                   mode_name=MODE_NAMES.get(mode, f"mode {mode}"),
                   uses_locations=mode == LOCATION_MODE,
                   currency_symbol=obj.get("currency_symbol"), raw=dict(obj))

    def _repr_html_(self) -> str:
        e = html.escape
        return (f"<b>{e(str(self.name))}</b> (team {e(str(self.id))}, "
                f"{e(self.mode_name)} mode {self.mode})")


@dataclass(frozen=True)
class RequestStats:
    """Cumulative request counts of a client.

    ``sent``: HTTP requests that went to the server (every attempt); ``from_cache``:
    responses answered by the local cache; ``pages``/``rows``: list pages and rows handed
    out by walks; ``retries``: attempts that were retries; ``rate_limited``: 429 answers
    received.

    >>> RequestStats(sent=3) - RequestStats(sent=1)
    RequestStats(sent=2, from_cache=0, pages=0, rows=0, retries=0, rate_limited=0)
    """

    sent: int = 0
    from_cache: int = 0
    pages: int = 0
    rows: int = 0
    retries: int = 0
    rate_limited: int = 0

    def __sub__(self, other: RequestStats) -> RequestStats:
        return RequestStats(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                               for f in fields(self)})


class Measurement:
    """Request counts of one ``with client.measure() as m:`` block (live inside it, fixed
    after it), plus when it started and finished (UTC)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._start = client.stats
        self._end: RequestStats | None = None
        self.started_at = datetime.now(timezone.utc)
        self.finished_at: datetime | None = None

    def _finish(self) -> None:
        self._end = self._client.stats
        self.finished_at = datetime.now(timezone.utc)

    @property
    def stats(self) -> RequestStats:
        return (self._end or self._client.stats) - self._start

    sent = property(lambda self: self.stats.sent)
    from_cache = property(lambda self: self.stats.from_cache)
    pages = property(lambda self: self.stats.pages)
    rows = property(lambda self: self.stats.rows)
    retries = property(lambda self: self.stats.retries)
    rate_limited = property(lambda self: self.stats.rate_limited)

    def __repr__(self) -> str:
        s = self.stats
        return (f"Measurement(sent={s.sent}, from_cache={s.from_cache}, pages={s.pages}, "
                f"rows={s.rows}, retries={s.retries}, rate_limited={s.rate_limited})")


class _Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys((f.name for f in fields(RequestStats)), 0)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._values[k] += v

    def snapshot(self) -> RequestStats:
        with self._lock:
            return RequestStats(**self._values)


# ---------------------------------------------------------------- transport failures

class TransportFailure(NamedTuple):
    """How :meth:`Client._send` reads a requests exception."""

    what: str        # what happened, for the message
    check: str       # what the user should check
    retryable: bool  # worth sending again: only connection failures, timeouts, drops
    sent: bool       # the request may have reached the server (counts in stats.sent)


def _describe_transport(exc: BaseException) -> TransportFailure:
    """Classify a requests exception. Only what a second try can cure is retryable (refused
    or dropped connections, timeouts); anything else -- a bad URL, a redirect loop, a TLS
    failure, an unknown error -- fails at once, because repeating it only makes the user
    wait through the backoff for the same answer.

    >>> _describe_transport(requests.exceptions.InvalidURL("bad port")).retryable
    False
    """
    chain, cur = [], exc
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__ or (cur.args[0] if cur.args and
                                                   isinstance(cur.args[0], BaseException)
                                                   else None)
    names = " ".join(type(e).__name__ for e in chain) + " " + " ".join(str(e) for e in chain)
    exc_ = requests.exceptions
    if isinstance(exc, exc_.SSLError):
        return TransportFailure("TLS/SSL handshake failed", "that base_url is the service's "
                                "https address and that no proxy intercepts it", False, False)
    if isinstance(exc, exc_.ConnectTimeout):
        return TransportFailure("connecting timed out", "your network or proxy, or raise the "
                                "connect timeout (timeout=(connect, read))", True, False)
    if isinstance(exc, exc_.Timeout):
        return TransportFailure("no answer within the read timeout", "raise timeout=(connect, "
                                "read) if the server is just slow", True, True)
    if isinstance(exc, exc_.ProxyError):
        return TransportFailure("the proxy failed or refused the connection", "your proxy "
                                "settings (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)", True, False)
    if isinstance(exc, exc_.ChunkedEncodingError) or "IncompleteRead" in names:
        return TransportFailure("the connection dropped in the middle of a response", "your "
                                "network; the request is safe to repeat", True, True)
    if isinstance(exc, exc_.ConnectionError):
        if "NameResolution" in names or "Name or service not known" in names \
                or "getaddrinfo" in names:
            return TransportFailure("the host name could not be resolved (DNS)", "the host in "
                                    "base_url and your network connection", False, False)
        if "Connection refused" in names or "ConnectionRefused" in names:
            return TransportFailure("the connection was refused", "base_url and its port; if "
                                    "it is the stand-in server, that it is still running",
                                    True, False)
        if "RemoteDisconnected" in names or "ConnectionReset" in names or "aborted" in names:
            return TransportFailure("the server closed the connection without answering",
                                    "your network or proxy; the request is safe to repeat",
                                    True, True)
        # NewConnectionError: no connection was made (network unreachable, ...).
        return TransportFailure(f"the connection failed ({type(exc).__name__})", "your network "
                                "connection and base_url", True, "NewConnection" not in names)
    if isinstance(exc, exc_.TooManyRedirects):
        return TransportFailure("the server kept redirecting", "that base_url is the API's "
                                f"address (normally {DEFAULT_BASE_URL})", False, True)
    # Invalid URL, schema or header: refused by requests before anything went out.
    return TransportFailure(f"the request could not be made ({type(exc).__name__}: {exc})",
                            "base_url and the path", False, not isinstance(exc, ValueError))


def _backoff(attempt: int, base: float) -> float:
    """Exponential backoff with 'equal jitter': half fixed, half random."""
    delay = min(MAX_BACKOFF, base * 2 ** (attempt - 1))
    return delay / 2 + random.uniform(0, delay / 2)


def _seconds(value: str | None) -> float | None:
    """A header's seconds: a number, an epoch timestamp, or an HTTP date."""
    if not value:
        return None
    try:
        secs = float(value)
    except ValueError:
        try:
            return parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    if secs > 1e9:  # some servers send the reset moment as a Unix timestamp
        secs -= time.time()
    return secs


# ---------------------------------------------------------------- the client

class Client:
    """One team's view of the inventory API: token, base URL, cache, pacing, retries.

    ``token=None`` reads ``INVTOOLS_TOKEN``. ``cache``: True (the user cache directory),
    False (off) or a path. ``rate_limit``: requests per second per endpoint (or per token
    with ``rate_limit_scope="token"``; 0 = not paced). ``timeout``: seconds or
    (connect, read). ``retries``: how many times a failed GET is sent again.
    ``backoff``: base seconds of the exponential backoff.

    >>> Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
    Client(base_url='http://127.0.0.1:9', team=<not fetched yet>, cache=off, rate_limit=off)
    """

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        cache: bool | str | os.PathLike = True,
        rate_limit: float | None = 5.0,
        rate_limit_scope: str = "endpoint",
        timeout: float | tuple[float, float] = (5.0, 60.0),
        retries: int = 5,
        backoff: float = 0.5,
        progress: bool = True,
    ) -> None:
        token = clean_token(os.environ.get(TOKEN_ENV) if token is None else token)
        self.base_url = normalise_base_url(base_url)
        self.timeout = _check_timeout(timeout)
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ConfigError(f"retries must be a whole number >= 0, not {retries!r}")
        if not isinstance(backoff, (int, float)) or backoff < 0:
            raise ConfigError(f"backoff must be seconds >= 0, not {backoff!r}")
        if rate_limit is not None and (not isinstance(rate_limit, (int, float))
                                       or rate_limit < 0):
            raise ConfigError(f"rate_limit must be requests per second >= 0 (0 = off), "
                              f"not {rate_limit!r}")
        if rate_limit_scope not in RATE_LIMIT_SCOPES:
            raise ConfigError(f"rate_limit_scope must be one of "
                              f"{', '.join(map(repr, RATE_LIMIT_SCOPES))}, "
                              f"not {rate_limit_scope!r}")
        self.retries = retries
        self.backoff = float(backoff)
        self.rate_limit = float(rate_limit or 0)
        self.rate_limit_scope = rate_limit_scope
        self.progress = progress
        try:
            self.cache_path: Path | None = resolve_cache_path(cache)
        except TypeError:
            raise ConfigError(f"cache must be True, False or a path, not {cache!r}") from None
        self._session = make_session(cache_path=self.cache_path, rate_limit=self.rate_limit,
                                     rate_limit_scope=rate_limit_scope)
        # The token lives only in the session's auth object, whose repr hides it: no attribute
        # of the client holds it, so no repr, pickle of attributes or traceback locals shows
        # it. Being an auth object (not a default header) also stops requests from replacing
        # it with credentials from ~/.netrc.
        self._session.auth = BearerAuth(token)
        self._session.headers["Accept"] = "application/json"
        self._session.headers["User-Agent"] = "invtools (+requests)"
        del token
        self._team: Team | None = None
        self._team_lock = threading.RLock()
        self._counters = _Counters()

    # -- lifecycle and display

    def close(self) -> None:
        """Close the connection pool, the cache file and the limiter's thread."""
        self._session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        team = (f"{self._team.name!r} (id {self._team.id}, {self._team.mode_name})"
                if self._team else "<not fetched yet>")
        cache = str(self.cache_path) if self.cache_path else "off"
        rate = (f"{self.rate_limit:g}/s per {self.rate_limit_scope}" if self.rate_limit
                else "off")
        return f"Client(base_url={self.base_url!r}, team={team}, cache={cache}, rate_limit={rate})"

    def _repr_html_(self) -> str:
        e = html.escape
        try:
            t = self._team or self._team_for_display()
            team = (f"<b>{e(str(t.name))}</b> &middot; id {e(str(t.id))} &middot; "
                    f"{e(t.mode_name)} mode ({t.mode})")
        except TransportError as exc:
            team = (f"<i>not fetched yet, could not reach the API: {e(str(exc))} Call "
                    "client.team() to try again.</i>")
        except Exception as exc:  # noqa: BLE001 - a display must not raise
            team = (f"<i>not fetched yet ({e(type(exc).__name__)}: {e(str(exc))}); call "
                    "client.team() to try again</i>")
        s = self.stats
        rows = [("Team", team), ("API", e(self.base_url)),
                ("Cache", e(str(self.cache_path)) if self.cache_path else "off"),
                ("Rate limit", e(f"{self.rate_limit:g}/s per {self.rate_limit_scope}")
                 if self.rate_limit else "off"),
                ("Requests", f"{s.sent} sent, {s.from_cache} from cache, {s.retries} retries")]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>"
                       f"{v}</td></tr>" for k, v in rows)
        return f"<table><caption>invtools Client</caption>{body}</table>"

    #: A display asks for the team once, briefly: it must not block a notebook through the
    #: retries and backoff that a real call would sit out.
    DISPLAY_TIMEOUT = (1.0, 3.0)

    def _team_for_display(self) -> Team:
        """The team for a repr: one attempt, no retries, short timeouts (the cache still
        answers if it can). Raises like :meth:`team`."""
        if not self._team_lock.acquire(timeout=self.DISPLAY_TIMEOUT[1]):
            raise TimeoutError("another thread is fetching the team")
        try:
            if self._team is None:
                body = self._send(TEAM_PATH, None, retries=0, timeout=tuple(
                    min(a, b) for a, b in zip(self.DISPLAY_TIMEOUT, self.timeout)))[0]
                self._team = Team.from_body(body)
            return self._team
        finally:
            self._team_lock.release()

    # -- stats

    @property
    def stats(self) -> RequestStats:
        """Cumulative counts since the client was made (a snapshot)."""
        return self._counters.snapshot()

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        """Count the requests of a block.

        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> with c.measure() as m:
        ...     pass
        >>> m.sent, m.from_cache
        (0, 0)
        """
        m = Measurement(self)
        try:
            yield m
        finally:
            m._finish()

    def provenance(self, measurement: Measurement, path: str,
                   params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Where a result came from, for ``DataFrame.attrs``: team, endpoint, filters, when,
        pages, requests sent and answered from cache. No token."""
        team = self.team()
        s = measurement.stats
        fetched = measurement.finished_at or datetime.now(timezone.utc)
        return {
            "team": {"id": team.id, "name": team.name, "mode": team.mode},
            "base_url": self.base_url,
            "endpoint": path,
            "filters": {k: v for k, v in (params or {}).items() if v is not None},
            "fetched_at": fetched.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "pages": s.pages,
            "rows": s.rows,
            "requests_sent": s.sent,
            "from_cache": s.from_cache,
            "retries": s.retries,
        }

    # -- the one request path

    def get(self, path: str, params: Mapping[str, Any] | None = None, *,
            refresh: bool = False) -> Any:
        """GET one response's decoded JSON, or raise an :mod:`invtools.errors` exception.
        ``refresh=True`` skips the cache (and stores the fresh answer).

        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> c.get("items")
        Traceback (most recent call last):
        ...
        invtools.errors.ConfigError: path must start with /v1/, e.g. '/v1/items'; got 'items'
        """
        return self._send(path, params, refresh=refresh)[0]

    def _send(self, path: str, params: Mapping[str, Any] | None, *,
              refresh: bool = False, raw: bool = False, retries: int | None = None,
              timeout: tuple[float, float] | None = None) -> tuple[Any, bool]:
        """Send a GET with retries; return (decoded body, from_cache), or with ``raw`` the
        undecoded bytes of a JSON success (errors are raised exactly as without it).
        ``retries``/``timeout`` override the client's for this one call."""
        if not isinstance(path, str) or not path.startswith("/v1/"):
            raise ConfigError(f"path must start with /v1/, e.g. '/v1/items'; got {path!r}")
        url = self.base_url + path
        params = {k: v for k, v in (params or {}).items() if v is not None}
        extra = {"force_refresh": True} if refresh and self.cache_path else {}
        retries = self.retries if retries is None else retries
        timeout = timeout or self.timeout
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                resp = self._session.get(url, params=params, timeout=timeout, **extra)
            except requests.RequestException as exc:
                failure = _describe_transport(exc)
                if failure.sent:  # a refused connection or a bad URL sent nothing
                    self._counters.add(sent=1)
                if failure.retryable and attempt <= retries:
                    self._retry_wait(path, failure.what, _backoff(attempt, self.backoff),
                                     attempt, retries)
                    continue
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                raise TransportError(
                    f"GET {path} to {self.base_url} failed after {tries}: {failure.what}. "
                    f"Check {failure.check}.", attempts=attempt) from exc
            from_cache = bool(getattr(resp, "from_cache", False))
            self._counters.add(**({"from_cache": 1} if from_cache else {"sent": 1}))
            logger.debug("GET %s %s -> %s%s in %.0f ms", path, params or "", resp.status_code,
                         " (from cache)" if from_cache else "",
                         (time.monotonic() - started) * 1000)
            status = resp.status_code
            if status in RETRY_STATUSES and attempt <= retries:
                wait, why = self._wait_for(resp, attempt)
                if wait is not None:
                    self._retry_wait(path, why, wait, attempt, retries)
                    continue
            elif status == 429:
                self._counters.add(rate_limited=1)
            if raw and 200 <= status < 300 and is_json(resp):
                return resp.content, from_cache
            return self._to_data(resp, path, attempt), from_cache

    def _wait_for(self, resp: requests.Response, attempt: int) -> tuple[float | None, str]:
        if resp.status_code != 429:
            return _backoff(attempt, self.backoff), f"{resp.status_code} {resp.reason}"
        self._counters.add(rate_limited=1)
        for header in ("X-Ratelimit-Reset", "Retry-After"):
            secs = _seconds(resp.headers.get(header))
            if secs is not None:
                if secs > MAX_RATE_LIMIT_WAIT:
                    return None, ""  # do not block a notebook for minutes; raise instead
                # A little past the reset, so we do not land a hair before it.
                return max(secs, 0.0) + 0.05, f"429, {header}: {resp.headers[header]}"
        return _backoff(attempt, max(self.backoff, 0.5)), "429 without a reset header"

    def _retry_wait(self, path: str, why: str, wait: float, attempt: int,
                    retries: int) -> None:
        self._counters.add(retries=1)
        logger.info("GET %s: %s; retry %d of %d in %.2f s", path, why, attempt, retries, wait)
        time.sleep(wait)

    def _to_data(self, resp: requests.Response, path: str, attempts: int) -> Any:
        """THE function that turns a final response into decoded JSON or an exception."""
        status = resp.status_code
        if 200 <= status < 300:
            try:
                return resp.json()
            except ValueError:
                raise APIError(
                    f"GET {path} answered {status} but not with JSON (Content-Type "
                    f"{resp.headers.get('Content-Type')!r}); is base_url {self.base_url!r} the "
                    f"inventory API (normally {DEFAULT_BASE_URL})?",
                    status=status, method="GET", path=path, attempts=attempts) from None
        try:
            body: Any = resp.json()
        except ValueError:
            body = resp.text[:500] or None
        err = from_response(status, body, method="GET", path=path, attempts=attempts,
                            reason=resp.reason)
        if isinstance(err, TeamModeError):
            err = self._team_mode_error(path, err)
        else:
            hint = self._hint(err)
            if hint:
                err.args = (f"{err} {hint}",)
        logger.debug("GET %s -> %s %s", path, status, type(err).__name__)
        raise err

    def _hint(self, err: APIError) -> str:
        n = err.attempts or 1
        if isinstance(err, AuthenticationError):
            return f"The token was refused (missing, mistyped or deleted). {_TOKEN_HELP}"
        if isinstance(err, RateLimitError):
            return (f"Still rate limited after {n} attempt(s): lower rate_limit=, use "
                    "rate_limit_scope='token' if the budget is shared across endpoints, or "
                    "wait a minute and try again.")
        if isinstance(err, ServerError):
            return (f"The server kept failing ({n} attempt(s)); try again later, and quote "
                    "the correlation id if you contact support.")
        if isinstance(err, InvalidRequestError) and err.details.get("errors"):
            return f"Problems: {err.details['errors']}"
        return ""

    # -- team and team mode

    def team(self, *, refresh: bool = False) -> Team:
        """The team the token is bound to; fetched once per client (and cached for hours).

        Raises :class:`AuthenticationError` if the token is refused.
        """
        with self._team_lock:
            if self._team is None or refresh:
                self._team = Team.from_body(self.get(TEAM_PATH, refresh=refresh))
            return self._team

    def _team_mode_message(self, team: Team | None, path: str) -> str:
        needs = (f"GET {route_of(path)} needs a team that manages stock by location "
                 f"(mode {LOCATION_MODE}, {MODE_NAMES[LOCATION_MODE]})")
        who = (f"team {team.name!r} (id {team.id}) is in {team.mode_name} mode ({team.mode})"
               if team else "this token's team does not manage stock by location")
        return (f"{needs}; {who}. What works for every team: {', '.join(EVERY_TEAM)}. "
                "For items, stock, locations and transactions, use a token of a team in "
                "Location mode.")

    def _team_mode_error(self, path: str, server_err: APIError) -> TeamModeError:
        team = self._team
        if team is None and path != TEAM_PATH:
            try:
                team = self.team()
            except Exception:  # noqa: BLE001 - the message can do without the team's name
                team = None
        msg = self._team_mode_message(team, path)
        if server_err.correlation_id:
            msg += f" [correlation id {server_err.correlation_id}]"
        return TeamModeError(msg, status=server_err.status, type=server_err.type,
                             title=server_err.title, correlation_id=server_err.correlation_id,
                             error_id=server_err.error_id, method="GET", path=path,
                             attempts=server_err.attempts, details=server_err.details)

    def require_locations(self, path: str) -> None:
        """Raise :class:`TeamModeError` (naming the team, its mode and what works for it)
        before anything is sent, if this token's team cannot use the location-only ``path``."""
        team = self.team()
        if not team.uses_locations:
            raise TeamModeError(self._team_mode_message(team, path), type=TEAM_MODE_TYPE,
                                title="Team mode does not allow this endpoint",
                                method="GET", path=path)

    # -- walking lists

    def pages(self, path: str, params: Mapping[str, Any] | None = None, *,
              limit: int = DEFAULT_LIMIT, max_pages: int | None = None,
              max_rows: int | None = None, refresh: bool = False,
              progress: bool | None = None, keep=None, stop_at=None) -> Iterator[Page]:
        """Walk a paginated list lazily, page by page (see :func:`invtools.pagination.iter_pages`).

        Nothing is sent until the first page is asked for. ``progress`` overrides the
        client's setting for this walk (a bar appears only after a few pages).
        """
        last = {"from_cache": False}

        def fetch(call: dict) -> Any:
            body, last["from_cache"] = self._send(path, call, refresh=refresh)
            return body

        walk = iter_pages(fetch, params, limit=limit, max_pages=max_pages, max_rows=max_rows,
                          keep=keep, stop_at=stop_at)
        show = self.progress if progress is None else progress
        return self._count_pages(with_progress(walk, enabled=show, desc=route_of(path)), last)

    def _page_bodies(self, path: str, params: Mapping[str, Any] | None) -> Iterator[bytes]:
        """The raw bodies of a whole walk, for :func:`frames.transactions_df_from_pages`.

        Counted in :attr:`stats` like :meth:`pages`. A fresh cached page is read straight
        from the cache: going through ``session.get`` costs about 1.5 ms per hit in requests'
        and requests-cache's per-request machinery, which is most of a warm walk. Anything
        else (a miss, an expired entry) takes the normal path, so it is fetched, retried,
        paced and stored as usual.
        """
        def fetch(call: dict) -> bytes:
            hit = self._cached_body(path, call)
            if hit is not None:
                self._counters.add(from_cache=1)
                return hit
            return self._send(path, call, raw=True)[0]

        walk = with_progress(iter_raw_pages(fetch, params), enabled=self.progress,
                             desc=route_of(path))  # counts pages: rows are not decoded yet
        for page in walk:
            self._counters.add(pages=1)
            yield page.body

    def _cached_body(self, path: str, params: Mapping[str, Any]) -> bytes | None:
        """The body of a fresh cached 200 for this GET, or None. Uses the session's own key
        (built from the URL exactly as requests encodes it) and requests-cache's freshness
        rule, so it finds what ``session.get`` would; should the URLs ever differ, the result
        is a miss and the page goes the normal way."""
        key_for = getattr(self._session, "cache_key_for", None)
        if key_for is None:
            return None
        query = urlencode([(k, v) for k, v in params.items() if v is not None], doseq=True)
        url = f"{self.base_url}{path}?{query}" if query else self.base_url + path
        response = self._session.cache.get_response(key_for(self._session.auth.header, "GET", url))
        if response is None or response.is_expired or response.status_code != 200:
            return None
        return response.content

    def _count_pages(self, walk: Iterator[Page], last: dict) -> Iterator[Page]:
        for page in walk:
            self._counters.add(pages=1, rows=len(page.rows))
            yield replace(page, from_cache=last["from_cache"])

    def rows(self, path: str, params: Mapping[str, Any] | None = None,
             **walk: Any) -> Iterator[dict]:
        """Every row of a paginated list, lazily; takes the keywords of :meth:`pages`."""
        for page in self.pages(path, params, **walk):
            yield from page.rows

    def _location_rows(self, path: str, params: dict, walk: dict) -> Iterator[dict]:
        pages = self.pages(path, params, **walk)  # arguments checked now, nothing sent yet
        return self._rows_after_mode_check(path, pages)

    def _rows_after_mode_check(self, path: str, pages: Iterator[Page]) -> Iterator[dict]:
        self.require_locations(path)  # on first next(): the walk stays lazy
        for page in pages:
            yield from page.rows

    def items(self, *, item_ids=None, location_ids=None, **walk: Any) -> Iterator[dict]:
        """Items by id ascending (Location-mode teams). ``location_ids`` makes each item's
        ``quantity`` the sum over those locations. Takes the keywords of :meth:`pages`."""
        params = {"item_ids": _ids(item_ids), "location_ids": _ids(location_ids)}
        return self._location_rows("/v1/items", params, walk)

    def item(self, id: int, *, location_ids=None, refresh: bool = False) -> dict:
        """One item (Location-mode teams)."""
        path = f"/v1/items/{int(id)}"
        self.require_locations(path)
        return _unwrap(self.get(path, {"location_ids": _ids(location_ids)}, refresh=refresh),
                       path)

    def partners(self, *, type=None, **walk: Any) -> Iterator[dict]:  # noqa: A002
        """Partners by id ascending; ``type`` 0/'supplier' or 1/'customer'. Every team."""
        kinds = {"supplier": 0, "customer": 1}
        if isinstance(type, str):
            if type.lower() not in kinds:
                raise ConfigError(f"partner type must be 'supplier', 'customer', 0 or 1, "
                                  f"not {type!r}")
            type = kinds[type.lower()]
        return self.rows("/v1/partners", {"type": type}, **walk)

    def transactions(self, *, type=None, since=None, until=None,  # noqa: A002
                     **walk: Any) -> Iterator[dict]:
        """Transaction rows, newest first (Location-mode teams).

        ``since``/``until`` (datetime, date or ISO string; naive = UTC; a bare ``until``
        date includes that whole day) keep rows whose ``transaction_time`` is in the
        window. The service has no date filter, so the walk stops at the first row older
        than ``since`` -- no page beyond it is fetched.
        """
        _check_tx_type(type)
        lo, hi = parse_when(since), parse_when(until, end_of_day=True)
        if lo and hi and lo > hi:
            raise ConfigError(f"since ({lo:%Y-%m-%d %H:%M}) is after until ({hi:%Y-%m-%d %H:%M})")
        if lo is not None:
            walk.setdefault("stop_at", lambda row: (t := _row_time(row)) is not None and t < lo)
        if hi is not None:
            walk.setdefault("keep", lambda row: (t := _row_time(row)) is None or t <= hi)
        return self._location_rows(TXS_PATH, {"type": type}, walk)

    def transaction(self, id: int, *, revision: int | None = None,
                    refresh: bool = False) -> dict:
        """One transaction with its lines (``items``); ``revision=N`` gets version N, which
        never changes and so is cached for good (Location-mode teams)."""
        path = f"{TXS_PATH}/{int(id)}"
        self.require_locations(path)
        return _unwrap(self.get(path, {"revision": revision}, refresh=refresh), path)

    def _plain_list(self, path: str, refresh: bool) -> list[dict]:
        body = self.get(path, refresh=refresh)
        items = body.get("items") if isinstance(body, Mapping) else None
        if not isinstance(items, list):
            raise PaginationError(f"GET {path} answered without an 'items' list")
        return items

    def locations(self, *, refresh: bool = False) -> list[dict]:
        """All locations (not paginated; Location-mode teams)."""
        self.require_locations("/v1/locations")
        return self._plain_list("/v1/locations", refresh)

    def members(self, *, refresh: bool = False) -> list[dict]:
        """All team members (not paginated; every team)."""
        return self._plain_list("/v1/members", refresh)

    def attributes(self, *, refresh: bool = False) -> list[dict]:
        """The item attribute definitions (not paginated; every team)."""
        return self._plain_list("/v1/item-attrs", refresh)

    # -- DataFrames: one line each over invtools.frames, provenance in df.attrs (mirror branch)

    def items_df(self, **filters: Any) -> pd.DataFrame:
        """Items as a typed frame (:func:`invtools.frames.items_df`); takes the keywords of
        :meth:`items`. ``df.attrs`` says where it came from.

        >>> client.items_df(location_ids=[1]).attrs["endpoint"]        # doctest: +SKIP
        '/v1/items'
        """
        return self._framed("/v1/items", {k: filters.get(k) for k in ("item_ids", "location_ids")},
                            lambda: frames.items_df(self.items(**filters)))

    def stock_df(self, **filters: Any) -> pd.DataFrame:
        """Stock per item and location (:func:`invtools.frames.stock_df`), location names
        included; takes the keywords of :meth:`items`."""
        return self._framed("/v1/items", {k: filters.get(k) for k in ("item_ids", "location_ids")},
                            lambda: frames.stock_df(self.items(**filters), self.locations(
                                refresh=bool(filters.get("refresh")))))

    def transactions_df(self, *, type=None, since=None, until=None,  # noqa: A002
                        with_lines: bool = False, **walk: Any) -> pd.DataFrame:
        """Transaction rows, newest first (:func:`invtools.frames.transactions_df`); takes the
        keywords of :meth:`transactions`. ``with_lines=True`` fetches each row's detail (one
        request per transaction, cached for good per revision; ``since``/``until`` limit how
        many) and returns one row per line: the transaction columns followed by the line
        columns of :func:`invtools.frames.lines_df` (a transaction without lines keeps one
        row with <NA> line columns).

        >>> client.transactions_df(since="2026-04-01", with_lines=True)  # doctest: +SKIP
        """
        filters = {"type": type, "since": since, "until": until}
        if not with_lines and since is None and until is None and not walk:
            # A whole walk: page bodies go to pyarrow undecoded (about 5x faster than
            # json.loads plus the dict path on 200,000 rows, see benchmarks/bench_end_to_end.py).
            _check_tx_type(type)

            def build() -> pd.DataFrame:
                self.require_locations(TXS_PATH)
                df = frames.transactions_df_from_pages(self._page_bodies(TXS_PATH, {"type": type}))
                self._counters.add(rows=len(df))
                return df

            return self._framed(TXS_PATH, filters, build)
        if not with_lines:
            return self._framed(TXS_PATH, filters, lambda: frames.transactions_df(
                self.transactions(**filters, **walk)))
        return self._framed(TXS_PATH, filters, lambda: self._join_lines(
            *self._rows_and_details(filters, walk), all_types=type is None))

    def lines_df(self, *, type=None, since=None, until=None,  # noqa: A002
                 **walk: Any) -> pd.DataFrame:
        """One row per transaction line (:func:`invtools.frames.lines_df`), from one detail
        request per transaction in the window (``since``/``until``), each cached for good per
        revision; a progress bar shows the detail requests and the time left.

        Stock levels: when an earlier transaction is edited, the service recomputes every later
        level without raising those transactions' revisions, so a detail cached before the edit
        carries levels that are no longer true. Without a ``type`` filter the level columns are
        therefore recomputed from the line quantities (:func:`invtools.frames.rebase_levels`),
        starting from each item's earliest line in the frame; that keeps the whole history
        right. With ``since=``, an edit *before* the window made after its details were cached
        still shifts the whole window (``refresh=True`` refreshes the list, not the details):
        ``client.clear_cache()`` first, or use a full history or the mirror. With a
        ``type`` filter the levels are the stored ones (the other types' lines, needed to
        recompute them, are not in the frame)."""
        filters = {"type": type, "since": since, "until": until}
        return self._framed(TXS_PATH, filters, lambda: self._lines(
            self._rows_and_details(filters, walk)[1], all_types=type is None))

    def locations_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """All locations (:func:`invtools.frames.locations_df`)."""
        return self._framed("/v1/locations", {},
                            lambda: frames.locations_df(self.locations(refresh=refresh)))

    def partners_df(self, *, type=None, **walk: Any) -> pd.DataFrame:  # noqa: A002
        """Partners (:func:`invtools.frames.partners_df`); takes the keywords of :meth:`partners`."""
        return self._framed("/v1/partners", {"type": type},
                            lambda: frames.partners_df(self.partners(type=type, **walk)))

    def members_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """Team members (:func:`invtools.frames.members_df`)."""
        return self._framed("/v1/members", {},
                            lambda: frames.members_df(self.members(refresh=refresh)))

    def attributes_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """Item attribute definitions (:func:`invtools.frames.attributes_df`)."""
        return self._framed("/v1/item-attrs", {},
                            lambda: frames.attributes_df(self.attributes(refresh=refresh)))

    def _framed(self, path: str, filters: Mapping[str, Any], build) -> pd.DataFrame:
        """Build a frame while counting its requests; record where it came from."""
        with self.measure() as m:
            df = build()
        p = self.provenance(m, path, filters)
        return frames.with_provenance(
            df, team_id=p["team"]["id"], team_name=p["team"]["name"], endpoint=path,
            filters=p["filters"], fetched_at=pd.Timestamp(m.finished_at), pages=p["pages"],
            requests=p["requests_sent"], from_cache=p["from_cache"])

    def _rows_and_details(self, filters: dict, walk: dict) -> tuple[list[dict], list[dict]]:
        """The rows in the window, then their details: one request each, at the revision the
        list shows (cached for good, so fetched once, even with ``refresh=True``, which
        refreshes the list), with a bar that knows the total and the time left."""
        from tqdm.auto import tqdm  # here: in a notebook tqdm.auto imports ipywidgets

        rows = list(self.transactions(**filters, **walk))
        details = []
        for row in tqdm(rows, desc="transaction details", unit=" req", leave=False,
                        disable=not self.progress or not rows):
            try:
                details.append(self.transaction(row["id"], revision=row.get("revision")))
            except NotFoundError:
                continue  # deleted since the list was read: no lines to show
        return rows, details

    @staticmethod
    def _lines(details: list[dict], *, all_types: bool) -> pd.DataFrame:
        """The lines of ``details``; their stock levels recomputed from the quantities when
        every type of transaction is there to recompute them from (see :meth:`lines_df`)."""
        lines = frames.lines_df(details)
        return frames.rebase_levels(lines) if all_types else lines

    @classmethod
    def _join_lines(cls, rows: list[dict], details: list[dict], *,
                    all_types: bool) -> pd.DataFrame:
        """Transactions frame left-joined with the line-only columns of their details
        (row order kept)."""
        tx = frames.transactions_df(rows)
        lines = cls._lines(details, all_types=all_types)
        own = [c for c in lines.columns if c not in tx.columns]  # transaction_id, item_id, ...
        return tx.merge(lines[own], how="left", left_on="id", right_on="transaction_id",
                        sort=False).drop(columns="transaction_id")

    # -- cache

    def clear_cache(self) -> int:
        """Delete this token's cached responses (other teams' stay); returns how many."""
        if self.cache_path is None:
            return 0
        prefix = self._session.cache_prefix_for(self._session.auth.header) + ":"
        cache = self._session.cache
        keys = [k for k in cache.responses.keys() if k.startswith(prefix)]
        if keys:
            cache.delete(*keys)
        with self._team_lock:
            self._team = None
        logger.info("cleared %d cached responses of this team", len(keys))
        return len(keys)


def _check_tx_type(type_: Any) -> None:
    if type_ is not None and type_ not in ("in", "out", "move", "adjust"):
        raise ConfigError(f"transaction type must be in, out, move or adjust, not {type_!r}")


class BearerAuth(requests.auth.AuthBase):
    """Adds ``Authorization: Bearer <token>`` to each request; its repr never shows the token.

    >>> BearerAuth("s3cret")
    BearerAuth(<hidden>)
    """

    def __init__(self, token: str) -> None:
        self.header = f"Bearer {token}"

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self.header
        return request

    def __repr__(self) -> str:
        return "BearerAuth(<hidden>)"

    def __eq__(self, other: object) -> bool:  # requests compares auth objects when merging
        return isinstance(other, BearerAuth) and other.header == self.header


def _unwrap(body: Any, path: str) -> dict:
    if isinstance(body, Mapping) and isinstance(body.get("item"), Mapping):
        return body["item"]
    raise APIError(f"GET {path} answered without the expected {{'item': ...}} object",
                   status=200, method="GET", path=path)
