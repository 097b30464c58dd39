"""A mirror's sync in a background thread, with honest frames while it runs:
:class:`BackgroundSync`, what ``mirror.sync_in_background()`` returns.

A first fill of a big team takes hours at the real pace, and the file's frames hold nothing
until its last step applies everything in one transaction. While it runs, this object's
:meth:`~BackgroundSync.lines_df` and :meth:`~BackgroundSync.transactions_df` read what the
sync has stored so far: the list rows it walked (``staging``) and the details it fetched
(newest first, each committed on arrival), and hand out the newest stretch whose details are
all in, its window that stretch (:func:`invtools.frames.complete_since`, the rule the client's
``lines_growing()`` follows). Nothing is claimed before the walk of the list is over (a
detail fetched by this sync shows that it is). Once the file has a finished sync, they are
the mirror's own frames.

>>> filling = mirror.sync_in_background(look_back="30D")
>>> report = filling.result()                      # waits; raises what stopped it
>>> filling.lines_df().attrs["source"], filling.done
('mirror', True)
"""

from __future__ import annotations

import contextvars
import json
import threading
from typing import Any

import pandas as pd

from invtools import frames
from invtools._clock import cancel_scope
from invtools._progress import notice
from invtools.errors import Cancelled
from invtools.frames.provenance import utc_stamp
from invtools.mirror import names, store
from invtools.mirror.report import SyncReport

__all__ = ["BackgroundSync"]

#: How often :meth:`BackgroundSync.wait` reads the file while it waits for details.
POLL_SECONDS = 0.1

_STAGED = """SELECT s.t_ms, s.row_json, d.detail_json, d.fetched_at >= ? FROM staging s
    LEFT JOIN details d ON d.id = s.id AND d.revision = s.revision
    ORDER BY s.t_ms DESC, s.id DESC"""
_FETCHED = """SELECT COUNT(*) FROM staging s
    JOIN details d ON d.id = s.id AND d.revision = s.revision WHERE d.fetched_at >= ?"""


class BackgroundSync:
    """``mirror.sync(**options)`` running in a background thread (the kernel stays usable).

    - ``lines_df()``, ``transactions_df()``: during a first fill, the newest stretch whose
      details are all stored, its window that stretch; after a finished sync, the mirror's.
    - ``result(timeout=None)``: the :class:`~invtools.mirror.report.SyncReport`, once done;
      raises what stopped the sync. ``wait(details=None, timeout=None)``: until that many
      details of this sync are stored (None: the end), or it ended; whether they are.
    - ``cancel()``: stop it (what was stored stays; the next sync fetches only the rest).
    """

    def __init__(self, mirror: Any, **options: Any) -> None:
        mirror.path  # noqa: B018 - first use here: the file made and checked before the thread
        self.mirror, self.report = mirror, None
        self.error: BaseException | None = None
        self._began = utc_stamp()  # a detail stored since: this sync's walk is over
        # what a first fill's window ends at (no client: the sync raises, result() says it)
        client = mirror.client
        self._moment = pd.Timestamp(client.now() if client else pd.Timestamp.now(tz="UTC"))
        self._stop = threading.Event()
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run, options), name="invtools-sync", daemon=True
        )
        self._thread.start()

    def _run(self, options: dict[str, Any]) -> None:
        try:
            with cancel_scope(self._stop):
                self.report = self.mirror.sync(**options)
        except BaseException as exc:  # kept for result(): never lost in the thread
            self.error = exc
            if not isinstance(exc, Cancelled):  # said now too, should nobody ask
                notice(f"sync_in_background stopped: {type(exc).__name__}: {exc}")

    @property
    def done(self) -> bool:
        """Whether the sync has ended (finished, or stopped: ``error``)."""
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Stop the sync: nothing more is sent; what was stored stays."""
        self._stop.set()

    def wait(self, details: int | None = None, timeout: float | None = None) -> bool:
        """Wait until ``details`` details of this sync are stored (None: the sync's end), or
        it ended, or ``timeout`` seconds passed; whether they are (or it ended, for None)."""
        waited = 0.0
        while not self.done and (details is None or self._fetched() < details):
            if timeout is not None and waited >= timeout:
                break
            self._thread.join(POLL_SECONDS)  # wakes at once when the sync ends
            waited += POLL_SECONDS
        return self.done if details is None else self._fetched() >= details

    def result(self, timeout: float | None = None) -> SyncReport:
        """The sync's report, once it is done; raises what stopped it, and ``TimeoutError``
        after ``timeout`` seconds."""
        self._thread.join(timeout)
        if not self.done:
            raise TimeoutError(f"sync_in_background: still running after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.report is not None
        return self.report

    def lines_df(self) -> pd.DataFrame:
        """The lines held in full so far (see the class), newest first."""
        return self._frame("lines")

    def transactions_df(self) -> pd.DataFrame:
        """The transaction rows held in full so far (see the class), newest first."""
        return self._frame("transactions")

    def _fetched(self) -> int:
        """Details of staged rows stored since this sync began (counted in the file: a wait
        reads no row's JSON)."""
        with store.connect(self.mirror.path, readonly=self.mirror.read_only) as conn:
            return conn.execute(_FETCHED, (self._began,)).fetchone()[0]

    def _staged(self) -> tuple[list, Any, dict, bool]:
        """The staged rows with their details, newest first; the file's provenance; the names
        its last sync stored; whether it has a finished sync."""
        with store.connect(self.mirror.path, readonly=self.mirror.read_only) as conn:
            rows = conn.execute(_STAGED, (self._began,)).fetchall()
            synced = conn.execute("SELECT COUNT(*) FROM syncs").fetchone()[0] > 0
            return rows, store.origin_of(conn), names.lists(conn), synced

    def _frame(self, grain: str) -> pd.DataFrame:
        rows, origin, named, synced = self._staged()
        if synced:  # the file's own frames: complete as of its last sync
            return self.mirror.lines_df() if grain == "lines" else self.mirror.transactions_df()
        times = pd.Series(pd.to_datetime([t for t, *_ in rows], unit="ms", utc=True))
        have = [d is not None for _t, _r, d, _n in rows]
        walked = any(new for *_rest, new in rows)  # a detail fetched: the list is all staged
        since = frames.complete_since(times, have) if walked else None
        if since is None and walked and len(times):
            since = times.min()  # every staged row's detail in: from the oldest staged on
        if not walked:
            since = self._moment + pd.Timedelta(1, "ms")  # nothing claimed yet
        if grain == "lines":
            df = frames.lines_df([json.loads(d) for _t, _r, d, _n in rows if d is not None])
            df = frames.rebase_levels(frames.current_names(df, named))
        else:
            staged = [json.loads(r) for _t, r, d, _n in rows if d is not None]
            df = frames.current_names(frames.transactions_df(staged), named)
        df, held, as_of = frames.fit_window(df, since, None, moment=self._moment)
        return frames.with_provenance(
            df, origin, grain=grain, window=held, as_of=as_of, rows=len(df)
        )

    def __repr__(self) -> str:
        state = "running" if not self.done else "stopped" if self.error else "done"
        return f"<BackgroundSync of {self.mirror.path.name}: {state}>"
