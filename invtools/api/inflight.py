"""What a client has in flight, and its close: :class:`InFlight`.

Every use of a client's session -- a request from the caller's thread, a walk's chain or a
batch's worker, and what a worker writes to the cache file after its answer -- runs inside
:meth:`InFlight.use`. :meth:`InFlight.close` (``client.close()``, the end of a ``with`` block)
lets no new use start, ends the waits of those running (their pacing and retry waits end, and
nothing more is sent: :func:`invtools._clock.cancel_scope`), and waits for them to end before
it closes the session (its connection pool and its hold on the cache file). Issue 43: a batch
that failed left requests in flight, the ``with`` block closed the cache file's SQLite
connection, and a request still running read it: a segfault, a dead kernel.

The wait is bounded: uses that have not ended by then (a server that does not answer) are left
to close the session themselves, the last one as it ends, so that it is never closed under one.
A client that is dropped does the same without waiting (``close(0)``, from its finalizer: any
thread, at any allocation).

>>> closed = []
>>> flight = InFlight(lambda: closed.append(True))
>>> with flight.use("GET /v1/items"):
...     flight.close(0)                   # while in use: closed only when the use ends
...     closed
[]
>>> closed
[True]
>>> with flight.use("GET /v1/items"):   # doctest: +ELLIPSIS
...     pass
Traceback (most recent call last):
...
invtools.errors.Cancelled: GET /v1/items not sent: this client was closed (client.close(), ...
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from invtools._clock import cancel_scope, current_cancel
from invtools.errors import Cancelled

__all__ = ["InFlight"]

logger = logging.getLogger("invtools")


class InFlight:
    """The uses of one client's session in flight; ``closer`` closes the session, once."""

    def __init__(self, closer: Callable[[], None]) -> None:
        self._closer = closer
        # Reentrant: a finalizer (close(0)) may run in a thread inside one of these blocks.
        self._lock = threading.Condition(threading.RLock())
        self._events: list[threading.Event] = []  # the cancel event of each use running
        self._stop = threading.Event()  # the scope of a use that runs in none of its own
        self.closed = False
        self._shut = False

    @contextmanager
    def use(self, what: str) -> Iterator[None]:
        """Run a block that uses the session; :class:`~invtools.errors.Cancelled` (naming
        ``what``) once the client is closed. Its waits end when the client is closed."""
        event = current_cancel() or self._stop
        with self._lock:
            self._events.append(event)
            refused = self.closed
        if refused:
            self._leave(event)
            raise Cancelled(
                f"{what} not sent: this client was closed (client.close(), or the end of its "
                "with block); make a new Client"
            )
        try:
            with cancel_scope(event) if event is self._stop else nullcontext():
                yield
        finally:
            self._leave(event)

    def _leave(self, event: threading.Event) -> None:
        with self._lock:
            self._events.remove(event)
            last = self.closed and not self._events
            self._lock.notify_all()
        if last:
            self._shutdown()

    def close(self, wait: float) -> None:
        """Let no new use start, end the waits of those running (their batch is stopped: a
        closed client sends nothing more), wait at most ``wait`` seconds for them to end, and
        close the session once none runs: now, or when the last one ends."""
        with self._lock:
            self.closed = True
            self._stop.set()
            for event in self._events:
                event.set()
            if self._events and wait > 0:
                logger.info(
                    "closing the client: waiting for %d request(s) in flight (at most %g s)",
                    len(self._events),
                    wait,
                )
                self._lock.wait_for(lambda: not self._events, wait)
            last = not self._events
        if last:
            self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            if self._shut:
                return
            self._shut = True
        self._closer()
