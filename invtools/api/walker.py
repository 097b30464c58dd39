"""One walk of a list in one or several cursor chains (:mod:`invtools.api.plan`), merged into
the rows of one plain walk: :class:`Run`. Whether its pages come from the server or from the
cache (a replay) is its ``fetch``'s business (:mod:`invtools.api.walks`).

Chains are threads whose pages queue up for the caller (rows come as soon as they are final);
each chain stops by itself: at its end, at ``since``, or -- a seam chain -- at the key where
the next chain starts. A seam chain that passes that key without meeting the next chain's
first row, a refused cursor, a type chain holding a row of another type and a head page
showing a type outside the four all fall back to one chain from there (logged, and said in
``walk.fallback``). Each id is given once per walk (a row re-dated during the walk could
otherwise show twice).

>>> from invtools.api.plan import Plan
>>> pages = {None: b'{"items":[{"id":2},{"id":1}],"cursor":1,"has_more":true}',
...          1: b'{"items":[{"id":0}],"cursor":null,"has_more":false}'}
>>> run = Run(Plan(), Spec(params={}), lambda call: pages[call.get("cursor")])
>>> [row["id"] for row in run.rows()], run.complete
([2, 1, 0], True)
"""

from __future__ import annotations

import contextvars
import heapq
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

from invtools._types import TX_TYPES
from invtools.api.pagination import RawPage, iter_raw_pages
from invtools.api.plan import NO_TIME, Key, Plan, row_key, time_ms
from invtools.api.walkparts import Piece, Spec
from invtools.errors import InvalidRequestError, NotFoundError

__all__ = ["Spec", "Piece", "Run", "NotInCache", "JOIN_SECONDS"]

logger = logging.getLogger("invtools")

#: How long stopping a walk waits for chains in the middle of a request (seconds).
JOIN_SECONDS = 5.0
# How often a waiting thread looks up: a chain to see the walk closed, the caller's for Ctrl-C
# (a blocking queue get cannot be interrupted on Windows).
_POLL = 0.1
_TIME = re.compile(rb'"transaction_time"\s*:\s*"([^"\\]*)"')
_TYPE = re.compile(rb'"type"\s*:\s*"([^"\\]*)"')
_EMPTY, _REFUSED = "empty", "refused"  # a chain's first row, when it has none


class NotInCache(Exception):
    """A recorded page is missing from the cache or not what the walk read: no replay."""


class _Ended(Exception):
    """A chain ends here: the walk was closed, or the chain cut off."""


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


