"""Client: one team's view of the inventory API -- token, base URL, cache, pacing, retries --
and every resource as dicts (``items()``, ``transactions()``, ...) or typed frames
(``items_df()``, ``transactions_df()``, ...).

One class: its settings, the session it owns (cached, paced on a budget the token shares, the
token only in its auth object), its life cycle and display, its statistics and its cache's
upkeep are here; it inherits the resource methods (:mod:`invtools.api.resources`, with
``team()`` and the low-level ``get()``) and the frame methods built on them
(:mod:`invtools.api.dataframes`), and what fetching each window's lines would cost
(:mod:`invtools.api.estimates`). Every request goes through :mod:`invtools.api.requester`.

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
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

from invtools._clock import SYSTEM_CLOCK
from invtools._config import (
    DEFAULT_BASE_URL,
    TOKEN_ENV,
    Secret,
    check_rate,
    check_timeout,
    check_whole,
    clean_token,
    normalise_base_url,
)
from invtools.api.cacheinfo import prune_cache, prune_if_due
from invtools.api.endpoints import DEFAULT_EXPIRY, EXPIRY
from invtools.api.estimates import Estimates
from invtools.api.lineframes import LineFrames
from invtools.api.records import clear_walks, walks_folder
from invtools.api.requester import BearerAuth, ClientSession, Requester
from invtools.api.stats import Counters, Measurement, RequestStats
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.http import make_session, shared_budget
from invtools.http.cache import clear_entries, open_cache_file, resolve_cache_path
from invtools.http.pacing import Budget, BudgetView, describe
from invtools.http.retries import MAX_RATE_LIMIT_WAIT
from invtools.http.session import POOL_SIZE

__all__ = ["Client"]

logger = logging.getLogger("invtools")


class Client(LineFrames, Estimates):
    """One team's view of the inventory API.

    ``token=None`` reads ``INVTOOLS_TOKEN``. ``cache``: True (the user cache directory),
    False (off) or a path. ``rate_limit``: requests per second per endpoint (or per token
    with ``rate_limit_scope="token"``; 0 = not paced), shared by every client of the token
    on this machine. ``concurrency``: requests in flight at once for transaction details and
    list chains (the default 8 fills 5 requests/s at the real service's ~0.8 s an answer).
    ``timeout``: seconds, or (connect, read). ``max_wait``: the longest a request waits for
    the rate limit (seconds): a 429, or an answer, saying the budget comes back later raises
    :class:`~invtools.errors.RateLimitError` naming when, instead of waiting. ``retries``: how
    many times a failed GET is sent again; ``backoff``: the first retry's wait in seconds
    (doubling). ``progress``: progress
    bars on long fetches. ``clock``: what waits are measured and slept on (tests pass a fake).
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
        max_wait: float = MAX_RATE_LIMIT_WAIT,
    ) -> None:
        token = os.environ.get(TOKEN_ENV) if token is None else token
        if isinstance(token, str):
            token = Secret(token)  # from here on, no local shows it (a traceback's locals)
        auth = BearerAuth(clean_token(token))
        self.base_url = normalise_base_url(base_url)
        timeout = check_timeout(timeout)
        check_whole(retries, "retries")
        check_whole(concurrency, "concurrency", least=1, what=" (requests in flight)")
        if not isinstance(backoff, int | float) or isinstance(backoff, bool) or backoff < 0:
            raise ConfigError(f"backoff must be seconds >= 0, not {backoff!r}")
        if (
            isinstance(max_wait, bool)
            or not isinstance(max_wait, int | float)
            or not 0 < max_wait < math.inf
        ):
            raise ConfigError(f"max_wait must be seconds > 0, e.g. 120; not {max_wait!r}")
        if not all(callable(getattr(clock, n, None)) for n in ("time", "monotonic", "sleep")):
            raise ArgumentTypeError(
                f"clock must be a clock (time(), monotonic(), sleep(s) and wait(event, s), as "
                f"invtools._clock.SYSTEM_CLOCK), not {type(clock).__name__}; leave it out"
            )
        self.rate_limit, self.rate_limit_scope = check_rate(rate_limit), rate_limit_scope
        self.concurrency, self.progress = concurrency, progress
        self.cache_path: Path | None = resolve_cache_path(cache)
        session = cast(
            ClientSession,
            make_session(
                cache_path=self.cache_path,
                budget=self._token_budget(auth.header, clock, timeout[0]),
                rate_limit_scope=rate_limit_scope,
                pool_size=max(POOL_SIZE, 2 * concurrency),
                expire_after=DEFAULT_EXPIRY,
                urls_expire_after=EXPIRY,
                max_wait=float(max_wait),
                lock_wait=timeout[0],  # a cache file's lock: waited for as long as a connection
            ),
        )
        if self.cache_path is not None:
            prune_if_due(session.cache)  # at most once a day, never compacting the file
        # The token lives only in the session's auth object, whose repr hides it.
        session.auth = auth
        session.headers.update({"Accept": "application/json", "User-Agent": "invtools (+requests)"})
        del token
        self._counters = Counters()
        self._requester = Requester(
            session,
            base_url=self.base_url,
            timeout=timeout,
            retries=retries,
            backoff=float(backoff),
            counters=self._counters,
            clock=clock,
            max_wait=float(max_wait),
        )
        self._team_lock = threading.RLock()
        # A client nobody closes lets go of its connections once it is garbage: at once when
        # nothing of it is in flight, else when the last request ends (never under one).
        self._closer = weakref.finalize(self, self._requester.inflight.close, 0.0)

    def _token_budget(self, header: str, clock: Any, timeout: float) -> Budget | None:
        """The token's budget at this service (None: not paced): shared by its clients in this
        process and, through ``budgets.sqlite`` beside the cache, by every process using that
        cache folder (its lock waited for ``timeout`` seconds at most). Found by a salted hash
        of the service, the token's ``header`` and the scope, so no token is kept anywhere."""
        if not self.rate_limit:
            return None
        path = None if self.cache_path is None else self.cache_path.parent / "budgets.sqlite"
        salt = b""
        if path is not None:
            try:
                salt = open_cache_file(path)
            except ConfigError as exc:  # a folder it cannot write: this process only
                logger.info("budget not shared with other processes: %s", exc)
                path = None
        owner = hashlib.sha256(
            salt + f"\0{self.base_url}\0{header}\0{self.rate_limit_scope}".encode()
        )
        return shared_budget(
            owner.hexdigest()[:32], self.rate_limit, clock=clock, path=path, timeout=timeout
        )

    # -- settings, life cycle, display

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
        """The first retry's wait in seconds; each next one twice as long (half random)."""
        return self._requester.backoff

    def close(self) -> None:
        """Close the connection pool and the cache file (again: harmless). Requests in flight
        (a batch that failed or was stopped, a walk in another thread) are not retried and are
        waited for first, at most as long as one request may take (``timeout``); nothing more
        is sent (:class:`~invtools.errors.Cancelled`). A client that is never closed does this
        when it is garbage-collected, without waiting."""
        self._requester.close()
        self._closer()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never raises, even on a half-built client (a traceback formatting its locals).
        requester = getattr(self, "_requester", None)
        t = None if requester is None else requester.team
        team = f"{t.name!r} (id {t.id}, {t.mode_name})" if t else "<not fetched yet>"
        path = getattr(self, "cache_path", None)
        per_s, scope = getattr(self, "rate_limit", 0), getattr(self, "rate_limit_scope", "")
        rate = f"{per_s:g}/s per {scope}" if per_s else "off"
        try:  # what it learned of the budget, if anything
            learned = [describe(b) for b in self.budget.buckets.values()] if self.budget else []
            learned = [b for b in learned if "," in b or not b.startswith(f"{per_s:.3g}/")]
            if self.budget and self.budget.unlimited:
                learned = ["the service states no limit: not paced"]
        except Exception:  # noqa: BLE001 - a repr never raises
            learned = []
        if learned:
            rate += f" (now {'; '.join(learned)})"
        base = getattr(self, "base_url", "<not set>")
        return f"Client(base_url={base!r}, team={team}, cache={path or 'off'}, rate_limit={rate})"

    def _repr_html_(self) -> str:
        # What the client knows; nothing is sent (a display must not wait on the network).
        e, t, s = html.escape, self._requester.team, self.stats
        team = t._repr_html_() if t else "<i>team not fetched yet: client.team() fetches it</i>"
        rate = f"{self.rate_limit:g}/s per {self.rate_limit_scope}" if self.rate_limit else "off"
        rows = [
            ("Team", team),
            ("API", e(self.base_url)),
            ("Cache", e(str(self.cache_path)) if self.cache_path else "off"),
            ("Rate limit", e(rate)),
            ("Requests", f"{s.sent} sent, {s.from_cache} from cache, {s.retries} retries"),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>invtools Client</caption>{body}</table>"

    # -- what it did, and its cache

    @property
    def stats(self) -> RequestStats:
        """Cumulative counts since the client was made (a snapshot): requests sent, answers
        from the cache, pages and rows handed out, retries, 429s."""
        return self._counters.snapshot()

    def measure(self) -> AbstractContextManager[Measurement]:
        """Count the requests of a block -- only this call's, even while other threads use
        the same client.

        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> with c.measure() as m:
        ...     pass
        >>> m.sent, m.from_cache
        (0, 0)
        """
        return self._counters.measure()

    @property
    def budget(self) -> BudgetView | None:
        """What the client believes of its token's budget now (None when not paced); nothing
        is sent.

        >>> Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=5).budget
        BudgetView(5/s per endpoint)
        """
        budget = getattr(self._requester.session, "budget", None)
        return None if budget is None else budget.view(self.rate_limit_scope)

    def prune_cache(self, *, older_than: Any = None) -> dict[str, int] | None:
        """Prune this client's cache file now (:func:`invtools.prune_cache`); None without a
        cache. Done by itself, without compacting, when a client is made, once a day."""
        return prune_cache(self.cache_path or False, older_than=older_than)

    def clear_cache(self) -> int:
        """Delete this token's cached responses and list walks (other teams' stay); returns
        how many responses."""
        session = self._requester.session
        with self._requester.inflight.use("clear_cache()"):
            removed = clear_entries(session, session.auth.header)
        if self.cache_path is not None and session.cache_keys is not None:
            prefix = session.cache_keys.prefix(session.auth.header)
            clear_walks(walks_folder(self.cache_path), prefix)
        with self._team_lock:
            self._requester.team = None
        logger.info("cleared %d cached responses of this team", removed)
        return removed
