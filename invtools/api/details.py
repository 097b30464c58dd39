"""Transaction details, several in flight at once (:func:`fetch_details`), what a first
fetch will cost, said before it starts, at the pace the last one saw (:class:`Pace`), and the
concurrent, ordered map they run on (:func:`fanout`).

Lines come only from each transaction's detail, one request each. The real service answers in
about 0.8 s and allows 5 requests per second, so one request at a time reaches a quarter of the
limit; the client keeps ``concurrency`` details in flight while its pacing budget holds the
rate. ``lines_df()``, ``transactions_df(with_lines=True)`` and the mirror's sync all fetch
their details here.

A detail at a revision never changes and is cached for good. The ones a list's rows need that
the cache holds (:func:`held_details`) are read from the cache file in bulk, hundreds per
query (:func:`cached_details`), while the others are in flight: a re-run of 100,000 cached
details reads them in seconds, not the millisecond each of a requests-cache lookup.

:func:`fanout` knows nothing of HTTP: it runs ``fn(item)`` for each item on a few worker
threads and hands the results back in the order of the items.

- ``items`` may be any iterable, consumed lazily: an item is submitted as soon as it arrives
  (details can start while a list is still being walked), and at most ``ahead`` items are
  submitted and not yet handed back, so memory stays bounded however many there are.
- Each call runs in a copy of the caller's context (``contextvars.copy_context()``), so what
  the caller measures (``client.measure()``) counts the workers' requests, and inside
  :func:`invtools._clock.cancel_scope`: the pacing and retry waits of a worker end, and nothing
  more is sent, once the batch is stopped.
- Stopping: Ctrl-C, an exception in a call, or the caller leaving its loop (an exception in
  its own code, ``break``) sets the cancel event, cancels the calls not started, and does not
  wait for the requests in flight; the first exception is raised at once. What was handed
  back before stays with the caller. A batch started inside another one's
  :func:`~invtools._clock.cancel_scope` (details fetched by a worker of a larger batch, such
  as one team of :func:`invtools.each_team`) stops when that one is stopped, raising
  :class:`~invtools.errors.Cancelled` to its caller: its workers run in a scope of their own.

>>> print(cost_line(4046, 4046 / 5, 5))
4,046 transaction details to fetch, about 13 min at 5 requests/s; Ctrl-C keeps what has been fetched
>>> list(fanout(lambda n: n * n, range(6), workers=3))
[0, 1, 4, 9, 16, 25]
>>> def fail(n):
...     if n == 3:
...         raise ValueError("no 3")
...     return n
>>> got = []
>>> for n in fanout(fail, [0, 1, 2, 3, 4], workers=1):
...     got.append(n)
Traceback (most recent call last):
...
ValueError: no 3
>>> got
[0, 1, 2]
"""

from __future__ import annotations

import contextvars
import itertools
import math
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping, Sized
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing
from typing import Any, TypeVar

from invtools._clock import cancel_scope, current_cancel
from invtools._config import check_whole
from invtools._progress import notice, progress_bar
from invtools._types import TXS_PATH
from invtools.errors import Cancelled, ConfigError, ServerError
from invtools.http.cache import cached_bodies, decode_stored, held

__all__ = ["fetch_details", "held_details", "cached_details", "Pace", "about", "cost_line"]
__all__ += ["fanout", "SERVICE_LATENCY", "wrong_detail"]

#: Seconds the real service takes to answer one request (library-notes: latency).
SERVICE_LATENCY = 0.8
#: A fetch expected to take longer than this says so first, on one line of stderr.
ANNOUNCE_SECONDS = 30.0
#: How much longer a first fetch (no pace seen yet) may take than its estimate: a line that
#: said "about 3 min" took 3:45 at the real pace on a busy machine, 18 x 429 slowing the pace
#: (issue 35): 1.25, so the line says "up to" this much more until a fetch has shown the pace.
UNSEEN_SLACK = 1.3

