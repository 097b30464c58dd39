"""A walk served from the cache only as one snapshot of the list, never a mix of two.

A list walked with keyset cursors is consistent only as a whole: if a transaction is re-dated
between two walks, page 1 of the second walk and page 40 of the first can both hold it, or
neither (``library-notes.md``, "Caching a cursor chain"). So a cached walk is used only when

- its first page is in the cache and no older than the caller's ``max_age``, and
- every later page it needs is in the cache too, stored no earlier than that first page (that
  is, by the same walk or a later one that started from the same first page);

otherwise the whole walk is fetched fresh, every page, and stored again as one snapshot. Pages
are never mixed. Pure: the caller passes how to read a cached entry.

Walks that are consumed lazily (``client.transactions()``) are served page by page from the
cache; when a page turns out not to be in the snapshot, the caller starts again from a fresh
first page and skips the rows it already handed out (so no row is given twice; one re-dated
meanwhile may come out of order).

>>> from datetime import datetime, timedelta, timezone
>>> t0 = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
>>> cache = {None: (b'{"items": [1], "cursor": 1}', t0), 1: (b'{"items": [2]}', t0)}
>>> fetch = SnapshotReader(lambda call: cache.get(call.get("cursor")),
...                        max_age=timedelta(hours=1), now=t0 + timedelta(minutes=5))
>>> fetch({})["items"], fetch({"cursor": 1})["items"], fetch.stored_at == t0
([1], [2], True)
>>> SnapshotReader(lambda call: cache.get(call.get("cursor")), max_age=timedelta(minutes=1),
...                now=t0 + timedelta(minutes=5))({})
Traceback (most recent call last):
...
invtools.api.snapshot.NotInSnapshot: the cached first page is older than max_age
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

__all__ = ["SnapshotReader", "NotInSnapshot", "SnapshotFirst"]

#: Reads the cached answer to one call: (body bytes, when stored) or None.
ReadEntry = Callable[[dict], "tuple[bytes, datetime] | None"]


class NotInSnapshot(Exception):
    """A page the snapshot lacks: missing, damaged, too old, or older than the walk's first
    page. The walk is then fetched fresh."""


class SnapshotReader:
    """``fetch(call)`` for a walk over cached answers only: returns the decoded body
    (``decode``) of each page asked for, or raises :class:`NotInSnapshot`. ``stored_at``:
    when the walk's first page was stored (the age of the data), once it was read.
    ``stored_within``: (began, ended) of a walk of several chains being replayed: a page
    stored by any other walk is not in its snapshot."""

    def __init__(self, read: ReadEntry, *, max_age: timedelta | None, now: datetime,
                 decode: Callable[[bytes], Any] = json.loads,
                 stored_within: tuple[datetime, datetime] | None = None) -> None:
        self._read, self._max_age, self._now, self._decode = read, max_age, now, decode
        self._within = stored_within  # a chain of a replayed walk: only that walk's pages
        self.stored_at: datetime | None = None

    def __call__(self, call: Mapping[str, Any]) -> Any:
        entry = self._read(dict(call))
        if entry is None:
            raise NotInSnapshot("a page of the walk is not in the cache")
        body, stored_at = entry
        if self.stored_at is None:
            if self._max_age is not None and self._now - stored_at > self._max_age:
                raise NotInSnapshot("the cached first page is older than max_age")
            self.stored_at = stored_at
        elif stored_at < self.stored_at:
            raise NotInSnapshot("a cached page is from an older walk")
        if self._within is not None and not self._within[0] <= stored_at <= self._within[1]:
            raise NotInSnapshot("a cached page is from another walk")
        try:
            return self._decode(body)
        except ValueError:
            raise NotInSnapshot("a cached page does not decode") from None


class SnapshotFirst:
    """A lazy walk of rows that replays the last walk from the cache when it can and, when the
    cache turns out not to hold it whole (:class:`NotInSnapshot`), walks again fresh, giving
    no row twice. ``make(fresh)`` builds the walk (an iterator of row dicts with ``close()``
    and ``summary()``), ``fresh=True`` the one that fetches everything. Iterate it;
    ``close()``, ``summary()`` and the walk's other attributes pass through.

    >>> class Walk:
    ...     def __init__(self, rows, whole):
    ...         self.rows, self.whole = rows, whole
    ...     def __iter__(self):
    ...         yield from self.rows
    ...         if not self.whole:
    ...             raise NotInSnapshot("page 2 is not in the cache")
    ...     def close(self):
    ...         pass
    >>> make = lambda fresh: Walk([{"id": 1}, {"id": 2}], True) if fresh else Walk([{"id": 1}], False)
    >>> [row["id"] for row in SnapshotFirst(make)]
    [1, 2]
    """

    def __init__(self, make: Callable[[bool], Any]) -> None:
        # The generator holds the state, never this object: a walk dropped half way is
        # freed at once, which closes the generator, which closes (and stops) the walk.
        self._state = {"walk": make(False)}
        self._gen = _replay_then_fresh(make, self._state)

    def __iter__(self) -> SnapshotFirst:
        return self

    def __next__(self) -> dict:
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()
        self._state["walk"].close()

    def summary(self) -> dict:
        return self._state["walk"].summary()

    def __getattr__(self, name: str) -> Any:  # plan, pages, fallback, complete, ...
        return getattr(self.__dict__["_state"]["walk"], name)


def _replay_then_fresh(make: Callable[[bool], Any], state: dict) -> Iterator[dict]:
    given: set = set()
    try:
        for row in state["walk"]:
            given.add(row.get("id"))
            yield row
        return
    except NotInSnapshot:
        state["walk"].close()
    state["walk"] = make(True)
    for row in state["walk"]:
        if row.get("id") not in given:
            yield row
