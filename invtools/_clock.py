"""Time as invtools waits on it, and how a wait is told to stop.

One object with ``monotonic()``, ``time()`` (the wall clock: what a time kept in a file, read by
another process, is measured on), ``sleep(seconds)`` and ``wait(event, seconds)``, so pacing
and retries can be driven by a fake clock in tests instead of sleeping in real time.

Cancellation: work handed to worker threads runs inside :func:`cancel_scope` with a
``threading.Event``; the pacing and the retry waits of those threads read it with
:func:`current_cancel` and stop waiting (and do not send) once it is set -- on Ctrl-C, or when
another worker failed. Outside a scope there is no event: waits run their full time. Imports
nothing of invtools.

>>> SYSTEM_CLOCK.monotonic() <= SYSTEM_CLOCK.monotonic()
True
>>> stop = threading.Event()
>>> with cancel_scope(stop):
...     current_cancel() is stop, SYSTEM_CLOCK.wait(current_cancel(), 0.0)
(True, False)
>>> stop.set(); current_cancel() is None, SYSTEM_CLOCK.wait(stop, 60.0)
(True, True)
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SystemClock", "SYSTEM_CLOCK", "current_cancel", "cancel_scope"]


class SystemClock:
    """The real clock. ``wait(event, seconds)`` returns early (True) when ``event`` is set:
    a waiting worker can be told to stop."""

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)
    time = staticmethod(time.time)

    @staticmethod
    def wait(event: threading.Event | None, seconds: float) -> bool:
        if event is None:
            time.sleep(max(seconds, 0.0))
            return False
        return event.wait(max(seconds, 0.0))


SYSTEM_CLOCK = SystemClock()

_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "invtools_cancel", default=None
)


def current_cancel() -> threading.Event | None:
    """The cancel event of the work running in this context (None outside a
    :func:`cancel_scope`)."""
    return _CANCEL.get()


@contextmanager
def cancel_scope(event: threading.Event) -> Iterator[threading.Event]:
    """Run a block with ``event`` as its cancel event: waits in it end, and nothing more is
    sent, once the event is set."""
    token = _CANCEL.set(event)
    try:
        yield event
    finally:
        _CANCEL.reset(token)