Pair = tuple[int, int | None]


def fetch_details(
    fetch: Callable[[int, int | None], dict | None],
    rows: Iterable[Any],
    *,
    held: Callable[[list[Pair]], list[bool]] | None,
    cached: Callable[[list[Pair]], list[dict | None]] | None = None,
    workers: int,
    progress: bool,
    pace: Pace | None,
    holds: Callable[[], str] | None = None,
) -> Generator[tuple[Any, dict | None], None, None]:
    """``(row, fetch(id, revision))`` for each row, in order, ``workers`` at a time. ``rows``:
    list rows (``id``, ``revision``) or ``(id, revision)`` pairs, read lazily. For a list or
    tuple, ``held(pairs)`` says which the cache holds (None: none), the bar counts only the
    others, and ``pace`` (None: not paced) announces how long they will take (after the line
    ``holds()`` gives: what the rows hold) and is told the pace their answers came at. The
    held ones are read ``cached(pairs)`` at a time, a chunk of :data:`CACHED_CHUNK` (None:
    fetched like the others; a None in its answer: that one fetched), in this thread, while
    the others are in flight. Ctrl-C (or any error) stops it at once: nothing more is sent,
    and what was fetched stays in the cache.

    >>> list(fetch_details(lambda t, r: {"id": t}, [(1, 0), (2, 0)], held=None, workers=2,
    ...                    progress=False, pace=None))
    [((1, 0), {'id': 1}), ((2, 0), {'id': 2})]
    """
    keyed: Iterable[tuple[Any, Pair]] = ((row, _pair(row)) for row in rows)
    counted: Iterable[bool] = itertools.repeat(True)  # which results the bar counts
    bulk: tuple[list[tuple[Any, Pair]], list[bool]] | None = None  # held ones read by chunks
    total, cached_n = None, 0
    if isinstance(rows, Sized) and not isinstance(rows, Mapping):
        listed = list(keyed)  # a bad row is refused before anything is sent
        found = held([pair for _row, pair in listed]) if held else [False] * len(listed)
        counted, cached_n = [not h for h in found], sum(found)
        total = len(found) - cached_n
        keyed = listed
        if cached is not None and cached_n:  # the workers fetch only what it does not hold
            bulk = listed, found
            keyed = (item for item, h in zip(listed, found, strict=True) if not h)
        if pace is not None:
            pace.announce(total, holds)

    def one(item: tuple[Any, Pair]) -> tuple[Any, dict | None]:
        row, (tid, revision) = item
        return row, fetch(tid, revision)

    clock = pace.budget.clock if pace is not None and total is not None else None
    answered, first, last = 0, 0.0, 0.0  # requests answered; seconds to the first, the last
    with (
        progress_bar(
            total=total, desc="transaction details", unit=" details", enabled=progress
        ) as bar,
        closing(fanout(one, keyed, workers=workers)) as results,
    ):
        if cached_n:
            bar.set_postfix(cached=cached_n, refresh=False)
        start = clock.time() if clock else 0.0
        merged: Iterable[tuple[tuple[Any, dict | None], bool]] = zip(results, counted, strict=False)
        if bulk is not None and cached is not None:
            merged = _merged(*bulk, cached, results, one)
        try:
            for result, counts in merged:
                if counts:
                    bar.update(1)
                    answered, last = answered + 1, clock.time() - start if clock else 0.0
                    first = last if answered == 1 else first
                yield result
        finally:
            if pace is not None and clock is not None:  # stopped too: what it saw holds
                pace.saw(answered, first, last)


#: Held details read from the cache in one go: enough that a query's cost does not show, few
#: enough that what is read and not yet handed back stays small.
CACHED_CHUNK = 500


