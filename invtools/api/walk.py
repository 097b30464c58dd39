"""One walk of a list, lazily: :class:`Walk`, replayed whole from its record or fetched fresh
(:class:`~invtools.api.chains.Chains`), and handed out as rows, pages or one frame.

The walk engine knows nothing of the client: it is handed ``fetch(call) -> page body`` (the
client's one request path), a store of the list's :class:`~invtools.api.records.Record` and
counters. When a walk starts (its first row asked for) it reads the record: one no older than
``max_age`` that holds every row the walk needs is replayed -- one read, nothing sent, its data
as old as the walk that read it, decided before the first row goes out; never a cached head
with a fresh tail. Otherwise every page is fetched fresh; a fresh walk that ends (whole, at
``since``, or where its caller's ``max_rows``, ``max_pages`` or ``stop_at`` cut it) leaves its
record, one abandoned (closed, Ctrl-C, dropped) none.

>>> class Kept:                                  # a store: any object with load() and save()
...     record = None
...     def load(self): return self.record
...     def save(self, record): self.record = record
>>> pages = {None: b'{"items":[{"id":2},{"id":1}],"cursor":1,"has_more":true}',
...          1: b'{"items":[{"id":0}],"cursor":null,"has_more":false}'}
>>> kept = Kept()
>>> walk = Walk(lambda call: pages[call.get("cursor")], Spec(), store=kept)
>>> [row["id"] for row in walk], walk.complete, walk.pages
([2, 1, 0], True, 2)
>>> again = Walk(lambda call: 1 / 0, Spec(), store=kept)      # replayed: nothing is sent
>>> [row["id"] for row in again], again.replayed
([2, 1, 0], True)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

import pandas as pd

from invtools._progress import progress_bar
from invtools.api.chains import Chains, Piece, Spec, raw_piece, rows_of
from invtools.api.pagination import Page, Trim
from invtools.api.plan import (
    NO_TIME,
    Key,
    Plan,
    choose_plan,
    row_key,
    seam_starts,
)
from invtools.api.records import Record, WalkStore
from invtools.errors import Cancelled
from invtools.frames.arrow import frame_keys, walk_frame

__all__ = ["Walk", "Spec"]

logger = logging.getLogger("invtools")

_SHOW_AFTER = 3  # pages before a fresh walk shows a progress bar: short walks stay silent


class Walk:
    """One walk of a list, lazily: iterate it for rows (``pages=True``: :class:`Page` objects),
    or take :meth:`frame` (a whole transactions list as one frame from its page bodies).
    :meth:`close` stops it, from any thread (so do Ctrl-C and dropping it). Once it ran:
    ``plan`` (how), ``pages`` and ``rows`` (handed out), ``fallback``, ``complete`` (it
    reached the list's end), ``replayed`` (from its record), ``data_as_of`` (when the walk
    that read the rows began), ``seams`` (``(time in ms, id)`` of the rows whose ids the next
    fresh walk's chains start from, once a whole walk ended).

    ``fetch(call)`` returns a page's body; ``store`` keeps the list's record; ``chains``: how
    many at most; ``split``: True to split a first walk by type, a tuple to merge those types;
    ``counters``: an object with ``add(**counts)`` and ``saw_data_from(when)``; ``start()``
    runs when the walk starts, before anything is read (the client's check of its team)."""

    # The walk's state and its generator never hold this handle: a walk dropped half way is
    # freed at once, which stops its chains.
    def __init__(self, fetch: Callable[[dict], bytes], spec: Spec, **options: Any) -> None:
        self._state = _Walking(fetch, spec, **options)
        self._it: Generator[Any, None, None] | None = None

    spec = property(lambda self: self._state.spec)
    plan = property(lambda self: self._state.plan)
    pages = property(lambda self: self._state.pages)
    rows = property(lambda self: self._state.rows)
    fallback = property(lambda self: self._state.fallback)
    complete = property(lambda self: self._state.complete)
    replayed = property(lambda self: self._state.replayed)
    data_as_of = property(lambda self: self._state.data_as_of)
    seams = property(lambda self: self._state.seams)

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> Any:
        state = self._state
        if self._it is None:
            self._it = state.items()
        if state.closed:
            self._it.close()  # in the caller's thread, between two rows: never running
            raise StopIteration
        try:
            return next(self._it)
        except BaseException:
            state.close()
            raise

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self._state.close()

    def close(self) -> None:
        """Stop the walk, from any thread: no chain sends another request, and a caller
        waiting for the next row gets :class:`~invtools.errors.Cancelled` at once."""
        self._state.close()

    def frame(self) -> pd.DataFrame:
        """The whole list as one transactions frame (:func:`invtools.frames.arrow.walk_frame`),
        with how it ran in ``df.attrs["walk"]``."""
        df = self._state.frame()
        df.attrs["walk"] = self.summary()
        return df

    def summary(self) -> dict:
        """The walk as JSON values (what frames keep in ``df.attrs["walk"]``)."""
        plan = self.plan or Plan()
        return {
            "plan": plan.kind,
            "pages": self.pages,
            "chains": plan.chains,
            "fallback": self.fallback,
            "replayed": self.replayed,
        }


class _Walking:
    """A :class:`Walk`'s state and steps."""

    def __init__(
        self,
        fetch: Callable[[dict], bytes],
        spec: Spec,
        *,
        store: WalkStore,
        chains: int = 1,
        split: bool | tuple[str, ...] = False,
        refresh: bool = False,
        max_age: timedelta | None = None,
        counters: Any = None,
        progress: bool = False,
        desc: str = "rows",
        pages: bool = False,
        start: Callable[[], None] | None = None,
    ) -> None:
        self._fetch, self.spec, self._store, self._start = fetch, spec, store, start
        self._n = 1 if spec.trimmed else chains
        self._split, self._refresh, self._max_age = split, refresh, max_age
        self._counters, self._show, self._desc, self._as_pages = counters, progress, desc, pages
        self._chains: Chains | None = None
        self.closed = False
        self._bar: Any = None
        self._lock = threading.Lock()
        self.plan: Plan | None = None
        self.replayed = self.complete = False
        self.fallback: str | None = None
        self.data_as_of: datetime | None = None
        self.seams: tuple[Key, ...] | None = None
        self.pages = self.rows = 0

    def close(self) -> None:
        self.closed = True
        if self._chains is not None:
            self._chains.close()

    def frame(self) -> pd.DataFrame:
        previous, record = self._records()
        fresh: list[Piece] = []
        if record is not None and record.complete:
            pieces, plan = self._pieces(record), record.plan  # read as they are parsed
            most, stored = self.spec.max_pages, len(record.pieces)
            self._replay(record, stored if most is None else min(most, stored))
        else:
            source, plan = self._fresh(previous)
            try:
                fresh = list(source)
            finally:
                self._stop()
            pieces, plan = iter(fresh), self._ran()
        df = walk_frame(
            ((p.page.body, p.page.n_rows, p.keep) for p in pieces),
            merged=plan.merged,
            types=plan.types if plan.kind == "merge" else None,
        )
        self.rows = len(df)
        self._count(rows=len(df))
        if not self.replayed:
            ms, ids = frame_keys(df)
            self._save(previous, fresh, zip(ms.tolist(), ids.tolist(), strict=True), trimmed=False)
        return df

    # -- where the pieces come from

    def _records(self) -> tuple[Record | None, Record | None]:
        """The list's last record (read once ``start()`` ran), and it again if a replay may use
        it: not refreshing, and no older than ``max_age``."""
        if self._start is not None:
            self._start()
        previous = self._store.load()
        if previous is None or self._refresh or not previous.pieces:  # a memory keeps no pages
            return previous, None
        young = self._max_age is None or datetime.now(UTC) - previous.began <= self._max_age
        return previous, previous if young else None

    def _pieces(self, record: Record) -> Iterator[Piece]:
        """A record's pieces, no more than ``max_pages``, each read when it is asked for."""
        pieces = (raw_piece(j, k, body, n) for n, (j, k, body) in enumerate(record.pieces, 1))
        return islice(pieces, self.spec.max_pages)

    def _replay(self, record: Record, pages: int) -> None:
        """From now on the walk is the replay of ``record``: its ``pages`` counted as answers
        from the cache, its data as old as the walk that read it."""
        self.replayed, self.plan, self.complete = True, record.plan, record.complete
        self.data_as_of, self.pages, self.seams = record.began, pages, record.seams
        self._count(from_cache=pages, pages=pages)
        if self._counters is not None:
            self._counters.saw_data_from(record.began)

    def _fresh(self, previous: Record | None) -> tuple[Iterator[Piece], Plan]:
        """A fresh walk's pieces (nothing is sent until the first is asked for) and plan."""
        plan = choose_plan(
            None if previous is None else previous.seams,
            chains=self._n,
            typed=self._split if isinstance(self._split, tuple) else not self._split,
            since_ms=self.spec.since_ms,
        )
        if plan.kind != "one":
            logger.info("walking %s in %d chains (%s)", self._desc, plan.chains, plan.kind)
        self.replayed, self.pages, self.plan = False, 0, plan
        self.data_as_of = datetime.now(UTC)
        if self._counters is not None:
            self._counters.saw_data_from(self.data_as_of)
        self._chains = Chains(plan, self.spec, self._fetch, on_page=self._on_page)
        if self.closed:
            self._chains.close()
        return self._chains.pieces(), plan

    def _stop(self) -> None:
        if self._chains is not None:
            self._chains.close()
        if self._bar is not None:
            self._bar.close()

    def _ran(self) -> Plan:
        """What the fresh walk turned out to be, once its chains have ended."""
        assert self._chains is not None
        chains = self._chains
        self.fallback, self.complete = chains.fallback, chains.complete
        return chains.ran

    def _on_page(self, piece: Piece) -> None:
        """Counted in the caller's stats (chains run in its context); a bar after a few."""
        with self._lock:
            self.pages += 1
            self._count(pages=1)
            if self._show and self._bar is None and self.pages > _SHOW_AFTER:
                self._bar = progress_bar(desc=self._desc, unit=" pages", initial=self.pages - 1)
            if self._bar is not None:
                self._bar.update(1)

    def _count(self, **counts: int) -> None:
        if self._counters is not None:
            self._counters.add(**counts)

    # -- rows and pages

    def items(self) -> Generator[Any, None, None]:
        """What the caller iterates: from the record when it holds all of it (decided before
        the first row goes out), else fresh; a fresh walk that ends leaves its record."""
        previous, record = self._records()
        if record is not None and (not self._as_pages or record.plan.kind == "one"):
            # whole or nothing: a record that ends before this walk would is not replayed
            trim, pages, self.replayed = self._trim(), list(self._pieces(record)), True
            out = list(self._shape(iter(pages), record.plan, trim, []))
            if (
                record.serves(since_ms=self.spec.since_ms)
                or trim.done
                or len(pages) == self.spec.max_pages
            ):
                self._replay(record, len(pages))
                yield from self._handed(out)
                return
        trim, keys, taken = self._trim(), list[Key](), list[Piece]()
        source, plan = self._fresh(previous)

        def kept() -> Iterator[Piece]:
            for piece in source:
                taken.append(piece)
                yield piece

        try:
            yield from self._handed(self._shape(kept(), plan, trim, keys))
        finally:
            self._stop()
        if self.closed:  # by another thread, before its chains began: not an empty list
            raise Cancelled("the walk was stopped")
        self._ran()
        self._save(previous, taken, keys, trimmed=trim.done)

    def _handed(self, items: Iterable[Any]) -> Iterator[Any]:
        """``items`` as they are handed out, their rows counted."""
        for item in items:
            n = len(item.rows) if self._as_pages else 1
            self.rows += n
            self._count(rows=n)
            yield item

    def _trim(self) -> Trim:
        s = self.spec
        return Trim(keep=s.keep, stop_at=s.stop_at, max_rows=s.max_rows)

    def _shape(
        self, pieces: Iterator[Piece], plan: Plan, trim: Trim, keys: list[Key]
    ) -> Iterator[Any]:
        """Rows (or pages) of ``pieces``, newest first, each id once: ``since`` ends them,
        ``until`` and the caller's trimming apply; ``keys`` gets every row's key in order. A
        walk that ends at ``since`` here (a replay) sets ``trim.stopped``."""
        since, until = self.spec.since_ms, self.spec.until_ms

        held = False  # a row older than since: the end, unless a newer row comes next

        def window(rows: Iterable[dict]) -> Iterator[dict]:
            nonlocal held
            for row in rows:
                key = row_key(row)
                old = since is not None and NO_TIME < key[0] < since
                if old and held:
                    trim.stopped = True
                    break
                held = old
                if old:
                    continue
                keys.append(key)
                if until is None or key[0] == NO_TIME or key[0] <= until:
                    yield row

        if self._as_pages:
            for number, piece in enumerate(pieces, 1):
                page = piece.page
                rows = trim(list(window(piece.kept())))
                yield Page(rows, number, page.cursor, page.has_more, from_cache=self.replayed)
                if trim.done:
                    return
        else:
            for row in window(rows_of(pieces, plan)):
                yield from trim([row])
                if trim.done:
                    return
        trim.stopped = trim.stopped or held  # the rows ended on a row older than since

    def _save(
        self, previous: Record | None, pieces: list[Piece], keys: Any, *, trimmed: bool
    ) -> None:
        """Leave the record of a fresh walk that ended: whole, at ``since``, or cut short by
        its caller (a prefix); a whole one with the seams of the next walk's chains."""
        chains = self._chains
        if not pieces or chains is None:
            return
        complete = chains.complete and not trimmed
        window = chains.window and not trimmed
        seams = None if previous is None else previous.seams
        if complete:
            seams = seam_starts(list(keys), chains=max(self._n, 8), limit=self.spec.limit)
        self.seams = seams
        self._store.save(
            Record(
                began=self.data_as_of or datetime.now(UTC),
                plan=chains.ran,
                pieces=tuple((p.j, p.keep, p.page.body) for p in pieces),
                complete=complete,
                since_ms=self.spec.since_ms if window else None,
                seams=seams,
            )
        )
