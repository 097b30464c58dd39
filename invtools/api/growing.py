"""A lines frame that grows while its details stream in: :class:`GrowingLines`, what
``client.lines_growing()`` returns once the lists are walked.

Its details are fetched in a background thread (the kernel stays usable), newest first, several
in flight at the service's pace, each cached for good on arrival: a cancel, a closed notebook
or a killed kernel keeps them, and the next call sends only the others. At any moment
:meth:`GrowingLines.frame` is the lines of the newest transactions whose details have all
arrived, with the window they hold in full (:func:`invtools.frames.complete_since`), so every
analysis on it is exact for that stretch. What stopped the fetch (a 401, a ServerError, a
cancel) is raised by :meth:`~GrowingLines.result` and said by the frame and the repr.

>>> growing = client.lines_growing(since="7D")
>>> growing.wait()                                 # every detail in (or stopped)
True
>>> growing
<GrowingLines: every detail in>
"""

from __future__ import annotations

import html
import threading
import warnings
from contextvars import Context
from typing import Any

import pandas as pd

from invtools._clock import cancel_scope
from invtools._progress import notice, progress_bar
from invtools.errors import Cancelled, WindowWarning
from invtools.frames.stretch import complete_since

__all__ = ["GrowingLines"]


class GrowingLines:
    """A ``lines_df`` fetch running in the background (``client.lines_growing()``).

    - ``frame()``: the lines of the stretch complete so far, newest first up to the window's
      end, its levels anchored as ``lines_df``'s; ``attrs["window"]`` says the stretch.
    - ``result(timeout=None)``: the whole frame, equal to ``lines_df`` with the same
      arguments, once every detail is in; raises what stopped the fetch.
    - ``wait(details=None, timeout=None)``: until that many details are in (None: all), or
      the fetch stopped; whether they are.
    - ``cancel()``: stop sending; what arrived stays cached and in ``frame()``.
    - ``arrived``, ``total``, ``done``, ``error``; the repr says how far it got.
    """

    def __init__(self, build: Any, context: Context, *, progress: bool) -> None:
        self._build = build
        self.total = len(build.times)
        self._found: list[dict | None] = []
        self._arrived, self._ended = 0, False
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._whole: pd.DataFrame | None = None
        self.error: BaseException | None = None
        self._bar = progress_bar(
            total=self.total, desc="transaction details", unit=" details", enabled=progress
        )
        self._thread = threading.Thread(
            target=context.run, args=(self._fetch,), name="invtools-growing", daemon=True
        )
        self._thread.start()

    def _fetch(self) -> None:
        """Read the details in order, keeping each one's lines as it arrives."""
        details = self._build.details
        try:
            with cancel_scope(self._stop):
                for detail in details:
                    kept = None if detail is None else {"items": detail.get("items")}
                    with self._changed:
                        self._found.append(kept)
                        self._arrived += 1
                        self._changed.notify_all()
                    self._bar.update(1)
                    if self._stop.is_set():
                        raise Cancelled("stopped by cancel()")
        except BaseException as exc:  # kept for result(): never lost in the thread
            self.error = exc
            if not isinstance(exc, Cancelled):  # said now too, should nobody ask
                notice(f"lines_growing stopped: {_said(exc)}; {self._stretch(self.arrived)}")
        finally:
            details.close()
            self._bar.close()
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    @property
    def arrived(self) -> int:
        """How many details are in, the newest first."""
        return self._arrived

    @property
    def done(self) -> bool:
        """Whether the fetch has ended: every detail in, or stopped (``error``)."""
        return self._ended

    def wait(self, details: int | None = None, timeout: float | None = None) -> bool:
        """Wait until ``details`` are in (None: all), or the fetch stopped, or ``timeout``
        seconds passed; whether they are in."""
        wanted = self.total if details is None else min(details, self.total)
        with self._changed:
            self._changed.wait_for(lambda: self.arrived >= wanted or self.done, timeout)
        return self.arrived >= wanted

    def cancel(self) -> None:
        """Stop the fetch: nothing more is sent; what arrived stays (cached, and in
        :meth:`frame`)."""
        self._stop.set()

    def frame(self) -> pd.DataFrame:
        """The lines of the stretch whose details are all in, newest first up to the window's
        end; its window (``attrs["window"]``) says that stretch. A stopped fetch is said (a
        :class:`~invtools.errors.WindowWarning`)."""
        if self._whole is not None:
            return self._whole.copy()
        with self._changed:
            found = list(self._found)
        if self.error is not None:
            warnings.warn(
                f"lines_growing: the fetch stopped ({_said(self.error)}); this frame holds "
                f"{self._stretch(len(found))}; .result() raises what stopped it",
                WindowWarning,
                stacklevel=2,
            )
        made = self._build.lines(found)
        framed = self._build.framed(made, len(found))
        if len(found) == self.total:
            self._whole, self._found = framed, []  # the lines are kept, not the details
            return framed.copy()
        return framed

    def result(self, timeout: float | None = None) -> pd.DataFrame:
        """The whole frame, once every detail is in: what ``lines_df`` with the same
        arguments gives. Raises what stopped the fetch (a cancel: ``Cancelled``), and
        ``TimeoutError`` after ``timeout`` seconds."""
        if not self.wait(timeout=timeout) and self.error is None:
            raise TimeoutError(
                f"lines_growing: {self.arrived:,} of {self.total:,} details after {timeout} s; "
                "call result() again to wait on, or take frame() now"
            )
        if self.error is not None and self.arrived < self.total:
            raise self.error
        return self.frame()

    def _stretch(self, arrived: int) -> str:
        """What the first ``arrived`` rows hold in full, as a sentence says it."""
        if arrived >= self.total:
            return "every detail in"
        since = complete_since(self._build.times, arrived)
        held = "" if since is None else f"; complete from {since:%d %b %Y %H:%M} on"
        return f"{arrived:,} of {self.total:,} details{held}"

    def __repr__(self) -> str:
        said = self._stretch(self.arrived)
        if self.error is not None:
            said += f"; stopped: {_said(self.error)}"
        elif not self.done:
            said += "; fetching"
        return f"<GrowingLines: {said}>"

    def _repr_html_(self) -> str:
        """A progress bar and the repr's sentence (a notebook shows it when displayed)."""
        text = html.escape(repr(self)[1:-1])
        bar = f'<progress value="{self.arrived}" max="{max(self.total, 1)}"></progress>'
        return f"<div>{bar} {text}</div>"


def _said(error: BaseException) -> str:
    """An error as a sentence names it."""
    return f"{type(error).__name__}: {error}"
