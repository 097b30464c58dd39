"""A fresh walk of a list in one or several cursor chains: :class:`Chains`, whose pieces
(pages, and how many of each page's rows count) give exactly the rows of one plain walk.
Whether a walk is fetched fresh or replayed is :mod:`invtools.api.walk`'s business; which
chains run, :mod:`invtools.api.plan`'s:

- **one chain** (a plain walk, one page when the caller asks for it);
- **seams**: after a whole walk, chain k starts from a cursor that walk recorded and chain k-1
  stops where chain k began, proved by meeting that row (or, the row deleted since, chain k's
  first row); anything else -- a refused cursor, the row moved, the list ending first -- and
  chain k-1 walks on alone from there (``fallback`` says why);
- **types**: a first walk of the unfiltered transactions list reads its head page, then one
  chain per documented type from the head's cursor, merged newest first by
  ``(transaction_time, id)``; a type outside the four on the head page, or a type chain that
  cannot start or holds other types, and the head chain walks on alone;
- **merge**: several types asked for, one chain each, merged.

Each chain is a daemon thread in the walk's cancel scope: after :meth:`Walk.close` (from any
thread), Ctrl-C or a failure, no chain sends another request (a pacing or retry wait ends at
once) and the caller gets control back at once; a request already on the wire is left to finish
on its own.

>>> from invtools.api.plan import Plan
>>> pages = {None: b'{"items":[{"id":2},{"id":1}],"cursor":1,"has_more":true}',
...          1: b'{"items":[{"id":0}],"cursor":null,"has_more":false}'}
>>> chains = Chains(Plan(), Spec(), lambda call: pages[call.get("cursor")])
>>> [row["id"] for p in chains.pieces() for row in p.kept()], chains.complete
([2, 1, 0], True)
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from invtools._clock import cancel_scope
from invtools._types import TX_TYPES
from invtools.api.pagination import RawPage, iter_raw_pages, raw_envelope
from invtools.api.plan import NO_TIME, Plan, row_key
from invtools.errors import Cancelled, InvalidRequestError, NotFoundError, PaginationError

__all__ = ["Spec", "Piece", "Chains", "rows_of", "raw_piece"]

logger = logging.getLogger("invtools")

#: How often a waiting caller wakes without news (only so that Windows, where a wait cannot
#: be interrupted, sees Ctrl-C): news -- a page, a chain's end, close() -- wakes it at once.
_WAKE = 0.5
_EMPTY, _REFUSED = "empty", "refused"  # a chain's first key, when it has none


@dataclass(frozen=True)
class Spec:
    """What a walk asks for: the list's ``params`` and ``limit``; a window (``since_ms``, every
    chain ending at its first older row that an older row or the list's end follows -- one
    row alone is out of order, also the last of its page -- and ``until_ms``); and for a plain walk
    ``max_pages``, ``max_rows``, ``keep(row)`` and ``stop_at(row)``
    (:class:`invtools.api.pagination.Trim`)."""

    params: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 100
    since_ms: int | None = None
    until_ms: int | None = None
    max_pages: int | None = None
    max_rows: int | None = None
    keep: Callable[[dict], bool] | None = None
    stop_at: Callable[[dict], bool] | None = None

    @property
    def trimmed(self) -> bool:
        """Whether its caller cuts the walk short (it then runs as one chain)."""
        return any(v is not None for v in (self.max_pages, self.max_rows, self.keep, self.stop_at))


@dataclass
class Piece:
    """One page of chain ``j`` and how many of its rows count (``keep``; None: all)."""

    j: int
    page: RawPage
    keep: int | None = None
    _rows: list | None = field(default=None, repr=False)

    def rows(self) -> list[dict]:
        """The page's rows, decoded once. Rows that are not objects, or whose ``id`` (or
        ``revision``, when given) is not an integer that fits 64 bits, are the server's fault:
        the page is refused rather than a row kept without its identity."""
        if self._rows is None:
            items = json.loads(self.page.body).get("items")
            if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
                raise PaginationError(f"page {self.page.number}: 'items' is not a list of objects")
            for i, row in enumerate(items, 1):
                for name in ("id", "revision"):
                    value = row.get(name)
                    if (value is not None or name == "id") and not _fits(value):
                        raise PaginationError(
                            f"page {self.page.number}, row {i}: {name!r} is {value!r:.40}, "
                            "not an integer of 64 bits; the server's answer is broken"
                        )
            self._rows = items
        return self._rows

    def kept(self) -> list[dict]:
        return self.rows() if self.keep is None else self.rows()[: self.keep]


def _fits(value: Any) -> bool:
    """Whether ``value`` is an integer a 64-bit column holds (an id or a revision)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


class _Ended(Exception):
    """A chain ends here: the walk was closed, or the chain cut off."""