class Run:
    """One walk of ``plan`` over ``fetch(call) -> body bytes``: :meth:`rows` (merged, each id
    once) or :meth:`pieces` (the pages, for a frame). ``on_page(piece)`` sees every page as it
    arrives (from the chains' threads). Afterwards: ``ran`` (the plan of the chains whose rows
    counted: what a replay runs), ``fallback``, ``complete`` (it reached the list's end),
    ``window`` (it stopped at ``since``), ``short`` (``max_pages`` ended it),
    ``keys`` (every row's key, with ``keys=True``)."""

    def __init__(
        self,
        plan: Plan,
        spec: Spec,
        fetch: Callable[[dict], bytes],
        *,
        on_page: Callable[[Piece], None] | None = None,
        keys: bool = False,
    ) -> None:
        self.plan, self.spec, self._fetch, self._on_page = plan, spec, fetch, on_page
        self.ran = plan
        n = plan.chains
        self.cut = n - 1  # the last chain whose rows count
        self.fallback: str | None = None
        self.complete = self.window = False
        self.keys: list[Key] | None = [] if keys else None
        self.short = False  # max_pages ended a chain before the list did
        self._first: list[Future] = [Future() for _ in range(n)]  # first key, or why none
        self._refused: dict[int, str] = {}
        self._proved = [False] * n
        self._typed = False  # a type walk whose type chains went on past the head page
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._queues: dict[int, queue.SimpleQueue] = {}

    # -- what the caller iterates

    def rows(self) -> Iterator[dict]:
        """The walk's rows, newest first for the transactions, each id once."""
        seen: set = set()
        kind = self.plan.kind
        for batch in (
            self._typed_rows()
            if kind == "types"
            else self._merged_rows()
            if kind == "merge"
            else (p.kept() for p in self._ordered())
        ):
            for row in batch:
                rid = row.get("id")
                if rid is not None:
                    if rid in seen:
                        continue
                    seen.add(rid)
                if self.keys is not None:
                    self.keys.append(row_key(row))
                yield row

    def pieces(self) -> Iterator[Piece]:
        """The pages whose rows count: a plain or seam walk's in order; a type walk's head
        page first, then every type chain's; a merge's every chain's (to be sorted by key,
        and -- a merge -- to keep only each chain's own type)."""
        kind = self.plan.kind
        if kind not in ("types", "merge"):
            yield from self._ordered()
            return
        if kind == "types":
            yield from self._head()
        else:
            self._start_all()
        first = 0 if kind == "merge" else 1
        for j in range(first, self.plan.chains if self._typed else first):
            yield from self._drain(j)
        self._finish()

    def close(self) -> None:
        """Stop every chain (between pages) and wait a little for those in a request."""
        self._stop.set()
        deadline = time.monotonic() + JOIN_SECONDS
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- plans

    def _ordered(self) -> Iterator[Piece]:
        """One chain inline; seam chains in threads, each counted once the one before it
        proved its seam."""
        if self.plan.kind == "one":
            yield from self._chain(0)
        else:
            for j in range(self.plan.chains):
                self._start(j)
            for j in range(self.plan.chains):
                yield from self._drain(j)
                if not self._proved[j]:  # it went on to the end, reached since, or stopped
                    break
        self._finish()

    def _head(self) -> Iterator[Piece]:
        """A type walk's head page; then its type chains started -- or, when the list ends
        there, ``since`` is reached, the head shows a type outside the four, or a type chain
        cannot start or holds other types, the head chain walking on alone."""
        head = next(self._chain(0), None)  # the rest of that chain is never asked for
        if head is None:
            return
        yield head
        if not head.page.has_more or head.keep is not None:  # the list or the window ends
            return
        others = sorted({str(r.get("type")) for r in head.rows()} - set(TX_TYPES))
        why = f"the head page shows type(s) {others} besides the four" if others else None
        if why is None:
            for j in range(1, self.plan.chains):
                self._start(j, start=head.page.cursor)
            for j in range(1, self.plan.chains):
                try:
                    first = self._wait(self._first[j])
                except _Ended:  # the walk was closed
                    return
                if first == _REFUSED:
                    why = f"type chain {j} ({TX_TYPES[j - 1]}) {self._refused[j]}"
                    break
        if why is None:
            self._typed = True
            return
        self._fall_back(0, why)
        yield from self._chain(0, start=head.page.cursor)

    def _start_all(self) -> None:
        for j in range(self.plan.chains):
            self._start(j)
        self._typed = True

    def _merged_rows(self) -> Iterator[list[dict]]:
        """Several types: every chain at once, merged newest first, each keeping only its own
        type (a server that ignored ``type=`` then gives the right rows all the same)."""
        self._start_all()
        chains = [self._own_rows(j, kind) for j, kind in enumerate(self.plan.types)]
        for row in heapq.merge(*chains, key=row_key, reverse=True):
            yield [row]
        self._finish()

    def _own_rows(self, j: int, kind: str) -> Iterator[dict]:
        for piece in self._drain(j):
            yield from (row for row in piece.kept() if row.get("type") == kind)

    def _typed_rows(self) -> Iterator[list[dict]]:
        for piece in self._head():
            yield piece.kept()
        if self._typed:
            chains = [
                (r for p in self._drain(j) for r in p.kept()) for j in range(1, self.plan.chains)
            ]
            for row in heapq.merge(*chains, key=row_key, reverse=True):
                yield [row]
        self._finish()

    # -- one chain

    def _chain(self, j: int, *, start: Any = None) -> Iterator[Piece]:
        """Chain ``j``'s pages, judged (:meth:`_judge`), until its end, ``since``, its seam,
        or the walk stops. ``start``: where it begins (a type chain, or the head chain walking on
        alone: the head's cursor)."""
        params, cursor = self.plan.chain(j, self.spec.params)

        def fetch(call: dict) -> bytes:  # no request once the walk is closed or j cut off
            if self._stop.is_set() or j > self.cut:
                raise _Ended
            return self._fetch(call)

        pages = iter_raw_pages(
            fetch,
            params,
            limit=self.spec.limit,
            max_pages=self.spec.max_pages,
            start=cursor if start is None else start,
        )
        page = None
        try:
            for page in pages:  # a page that came back after that is not handed out either
                if self._stop.is_set() or j > self.cut:
                    raise _Ended
                piece = Piece(j, page)
                if not self._first[j].done():
                    self._first[j].set_result(self._first_of(piece))
                done = self._judge(piece)
                if self._on_page is not None:
                    self._on_page(piece)
                yield piece
                if done:
                    return
            if page is not None and page.has_more:  # max_pages
                self.short = True
        except _Ended:  # closed (then it is not complete), or cut off (a fallback, since)
            pass
        except (InvalidRequestError, NotFoundError) as exc:
            if page is not None or not j:
                raise
            self._refused[j] = f"could not start: its cursor was refused ({exc})"
            self._first[j].set_result(_REFUSED)
        finally:
            if not self._first[j].done():
                self._first[j].set_result(_EMPTY)

    def _first_of(self, piece: Piece) -> Any:
        """What chain ``j``'s first page says of it: its first key, or why it has none."""
        j = piece.j
        if self.plan.kind == "types" and j and not _of_type(piece, TX_TYPES[j - 1]):
            self._refused[j] = "holds rows of other types (the server ignores type=?)"
            return _REFUSED
        rows = piece.rows()
        return row_key(rows[0]) if rows else _EMPTY

    def _judge(self, piece: Piece) -> bool:
        """Set how many of the page's rows count; True when chain ``piece.j`` ends here."""
        j, since = piece.j, self.spec.since_ms
        stop = self.plan.stop_key(j) if j < self.cut else None
        if since is None and stop is None:
            return False
        last = _last_ms(piece.page)
        if (
            piece.page.has_more
            and last is not None
            and (since is None or last >= since)
            and (stop is None or last > stop[0])
        ):
            return False  # every row newer than both: nothing to decide on this page
        for i, key in enumerate(row_key(r) for r in piece.rows()):
            if since is not None and NO_TIME < key[0] < since:
                piece.keep = i
                self._cut_at(j, since=True)
                return True
            if stop is None or key > stop:
                continue
            nxt = self._wait(self._first[j + 1])
            if nxt == _EMPTY:  # nothing after the seam: this chain walks to the end
                self._cut_at(j, since=False)
            elif isinstance(nxt, str):
                self._fall_back(j, f"chain {j + 1} {self._refused[j + 1]}")
            elif key == stop or key == nxt:  # met the cursor row, or (it was deleted) the
                piece.keep = i + (key == stop)  # next chain's first row: the seam holds
                self._proved[j] = True
                return True
            else:
                self._fall_back(
                    j,
                    f"chain {j} did not meet row {stop[1]}, where chain "
                    f"{j + 1} began (the list changed there during the walk)",
                )
            stop = None
        if stop is not None and not piece.page.has_more:
            nxt = self._wait(self._first[j + 1])
            if nxt == _EMPTY:
                self._cut_at(j, since=False)
            else:
                self._fall_back(
                    j,
                    f"chain {j} reached the end of the list before row "
                    f"{stop[1]}, where chain {j + 1} began",
                )
        return False

    # -- threads

    def _start(self, j: int, start: Any = None) -> None:
        q: queue.SimpleQueue = queue.SimpleQueue()
        self._queues[j] = q

        def pump() -> None:
            try:
                for piece in self._chain(j, start=start):
                    q.put(piece)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
                q.put(_Failed(exc))
            finally:
                q.put(_DONE)

        thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(pump,),
            daemon=True,
            name=f"invtools-chain-{j}",
        )
        self._threads.append(thread)
        thread.start()

    def _drain(self, j: int) -> Iterator[Piece]:
        q = self._queues[j]
        while True:
            try:
                item = q.get(timeout=_POLL)
            except queue.Empty:
                continue
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item

    def _wait(self, future: Future) -> Any:
        """The future's result; :class:`_Ended` once the walk is closed."""
        while not self._stop.is_set():
            try:
                return future.result(timeout=_POLL)
            except TimeoutError:
                continue
        raise _Ended

    # -- outcomes

    def _cut_at(self, j: int, *, since: bool) -> None:
        """Chain ``j`` is the last that counts (a type chain that reached ``since`` only ends
        itself)."""
        with self._lock:
            self.window = self.window or since
            if self.plan.kind == "merge" or (self.plan.kind == "types" and j):
                return
            self.cut = min(self.cut, j)

    def _fall_back(self, j: int, why: str) -> None:
        with self._lock:
            self.cut = min(self.cut, j)
            self.fallback = self.fallback or why
        logger.info("walk fell back to one chain from chain %d of %d: %s", j, self.plan.chains, why)

    def _finish(self) -> None:
        """The walk reached its end: what it turned out to be."""
        self.complete = not (self.window or self.short or self._stop.is_set())
        if self.plan.kind == "types" and not self._typed:
            self.ran = Plan()
        elif self.plan.kind == "seams":
            self.ran = Plan("seams", self.plan.starts[: self.cut]) if self.cut else Plan()


def _of_type(piece: Piece, wanted: str) -> bool:
    found = _TYPE.findall(piece.page.body)
    if len(found) == piece.page.n_rows:
        return all(t == wanted.encode() for t in found)
    return all(r.get("type") == wanted for r in piece.rows())


def _last_ms(page: RawPage) -> int | None:
    """The time of a page's last row when its bytes say it plainly, else None."""
    found = _TIME.findall(page.body)
    return time_ms(found[-1].decode()) if found and len(found) == page.n_rows else None
