"""A concurrent, ordered map for I/O-bound calls: :func:`fanout`.

The real service takes about 0.8 s to answer and allows 5 requests per second, so one request
at a time reaches a quarter of the limit; a few in flight fill it (the client's pacing still
keeps the rate). :func:`fanout` knows nothing of HTTP: it runs ``fn(item)`` for each item on a
few worker threads and hands the results back in the order of the items.

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
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from invtools._clock import cancel_scope, current_cancel
from invtools.errors import Cancelled

__all__ = ["fanout", "POLL_SECONDS"]

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
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, not {workers!r}")
    ahead = max(ahead or 4 * workers, workers)
    stop = cancel if cancel is not None else threading.Event()
    outer = current_cancel()  # the scope this batch runs in, if any: it stops with it
    wake = threading.Event()
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
            future.add_done_callback(lambda _f: wake.set())
            pending.append(future)

    try:
        submit()
        while pending:
            head = pending[0]
            while not head.done():
                wake.clear()
                if head.done():
                    break
                _raise_first_failure(pending)
                if outer is not None and outer is not stop and outer.is_set():
                    raise Cancelled("stopped: the batch this one runs in was stopped")
                wake.wait(POLL_SECONDS)
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