class Chains:
    """A fresh walk of ``plan`` over ``fetch(call) -> body``: :meth:`pieces` in walk order
    (type chains' to be sorted by key). ``on_page(piece)`` sees each page as it arrives, in a
    chain's thread. Afterwards: ``ran`` (the plan whose rows counted: what a replay
    assembles), ``fallback``, ``complete`` (the list's end reached), ``window`` (``since``
    reached), ``short`` (``max_pages`` reached)."""

    def __init__(
        self,
        plan: Plan,
        spec: Spec,
        fetch: Callable[[dict], bytes],
        *,
        on_page: Callable[[Piece], None] | None = None,
    ) -> None:
        n = plan.chains
        self.plan, self.spec, self._fetch, self._on_page = plan, spec, fetch, on_page
        self.ran, self.cut = plan, n - 1
        self.fallback: str | None = None
        self.complete = self.window = self.short = False
        self.stop = threading.Event()
        self._cond = threading.Condition()
        self._got: list[list[Piece]] = [[] for _ in range(n)]
        self._done = [False] * n
        self._first: list[Any] = [None] * n  # a chain's first key, or _EMPTY / _REFUSED
        self._why: dict[int, str] = {}
        self._proved = [False] * n
        self._typed = False  # a type walk whose type chains took over after the head page
        self._error: BaseException | None = None
        self._credit: int | None = 0 if plan.kind == "one" else None  # None: no limit

    # -- the caller's side

    def pieces(self) -> Iterator[Piece]:
        """The pieces whose rows count, as they come: one chain page by page (each fetched
        when asked for), seam chains each after the one before it proved its seam, type and
        merge chains once all have ended. Nothing when it was closed before it started;
        :class:`~invtools.errors.Cancelled` when it is closed while it is being read."""
        if self.stop.is_set():
            return
        if self.plan.kind == "types":
            self._start(0)  # the head chain starts the type chains after its first page
        else:
            self._start_all()
        if self.plan.merged:
            for j in range(self.plan.chains):
                yield from self._take(j)
                if self.plan.kind == "types" and not self._typed:
                    break
        else:
            for j in range(self.plan.chains):
                yield from self._take(j)
                if j >= self.cut or not self._proved[j]:
                    break
        self._finish()

    def close(self) -> None:
        """Stop every chain: none sends another request. Returns at once."""
        with self._cond:
            self.stop.set()
            self._cond.notify_all()

    def _take(self, j: int) -> Iterator[Piece]:
        i = 0
        while True:
            with self._cond:
                while True:
                    if self._error is not None:
                        raise self._error
                    if self.stop.is_set():
                        raise Cancelled("the walk was stopped")
                    if i < len(self._got[j]):
                        piece = self._got[j][i]
                        break
                    if self._done[j]:
                        return
                    if self._credit == 0:  # one chain: it fetches a page when asked for one
                        self._credit = 1
                        self._cond.notify_all()
                    self._cond.wait(_WAKE)
            i += 1
            yield piece

    # -- chains

    def _start_all(self) -> None:
        for j in range(self.plan.chains):
            self._start(j)

    def _start(self, j: int, start: Any = None) -> None:
        threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._run, j, start),
            daemon=True,
            name=f"invtools-chain-{j}",
        ).start()

    def _run(self, j: int, start: Any) -> None:
        try:
            with cancel_scope(self.stop):
                self._chain(j, start)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
            with self._cond:
                if self._error is None and not self.stop.is_set() and j <= self.cut:
                    self._error = exc  # a chain cut off, or a stopped walk, fails for nobody
                    self.stop.set()
        finally:
            with self._cond:
                self._done[j] = True
                if self._first[j] is None:
                    self._first[j] = _EMPTY
                self._cond.notify_all()

    def _chain(self, j: int, start: Any) -> None:
        """Chain ``j``'s pages until its end, ``since``, its seam, or the walk stops."""
        params, cursor = self.plan.chain(j, self.spec.params)

        def fetch(call: dict) -> bytes:  # no request once the walk is stopped or j cut off
            with self._cond:
                while self._credit == 0 and not self.stop.is_set():
                    self._cond.wait()
                if self._credit:
                    self._credit -= 1
                if self.stop.is_set() or j > self.cut:
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
            for page in pages:
                if self.stop.is_set() or j > self.cut:
                    return  # a page that came back after that is not handed out
                piece = Piece(j, page)
                with self._cond:
                    if self._first[j] is None:
                        self._first[j] = self._first_of(piece)
                        self._cond.notify_all()
                done = self._judge(piece)
                with self._cond:
                    self._got[j].append(piece)
                    self._cond.notify_all()
                if self._on_page is not None:
                    self._on_page(piece)
                head = self.plan.kind == "types" and j == 0 and page.number == 1
                if done or (head and self._split(piece)):
                    return
            if page is not None and page.has_more:  # max_pages
                self.short = True
        except _Ended:
            pass
        except (InvalidRequestError, NotFoundError) as exc:
            if page is not None or not j:
                raise
            with self._cond:
                self._why[j] = f"could not start: its cursor was refused ({exc})"
                self._first[j] = _REFUSED
                self._cond.notify_all()

    def _first_of(self, piece: Piece) -> Any:
        j, rows = piece.j, piece.rows()
        if self.plan.kind == "types" and j and any(r.get("type") != TX_TYPES[j - 1] for r in rows):
            self._why[j] = "holds rows of other types (the server ignores type=?)"
            return _REFUSED
        return row_key(rows[0]) if rows else _EMPTY

    def _wait_first(self, j: int) -> Any:
        """Chain ``j``'s first key (or why it has none), once known; :class:`_Ended` when the
        walk stops first."""
        with self._cond:
            while self._first[j] is None:
                if self.stop.is_set():
                    raise _Ended
                self._cond.wait()
            return self._first[j]

    def _split(self, head: Piece) -> bool:
        """After a type walk's head page: True when one chain per type took over from its
        cursor; False when the head chain walks on alone (the list or the window ends there,
        or it falls back)."""
        if not head.page.has_more or head.keep is not None:
            return False
        others = sorted({str(r.get("type")) for r in head.rows()} - set(TX_TYPES))
        why = f"the head page shows type(s) {others} besides the four" if others else None
        if why is None:
            for j in range(1, self.plan.chains):
                self._start(j, head.page.cursor)
            for j in range(1, self.plan.chains):
                if self._wait_first(j) == _REFUSED:
                    why = f"type chain {j} ({TX_TYPES[j - 1]}) {self._why[j]}"
                    break
        if why is None:
            self._typed = True
            return True
        self._fall_back(0, why)
        return False

    def _judge(self, piece: Piece) -> bool:
        """Set how many of the page's rows count; True when chain ``piece.j`` ends here."""
        j, since = piece.j, self.spec.since_ms
        stop = self.plan.stop_key(j) if j < self.cut else None
        if since is None and stop is None:
            return False
        keys = [row_key(r) for r in piece.rows()]
        for i, key in enumerate(keys):
            if since is not None and NO_TIME < key[0] < since:
                if keys[i + 1][0] >= since if i + 1 < len(keys) else piece.page.has_more:
                    continue  # one row out of order, a newer one (or the next page) after it
                piece.keep = i
                self._cut_at(j)
                return True
            if stop is None or key > stop:
                continue
            nxt = self._wait_first(j + 1)
            if nxt == _EMPTY:  # nothing after the seam: this chain walks to the end
                self._cut_at(j, since=False)
            elif nxt == _REFUSED:
                self._fall_back(j, f"chain {j + 1} {self._why[j + 1]}")
            elif key in (stop, nxt):  # met the seam row, or (deleted since) the next first
                piece.keep = i + (key == stop)
                self._proved[j] = True
                return True
            else:
                self._fall_back(
                    j,
                    f"chain {j} did not meet row {stop[1]}, where chain {j + 1} began "
                    "(the list changed there during the walk)",
                )
            stop = None
        if stop is not None and not piece.page.has_more:
            if self._wait_first(j + 1) == _EMPTY:
                self._cut_at(j, since=False)
            else:
                self._fall_back(
                    j,
                    f"chain {j} reached the end of the list before row {stop[1]}, "
                    f"where chain {j + 1} began",
                )
        return False

    def _cut_at(self, j: int, *, since: bool = True) -> None:
        """Chain ``j`` is the last that counts (a type chain reaching ``since`` ends only
        itself)."""
        with self._cond:
            self.window = self.window or since
            if not (self.plan.merged and (j or self.plan.kind == "merge")):
                self.cut = min(self.cut, j)

    def _fall_back(self, j: int, why: str) -> None:
        with self._cond:
            self.cut = min(self.cut, j)
            self.fallback = self.fallback or why
        logger.info("walk fell back to one chain from chain %d of %d: %s", j, self.plan.chains, why)

    def _finish(self) -> None:
        self.complete = not (self.window or self.short or self.stop.is_set())
        if self.plan.kind == "types" and not self._typed:
            self.ran = Plan()
        elif self.plan.kind == "seams":
            self.ran = Plan("seams", self.plan.starts[: self.cut]) if self.cut else Plan()


def rows_of(pieces: Iterable[Piece], plan: Plan) -> Iterator[dict]:
    """The rows of a walk's pieces in the list's order, each id once: laid end to end, or --
    type chains -- merged newest first (a merge keeping each chain's own type)."""
    if plan.merged:
        rows: Iterable[dict] = sorted(
            (
                r
                for p in pieces
                for r in p.kept()
                if plan.kind != "merge" or r.get("type") == plan.types[p.j]
            ),
            key=row_key,
            reverse=True,
        )
    else:
        rows = (r for p in pieces for r in p.kept())
    seen: set = set()
    for row in rows:
        if row["id"] not in seen:  # every row has an integer id (Piece.rows checks it)
            seen.add(row["id"])
            yield row


def raw_piece(j: int, keep: int | None, body: bytes, number: int) -> Piece:
    """Piece ``number`` of chain ``j`` from its body (as a record keeps it)."""
    cursor, has_more, count = raw_envelope(body, number=number)
    return Piece(j, RawPage(body, number, cursor, has_more, count), keep)
