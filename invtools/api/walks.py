"""The list-walking methods of :class:`~invtools.api.client.Client`: :meth:`pages` (decoded,
lazy), :meth:`raw_pages` (undecoded bodies, for bulk parsing) and :meth:`cached_since`.

A walk comes from the cache only whole, as one snapshot no older than its ``max_age``
(:mod:`invtools.api.snapshot`); otherwise every page is fetched fresh. ``start`` resumes a walk
after a cursor (the chains of :mod:`invtools.api.chains` start there).

A mixin over the client's request path (``_requester``), counters (``_counters``),
``cache_path`` and ``progress``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from invtools._progress import walk_progress
from invtools._types import parse_duration, route_of
from invtools.api.pagination import DEFAULT_LIMIT, Page, RawPage, iter_pages, iter_raw_pages
from invtools.api.snapshot import NotInSnapshot, SnapshotReader
from invtools.errors import PaginationError
from invtools.api.policy import default_max_age
from invtools.http.cache import cached_entry

__all__ = ["WalksMixin"]


class WalksMixin:
    """``pages``, ``raw_pages``, ``cached_since``; needs the client's request path."""

    def pages(self, path: str, params: Mapping[str, Any] | None = None, *,
              limit: int = DEFAULT_LIMIT, max_pages: int | None = None,
              max_rows: int | None = None, refresh: bool = False, max_age: Any = None,
              progress: bool | None = None, keep=None, stop_at=None,
              start=None, cache_only: bool = False,
              stored_within=None) -> Iterator[Page]:
        """Walk a paginated list lazily, page by page (see
        :func:`invtools.api.pagination.iter_pages`; ``start`` resumes after a cursor).

        Nothing is sent until the first page is asked for. A walk comes from the cache only
        whole, as one snapshot no older than ``max_age`` (``"1h"``, ``"10min"``, a
        timedelta; default: the transactions list 1 hour, other lists their cache expiry),
        else every page is fetched fresh (:mod:`invtools.api.snapshot`); ``refresh=True``
        always fetches fresh. ``progress`` overrides the client's setting for this walk (a
        bar appears only after a few pages). ``cache_only`` (a chain of a cached walk, see
        :mod:`invtools.api.chains`) raises :class:`~invtools.api.snapshot.NotInSnapshot`
        instead of fetching, and for a page stored outside ``stored_within`` (began, ended)
        of the walk it replays.
        """
        walk_args = dict(limit=limit, max_pages=max_pages, max_rows=max_rows, keep=keep,
                         stop_at=stop_at, start=start)
        last = {"from_cache": False}
        plain = iter_pages(self._fresh_fetch(path, last), params, **walk_args)  # checks args
        age = self._max_age(path, max_age)

        def walk() -> Iterator[Page]:
            given: set = set()
            reader = None if refresh else self._snapshot_reader(path, age,
                                                                stored_within=stored_within)
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
                    if cache_only:
                        raise NotInSnapshot("the walk is not in the cache as one snapshot")
                    # not one snapshot: the whole walk fresh, rows given once only
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

    def _snapshot_reader(self, path: str, max_age: timedelta | None, decode=json.loads,
                         stored_within=None) -> SnapshotReader | None:
        """Reads a walk's pages from the cache as one snapshot (None without a cache)."""
        if self.cache_path is None:
            return None
        session = self._requester.session

        def read(call: dict) -> tuple[bytes, datetime] | None:
            return cached_entry(session, session.auth.header,
                                self._requester.url(path, call))

        return SnapshotReader(read, max_age=max_age, now=datetime.now(timezone.utc),
                              decode=decode, stored_within=stored_within)

    def raw_pages(self, path: str, params: Mapping[str, Any] | None = None, *,
                  refresh: bool = False, max_age: Any = None,
                  progress: bool | None = None, start=None, cache_only: bool = False,
                  stored_within=None) -> Iterator[RawPage]:
        """The pages of a walk undecoded (``page.body`` is bytes), for callers that parse rows
        in bulk (:func:`invtools.frames.transactions_df_from_pages`). Counted in
        :attr:`stats`, and served from the cache as one snapshot like :meth:`pages`: when a
        page turns out not to be in it, the walk starts again fresh from its first page, and
        the caller keeps each row id once (the rows are not decoded here).

        Cached pages are read straight from the cache file: going through ``session.get``
        costs about 1.5 ms per hit in requests' and requests-cache's per-request machinery,
        which is most of a warm walk.
        """
        last = {"from_cache": False}
        plain = iter_raw_pages(self._fresh_fetch(path, last, raw=True), params, start=start)
        age = self._max_age(path, max_age)

        def walk() -> Iterator[RawPage]:
            reader = None if refresh else self._snapshot_reader(path, age, decode=bytes,
                                                                stored_within=stored_within)
            if reader is not None:
                try:
                    for page in iter_raw_pages(reader, params, start=start):
                        if page.number == 1:
                            self._counters.saw_data_from(reader.stored_at)
                        self._counters.add(from_cache=1)
                        yield page
                    return
                except (NotInSnapshot, PaginationError):
                    if cache_only:
                        raise NotInSnapshot("the walk is not in the cache as one snapshot")
                    # Not one snapshot: the whole walk fresh, from its first page. Rows are not
                    # decoded here, so the caller keeps each id once (chainmerge.merge_pages).
                    pass
            yield from plain

        show = self.progress if progress is None else progress
        for page in walk_progress(walk(), enabled=show, desc=route_of(path)):
            self._counters.add(pages=1, rows=page.count)
            yield page

    def cached_since(self, path: str, params: Mapping[str, Any] | None = None, *,
                     max_age: Any = None) -> datetime | None:
        """When the cache stored ``GET path?params``, if it is young enough to start a walk
        from (its ``max_age``, as :meth:`pages` judges it), else None; nothing is sent.

        >>> client.cached_since("/v1/items", {"limit": 100}) is None   # a client without cache
        True
        """
        reader = self._snapshot_reader(path, self._max_age(path, max_age), decode=bytes)
        if reader is None:
            return None
        try:
            reader(dict(params or {}))
        except NotInSnapshot:
            return None
        return reader.stored_at