def _merged(
    keyed: list[tuple[Any, Pair]],
    found: list[bool],
    cached: Callable[[list[Pair]], list[dict | None]],
    results: Iterable[tuple[Any, dict | None]],
    one: Callable[[tuple[Any, Pair]], tuple[Any, dict | None]],
) -> Generator[tuple[tuple[Any, dict | None], bool], None, None]:
    """``(result, counted)`` in the order of ``keyed``: a held one read from the cache (a chunk
    at a time; one the bulk read does not give is fetched here), the others the next of
    ``results`` (the workers'); ``counted``: whether the bar counts it (not held)."""
    fetched = iter(results)
    for start in range(0, len(keyed), CACHED_CHUNK):
        chunk = keyed[start : start + CACHED_CHUNK]
        holds = found[start : start + CACHED_CHUNK]
        wanted = [pair for (_row, pair), h in zip(chunk, holds, strict=True) if h]
        read = iter(cached(wanted) if wanted else ())
        for item, h in zip(chunk, holds, strict=True):
            if not h:
                yield next(fetched), True
                continue
            detail = next(read)
            yield ((item[0], detail) if detail is not None else one(item)), False


#: Details asked at a time whether the cache holds them (keys only, no body read).
HELD_CHUNK = 5000


def held_details(requester: Any, pairs: list[Pair]) -> list[bool]:
    """For each ``(id, revision)``, whether the cache of ``requester`` (its session's, its
    token's entries) holds its detail for good: one without a revision expires within a
    minute, a request; none while the service refuses the token (``requester.refused``:
    :mod:`invtools.api.refusals`). Asked :data:`HELD_CHUNK` at a time: 100,000 URLs and keys
    at once held 40 MiB."""
    session, base_url = requester.session, requester.base_url
    if requester.refused:
        return [False] * len(pairs)
    found: list[bool] = []
    for start in range(0, len(pairs), HELD_CHUNK):  # the URLs and keys of a part at once
        part = pairs[start : start + HELD_CHUNK]
        found += held(session, session.auth.header, _detail_urls(base_url, part))
    return [h and r is not None for h, (_t, r) in zip(found, pairs, strict=True)]


def cached_details(requester: Any, pairs: list[Pair]) -> list[dict | None]:
    """For each ``(id, revision)``, its detail (unwrapped) as the cache of ``requester``
    (:func:`held_details`) holds it; None: not held, only requests-cache's own lookup reads
    it, it is not that detail (:func:`wrong_detail`: the one lookup says so), or the token was
    refused since (each is then sent). Read in bulk (:func:`invtools.http.cache.cached_bodies`):
    what a revision's detail says never changes, so this is what requests-cache would answer,
    a millisecond sooner each."""
    session, base_url = requester.session, requester.base_url
    if requester.refused:
        return [None] * len(pairs)
    urls = _detail_urls(base_url, [(t, r) for t, r in pairs if r is not None])
    bodies = iter(cached_bodies(session, session.auth.header, urls))
    found: list[dict | None] = []
    for tid, revision in pairs:
        decoded, body = decode_stored(next(bodies)) if revision is not None else (False, {})
        wrong = not decoded or wrong_detail(body, tid, revision, f"{TXS_PATH}/{tid}")
        found.append(None if wrong else dict(body["item"]))
    return found


