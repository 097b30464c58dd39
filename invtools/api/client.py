"""Client: one team's view of the inventory API -- token, base URL, cache, pacing, retries.

A typical session in a notebook::

    c = Client()                      # token from INVTOOLS_TOKEN
    c.team()                          # Team(id=..., name='Corner Shop', mode=2, ...)
    rows = list(c.transactions(since="2026-04-01"))
    c.stats                           # RequestStats(sent=..., from_cache=..., ...)

This module holds the client's life cycle and its low-level calls (``get``, ``team``,
``require_locations``, ``measure``, ``provenance``, ``in_cache``, ``forget``, ``clear_cache``);
list walks (``pages``, ``walk``, ``walk_frame``) are in :mod:`invtools.api.walks`. The resource
methods (``items()``, ``transactions()``, ...) are in :mod:`invtools.api.endpoints`, concurrent
transaction details in :mod:`invtools.api.details` and the DataFrame methods (``items_df()``,
...) in :mod:`invtools.api.dataframes`; all use only those public calls. Every request goes
through :class:`invtools.api.requester.Requester`, the one place a response becomes data or an
error.

>>> Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
Client(base_url='http://127.0.0.1:9', team=<not fetched yet>, cache=off, rate_limit=off)
"""

from __future__ import annotations

import hashlib
import html
import logging
import math
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from invtools._clock import SYSTEM_CLOCK
from invtools._config import (
    DEFAULT_BASE_URL,
    TOKEN_ENV,
    Secret,
    check_timeout,
    clean_token,
    normalise_base_url,
)
from invtools.api.auth import BearerAuth
from invtools.api.cacheinfo import prune_cache, prune_if_due
from invtools.api.dataframes import FramesPart
from invtools.api.policy import DEFAULT_EXPIRY, EXPIRY
from invtools.api.requester import ClientSession, Requester
from invtools.api.stats import Counters
from invtools.api.team import Team
from invtools.api.walkrecord import FileStore
from invtools.errors import APIError, ArgumentTypeError, ConfigError
from invtools.http import RATE_LIMIT_SCOPES, make_session, shared_budget
from invtools.http.cache import clear_entries, open_cache_file, resolve_cache_path
from invtools.http.pacing import BudgetView, describe
from invtools.http.session import POOL_SIZE

__all__ = ["Client", "MIN_RATE_LIMIT"]

#: The slowest pace a client takes: one request a minute (below it, pacing would wait hours).
MIN_RATE_LIMIT = 1 / 60

logger = logging.getLogger("invtools")


def _token_budget(
    cache_path: Path | None, base_url: str, header: str, scope: str, per_second: float, clock: Any
):
    """The token's budget (at this service): shared by its clients in this process and, through
    ``budgets.sqlite`` beside the cache, by every process of the machine that uses that cache
    folder. Found by a salted hash of the token, so no token is kept anywhere."""
    path = None if cache_path is None else cache_path.parent / "budgets.sqlite"
    salt = b""
    if path is not None:
        try:
            salt = open_cache_file(path)
        except ConfigError as exc:  # a folder it cannot write: this process only
            logger.info("budget not shared with other processes: %s", exc)
            path = None
    owner = hashlib.sha256(salt + f"\0{base_url}\0{header}\0{scope}".encode()).hexdigest()
    return shared_budget(owner[:32], per_second, clock=clock, path=path)


def _weak_team_mode_error(client: weakref.ref[Client]) -> Callable[[str, APIError], APIError]:
    def on_team_mode(path: str, err: APIError) -> APIError:
        alive = client()
        return err if alive is None else alive._team_mode_error(path, err)

    return on_team_mode


