"""The chain runner: a walk's cursor chains in threads, merged as they arrive into the rows of
one plain walk (:class:`ChainWalk`), and the order key it merges by. What a walk runs and why,
and how seams are proved and when a walk falls back, is :mod:`invtools.api.chains`.

>>> row_key({"id": 7, "transaction_time": "2026-05-02T01:10:00.000Z"})
(1777684200000, 7)
"""

from __future__ import annotations

import contextvars
import json
import logging
import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from invtools._progress import progress_bar
from invtools._types import to_ms
from invtools.errors import ConfigError, InvalidRequestError, NotFoundError

__all__ = ["ChainWalk", "row_key", "time_ms", "raw_last_ms", "NO_TIME", "JOIN_SECONDS"]

logger = logging.getLogger("invtools")

#: How long stopping a walk waits for chains in the middle of a request (seconds).
JOIN_SECONDS = 5.0
#: The time of a row without a readable one: it sorts last.
NO_TIME = -(2**62)
_POLL = 0.1  # how often a waiting thread (the caller's too) looks up: Ctrl-C gets through
_MS = timedelta(milliseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TIME = re.compile(rb'"transaction_time"\s*:\s*"([^"\\]*)"')
_DONE, _ERROR = object(), object()
_UNKNOWN, _EMPTY, _REFUSED, _PAST, _GONE = "unknown", "empty", "refused", "past", "gone"


def time_ms(value: Any) -> int:
    """Epoch milliseconds of a wire time (:data:`NO_TIME` when missing or unreadable).

    >>> time_ms("2026-05-02T01:10:00.000Z"), time_ms(None) == NO_TIME
    (1777684200000, True)
    """
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
            return ((when if when.tzinfo else when.replace(tzinfo=timezone.utc)) - _EPOCH) // _MS
        except ValueError:
            pass
    try:
        return to_ms(value)
    except ConfigError:
        return NO_TIME


def row_key(row: Mapping[str, Any]) -> tuple[int, int]:
    """A row's place in the list, ``(transaction_time in ms, id)``: newest first is
    descending."""
    rid = row.get("id")
    return time_ms(row.get("transaction_time")), rid if isinstance(rid, int) else -1


def raw_last_ms(body: bytes, count: int) -> int | None:
    """The time of the last row of an undecoded page when the bytes say it plainly (one
    ``transaction_time`` per row), else None.

    >>> raw_last_ms(b'{"items":[{"transaction_time":"1970-01-01T00:00:01.000Z"}]}', 1)
    1000
    """
    found = _TIME.findall(body)
    return time_ms(found[-1].decode()) if found and len(found) == count else None


Setup = Callable[[], tuple[Any, Callable[[int, Any, Any], Iterator[Any]]]]


class ChainWalk:
    """The merged rows of a walk's chains, lazily: an iterator with ``close()``.

    ``setup()`` runs on the first ``next()`` (nothing is sent before) and returns the
    :class:`~invtools.api.chains.Plan` and ``open_chain(j, stop_at, start)``, chain j's page
    iterator. Each chain runs in a daemon thread in a copy of the caller's context (so
    ``client.measure()`` counts it); one chain runs inline. Rows come out as soon as they are
    final. ``raw=True`` (undecoded pages) yields ``(chain, page, keep)`` in arrival order
    instead (see :func:`~invtools.api.chainmerge.frame_rows`). ``since_ms`` ends each chain at its
    first older row; ``keep(row)`` filters what is yielded; ``on_end(keys)`` gets every row's
    key after a complete walk.

    Each chain fetches at most four pages ahead of the caller. Closing the walk, dropping it,
    or Ctrl-C while it waits stops them between pages and joins them (one in the middle of a
    request finishes it). Then: ``plan``, ``pages``, ``fallback`` (why it fell back to one
    chain, or None), ``complete`` (it reached the end of the list), ``last_chain``.

    >>> from invtools.api.chains import Plan
    >>> from invtools.api.pagination import iter_pages
    >>> page = {"items": [{"id": 2, "transaction_time": "2026-05-02"}], "cursor": None,
    ...         "has_more": False}
    >>> walk = ChainWalk(lambda: (Plan(), lambda j, stop_at, start: iter_pages(lambda c: page)))
    >>> [row["id"] for row in walk], walk.pages, walk.complete
    ([2], 1, True)
    """

    # The threads and the generator hold the run, never this object: a walk dropped half way
    # is freed at once, which closes the generator, which stops the chains.
    def __init__(self, setup: Setup, **options: Any) -> None:
        self._run = _Run(setup, **options)
        self._gen = self._run.consume()

    def __iter__(self) -> ChainWalk:
        return self

    def __next__(self) -> Any:
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()

    plan = property(lambda self: self._run.plan)
    pages = property(lambda self: self._run.pages)
    fallback = property(lambda self: self._run.fallback)
    complete = property(lambda self: self._run.complete)
    last_chain = property(lambda self: self._run.last_chain)

    def summary(self) -> dict:
        """The walk as JSON values (what frames keep in ``df.attrs["walk"]``)."""
        return {"plan": getattr(self.plan, "kind", None), "pages": self.pages,
                "chains": getattr(self.plan, "chains", None), "fallback": self.fallback}


class _Run:
    """One walk's chains and the state they share (see :class:`ChainWalk`)."""

    def __init__(self, setup: Setup, *, raw: bool = False, since_ms: int | None = None,
                 keep: Callable[[dict], bool] | None = None, progress: bool = False,
                 desc: str = "", on_end: Callable[[list], None] | None = None) -> None:
        self._setup, self.raw, self._since, self._keep = setup, raw, since_ms, keep
        self._show, self._desc, self._on_end = progress, desc, on_end
        self.plan: Any = None
        self.fallback: str | None = None
        self.pages = self.last_chain = 0
        self.complete = self._cut = False  # _cut: a chain ended at `since`
        self._bar = None

    # -- the caller's side

    def consume(self) -> Iterator[Any]:
        self.plan, self._open = self._setup()
        n = self.plan.chains
        self._seams, self._types = self.plan.kind == "seams", self.plan.kind == "types"
        self._cond = threading.Condition()
        self._first: list[Any] = [_UNKNOWN] * n  # each chain's first key, or why it has none
        self._why = [""] * n
        self._stitched = [False] * n
        self.last_chain = n - 1  # the last chain whose rows count
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(maxsize=4 * n)
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(self._thread, j),
                                    daemon=True, name=f"invtools-chain-{j}")
                   for j in range(n if n > 1 else 0)]
        source = self._arrivals(n) if threads else self._inline()
        try:
            for thread in threads:
                thread.start()
            if self.raw:
                yield from self._raw(source)
            else:
                yield from self._rows(self._merged(source) if self._types
                                      else self._concat(source))
            self.complete = not self._cut
        finally:
            self._stop.set()
            with self._cond:
                self._cond.notify_all()
            source.close()
            deadline = time.monotonic() + JOIN_SECONDS
            for thread in threads:
                if thread.ident is not None:
                    thread.join(max(0.0, deadline - time.monotonic()))
            if self._bar is not None:
                self._bar.close()

    def _rows(self, merged: Iterator[dict]) -> Iterator[dict]:
        """Each id once (the first); ``keep``; every key kept for ``on_end``."""
        seen: set = set()
        keys: list | None = [] if self._on_end else None
        for row in merged:
            rid = row.get("id")
            if rid is not None:
                if rid in seen:
                    continue
                seen.add(rid)
            if keys is not None:
                keys.append(row_key(row))
            if self._keep is None or self._keep(row):
                yield row
        if keys is not None and not self._cut:
            self._on_end(keys)

    def _raw(self, source: Iterator) -> Iterator[tuple]:
        for j, page, keep in source:
            if page is _ERROR and j <= self.last_chain:
                raise keep
            if page is not _ERROR and page is not _DONE:
                yield j, page, keep

    def _concat(self, source: Iterator) -> Iterator[dict]:
        """Seam chains (or one): chain k's rows once chain k-1 proved its seam."""
        buffered: dict[int, deque] = {}
        done: set[int] = set()
        cur = 0
        for j, page, keep in source:
            if page is _ERROR and j <= self.last_chain:
                raise keep
            if page is _DONE:
                done.add(j)
            elif page is not _ERROR:
                buffered.setdefault(j, deque()).append(page.rows[:keep])
            while True:
                while buffered.get(cur):
                    yield from buffered[cur].popleft()
                if cur not in done:
                    break
                if not (cur < self.last_chain and self._stitched[cur]):
                    return
                cur += 1

    def _merged(self, source: Iterator) -> Iterator[dict]:
        """Type chains after the head page: a row is final once every other chain passed it."""
        n = self.plan.chains
        buffered: list[deque] = [deque() for _ in range(n)]
        done = [False] * n
        for j, page, keep in source:
            if page is _ERROR and j <= self.last_chain:
                raise keep
            if page is _DONE:
                done[j] = True
            elif page is not _ERROR and j <= self.last_chain:
                buffered[j].extend((row_key(r), r) for r in page.rows[:keep])
            while buffered[0]:  # the head page: newer than every type chain's rows
                yield buffered[0].popleft()[1]
            while True:  # (after a fallback only chain 0 counts)
                live = [i for i in range(self.last_chain + 1) if buffered[i] or not done[i]]
                if not live or not all(buffered[i] for i in live):
                    break
                yield buffered[max(live, key=lambda i: buffered[i][0][0])].popleft()[1]

    def _arrivals(self, n: int) -> Iterator[tuple]:
        finished = 0
        while finished < n:
            try:
                item = self._queue.get(timeout=_POLL)
            except queue.Empty:
                continue
            finished += item[1] is _DONE
            self._tick(item[1])
            yield item

    def _inline(self) -> Iterator[tuple]:
        for item in self._items(0):
            self._tick(item[1])
            yield item
        yield 0, _DONE, None

    def _tick(self, page: Any) -> None:
        if page is _DONE or page is _ERROR:
            return
        self.pages += 1
        if self._show and self._bar is None and self.pages > 3:
            self._bar = progress_bar(desc=self._desc, unit=" pages", initial=self.pages - 1)
        if self._bar is not None:
            self._bar.update(1)

    # -- the chains' side (their own threads)

    def _thread(self, j: int) -> None:
        items = self._items(j)
        try:
            for item in items:
                if not self._put(item):
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
            self._put((j, _ERROR, exc))
        finally:
            items.close()
            self._put((j, _DONE, None))

    def _put(self, item: tuple) -> bool:
        """Hand over an item, waiting while the caller is a few pages behind; False once the
        walk is stopped."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL)
                return True
            except queue.Full:
                pass
        return False

    def _items(self, j: int) -> Iterator[tuple]:
        """Chain ``j``'s pages as ``(j, page, keep)``, until it is done or stopped."""
        hit = [False]
        stop_at = None
        if self._since is not None:
            def stop_at(row: dict, since: int = self._since) -> bool:
                hit[0] = hit[0] or NO_TIME < time_ms(row.get("transaction_time")) < since
                return hit[0]

        start = None
        if self._types and j:  # after the head page, if the list goes on
            head = self._wait_first(0)
            if not isinstance(head, tuple):
                return
            start = head[1]
        pages = self._open(j, stop_at, start)
        number = 0
        try:
            while not self._stop.is_set() and j <= self.last_chain:
                try:
                    page = next(pages)
                except StopIteration:
                    self._ended(j)
                    return
                except (InvalidRequestError, NotFoundError) as exc:
                    if number or not j:
                        raise
                    self._set_first(j, _REFUSED, f"its cursor was refused ({exc})")
                    return
                number += 1
                keep, done = self._judge(j, page, number == 1, hit[0])
                yield j, page, keep
                if done:
                    return
        finally:
            getattr(pages, "close", lambda: None)()
            self._set_first(j, _GONE, "it ended before its first page")

    def _judge(self, j: int, page: Any, first: bool, since_hit: bool) -> tuple[Any, bool]:
        """How many of the page's rows chain ``j`` keeps (None: all), and whether it stops."""
        if not self._seams:
            if since_hit:
                with self._cond:
                    self._cut = True
            if self._types and first:
                return self._head(j, page, since_hit)
            return None, since_hit
        if first and j:
            keys = self._page_keys(page)
            self._set_first(j, keys[0] if keys else (_PAST if since_hit else _EMPTY),
                            "it came back empty")
        if since_hit:  # every later chain holds only older rows
            self._end_at(j, None)
            return None, True
        nxt = self._wait_first(j + 1)
        if nxt is None:
            return (0, True) if j > self.last_chain else (None, False)
        if nxt == _PAST:
            self._end_at(j, None)
            return None, False
        if not isinstance(nxt, tuple):
            self._end_at(j, f"chain {j + 1} of {self.plan.chains} could not start: "
                            f"{self._why[j + 1]}")
            return None, False
        if self.raw and not first:  # most pages: no need to decode
            last = raw_last_ms(page.body, page.count)
            if last is not None and last > nxt[0]:
                return None, False
        for i, key in enumerate(self._page_keys(page)):
            if key <= nxt:
                if key == nxt:
                    with self._cond:
                        self._stitched[j] = True
                    return i, True
                self._end_at(j, f"chain {j} did not meet row {nxt[1]}, where chain {j + 1} "
                                f"began (the list changed there during the walk)")
                return None, False
        return None, False

    def _head(self, j: int, page: Any, since_hit: bool) -> tuple[Any, bool]:
        """Type chains: the head page (chain 0) says whether and where they start; it stops
        once they all have, or walks on alone if one's cursor is refused."""
        if j:
            self._set_first(j, "started", "")
            return None, since_hit
        go = page.has_more and not since_hit
        self._set_first(0, ("after", page.cursor) if go else _EMPTY, "")
        for t in range(1, self.plan.chains if go else 1):
            if self._wait_first(t) == _REFUSED:
                self._end_at(0, f"type chain {t} could not start: {self._why[t]}")
                return None, False
        return None, True

    def _page_keys(self, page: Any) -> list[tuple[int, int]]:
        rows = page.rows if hasattr(page, "rows") else json.loads(page.body).get("items") or []
        return [row_key(row) for row in rows]

    def _ended(self, j: int) -> None:
        with self._cond:
            open_seam = self._seams and j < self.last_chain and not self._stitched[j]
        if open_seam:
            self._end_at(j, f"chain {j} reached the end of the list without meeting the "
                            f"first row of chain {j + 1}")

    def _set_first(self, j: int, value: Any, why: str) -> None:
        with self._cond:
            if self._first[j] == _UNKNOWN:
                self._first[j], self._why[j] = value, why
                self._cond.notify_all()

    def _wait_first(self, j: int) -> Any:
        """Chain ``j``'s first key (or why it has none); None once that no longer matters."""
        with self._cond:
            while j <= self.last_chain and not self._stop.is_set() \
                    and self._first[j] == _UNKNOWN:
                self._cond.wait(_POLL)
            return None if j > self.last_chain or self._stop.is_set() else self._first[j]

    def _end_at(self, j: int, why: str | None) -> None:
        """Chain ``j`` is the last whose rows count and walks on to the end (or ``since``);
        ``why``: the fallback's reason (None: the walk ends at ``since``)."""
        with self._cond:
            self._cut = self._cut or why is None
            if j >= self.last_chain:
                return
            self.last_chain = j
            self.fallback = why or self.fallback
            self._cond.notify_all()
        if why is not None:
            logger.info("walk fell back to one chain from chain %d of %d: %s", j,
                        self.plan.chains, why)
