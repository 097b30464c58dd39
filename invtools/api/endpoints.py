"""The resource methods of :class:`~invtools.api.client.Client`: items, transactions,
locations, partners, members, item attributes -- as dicts exactly as the API sends them.

A mixin over the client's public low-level calls (``get``, ``pages``, ``team``,
``require_locations``, ``measure``, ``forget``). Location-only endpoints check the team's mode
before anything is sent (and lazily, on the first row asked for, for walks). Transactions come
newest first; ``since``/``until`` keep a window and stop the walk early, because the service has
no date filter.

>>> PARTNER_TYPES["customer"]
1
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from invtools._types import (
    ATTRS_PATH,
    ITEMS_PATH,
    LOCATIONS_PATH,
    MEMBERS_PATH,
    PARTNERS_PATH,
    TXS_PATH,
    check_id,
    check_ids,
    check_tx_type,
    parse_time,
)
from invtools.api.pagination import Page
from invtools.api.walks import WalksPart
from invtools.errors import APIError, ArgumentTypeError, CacheError, ConfigError, PaginationError

logger = logging.getLogger(__name__)

__all__ = ["EndpointsPart", "PARTNER_TYPES", "WALK_KEYWORDS", "check_keywords"]

#: Partner types by name, as the wire encodes them.
PARTNER_TYPES = {"supplier": 0, "customer": 1}
#: The keywords every walk takes (:meth:`Client.pages`).
WALK_KEYWORDS = (
    "limit",
    "max_pages",
    "max_rows",
    "refresh",
    "max_age",
    "progress",
    "keep",
    "stop_at",
)


def check_keywords(method: str, given: Mapping[str, Any], own: tuple[str, ...] = ()) -> None:
    """Raise ``TypeError`` naming the method the user called (not an inner one) for a keyword
    it does not take.

    >>> check_keywords("items_df", {"bogus": 1}, ("item_ids",))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    invtools.errors.ArgumentTypeError: items_df() got an unexpected keyword argument 'bogus'; ...
    """
    unknown = [k for k in given if k not in own and k not in WALK_KEYWORDS]
    if unknown:
        raise ArgumentTypeError(
            f"{method}() got an unexpected keyword argument {unknown[0]!r}; it "
            f"takes {', '.join(own + WALK_KEYWORDS)}"
        )


class EndpointsPart(WalksPart):
    """Resource methods; needs ``get``, ``pages``, ``require_locations``, ``measure`` and
    ``forget`` from the client."""

    def rows(
        self, path: str, params: Mapping[str, Any] | None = None, **walk: Any
    ) -> Iterator[dict]:
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
        check_keywords("items", walk, ("item_ids", "location_ids"))
        params = {
            "item_ids": check_ids(item_ids, name="item_ids"),
            "location_ids": check_ids(location_ids, name="location_ids"),
        }
        return self._location_rows(ITEMS_PATH, params, walk)

    def item(self, id: int, *, location_ids=None, refresh: bool = False) -> dict:  # noqa: A002
        """One item (Location-mode teams)."""
        path = f"{ITEMS_PATH}/{check_id(id, name='item id')}"
        self.require_locations(path)
        return _unwrap(
            self.get(
                path,
                {"location_ids": check_ids(location_ids, name="location_ids")},
                refresh=refresh,
            ),
            path,
        )

    def partners(self, *, type=None, **walk: Any) -> Iterator[dict]:  # noqa: A002
        """Partners by id ascending; ``type`` 0/'supplier' or 1/'customer'. Every team."""
        check_keywords("partners", walk, ("type",))
        if isinstance(type, str):
            if type.lower() not in PARTNER_TYPES:
                raise ConfigError(
                    f"partner type must be 'supplier', 'customer', 0 or 1, not {type!r}"
                )
            type = PARTNER_TYPES[type.lower()]
        return self.rows(PARTNERS_PATH, {"type": type}, **walk)

    def transactions(
        self,
        *,
        type=None,
        since=None,
        until=None,  # noqa: A002
        chains: int | None = None,
        **walk: Any,
    ) -> Iterator[dict]:
        """Transaction rows, newest first (Location-mode teams).

        ``since``/``until`` (datetime, date or ISO string; naive = UTC; a bare ``until``
        date includes that whole day; a duration such as ``"90D"``, ``"12W"`` or a
        ``Timedelta`` counts back from now) keep rows whose ``transaction_time`` is in the
        window. The service has no date filter, so the walk stops at the first row older
        than ``since`` -- no page beyond it is fetched. ``type``: one of in/out/move/adjust,
        or several (``("in", "out")``: one chain each, merged newest first).

        The walk runs several cursor chains at once and merges them into exactly the rows of
        one plain walk (:mod:`invtools.api.walker`): one per type on a first walk, from
        cursors the last whole walk recorded afterwards. ``chains`` caps how many (default:
        the client's ``concurrency``, else 8); ``chains=1`` walks one plain chain, and so do
        walks with ``max_pages``, ``max_rows``, ``keep`` or ``stop_at``. The iterator's
        ``fallback`` says why a walk fell back to one chain, if it did.
        """
        check_keywords("transactions", walk, ("type", "since", "until", "chains"))
        type = check_tx_type(type)  # noqa: A001 - the filter's own name
        lo = parse_time(since, name="since")
        hi = parse_time(until, end=True, name="until")
        if lo and hi and lo > hi:
            raise ConfigError(f"since ({lo:%Y-%m-%d %H:%M}) is after until ({hi:%Y-%m-%d %H:%M})")
        return self.walk(
            TXS_PATH,
            {"type": type},
            since=lo,
            until=hi,
            chains=chains,
            **walk,
        )

    def transaction(
        self,
        id: int,
        *,
        revision: int | None = None,  # noqa: A002
        refresh: bool = False,
    ) -> dict:
        """One transaction with its lines (``items``); ``revision=N`` gets version N, which
        never changes and so is cached for good (Location-mode teams). When version N comes
        from the server, this token's cached older versions are forgotten: they would be
        kept for good, and nothing asks for them again (a client asks for the revision the
        list shows)."""
        path = f"{TXS_PATH}/{check_id(id, name='transaction id')}"
        self.require_locations(path)
        revision = None if revision is None else check_id(revision, name="revision")
        # A version that never changes does not age the data it is part of.
        body, from_cache = self._requester.send(
            path, {"revision": revision}, refresh=refresh, dated=revision is None
        )
        # Only an answer from the server (now stored) makes the older revisions go: a cache
        # hit had them forgotten when it was stored, and looking again would cost a write.
        if revision and not from_cache:
            try:
                self.forget((path, {"revision": older}) for older in range(revision))
            except CacheError as exc:  # housekeeping: prune_cache() removes them
                logger.info("older revisions of %s kept in the cache for now: %s", path, exc)
        return _unwrap(body, path)

    def _plain_list(self, path: str, refresh: bool, *, dated: bool = True) -> list[dict]:
        """A list that is not paginated; ``dated=False`` when it only names or types what a
        frame holds (its age is not the frame's)."""
        body = self._requester.send(path, None, refresh=refresh, dated=dated)[0]
        items = body.get("items") if isinstance(body, Mapping) else None
        if not isinstance(items, list):
            raise PaginationError(f"GET {path} answered without an 'items' list")
        return items

    def locations(self, *, refresh: bool = False) -> list[dict]:
        """All locations (not paginated; Location-mode teams)."""
        self.require_locations(LOCATIONS_PATH)
        return self._plain_list(LOCATIONS_PATH, refresh)

    def members(self, *, refresh: bool = False) -> list[dict]:
        """All team members (not paginated; every team)."""
        return self._plain_list(MEMBERS_PATH, refresh)

    def attributes(self, *, refresh: bool = False) -> list[dict]:
        """The item attribute definitions (not paginated; every team)."""
        return self._plain_list(ATTRS_PATH, refresh)


def _unwrap(body: Any, path: str) -> dict:
    if isinstance(body, Mapping) and isinstance(body.get("item"), Mapping):
        return body["item"]
    raise APIError(
        f"GET {path} answered without the expected {{'item': ...}} object",
        status=200,
        method="GET",
        path=path,
    )