def wrong_detail(body: Any, tid: int, revision: int | None, path: str) -> ServerError | None:
    """The error to raise for ``body``, the answer to ``GET path`` (transaction ``tid``'s
    detail, at ``revision`` when one was asked), when it is not that detail: no ``{"item":
    {...}}``, another transaction's ``id``, another ``revision`` than the one asked, or none
    that is a whole number. None when it is the one asked for.

    >>> wrong_detail({"item": {"id": 7, "revision": 2}}, 7, None, "/v1/location-txs/7") is None
    True
    >>> print(wrong_detail({"item": {"id": 8, "revision": 2}}, 7, 2, "/v1/location-txs/7"))
    Asking for transaction 7 at revision 2 (GET /v1/location-txs/7?revision=2), the server answered transaction 8 at revision 2: not the detail asked for. Nothing of it was kept; this is the server's (or a proxy's) fault: try again later.
    """  # noqa: E501 - the doctest shows the message whole
    item = body.get("item") if isinstance(body, Mapping) else None
    got = (item.get("id"), item.get("revision")) if isinstance(item, Mapping) else (None, None)
    whole = [type(v) is int and v >= 0 for v in got]  # not a bool, a float, a text
    if all(whole) and got[0] == tid and revision in (None, got[1]):
        return None
    at, query = (
        ("", "") if revision is None else (f" at revision {revision}", f"?revision={revision}")
    )
    said = (
        f"transaction {got[0]} at revision {got[1]}"
        if all(whole)
        else "no detail with a whole id and revision"
        if item is not None
        else "no {'item': ...} object"
    )
    return ServerError(
        f"Asking for transaction {tid}{at} (GET {path}{query}), the server answered {said}: "
        "not the detail asked for. Nothing of it was kept; this is the server's (or a "
        "proxy's) fault: try again later.",
        status=200,
        method="GET",
        path=path,
    )


def _detail_urls(base_url: str, pairs: list[Pair]) -> list[str]:
    """The URLs of the details ``(id, revision)`` as the client's requester makes them (a few
    microseconds each, not its tens: a re-run makes one per transaction)."""
    base = base_url + TXS_PATH
    return [f"{base}/{t}" if r is None else f"{base}/{t}?revision={r}" for t, r in pairs]


def _pair(row: Any) -> Pair:
    """``(id, revision)`` of a list row or a pair."""
    try:
        tid, revision = (row["id"], row.get("revision")) if isinstance(row, Mapping) else row
        return int(tid), None if revision is None else int(revision)
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"a transaction detail needs a list row (with 'id' and 'revision') "
            f"or an (id, revision) pair, not {row!r}"
        ) from None


class Pace:
    """A pacing budget's ``bucket`` as batches of details meet it, ``concurrency`` in flight:
    a fetch expected to take over :data:`ANNOUNCE_SECONDS` says so before it starts
    (:meth:`announce`; ``say=False``: silent), and the pace its answers came at
    (:meth:`saw`) is what the next estimate expects, in every process of the cache folder
    (a 429's slow-down, a budget counted after the latency or by the minute: whatever the
    service turns out to do)."""

    def __init__(self, budget: Any, bucket: str, concurrency: int, say: bool = True) -> None:
        self.budget, self.bucket, self.concurrency, self.say = budget, bucket, concurrency, say

    def announce(self, misses: int, holds: Callable[[], str] | None = None) -> None:
        """Say on stderr how long ``misses`` details will take, if over ANNOUNCE_SECONDS (and
        ``say``), after the line ``holds()`` gives (what the list rows hold); nothing when the
        service states no limit (no pacing to cost anything)."""
        if misses <= 0 or not self.say or self.budget.unlimited:
            return
        seconds, upto = self.seconds(misses)
        if seconds > ANNOUNCE_SECONDS:
            if holds is not None:
                notice(holds())
            # names the team in each_team
            notice(cost_line(misses, seconds, misses / seconds, upto=upto))

    def seconds(self, misses: int) -> tuple[float, float | None]:
        """About how long ``misses`` details take at the pace the last fetch saw, and how long
        at most when no fetch has shown it yet (None once one has)."""
        seconds = self.budget.expected_seconds(
            self.bucket,
            misses,
            in_flight=self.concurrency / SERVICE_LATENCY,
            latency=SERVICE_LATENCY,
        )
        # no pace seen yet: the estimate is the configured pace's, and the service may allow
        # less; a fetch seen since, the estimate is that pace (within a few %)
        seen = self.budget.summary().get(self.bucket, {}).get("seen")
        return seconds, None if seen is not None else seconds * UNSEEN_SLACK

    def saw(self, answered: int, first: float, last: float) -> None:
        """``answered`` requests, the first answered ``first`` s after the batch began, the
        last ``last`` s after."""
        self.budget.saw(self.bucket, answered, first=first, last=last)


