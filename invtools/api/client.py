"""Client: one team's view of the inventory API -- token, base URL, cache, pacing, retries.

A typical session in a notebook::

    c = Client()                      # token from INVTOOLS_TOKEN
    c.team()                          # Team(id=..., name='Corner Shop', mode=2, ...)
    rows = list(c.transactions(since="2026-04-01"))
    c.stats                           # RequestStats(sent=..., from_cache=..., ...)

This module holds the client's life cycle and its low-level calls (``get``, ``pages``,
``raw_pages``, ``team``, ``require_locations``, ``measure``, ``provenance``, ``clear_cache``).
The resource methods (``items()``, ``transactions()``, ...) are in
:mod:`invtools.api.endpoints` and the DataFrame methods (``items_df()``, ...) in
:mod:`invtools.api.dataframes`; both use only those public calls. Every request goes through
:class:`invtools.api.requester.Requester`, the one place a response becomes data or an error.

>>> Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
Client(base_url='http://127.0.0.1:9', team=<not fetched yet>, cache=off, rate_limit=off)
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from invtools._clock import SYSTEM_CLOCK
from invtools._config import DEFAULT_BASE_URL, TOKEN_ENV, check_timeout, clean_token, \
    normalise_base_url
from invtools._progress import walk_progress
from invtools._provenance import Provenance
from invtools._types import TEAM_PATH, parse_duration, route_of
from invtools.api.auth import BearerAuth
from invtools.api.dataframes import FramesMixin
from invtools.api.endpoints import EndpointsMixin
from invtools.api.pagination import DEFAULT_LIMIT, Page, RawPage, iter_pages, iter_raw_pages
from invtools.api.requester import Requester
from invtools.api.stats import Counters, Measurement, RequestStats
from invtools.api.team import Team, team_mode_message
from invtools.errors import APIError, ConfigError, PaginationError, TeamModeError, \
    TransportError
from invtools.http import RATE_LIMIT_SCOPES, make_session, shared_budget
from invtools.api.snapshot import NotInSnapshot, SnapshotReader
from invtools.http.cache import cached_entry, clear_entries, default_max_age, resolve_cache_path
from invtools.http.upkeep import maybe_prune, prune_cache

__all__ = ["Client"]

logger = logging.getLogger("invtools")


class Client(EndpointsMixin, FramesMixin):
    """One team's view of the inventory API: token, base URL, cache, pacing, retries.

    ``token=None`` reads ``INVTOOLS_TOKEN``. ``cache``: True (the user cache directory),
    False (off) or a path. ``rate_limit``: requests per second per endpoint (or per token
    with ``rate_limit_scope="token"``; 0 = not paced); every client of the same token and
    base URL in this process shares that budget. ``timeout``: seconds or (connect, read).
    ``retries``: how many times a failed GET is sent again. ``backoff``: base seconds of the
    exponential backoff. ``progress``: show progress bars on long walks. ``clock``: what
    waits are measured and slept on (tests pass a fake one).
    """

    #: A display asks for the team once, briefly: it must not block a notebook through the
    #: retries and backoff that a real call would sit out.
    DISPLAY_TIMEOUT = (1.0, 3.0)

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
        clock: Any = SYSTEM_CLOCK,
    ) -> None:
        token = clean_token(os.environ.get(TOKEN_ENV) if token is None else token)
        self.base_url = normalise_base_url(base_url)
        timeout = check_timeout(timeout)
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
        self.rate_limit = float(rate_limit or 0)
        self.rate_limit_scope = rate_limit_scope
        self.progress = progress
        try:
            self.cache_path: Path | None = resolve_cache_path(cache)
        except TypeError:
            raise ConfigError(f"cache must be True, False or a path, not {cache!r}") from None
        auth = BearerAuth(token)
        del token
        budget = None
        if self.rate_limit:
            # The budget is the token's (at this service), shared by its clients in this process;
            # it is found by a hash, so no token is kept in the registry.
            owner = hashlib.sha256(f"{self.base_url}\0{auth.header}".encode()).hexdigest()
            budget = shared_budget(f"{owner}:{rate_limit_scope}", self.rate_limit, clock=clock)
        session = make_session(cache_path=self.cache_path, budget=budget,
                               rate_limit_scope=rate_limit_scope)
        if self.cache_path is not None:
            maybe_prune(self.cache_path)  # at most once a day: what no client reads again
        # The token lives only in the session's auth object, whose repr hides it: no attribute
        # of the client holds it, so no repr, pickle of attributes or traceback locals shows it.
        session.auth = auth
        session.headers["Accept"] = "application/json"
        session.headers["User-Agent"] = "invtools (+requests)"
        self._counters = Counters()
        self._requester = Requester(session, base_url=self.base_url, timeout=timeout,
                                    retries=retries, backoff=float(backoff),
                                    counters=self._counters, clock=clock,
                                    on_team_mode=self._team_mode_error)
        self._team: Team | None = None
        self._team_lock = threading.RLock()

    # -- settings, read through the one request path

    timeout = property(lambda self: self._requester.timeout)
    retries = property(lambda self: self._requester.retries)
    backoff = property(lambda self: self._requester.backoff)

    # -- lifecycle and display

    def close(self) -> None:
        """Close the connection pool and the cache file."""
        self._requester.session.close()

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

    def _team_for_display(self) -> Team:
        """The team for a repr: one attempt, no retries, short timeouts (the cache still
        answers if it can). Raises like :meth:`team`."""
        if not self._team_lock.acquire(timeout=self.DISPLAY_TIMEOUT[1]):
            raise TimeoutError("another thread is fetching the team")
        try:
            if self._team is None:
                body = self._requester.send(TEAM_PATH, None, retries=0, timeout=tuple(
                    min(a, b) for a, b in zip(self.DISPLAY_TIMEOUT, self.timeout)))[0]
                self._team = Team.from_body(body)
            return self._team
        finally:
            self._team_lock.release()

    # -- stats and provenance

    @property
    def stats(self) -> RequestStats:
        """Cumulative counts since the client was made (a snapshot)."""
        return self._counters.snapshot()

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        """Count the requests of a block -- only this call's, even while other threads use
        the same client.

        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> with c.measure() as m:
        ...     pass
        >>> m.sent, m.from_cache
        (0, 0)
        """
        with self._counters.measure() as m:
            yield m

    def provenance(self, measurement: Measurement, path: str,
                   params: Mapping[str, Any] | None = None) -> Provenance:
        """Where a result came from (the record frames carry in ``df.attrs``): team, service,
        endpoint, filters, when, how old the data is, pages, rows, requests sent and answered
        from cache. No token."""
        team = self.team()
        s = measurement.stats
        return Provenance(
            source="api", team_id=team.id, team_name=team.name, base_url=self.base_url,
            endpoint=path, filters=params or {},
            fetched_at=measurement.finished_at or datetime.now(timezone.utc),
            data_as_of=measurement.data_as_of,
            pages=s.pages, rows=s.rows, requests=s.sent, from_cache=s.from_cache,
            retries=s.retries)

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
        return self._requester.send(path, params, refresh=refresh)[0]

    # -- team and team mode

    def team(self, *, refresh: bool = False) -> Team:
        """The team the token is bound to; fetched once per client (and cached for hours).

        Raises :class:`AuthenticationError` if the token is refused.
        """
        with self._team_lock:
            if self._team is None or refresh:
                self._team = Team.from_body(self.get(TEAM_PATH, refresh=refresh))
            return self._team

    def _team_mode_error(self, path: str, server_err: APIError) -> TeamModeError:
        team = self._team
        if team is None and path != TEAM_PATH:
            try:
                team = self.team()
            except Exception:  # noqa: BLE001 - the message can do without the team's name
                team = None
        msg = team_mode_message(team, path)
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
            raise TeamModeError(team_mode_message(team, path), type="/errors/invalid-team-mode",
                                title="Team mode does not allow this endpoint",
                                method="GET", path=path)

    # -- walking lists

    def pages(self, path: str, params: Mapping[str, Any] | None = None, *,
              limit: int = DEFAULT_LIMIT, max_pages: int | None = None,
              max_rows: int | None = None, refresh: bool = False, max_age: Any = None,
              progress: bool | None = None, keep=None, stop_at=None) -> Iterator[Page]:
        """Walk a paginated list lazily, page by page (see
        :func:`invtools.api.pagination.iter_pages`).

        Nothing is sent until the first page is asked for. A walk comes from the cache only
        whole, as one snapshot no older than ``max_age`` (``"1h"``, ``"10min"``, a
        timedelta; default: the transactions list 1 hour, other lists their cache expiry),
        else every page is fetched fresh (:mod:`invtools.api.snapshot`); ``refresh=True``
        always fetches fresh. ``progress`` overrides the client's setting for this walk (a
        bar appears only after a few pages).
        """
        walk_args = dict(limit=limit, max_pages=max_pages, max_rows=max_rows, keep=keep,
                         stop_at=stop_at)
        last = {"from_cache": False}
        plain = iter_pages(self._fresh_fetch(path, last), params, **walk_args)  # checks args
        age = self._max_age(path, max_age)

        def walk() -> Iterator[Page]:
            given: set = set()
            reader = None if refresh else self._snapshot_reader(path, age)
            if reader is not None:
                try:
                    for page in iter_pages(reader, params, **walk_args):
                        self._counters.add(from_cache=1)
                        if page.number == 1:
                            self._counters.saw_data_from(reader.stored_at)
                        last["from_cache"] = True
                        given.update(row.get("id") for row in page.rows
                                     if isinstance(row, Mapping))
                        yield page
                    return
                except (NotInSnapshot, PaginationError):
                    pass  # not one snapshot: the whole walk fresh, rows given once only
            for page in plain:
                if given:
                    page = replace(page, rows=[r for r in page.rows if not (
                        isinstance(r, Mapping) and r.get("id") in given)])
                yield page

        show = self.progress if progress is None else progress
        return self._count_pages(walk_progress(walk(), enabled=show, desc=route_of(path)),
                                 last)

    def _count_pages(self, walk: Iterator[Page], last: dict) -> Iterator[Page]:
        for page in walk:
            self._counters.add(pages=1, rows=len(page.rows))
            yield replace(page, from_cache=last["from_cache"])

    def _fresh_fetch(self, path: str, last: dict, *, raw: bool = False):
        """Fetch one page from the server: with a cache, every page of a fresh walk is
        fetched anew (a snapshot is never topped up with pages of another walk)."""
        force = self.cache_path is not None

        def fetch(call: dict) -> Any:
            body, last["from_cache"] = self._requester.send(path, call, refresh=force, raw=raw)
            return body

        return fetch

    def _max_age(self, path: str, max_age: Any) -> timedelta | None:
        if max_age is None:
            return default_max_age(self._requester.url(path))
        return parse_duration(max_age, name="max_age", zero=True)

    def _snapshot_reader(self, path: str, max_age: timedelta | None,
                         decode=json.loads) -> SnapshotReader | None:
        """Reads a walk's pages from the cache as one snapshot (None without a cache)."""
        if self.cache_path is None:
            return None
        session = self._requester.session

        def read(call: dict) -> tuple[bytes, datetime] | None:
            return cached_entry(session, session.auth.header,
                                self._requester.full_url(path, call))

        return SnapshotReader(read, max_age=max_age, now=datetime.now(timezone.utc),
                              decode=decode)

    def raw_pages(self, path: str, params: Mapping[str, Any] | None = None, *,
                  refresh: bool = False, max_age: Any = None,
                  progress: bool | None = None) -> Iterator[RawPage]:
        """The pages of a whole walk undecoded (``page.body`` is bytes), for callers that
        parse rows in bulk (:func:`invtools.frames.transactions_df_from_pages`). Counted in
        :attr:`stats`, and served from the cache as one snapshot or not at all, like
        :meth:`pages`.

        Cached pages are read straight from the cache file: going through ``session.get``
        costs about 1.5 ms per hit in requests' and requests-cache's per-request machinery,
        which is most of a warm walk.
        """
        last = {"from_cache": False}
        plain = iter_raw_pages(self._fresh_fetch(path, last, raw=True), params)
        age = self._max_age(path, max_age)

        def walk() -> Iterator[RawPage]:
            reader = None if refresh else self._snapshot_reader(path, age, decode=bytes)
            if reader is not None:
                try:  # the whole walk first: its rows are not decoded, so never given twice
                    snap = list(iter_raw_pages(reader, params))
                except (NotInSnapshot, PaginationError):
                    snap = None
                if snap:
                    self._counters.saw_data_from(reader.stored_at)
                    for page in snap:
                        self._counters.add(from_cache=1)
                        yield page
                    return
            yield from plain

        show = self.progress if progress is None else progress
        for page in walk_progress(walk(), enabled=show, desc=route_of(path)):
            self._counters.add(pages=1, rows=page.count)
            yield page

    # -- cache

    def prune_cache(self, *, older_than: Any = None) -> dict[str, int] | None:
        """Prune this client's cache file now (:func:`invtools.prune_cache`: expired,
        superseded and orphaned entries, and with ``older_than`` anything older); every team's
        entries in it, not only this token's. None without a cache. Done by itself when a
        client is created, at most once a day."""
        if self.cache_path is None:
            return None
        return prune_cache(self.cache_path, older_than=older_than)

    def clear_cache(self) -> int:
        """Delete this token's cached responses (other teams' stay); returns how many."""
        session = self._requester.session
        removed = clear_entries(session, session.auth.header)
        with self._team_lock:
            self._team = None
        logger.info("cleared %d cached responses of this team", removed)
        return removed
