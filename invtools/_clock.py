"""Time as invtools waits on it: one object with ``monotonic()``, ``sleep(seconds)`` and
``wait(event, seconds)``, so pacing and retries can be driven by a fake clock in tests
instead of sleeping in real time. Imports nothing of invtools.

>>> SYSTEM_CLOCK.monotonic() <= SYSTEM_CLOCK.monotonic()
True
"""

from __future__ import annotations

import threading
import time

__all__ = ["SystemClock", "SYSTEM_CLOCK"]


class SystemClock:
    """The real clock. ``wait(event, seconds)`` returns early (True) when ``event`` is set:
    a waiting worker can be told to stop."""

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    @staticmethod
    def wait(event: threading.Event | None, seconds: float) -> bool:
        if event is None:
            time.sleep(max(seconds, 0.0))
            return False
        return event.wait(max(seconds, 0.0))

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()