class Client(FramesPart):
    """One team's view of the inventory API: token, base URL, cache, pacing, retries.

    ``token=None`` reads ``INVTOOLS_TOKEN``. ``cache``: True (the user cache directory),
    False (off) or a path. ``rate_limit``: requests per second per endpoint (or per token
    with ``rate_limit_scope="token"``; 0 = not paced); every client of the same token and
    base URL in this process shares that budget. ``concurrency``: how many transaction
    details (``lines_df()``, ``transactions_df(with_lines=True)``, the mirror's sync) may be
    in flight at once; the default 8 fills 5 requests/s at the real service's ~0.8 s per
    answer (4 needed) with room for slow answers, and the budget still holds the rate.
    ``timeout``: seconds or (connect, read).
    ``retries``: how many times a failed GET is sent again. ``backoff``: base seconds of the
    exponential backoff. ``progress``: show progress bars on long walks. ``clock``: what
    waits are measured and slept on (tests pass a fake one).
    """

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        cache: bool | str | os.PathLike = True,
        rate_limit: float | None = 5.0,
        rate_limit_scope: str = "endpoint",
        concurrency: int = 8,
        timeout: float | tuple[float, float] = (5.0, 60.0),
        retries: int = 5,
        backoff: float = 0.5,
        progress: bool = True,
        clock: Any = SYSTEM_CLOCK,
    ) -> None:
        token = os.environ.get(TOKEN_ENV) if token is None else token
        if isinstance(token, str):
            token = Secret(token)  # from here on, no local shows it (issue 13: tracebacks)
        token = clean_token(token)
        self.base_url = normalise_base_url(base_url)
        timeout = check_timeout(timeout)
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ConfigError(f"retries must be a whole number >= 0, not {retries!r}")
        if not isinstance(backoff, (int, float)) or backoff < 0:
            raise ConfigError(f"backoff must be seconds >= 0, not {backoff!r}")
        if rate_limit is not None and (
            isinstance(rate_limit, bool)
            or not isinstance(rate_limit, (int, float))
            or not math.isfinite(rate_limit)
            or rate_limit < 0
            or 0 < rate_limit < MIN_RATE_LIMIT
        ):
            raise ConfigError(
                f"rate_limit must be requests per second, 0 (off) or from "
                f"{MIN_RATE_LIMIT:g} up, e.g. 5; not {rate_limit!r}"
            )
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ConfigError(
                f"concurrency must be a whole number >= 1 (requests in flight), not {concurrency!r}"
            )
        if rate_limit_scope not in RATE_LIMIT_SCOPES:
            raise ConfigError(
                f"rate_limit_scope must be one of "
                f"{', '.join(map(repr, RATE_LIMIT_SCOPES))}, "
                f"not {rate_limit_scope!r}"
            )
        self.rate_limit = float(rate_limit or 0)
        self.rate_limit_scope = rate_limit_scope
        self.concurrency = concurrency
        self.progress = progress
        try:
            self.cache_path: Path | None = resolve_cache_path(cache)
        except TypeError:
            raise ArgumentTypeError(f"cache must be True, False or a path, not {cache!r}") from None
        auth = BearerAuth(token)
        del token
        budget = None
        if self.rate_limit:
            budget = _token_budget(
                self.cache_path,
                self.base_url,
                auth.header,
                rate_limit_scope,
                self.rate_limit,
                clock,
            )
        # Room for the details in flight, a list walk and another call of the same client.
        # make_session gives a requests.Session with the cache and pacing mixed in; once its
        # auth is set (below), it is what ClientSession describes.
        session = cast(
            ClientSession,
            make_session(
                cache_path=self.cache_path,
                budget=budget,
                rate_limit_scope=rate_limit_scope,
                pool_size=max(POOL_SIZE, 2 * concurrency),
                expire_after=DEFAULT_EXPIRY,
                urls_expire_after=EXPIRY,
                lock_wait=timeout[0],  # a cache file's lock: waited for as long as a connection
            ),
        )
        if self.cache_path is not None:
            prune_if_due(session.cache)  # at most once a day, never compacting the file
        # The token lives only in the session's auth object, whose repr hides it: no attribute
        # of the client holds it, so no repr, pickle of attributes or traceback locals shows it.
        session.auth = auth
        session.headers["Accept"] = "application/json"
        session.headers["User-Agent"] = "invtools (+requests)"
        self._counters = Counters()
        self._requester = Requester(
            session,
            base_url=self.base_url,
            timeout=timeout,
            retries=retries,
            backoff=float(backoff),
            counters=self._counters,
            clock=clock,
            # Not the bound method: it would put the client in a reference cycle, freed only
            # by a garbage collection at an arbitrary allocation (issue 26: a hung kernel).
            on_team_mode=_weak_team_mode_error(weakref.ref(self)),
        )
        self._team: Team | None = None
        self._team_lock = threading.RLock()
        # A client nobody closes still lets go of its connections and cache file once it is
        # garbage (the finalizer holds the session, never the client).
        self._closer = weakref.finalize(self, session.close)

    # -- settings, read through the one request path

    @property
    def timeout(self) -> tuple[float, float]:
        """Seconds to connect and to read each answer."""
        return self._requester.timeout

    @property
    def retries(self) -> int:
        """How many times a failed request is sent again."""
        return self._requester.retries

    @property
    def backoff(self) -> float:
        """The retries' backoff in seconds: the first waits about that long, each next one
        twice as long (half of each wait random)."""
        return self._requester.backoff

    # -- lifecycle and display

    def close(self) -> None:
        """Close the connection pool and the cache file (again: harmless). A client that is
        never closed does this when it is garbage-collected."""
        self._closer()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never raises, even on a half-built client (a traceback formatting its locals).
        t = getattr(self, "_team", None)
        team = f"{t.name!r} (id {t.id}, {t.mode_name})" if t else "<not fetched yet>"
        path = getattr(self, "cache_path", None)
        cache = str(path) if path else "off"
        per_s, scope = getattr(self, "rate_limit", 0), getattr(self, "rate_limit_scope", "")
        rate = f"{per_s:g}/s per {scope}" if per_s else "off"
        try:  # what it learned of the budget, if anything
            seen = self.budget
            learned = [describe(b) for b in seen.buckets.values()] if seen else []
            learned = [b for b in learned if "," in b or not b.startswith(f"{per_s:.3g}/")]
        except Exception:  # noqa: BLE001 - a repr never raises
            learned = []
        if learned:
            rate += f" (now {'; '.join(learned)})"
        base = getattr(self, "base_url", "<not set>")
        return f"Client(base_url={base!r}, team={team}, cache={cache}, rate_limit={rate})"

    def _repr_html_(self) -> str:
        # A display shows what the client knows and sends nothing: waiting on the network
        # would freeze the notebook each time the client is shown.
        e = html.escape
        t = self._team
        team = (
            f"<b>{e(str(t.name))}</b> &middot; id {e(str(t.id))} &middot; "
            f"{e(t.mode_name)} mode ({t.mode})"
            if t is not None
            else "<i>team not fetched yet: client.team() fetches it</i>"
        )
        s = self.stats
        rows = [
            ("Team", team),
            ("API", e(self.base_url)),
            ("Cache", e(str(self.cache_path)) if self.cache_path else "off"),
            (
                "Rate limit",
                e(f"{self.rate_limit:g}/s per {self.rate_limit_scope}")
                if self.rate_limit
                else "off",
            ),
            ("Requests", f"{s.sent} sent, {s.from_cache} from cache, {s.retries} retries"),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>invtools Client</caption>{body}</table>"

    # -- stats and provenance

    @property
    def budget(self) -> BudgetView | None:
        """What the client believes of its token's budget now (None when not paced): the
        configured pace for a server that says nothing, per bucket the pace now (slower after
        429s), a stated budget's room and reset, 429s seen, and whether other processes share
        it. Nothing is sent.

        >>> Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=5).budget
        BudgetView(5/s per endpoint)
        """
        budget = getattr(self._requester.session, "budget", None)
        return None if budget is None else budget.view(self.rate_limit_scope)

    def prune_cache(self, *, older_than: Any = None) -> dict[str, int] | None:
        """Prune this client's cache file now (:func:`invtools.prune_cache`: expired and
        superseded entries invtools wrote, a local server's older than a day, and with
        ``older_than`` anything older; then compact the file); every team's entries in it, not
        only this token's, and never another program's. None without a cache. Done by itself,
        without compacting, when a client is created, at most once a day."""
        if self.cache_path is None:
            return None
        return prune_cache(self.cache_path, older_than=older_than)

    def clear_cache(self) -> int:
        """Delete this token's cached responses and walk records (other teams' stay);
        returns how many responses."""
        session = self._requester.session
        removed = clear_entries(session, session.auth.header)
        if self.cache_path is not None and session.cache_keys is not None:
            FileStore.clear(self.cache_path, session.cache_keys.prefix(session.auth.header))
        with self._team_lock:
            self._team = None
        logger.info("cleared %d cached responses of this team", removed)
        return removed
