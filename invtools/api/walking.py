"""One walk of a list, lazily: :class:`Walk`. When it starts (the first row asked for) it
looks for a record (:mod:`invtools.api.walkrecord`) of a walk of the same list that serves it
and is no older than ``max_age``, and replays that walk from the cache: every page it read,
each body checked against its digest, to the end, before the first row goes out. One page
missing or different, and the walk is fetched fresh from its first page, every page
(:mod:`invtools.api.walker`). A fresh walk that ends leaves a record: whole, a window stopped
at ``since``, or -- stopped where its caller said (``max_rows``, ``stop_at``) -- a prefix;
one abandoned (Ctrl-C, dropped) leaves none. Its data is as old as the walk that read it
(``data_as_of``: when it began). :func:`store_of` says where a list's records are kept.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Generator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from invtools._progress import progress_bar
from invtools._types import TXS_PATH, location_only, resource_of
from invtools.api.pagination import DEFAULT_LIMIT, Page, Trim
from invtools.api.plan import DEFAULT_CHAINS, NO_TIME, Plan, choose_plan, seam_starts, time_ms
from invtools.api.walker import NotInCache, Run
from invtools.api.walkparts import Piece, Spec
from invtools.api.walkrecord import SLOTS, FileStore, MemoryStore, WalkRecord, WalkStore, digest
from invtools.http.cache import cached_entry

__all__ = ["Walk", "store_of"]

logger = logging.getLogger("invtools")

_SHOW_AFTER = 3  # pages before a walk shows a progress bar: short walks stay silent


class Walk:
    """One walk of a list, lazily: iterate it (rows, pages or pieces, as made); ``close()``
    stops it (so does dropping it, or Ctrl-C). Once it started: ``plan`` (how it ran),
    ``pages``, ``fallback`` (why it fell back to one chain, or None), ``complete`` (it reached
    the list's end), ``replayed`` (it came from the cache), ``data_as_of``."""

    # The generator and the chains hold the walk's state, never this object: a walk dropped
    # half way is freed at once, which closes the generator, which stops the chains.
    def __init__(self, client: Any, path: str, spec: Spec, **options: Any) -> None:
        self._state = _Walking(client, path, spec, **options)
        self._gen = self._state.run()

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> Any:
        return next(self._gen)

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._gen.close()

    plan = property(lambda self: self._state.plan)
    fallback = property(lambda self: self._state.fallback)
    complete = property(lambda self: self._state.complete)
    pages = property(lambda self: self._state.pages)
    replayed = property(lambda self: self._state.replayed)
    data_as_of = property(lambda self: self._state.data_as_of)

    def keep_record(self, keys: list) -> None:
        """A walk of pieces whose caller built the rows: record it, with the rows' ``keys``
        (for the next walk's seams), if it reached its end fresh."""
        self._state.keep_record(keys)

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
        client: Any,
        path: str,
        spec: Spec,
        *,
        mode: str,
        chains: int,
        store: WalkStore | None = None,
        refresh: bool = False,
        max_age: timedelta | None = None,
        progress: bool | None = None,
    ) -> None:
        if mode not in ("rows", "pages", "pieces"):
            raise ValueError(f"a walk gives rows, pages or pieces, not {mode!r}")
        self._client, self._path, self._spec, self._mode = client, path, spec, mode
        self._chains, self._store = chains, store
        self._refresh, self._max_age = refresh, max_age
        self._show = client.progress if progress is None else progress
        self.pages = self._rows = 0
        self.replayed = False
        self.data_as_of: datetime | None = None
        self._current: Run | None = None
        self._cut_short = False  # the caller's max_rows/stop_at ended it before the list did
        self._lock = threading.Lock()
        self._bar: Any = None
        # a fresh walk to record, once its keys are known
        self._pending: tuple[WalkStore, WalkRecord | None, Run, datetime, dict[str, str]] | None = (
            None
        )

    plan = property(lambda self: self._current.plan if self._current else None)
    fallback = property(lambda self: self._current.fallback if self._current else None)
    complete = property(lambda self: bool(self._current and self._current.complete))

    # -- the walk

    def run(self) -> Generator[Any, None, None]:
        c, spec = self._client, self._spec
        if location_only(self._path):  # a team in another mode: its TeamModeError, unsent
            c.require_locations(self._path)
        store = self._store or store_of(c, self._path, spec.params, spec.limit)
        for record in () if self._refresh else self._records(store):
            done = self._replay(record)
            if done is not None:
                yield from done
                return
        began = datetime.now(UTC)
        self.data_as_of = began
        c._counters.saw_data_from(began)
        recorded: dict[str, str] = {}
        whole = store.load("whole")
        # Only the unfiltered transactions list splits into one chain per type; several types
        # are one chain each, merged.
        kind = spec.params.get("type")
        typed = kind if isinstance(kind, tuple) else not (self._path == TXS_PATH and kind is None)
        plan = choose_plan(
            None if whole is None else whole.seams,
            chains=self._chains,
            typed=typed,
            since_ms=spec.since_ms,
        )
        if plan.kind != "one":
            how = {"types": "one per type", "merge": "one per type asked for"}
            logger.info(
                "walking %s in %d chains (%s)",
                self._path,
                plan.chains,
                how.get(plan.kind, "from recorded cursors"),
            )
        run = self._current = Run(
            plan,
            spec,
            self._fetcher(recorded),
            on_page=self._on_page,
            keys=self._mode == "rows" and self._path == TXS_PATH,
        )
        try:
            yield from self._produce(run)
        finally:
            run.close()
            if self._bar is not None:
                self._bar.close()
        # whole, a window, or stopped where its caller said: another walk may replay it
        self._pending = (store, whole, run, began, recorded)
        if self._mode != "pieces":  # else the caller does, with the keys of its rows
            self.keep_record(run.keys)

    def keep_record(self, keys: list | None) -> None:
        if self._pending is not None and self._pending[-1]:  # it read a page
            self._save(*self._pending, keys)
            self._pending = None

    def _records(self, store: WalkStore) -> list[WalkRecord]:
        """The records that may serve this walk, newest first."""
        spec, now = self._spec, datetime.now(UTC)
        found = [(slot, store.load(slot)) for slot in SLOTS]
        # A walk stopped early may hold all this one needs: tried (a page past it: no replay).
        return sorted(
            (
                r
                for slot, r in found
                if r is not None
                and r.pages
                and (r.serves(since_ms=spec.since_ms) or slot == "prefix")
                and (self._max_age is None or now - r.began <= self._max_age)
                and (spec.max_pages is None or r.plan.kind == "one")
            ),
            key=lambda r: r.began,
            reverse=True,
        )

    def _replay(self, record: WalkRecord) -> list | None:
        """Everything this walk gives, read whole from the pages ``record`` names, before any
        of it goes out; None when one of them is not in the cache as that walk read it."""
        requester, session = self._client._requester, self._client._requester.session
        read: list[int] = []

        def fetch(call: dict) -> bytes:
            url = requester.url(self._path, call)
            entry = cached_entry(session, session.auth.header, url)
            if entry is None or record.pages.get(_name(url)) != digest(entry.body):
                raise NotInCache(url)
            read.append(1)
            return entry.body

        self.replayed, self._cut_short = True, False
        run = self._current = Run(record.plan, self._spec, fetch, on_page=self._on_page)
        try:
            done = list(self._produce(run))
        except NotInCache:
            self.replayed, self.pages, self._rows, self._current = False, 0, 0, None
            return None
        finally:
            run.close()
        self.data_as_of = record.began
        counters = self._client._counters
        counters.add(from_cache=len(read), pages=self.pages, rows=self._rows)
        counters.saw_data_from(record.began)
        return done

    def _fetcher(self, recorded: dict[str, str]) -> Callable[[dict], bytes]:
        """Fresh pages, every one from the server (a walk is never topped up from the cache),
        each recorded by its digest."""
        requester = self._client._requester
        force = self._client.cache_path is not None

        def fetch(call: dict) -> bytes:
            body = requester.send(self._path, call, refresh=force, raw=True, dated=False)[0]
            recorded[_name(requester.url(self._path, call))] = digest(body)
            return body

        return fetch

    def _on_page(self, piece: Piece) -> None:
        """Counted in the caller's stats (chains run in its context; a replay's once it holds
        whole); a bar after a few pages of a fresh walk."""
        with self._lock:
            self.pages += 1
            self._rows += piece.page.n_rows
            if self.replayed:
                return
            self._client._counters.add(pages=1, rows=piece.page.n_rows)
            if not self._show:
                return
            if self._bar is None and self.pages > _SHOW_AFTER:
                self._bar = progress_bar(
                    desc=resource_of(self._path), unit=" pages", initial=self.pages - 1
                )
            if self._bar is not None:
                self._bar.update(1)

    def _produce(self, run: Run) -> Generator[Any, None, None]:
        """What the caller iterates: rows (window and trimming applied), pages or pieces."""
        spec = self._spec
        if self._mode == "pieces":
            yield from run.pieces()
            return
        trim = Trim(keep=spec.keep, stop_at=spec.stop_at, max_rows=spec.max_rows)

        def window(rows: list[dict]) -> list[dict]:
            if spec.until_ms is not None:
                rows = [r for r in rows if _at_or_before(r, spec.until_ms)]
            return trim(rows)

        if self._mode == "pages":
            for number, piece in enumerate(() if trim.done else run.pieces(), start=1):
                yield Page(
                    rows=window(piece.kept()),
                    number=number,
                    cursor=piece.page.cursor,
                    has_more=piece.page.has_more,
                    from_cache=self.replayed,
                )
                if trim.done:
                    break
        else:
            for row in () if trim.done else run.rows():
                yield from window([row])
                if trim.done:
                    break
        self._cut_short = trim.done

    def _save(
        self,
        store: WalkStore,
        whole: WalkRecord | None,
        run: Run,
        began: datetime,
        recorded: dict[str, str],
        keys: list | None,
    ) -> None:
        spec = self._spec
        seams = None
        if run.complete and keys is not None:
            asked = max(
                self._chains,
                getattr(self._client, "concurrency", 0) or 0,
                DEFAULT_CHAINS if self._chains > 1 else 1,
            )
            seams = seam_starts(keys, chains=asked, limit=spec.limit)
        elif run.complete and whole is not None:
            seams = whole.seams  # a plain walk keeps what the last one knew
        slot = (
            "whole"
            if run.complete
            else "window"
            if run.window and not self._cut_short
            else "prefix"
        )
        record = WalkRecord(
            began=began,
            ended=datetime.now(UTC),
            plan=run.ran,
            since_ms=None if run.complete else spec.since_ms,
            pages=recorded,
            seams=seams,
        )
        store.save(slot, record)


def store_of(
    client: Any, path: str, params: Mapping[str, Any], limit: int = DEFAULT_LIMIT
) -> WalkStore:
    """Where the records of ``client``'s walks of this list live: beside its cache, under the
    token's salted prefix, or in this process for a client without a cache."""
    requester = client._requester
    first = requester.url(path, {**params, "limit": limit})
    session = requester.session
    keys = session.cache_keys
    if keys is None:
        owner = hashlib.sha256(f"{session.auth.header}\0{first}".encode()).hexdigest()
        return MemoryStore(owner)
    walk = hashlib.blake2b(first.encode(), digest_size=16).hexdigest()
    return FileStore(client.cache_path, f"{keys.prefix(session.auth.header)}:{walk}")


def _name(url: str) -> str:
    """A page's request as a record names it: path and query, without the service."""
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1]


def _at_or_before(row: Mapping, until_ms: int) -> bool:
    ms = time_ms(row.get("transaction_time"))
    return ms == NO_TIME or ms <= until_ms
