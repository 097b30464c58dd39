"""The one request path: send a GET (retrying what is worth retrying), and turn the final
response into decoded JSON or an :mod:`invtools.errors` exception.

Retries: a 429 waits for the reset the server asks for (the token's budget holds its bucket that
long, so other requests wait too, and slows its pace: :mod:`invtools.http.pacing`);
500/502/503/504 and dropped connections
or timeouts wait an exponential backoff. Every attempt goes through the cache and the pacing
again and is counted (``sent``, ``from_cache``, ``retries``, ``rate_limited``). Waits use the
client's clock, so tests can drive them without sleeping, and end early (raising
:class:`~invtools.errors.Cancelled`) when the batch they run in is stopped
(:func:`invtools._clock.cancel_scope`). What it needs of the session the client owns is
:class:`ClientSession`; the token rides only in :class:`BearerAuth`.

>>> from invtools.api.stats import Counters
>>> from invtools.http import make_session
>>> r = Requester(make_session(cache_path=None), base_url="http://127.0.0.1:9",
...               timeout=(1.0, 1.0), retries=0, backoff=0.0, counters=Counters())
>>> r.send("items", None)
Traceback (most recent call last):
...
invtools.errors.ConfigError: path must start with /v1/, e.g. '/v1/items'; got 'items'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlencode

import requests
from requests_cache import SQLiteCache

from invtools._clock import SYSTEM_CLOCK, current_cancel
from invtools._config import (
    DEFAULT_BASE_URL,
    TOKEN_HELP,
    Secret,
    check_flag,
    check_kind,
    redact_url,
)
from invtools._types import resource_of
from invtools.api import refusals
from invtools.api.clock import ServiceClock
from invtools.api.endpoints import Team, team_mode_message
from invtools.api.inflight import InFlight
from invtools.api.stats import Counters
from invtools.errors import (
    APIError,
    AuthenticationError,
    Cancelled,
    ConfigError,
    InvalidRequestError,
    RateLimitError,
    ServerError,
    TeamModeError,
    TransportError,
    from_response,
)
from invtools.http import transport, upkeep
from invtools.http.cache import (
    MAX_DEPTH,
    CacheKeys,
    forget,
    json_of,
    looks_json,
    sound_response,
)
from invtools.http.retries import MAX_RATE_LIMIT_WAIT, RETRY_STATUSES, backoff, rate_limit_wait

__all__ = ["Requester", "ClientSession", "BearerAuth"]

logger = logging.getLogger("invtools")


class BearerAuth(requests.auth.AuthBase):
    """Adds ``Authorization: Bearer <token>`` to each request; its repr never shows the token.
    Being an auth object (not a default header) also stops requests from replacing it with
    credentials from ``~/.netrc`` for the same host.

    >>> BearerAuth("s3cret")
    BearerAuth(<hidden>)
    """

    def __init__(self, token: str) -> None:
        self.header = Secret("Bearer " + token)  # shown as '<hidden>' in any headers dict

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self.header
        return request

    def __repr__(self) -> str:
        return "BearerAuth(<hidden>)"


class ClientSession(Protocol):
    """What the client needs of the session :func:`invtools.http.make_session` makes (a
    ``requests.Session`` with the cache and pacing mixed in) once the client set its auth."""

    auth: BearerAuth
    #: None without a cache; else how the cache keys entries per token.
    cache_keys: CacheKeys | None
    #: requests-cache's SQLite backend (only with a cache).
    cache: SQLiteCache
    headers: MutableMapping[str, str | bytes]

    def get(self, url: str, **kwargs: Any) -> requests.Response: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class Requester:
    """Sends GETs for one client. ``team``, once the client knows it, is named in a team-mode
    error (the server's 400 says only the rule)."""

    session: ClientSession
    _: KW_ONLY
    base_url: str
    timeout: tuple[float, float]
    retries: int
    backoff: float
    counters: Counters
    clock: Any = SYSTEM_CLOCK
    max_wait: float = MAX_RATE_LIMIT_WAIT
    team: Team | None = field(default=None, init=False)
    #: The service's clock, from the ``Date`` of its answers to ``send(..., clocked=True)``
    #: (the team's), checked (:mod:`invtools.api.clock`).
    service_clock: ServiceClock = field(init=False)
    #: The uses of the session in flight: :meth:`close` waits for them.
    inflight: InFlight = field(init=False)

    def __post_init__(self) -> None:
        self.service_clock = ServiceClock()
        session = self.session  # held, not this object: no reference cycle
        self.inflight = InFlight(lambda: session.close())

    def close(self, wait: float | None = None) -> None:
        """Send nothing more, end the waits of the requests in flight and wait for them
        (``wait`` seconds at most; by default as long as one request may take), then close the
        session: its connection pool and its hold on the cache file
        (:meth:`InFlight.close <invtools.api.inflight.InFlight.close>`)."""
        self.inflight.close(sum(self.timeout) if wait is None else wait)

    def now(self) -> datetime:
        """The service's clock now (:meth:`ServiceClock.now`). The real service's is the wall
        clock; the stand-in's is its data's end (its "now")."""
        return self.service_clock.now()

    @property
    def refusal(self) -> str:
        """The key of this token at this service among the refused ones
        (:mod:`invtools.api.refusals`)."""
        auth = getattr(self.session, "auth", None)
        return refusals.key_of(self.base_url, getattr(auth, "header", None))

    @property
    def refused(self) -> bool:
        """Whether the service refused this token (401) and has not accepted it since: then
        no cached answer of it is served, every request is sent."""
        return refusals.refused(self.refusal)

    def forget(self, urls: list[str]) -> None:
        """Delete this token's cached answers to ``urls`` (:func:`invtools.http.cache.forget`):
        a use of the session, which :meth:`close` waits for."""
        with self.inflight.use("forgetting older answers"):
            forget(self.session, self.session.auth.header, urls)

    def url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """The URL of ``GET path`` (with ``params``: the query as sent, ``None`` values left
        out), as the cache keys it."""
        if not isinstance(path, str) or not path.startswith("/v1/"):
            raise ConfigError(f"path must start with /v1/, e.g. '/v1/items'; got {path!r}")
        query = urlencode([(k, v) for k, v in (params or {}).items() if v is not None], doseq=True)
        return self.base_url + path + (f"?{query}" if query else "")

    def send(
        self,
        path: str,
        params: Mapping[str, Any] | None,
        *,
        refresh: bool = False,
        raw: bool = False,
        dated: bool = True,
        clocked: bool = False,
    ) -> tuple[Any, bool]:
        """Send a GET with retries; return ``(decoded body, from_cache)``, or with ``raw`` the
        undecoded bytes of a JSON success (errors are raised exactly as without it).
        ``dated``: the answer's age counts in the open measurements' ``data_as_of`` (not for
        what never goes stale -- a detail at a revision, the team -- nor a walk's pages: a walk
        is as old as its start). ``clocked``: the answer's ``Date`` sets :meth:`now`. Raises
        :class:`~invtools.errors.Cancelled` once the client is closed."""
        with self.inflight.use(f"GET {path}"):
            return self._send(path, params, refresh=refresh, raw=raw, dated=dated, clocked=clocked)

    def _send(
        self,
        path: str,
        params: Mapping[str, Any] | None,
        *,
        refresh: bool,
        raw: bool,
        dated: bool,
        clocked: bool,
    ) -> tuple[Any, bool]:
        url = self.url(path)
        check_kind(params, (Mapping, type(None)), "params", "a mapping such as {'limit': 10}")
        params = {k: v for k, v in (params or {}).items() if v is not None}
        refresh = check_flag(refresh, "refresh")
        key, attempt = self.refusal, 0
        while True:
            attempt += 1
            started = time.monotonic()
            asked = refusals.ticket()  # a refused token's cached answers are not served
            forced = (refresh or refusals.refused(key)) and self.session.cache_keys
            extra = {"force_refresh": True} if forced else {}
            try:
                resp = self.session.get(
                    url, params=params, timeout=self.timeout, allow_redirects=False, **extra
                )
            except requests.RequestException as exc:
                failure = transport.describe(exc)
                if failure.sent:  # a refused connection or a bad URL sent nothing
                    self.counters.add(sent=1)
                if failure.retryable and attempt <= self.retries:
                    self._wait(path, attempt, backoff(attempt, self.backoff), failure.what)
                    continue
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                raise TransportError(
                    f"Asking for {resource_of(path)} (GET {path} to {self.base_url}) failed "
                    f"after {tries}: {failure.what}. Check {failure.check}.",
                    attempts=attempt,
                ) from exc
            from_cache, status = bool(getattr(resp, "from_cache", False)), resp.status_code
            counts = {"from_cache": 1} if from_cache else {"sent": 1}
            self.counters.add(**counts, rate_limited=int(status == 429))
            if dated:  # the data left the server when the cache stored it, or now
                stored = upkeep.as_utc(getattr(resp, "created_at", None)) if from_cache else None
                self.counters.saw_data_from(stored or datetime.now(UTC))
            ms = (time.monotonic() - started) * 1000
            cached = " (from cache)" if from_cache else ""
            logger.debug("GET %s %s -> %s%s in %.0f ms", path, params or "", status, cached, ms)
            if status in RETRY_STATUSES and attempt <= self.retries:
                self._wait(path, attempt, *self._wait_for(resp, attempt, path))
                continue
            sound = from_cache or not 200 <= status < 300 or sound_response(resp)
            if not sound and looks_json(resp):
                why = (
                    f"{status} with a truncated or empty JSON body, or JSON invtools refuses "
                    f"(NaN, a fraction beyond 2**53, values nested over {MAX_DEPTH} deep)"
                )
                if attempt <= self.retries:
                    self._wait(path, attempt, backoff(attempt, self.backoff), why)
                    continue
                raise ServerError(
                    f"Asking for {resource_of(path)}: GET {path} answered {why} {attempt} "
                    "time(s); nothing of it was kept. This is the server's (or a proxy's) "
                    "fault: try again later.",
                    status=status,
                    method="GET",
                    path=path,
                    attempts=attempt,
                )
            if not from_cache and (status == 401 or (200 <= status < 300 and sound)):
                self._answered(path, key, asked, status)
            if clocked and 200 <= status < 300:
                self._set_clock(resp, from_cache)
            if raw and 200 <= status < 300 and sound:
                return resp.content, from_cache
            return self.to_data(resp, path, attempt), from_cache

    def _answered(self, path: str, key: str, asked: int, status: int) -> None:
        """The service answered the request sent with ticket ``asked``: 401 (a revocation or a
        proxy's, whatever its body) or a success. A 401 deletes nothing: until a success, no
        client of this process serves the token's cached answers at this service."""
        if refusals.answered(key, asked, refused=status == 401):
            now = "not served until it is accepted again" if status == 401 else "served again"
            logger.info(
                "GET %s -> %s: this token's cached answers at %s are %s",
                path,
                status,
                self.base_url,
                now,
            )

    def _set_clock(self, resp: requests.Response, from_cache: bool) -> None:
        # When the answer was made, on this machine's clock: the stamp requests-cache stored
        # with it, so that every process reading the same answer reads the same clock from it
        # (a replayed walk is then as of the same moment in each).
        if not from_cache:
            key, cache = getattr(resp, "cache_key", None), getattr(self.session, "cache", None)
            stored = cache.get_response(key) if key and cache is not None else None
            resp, from_cache = (resp, False) if stored is None else (stored, True)
        made = upkeep.as_utc(getattr(resp, "created_at", None)) if from_cache else None
        self.service_clock.stated(resp.headers.get("Date"), made=made)

    def _wait_for(self, resp: requests.Response, attempt: int, path: str) -> tuple[float, str]:
        """How long to wait before retrying ``resp``, and why."""
        if resp.status_code != 429:
            return backoff(attempt, self.backoff), f"{resp.status_code} {resp.reason}"
        wait, why = rate_limit_wait(resp.headers, now=self.clock.time(), max_wait=self.max_wait)
        if wait is None:
            wait = backoff(attempt, max(self.backoff, 0.5))
        if wait == float("inf"):  # do not block a notebook for longer: say when instead
            raise RateLimitError(
                f"GET {path}: {why}",
                status=429,
                method="GET",
                path=path,
                attempts=attempt,
            )
        budget = getattr(self.session, "budget", None)
        sent = getattr(resp, "invtools_sent", None)
        if budget is not None and sent is not None:
            # The budget holds the bucket from when the refused request was *sent* (the server
            # counted it then, or a latency later: a request sent at the reset meets the
            # counter as late), slows its pace, and every request of the bucket waits for it:
            # this one's retry too, in the budget, so nothing is waited for twice here.
            bucket, admitted = sent
            budget.observe(bucket, admitted, status=429, headers=resp.headers, hold=wait)
            return 0.0, why
        return wait, why

    def _wait(self, path: str, attempt: int, wait: float, why: str) -> None:
        self.counters.add(retries=1)
        logger.info("GET %s: %s; retry %d of %d in %.2f s", path, why, attempt, self.retries, wait)
        if self.clock.wait(current_cancel(), wait):  # a stopped batch: do not retry
            raise Cancelled(f"GET {path}: {why}; not retried, the batch was stopped")

    def to_data(self, resp: requests.Response, path: str, attempts: int) -> Any:
        """THE function that turns a final response into decoded JSON or an exception."""
        status = resp.status_code
        if 200 <= status < 300:
            decoded, value = json_of(resp)
            if decoded:
                return value
            raise APIError(
                f"GET {path} answered {status} but not with JSON (Content-Type "
                f"{resp.headers.get('Content-Type')!r}); is base_url {self.base_url!r} the "
                f"inventory API (normally {DEFAULT_BASE_URL})?",
                status=status,
                method="GET",
                path=path,
                attempts=attempts,
            )
        if resp.is_redirect:  # followed, another place's answer would pass as the team's
            where = redact_url(resp.headers.get("Location", "?"))[:200]
            raise APIError(
                f"GET {path} was redirected ({status}) to {where}; invtools follows no "
                f"redirects, so that no other server's answer passes for the team's data. "
                f"Check base_url {self.base_url!r} (normally {DEFAULT_BASE_URL}).",
                status=status,
                method="GET",
                path=path,
                attempts=attempts,
            )
        decoded, body = json_of(resp)  # the one decoder of answers, errors too
        if not decoded:
            body = resp.text[:500] or None
        if isinstance(body, dict):  # a 401 echoes the token as "given": no local keeps it
            body.pop("given", None)
        err = from_response(
            status, body, method="GET", path=path, attempts=attempts, reason=resp.reason
        )
        if isinstance(err, TeamModeError):
            err.args = (team_mode_message(self.team, path, err.correlation_id),)
        else:
            more = hint(err)
            if more:
                err.args = (f"{err} {more}",)
        logger.debug("GET %s -> %s %s", path, status, type(err).__name__)
        raise err


def hint(err: APIError) -> str:
    """What the user can do about ``err``, appended to its message.

    >>> hint(RateLimitError(status=429, attempts=6))[:40]
    'Still rate limited after 6 attempt(s): l'
    """
    n = err.attempts or 1
    if isinstance(err, AuthenticationError):
        return f"The token was refused (missing, mistyped or deleted). {TOKEN_HELP}"
    if isinstance(err, RateLimitError):
        return (
            f"Still rate limited after {n} attempt(s): lower rate_limit=, use "
            "rate_limit_scope='token' if the budget is shared across endpoints, or "
            "wait a minute and try again."
        )
    if isinstance(err, ServerError):
        return (
            f"The server kept failing ({n} attempt(s)); try again later, and quote "
            "the correlation id if you contact support."
        )
    if isinstance(err, InvalidRequestError) and err.details.get("errors"):
        return f"Problems: {err.details['errors']}"
    return ""
