"""The service's resources as the API sends them, inherited by
:class:`~invtools.api.client.Client`: the team (``team()``), any answer (``get()``), every
paginated list as a lazy walk (``pages()``, ``items()``, ``partners()``, ``transactions()``;
:mod:`invtools.api.walk`), single objects (``item()``, ``transaction()``), transaction details
several at once (``transaction_details()``, :mod:`invtools.api.details`) and the lists that
are not paginated (``locations()``, ``members()``, ``attributes()``).

Location-only endpoints check the team's mode once per call, before anything is sent. The
transactions list comes newest first; ``since``/``until`` keep a window and stop the walk
early, because the service has no date filter.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from invtools._config import check_flag, check_kind
from invtools._progress import shows
from invtools._types import (
    ATTRS_PATH,
    ITEMS_PATH,
    LOCATIONS_PATH,
    MEMBERS_PATH,
    PARTNERS_PATH,
    TEAM_PATH,
    TXS_PATH,
    check_id,
    check_ids,
    check_partner_type,
    check_tx_type,
    location_only,
    parse_window,
    resource_of,
)
from invtools.api import details, records
from invtools.api.endpoints import Team, default_max_age, require_locations, team_mode_message
from invtools.api.pagination import DEFAULT_LIMIT, check_walk_args
from invtools.api.plan import chain_count
from invtools.api.requester import Requester
from invtools.api.stats import Counters
from invtools.api.walk import Spec, Walk
from invtools.errors import (
    APIError,
    ArgumentTypeError,
    CacheError,
    InvtoolsError,
    NotFoundError,
    PaginationError,
    TeamModeError,
)
from invtools.http.pacing import bucket_of

__all__ = ["Resources"]

logger = logging.getLogger("invtools")

_EPOCH, _MS = datetime(1970, 1, 1, tzinfo=UTC), timedelta(milliseconds=1)


class Resources:
    """The resource methods of the client; need its settings, request path, counters and
    team lock (declared here for the type checker)."""

    cache_path: Path | None
    concurrency: int
    progress: bool
    rate_limit_scope: str
    _requester: Requester
    _counters: Counters
    _team_lock: threading.RLock

    def get(self, path: str, params: Mapping[str, Any] | None = None, *, refresh: bool = False):
        """GET one answer's decoded JSON, or raise an :mod:`invtools.errors` exception;
        ``refresh=True`` skips the cache (and stores the fresh answer). Nothing is checked
        first: a location-only path of a team in another mode gets the server's 400.

        >>> client.get("items")
        Traceback (most recent call last):
        ...
        invtools.errors.ConfigError: path must start with /v1/, e.g. '/v1/items'; got 'items'
        """
        try:
            return self._requester.send(path, params, refresh=refresh)[0]
        except TeamModeError as err:
            if self._requester.team is None:  # the message names the team, once known
                with suppress(InvtoolsError):
                    err.args = (team_mode_message(self.team(), path, err.correlation_id),)
            raise

    def team(self, *, refresh: bool = False) -> Team:
        """The team the token is bound to: fetched once per client (and cached for hours).
        Raises :class:`AuthenticationError` if the token is refused."""
        with self._team_lock:
            requester = self._requester  # a refused token: its team is asked again, not recalled
            if check_flag(refresh, "refresh") or requester.team is None or requester.refused:
                # The team is not data of a frame: its answer does not age one.
                sent = requester.send(TEAM_PATH, None, refresh=refresh, dated=False, clocked=True)
                requester.team = Team.from_body(sent[0])
            return requester.team

    def now(self) -> datetime:
        """The service's clock now, from the ``Date`` of its answer about the team: what
        ``since="90D"`` counts back from and an analysis of the frame measures to (see
        docs/explanation/now.md). The real service's is the wall clock (give or take a
        second); the demo server's is its data's end.

        >>> client.now().isoformat(timespec="minutes")    # doctest: +SKIP
        '2026-10-31T17:08+00:00'
        """
        self.team()
        return self._requester.now()

    def pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        max_pages: int | None = None,
        max_rows: int | None = None,
        keep: Callable[[dict], bool] | None = None,
        stop_at: Callable[[dict], bool] | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> Walk:
        """Any paginated list, page by page (:class:`~invtools.api.pagination.Page`), lazily
        and as one plain chain: nothing is sent until the first page is asked for.
        ``max_pages``/``max_rows`` stop early; ``keep(row)`` drops rows; ``stop_at(row)`` ends
        the walk at the first row it is true for. The walk is replayed from its record -- the
        last walk of this list that holds every page it needs, no older than ``max_age``
        (``"1h"``, ``"10min"``, a timedelta; default: the transactions list 1 hour, other
        lists 10 minutes) -- or fetched fresh, every page; ``refresh=True`` always fetches.

        >>> [p.number for p in client.pages("/v1/items", max_pages=2)]
        [1, 2]
        """
        check_kind(params, (Mapping, type(None)), "params", "a mapping such as {'limit': 10}")
        for name, test in (("keep", keep), ("stop_at", stop_at)):
            if test is not None:
                check_kind(test, callable, name, "a function of a row (a dict), or None")
        spec = Spec(
            dict(params or {}),
            limit,
            max_pages=max_pages,
            max_rows=max_rows,
            keep=keep,
            stop_at=stop_at,
        )
        return self._walk(path, spec, refresh, max_age, progress, as_pages=True)

    # -- rows as the API sends them

    def items(
        self,
        *,
        item_ids: Iterable[int] | None = None,
        location_ids: Iterable[int] | None = None,
        limit: int = DEFAULT_LIMIT,
        max_pages: int | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> Walk:
        """Items by id ascending (Location-mode teams), lazily; ``location_ids`` makes each
        item's ``quantity`` the sum over those locations. ``limit``, ``max_pages``,
        ``max_rows``, ``refresh``, ``max_age``, ``progress``: as for :meth:`pages`."""
        params = {
            "item_ids": check_ids(item_ids, name="item_ids"),
            "location_ids": check_ids(location_ids, name="location_ids"),
        }
        spec = Spec(params, limit, max_pages=max_pages, max_rows=max_rows)
        return self._walk(ITEMS_PATH, spec, refresh, max_age, progress)

    def item(
        self,
        id: int,
        *,
        location_ids: Iterable[int] | None = None,  # noqa: A002
        refresh: bool = False,
    ) -> dict:
        """One item (Location-mode teams)."""
        path = f"{ITEMS_PATH}/{check_id(id, name='item id')}"
        params = {"location_ids": check_ids(location_ids, name="location_ids")}
        require_locations(self.team(), path)
        return _unwrap(self.get(path, params, refresh=refresh), path)

    def partners(
        self,
        *,
        type: str | int | None = None,  # noqa: A002 - the API's own name
        limit: int = DEFAULT_LIMIT,
        max_pages: int | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> Walk:
        """Partners by id ascending, every team; ``type``: 'supplier' (0) or 'customer' (1).
        ``limit``, ``max_pages``, ``max_rows``, ``refresh``, ``max_age``, ``progress``: as for
        :meth:`pages`."""
        spec = Spec(
            {"type": check_partner_type(type)}, limit, max_pages=max_pages, max_rows=max_rows
        )
        return self._walk(PARTNERS_PATH, spec, refresh, max_age, progress)

    def transactions(
        self,
        *,
        type: str | Iterable[str] | None = None,  # noqa: A002 - the API's own name
        since: Any = None,
        until: Any = None,
        chains: int | None = None,
        limit: int = DEFAULT_LIMIT,
        max_pages: int | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> Walk:
        """Transaction rows, newest first (Location-mode teams), lazily.

        ``since``/``until`` (a datetime, date or ISO string, naive = UTC, a bare ``until``
        date including its whole day; or a duration back from the service's clock,
        :meth:`now`: ``"90D"``, ``"12W"``)
        keep a window; the service has no date filter, so the walk stops at the first row
        older than ``since``. ``type``: in/out/move/adjust, or several (``("in", "out")``).
        Several chains run at once (:mod:`invtools.api.chains`), at most ``chains`` (default:
        the client's ``concurrency``; 1 = one plain chain, as with ``max_pages`` or
        ``max_rows``). ``limit``, ``refresh``, ``max_age``, ``progress``: as for :meth:`pages`.

        >>> walk = client.transactions(type="in")
        >>> sum(1 for _ in walk), walk.complete
        (12, True)
        """
        kind = check_tx_type(type)
        lo, hi = parse_window(since, until, now=self.now)
        n = chain_count(self.concurrency, chains)
        if max_pages is not None or max_rows is not None:
            n = 1  # cut short by its caller: one plain chain, each page when it is wanted
        keep = None
        if isinstance(kind, tuple) and n == 1:  # several types in one plain chain
            keep, kind = (lambda row, kinds=kind: row.get("type") in kinds), None
        spec = Spec(
            {"type": kind},
            limit,
            # Rows carry whole milliseconds: ``since`` rounded up (a row strictly older stops
            # the walk), ``until`` down, both are exact.
            since_ms=None if lo is None else -(-(lo - _EPOCH) // _MS),
            until_ms=None if hi is None else (hi - _EPOCH) // _MS,
            max_pages=max_pages,
            max_rows=max_rows,
            keep=keep,
        )
        split = kind if isinstance(kind, tuple) else kind is None
        return self._walk(TXS_PATH, spec, refresh, max_age, progress, chains=n, split=split)

    def transaction(
        self,
        id: int,  # noqa: A002
        *,
        revision: int | None = None,
        refresh: bool = False,
    ) -> dict:
        """One transaction with its lines (``items``); ``revision=N`` gets version N, which
        never changes and so is cached for good (Location-mode teams)."""
        tid = check_id(id, name="transaction id")
        revision = None if revision is None else check_id(revision, name="revision")
        require_locations(self.team(), f"{TXS_PATH}/{tid}")
        return self._detail(tid, revision, refresh)

    def transaction_details(
        self, rows: Iterable[Any], *, refresh: bool = False, progress: bool | None = None
    ) -> Generator[tuple[Any, dict | None], None, None]:
        """``(row, detail)`` for each row, in order; ``detail`` is None when the transaction
        was deleted since the list was read. ``rows``: list rows (with ``id`` and
        ``revision``) or ``(id, revision)`` pairs, read lazily; up to ``concurrency`` requests
        in flight; each detail cached for good per revision. For a list or tuple, the details
        the cache lacks are counted first: a fetch expected over 30 s says so on stderr, the
        bar counts those (``progress=False``: neither). Ctrl-C stops it, keeping what came.

        >>> pairs = list(client.transaction_details(client.transactions(since="2026-10-25")))
        >>> len(pairs) > 0, all(detail["id"] == row["id"] for row, detail in pairs)
        (True, True)
        """
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
            raise ArgumentTypeError(
                f"transaction_details: rows is an iterable of transaction rows (a list, or "
                f"client.transactions()), not {type(rows).__name__}"
            )
        require_locations(self.team(), TXS_PATH)
        return self._details(rows, refresh=refresh, progress=progress)

    def _details(
        self, rows: Iterable[Any], *, refresh: bool = False, progress: bool | None = None, **said
    ) -> Generator[tuple[Any, dict | None], None, None]:
        """:meth:`transaction_details` for a caller that checked the team's mode; ``said``:
        ``holds=`` a line said before the cost line (what the list rows hold)."""
        refresh = check_flag(refresh, "refresh")
        asked = None if progress is None else check_flag(progress, "progress")

        def fetch(tid: int, revision: int | None) -> dict | None:
            try:
                return self._detail(tid, revision, refresh)
            except NotFoundError:
                return None  # deleted since the list was read

        return details.fetch_details(
            fetch,
            rows,
            held=None if refresh else self._held_details,
            cached=None if refresh else self._cached_details,
            workers=self.concurrency,
            progress=self.progress if asked is None else asked,
            pace=self._pace(say=shows(asked, client=self.progress)),
            **said,
        )

    def locations(self, *, refresh: bool = False) -> list[dict]:
        """All locations (not paginated; Location-mode teams)."""
        require_locations(self.team(), LOCATIONS_PATH)
        return self._plain_list(LOCATIONS_PATH, refresh)

    def members(self, *, refresh: bool = False) -> list[dict]:
        """All team members (not paginated; every team)."""
        return self._plain_list(MEMBERS_PATH, refresh)

    def attributes(self, *, refresh: bool = False) -> list[dict]:
        """The item attribute definitions (not paginated; every team)."""
        return self._plain_list(ATTRS_PATH, refresh)

    def _walk(
        self,
        path: str,
        spec: Spec,
        refresh: bool,
        max_age: Any,
        progress: bool | None,
        *,
        chains: int = 1,
        split: bool | tuple[str, ...] = False,
        as_pages: bool = False,
    ) -> Walk:
        """A walk of the list at ``path``; ``refresh``, ``max_age``, ``progress``: the caller's
        (see :meth:`pages`)."""
        check_walk_args(spec.limit, spec.max_pages, spec.max_rows)
        refresh = check_flag(refresh, "refresh")
        progress = self.progress if progress is None else check_flag(progress, "progress")
        requester = self._requester
        age = default_max_age(requester.url(path), max_age)

        def fetch(call: dict) -> bytes:
            return requester.send(path, call, raw=True, dated=False)[0]

        return Walk(
            fetch,
            spec,
            store=records.Refusable(self._walk_store(path, spec), lambda: requester.refused),
            chains=chains,
            split=split,
            refresh=refresh,
            max_age=age,
            counters=self._counters,
            progress=progress,
            desc=resource_of(path),
            pages=as_pages,
            start=(lambda: require_locations(self.team(), path)) if location_only(path) else None,
        )

    def _walk_store(self, path: str, spec: Spec) -> records.WalkStore:
        """Where the record of a walk of this list (these filters) is kept: a file beside
        the cache, named by the token's salted hash; in this process without a cache."""
        session = self._requester.session
        first = self._requester.url(path, {**spec.params, "limit": spec.limit})
        if session.cache_keys is None or self.cache_path is None:
            owner = hashlib.sha256(f"{session.auth.header}\0{first}".encode()).hexdigest()
            return records.MemoryStore(owner)
        walk = hashlib.blake2b(first.encode(), digest_size=16).hexdigest()
        prefix = session.cache_keys.prefix(session.auth.header)
        return records.FileStore(records.walks_folder(self.cache_path), f"{prefix}-{walk}")

    def _detail(self, tid: int, revision: int | None, refresh: bool) -> dict:
        """Transaction ``tid``'s detail (its mode checked by the caller), the one asked for
        (:func:`details.wrong_detail`): another is forgotten and raised, or, held by the cache
        (an earlier version kept it), asked for again. When version N comes from the server,
        the older ones cached are forgotten: nothing asks for them again."""
        path = f"{TXS_PATH}/{tid}"
        for fresh in (refresh, True):
            body, from_cache = self._requester.send(
                path, {"revision": revision}, refresh=fresh, dated=revision is None
            )
            wrong = details.wrong_detail(body, tid, revision, path)
            gone = [revision] if wrong else () if from_cache else range(revision or 0)
            if urls := [self._requester.url(path, {"revision": r}) for r in gone]:
                try:
                    self._requester.forget(urls)
                except CacheError as exc:  # housekeeping: prune_cache() removes them
                    logger.info("answers of %s kept in the cache for now: %s", path, exc)
            if not (wrong and from_cache):
                break
        if wrong:
            raise wrong
        return dict(body["item"])

    def _held_details(self, pairs: list[tuple[int, int | None]]) -> list[bool]:
        """For each ``(id, revision)``, whether its detail will come from the cache."""
        return details.held_details(self._requester, pairs)

    def _cached_details(self, pairs: list[tuple[int, int | None]]) -> list[dict | None]:
        """For each ``(id, revision)``, its detail as the cache holds it (None: not held),
        read in bulk (:func:`~invtools.api.details.cached_details`) and counted as answered
        from the cache."""
        found = details.cached_details(self._requester, pairs)
        self._counters.add(from_cache=sum(detail is not None for detail in found))
        return found

    def _pace(self, *, say: bool) -> details.Pace | None:
        """The details' bucket of the pacing budget (None: not paced); ``say``: its cost line."""
        budget = getattr(self._requester.session, "budget", None)
        bucket = bucket_of(self._requester.url(f"{TXS_PATH}/1"), self.rate_limit_scope)
        return None if budget is None else details.Pace(budget, bucket, self.concurrency, say)

    def _plain_list(self, path: str, refresh: bool, *, dated: bool = True) -> list[dict]:
        """A list that is not paginated; ``dated=False`` when it only names or types what a
        frame holds (its age is not the frame's)."""
        body = self._requester.send(path, None, refresh=refresh, dated=dated)[0]
        items = body.get("items") if isinstance(body, Mapping) else None
        if not isinstance(items, list):
            raise PaginationError(f"GET {path} answered without an 'items' list")
        return items


def _unwrap(body: Any, path: str) -> dict:
    if isinstance(body, Mapping) and isinstance(body.get("item"), Mapping):
        return dict(body["item"])
    raise APIError(
        f"GET {path} answered without the expected {{'item': ...}} object",
        status=200,
        method="GET",
        path=path,
    )