def about(seconds: float) -> str:
    """A duration as a person says it.

    >>> about(42), about(809.2), about(7300), about(3599)
    ('about 42 s', 'about 13 min', 'about 2 h 2 min', 'about 1 h')
    """
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h" + (f" {minutes} min" if minutes else "")


def _at_most(seconds: float) -> str:
    """A bound as a person says it, rounded up: ``_at_most(209)`` is ``"4 min"``."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def cost_line(misses: int, seconds: float, per_second: float, *, upto: float | None = None) -> str:
    """The one line a long first fetch prints before it starts; ``upto``: how long it may
    take at most, said when the estimate is unsure (no pace seen yet).

    >>> print(cost_line(900, 181, 5, upto=181 * UNSEEN_SLACK))   # 3:01, at most 3:55
    900 transaction details to fetch, about 3 min (up to 4 min if the service slows the pace) at 5 requests/s; Ctrl-C keeps what has been fetched
    """  # noqa: E501 - the doctest shows the line whole
    said = about(seconds)
    if upto is not None:
        said += f" (up to {_at_most(upto)} if the service slows the pace)"
    return (
        f"{misses:,} transaction details to fetch, {said} at {per_second:.3g} "
        f"requests/s; Ctrl-C keeps what has been fetched"
    )


# -- the concurrent, ordered map

T = TypeVar("T")
R = TypeVar("R")

#: How often the waiting caller wakes even when no call finished: ``_thread.interrupt_main()``
#: (a notebook's "interrupt kernel" on some platforms) is only seen by a thread that runs.
POLL_SECONDS = 0.1


def fanout(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int,
    ahead: int | None = None,
    cancel: threading.Event | None = None,
) -> Generator[R, None, None]:
    """``fn(item)`` for every item, up to ``workers`` at once, results in input order.

    ``ahead`` (default ``4 * workers``) bounds the items submitted and not yet handed back.
    ``cancel`` is the event set when the batch stops (a new one by default). Use it in a
    ``for`` loop, or close it (``contextlib.closing``) when you may leave early: leaving stops
    the calls still running.

    >>> import itertools
    >>> squares = fanout(lambda n: n * n, itertools.count(), workers=2)   # endless, lazy
    >>> [next(squares) for _ in range(4)]; squares.close()
    [0, 1, 4, 9]
    """
    check_whole(workers, "workers", least=1)
    ahead = max(ahead or 4 * workers, workers)
    stop = cancel if cancel is not None else threading.Event()
    outer = current_cancel()  # the scope this batch runs in, if any: it stops with it
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="invtools-fanout")
    pending: deque[Future] = deque()
    source = iter(items)
    more = True

    def run(item: T) -> R:
        with cancel_scope(stop):
            return fn(item)

    def submit() -> None:
        nonlocal more
        while more and len(pending) < ahead:
            try:
                item = next(source)  # may walk a list page: the workers keep going meanwhile
            except StopIteration:
                more = False
                return
            future = pool.submit(contextvars.copy_context().run, run, item)
            pending.append(future)

    try:
        submit()
        while pending:
            head = pending[0]
            while not head.done():  # woken by any call's end, to raise a failure at once
                _raise_first_failure(pending)
                if outer is not None and outer is not stop and outer.is_set():
                    raise Cancelled("stopped: the batch this one runs in was stopped")
                wait([f for f in pending if not f.done()], POLL_SECONDS, FIRST_COMPLETED)
            pending.popleft()
            result = head.result()  # raises the call's exception
            submit()
            yield result
    except BaseException:
        stop.set()  # waits in the workers end; nothing more is sent
        for future in pending:
            future.cancel()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _raise_first_failure(pending: deque[Future]) -> None:
    """Raise at once the exception of the first call (in input order) that failed, even
    while earlier ones still run: a failure stops the batch without waiting for them."""
    for future in pending:
        if future.done() and not future.cancelled() and future.exception() is not None:
            future.result()
