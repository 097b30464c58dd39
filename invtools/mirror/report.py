"""What a sync did, for people: :class:`SyncReport`, the change-log frame, and the small
formatting helpers the report and the mirror's repr share.

>>> fmt_window(pd.Timedelta("90D")), fmt_window(pd.Timedelta("12h")), fmt_window(None)
('90 days', '0 days 12:00:00', '-')
>>> fmt_time(ms_to_ts(1_777_684_200_000))
'2026-05-02 01:10 UTC'
>>> changes_frame([]).columns.tolist()[:4]
['sync_id', 'synced_at', 'transaction_id', 'change']
"""

from __future__ import annotations

import html
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pandas as pd

__all__ = [
    "CHANGE_KINDS",
    "SyncReport",
    "changes_frame",
    "read_changes",
    "ms_to_ts",
    "fmt_time",
    "fmt_window",
]

#: What a change-log row can say about a transaction.
#: ``backdated-new``: new, with a transaction time before the newest one the mirror held, i.e.
#: it rewrote history already mirrored. ``restored``: seen again after being marked removed
#: (only possible when a removal was inferred from a list that changed during the walk).
CHANGE_KINDS = ["new", "backdated-new", "edited", "removed", "restored"]


# ------------------------------------------------------------------------------ formatting


def ms_to_ts(ms: int | None) -> pd.Timestamp | None:
    """Epoch milliseconds (as stored) -> a UTC Timestamp; None stays None."""
    return None if ms is None else pd.Timestamp(ms, unit="ms", tz="UTC")


def fmt_time(ts: pd.Timestamp | None) -> str:
    """A time as the report and the repr show it, to the minute."""
    return "-" if ts is None else ts.strftime("%Y-%m-%d %H:%M UTC")


def fmt_window(td: pd.Timedelta | None) -> str:
    """A window in whole days when it is whole days."""
    if td is None:
        return "-"
    if td % pd.Timedelta(days=1) == pd.Timedelta(0):
        return f"{td.days} days"
    return str(td)


# ------------------------------------------------------------------------------ the change log


def changes_frame(records: list[tuple]) -> pd.DataFrame:
    """Change-log tuples (sync_id, synced_at, id, change, old_rev, new_rev, old_q, new_q,
    old_ms, new_ms, backdated) -> the typed change-log frame (with sync_id and synced_at)."""
    cols: list[Sequence[Any]] = (
        list(zip(*records, strict=True)) if records else [[] for _ in range(11)]
    )
    t: Final = "datetime64[ms, UTC]"

    def times(ms: Sequence[Any]) -> Any:
        return pd.to_datetime(pd.array(ms, dtype="Int64"), unit="ms", utc=True).astype(t)

    return pd.DataFrame(
        {
            "sync_id": pd.array(cols[0], dtype="Int64"),
            "synced_at": pd.to_datetime(pd.Series(cols[1], dtype="string"), utc=True).astype(t),
            "transaction_id": pd.array(cols[2], dtype="Int64"),
            "change": pd.Categorical(cols[3], categories=CHANGE_KINDS),
            "old_revision": pd.array(cols[4], dtype="Int64"),
            "new_revision": pd.array(cols[5], dtype="Int64"),
            "old_total_quantity": pd.array(cols[6], dtype="Float64").astype("float64"),
            "new_total_quantity": pd.array(cols[7], dtype="Float64").astype("float64"),
            "old_transaction_time": times(cols[8]),
            "new_transaction_time": times(cols[9]),
            "backdated": pd.array(
                [None if b is None else bool(b) for b in cols[10]], dtype="boolean"
            ),
        }
    )


def read_changes(conn: sqlite3.Connection, sync_id: int | None = None) -> pd.DataFrame:
    """The change log of one sync (or of all), newest transaction first within a sync."""
    where, args = ("WHERE c.sync_id = ?", (sync_id,)) if sync_id is not None else ("", ())
    records = conn.execute(
        f"""SELECT c.sync_id, s.finished_at, c.transaction_id, c.change, c.old_revision,
                   c.new_revision, c.old_total_quantity, c.new_total_quantity,
                   c.old_t_ms, c.new_t_ms, c.backdated
            FROM changes c JOIN syncs s ON s.id = c.sync_id {where}
            ORDER BY c.sync_id, coalesce(c.new_t_ms, c.old_t_ms) DESC, c.transaction_id DESC""",
        args,
    ).fetchall()
    return changes_frame(records)


# ------------------------------------------------------------------------------ the report


@dataclass(frozen=True, eq=False)
class SyncReport:
    """What one :meth:`TransactionMirror.sync` did. Displays itself in a notebook.

    ``new`` counts backdated-new too; ``changed`` counts edited and restored rows;
    ``requests`` is what was actually sent over the network during the sync (cache hits are in
    ``from_cache``); ``kind`` is ``"full"`` (the whole list was walked) or ``"window"`` (only
    rows from ``cutoff`` = ``anchor`` - ``window`` on, ``anchor`` being the newest transaction
    time in the list). ``changes`` is the change log of this sync as a DataFrame.

    >>> report = SyncReport(team_id=7, team_name="Shop", kind="full", window=None,
    ...     anchor=None, cutoff=None, new=0, changed=0, removed=0, unchanged=60, requests=1,
    ...     from_cache=0, list_pages=1, details_fetched=0, details_reused=0,
    ...     started_at=pd.Timestamp("2026-05-02T01:10:00Z"),
    ...     finished_at=pd.Timestamp("2026-05-02T01:10:00.500Z"), changes=changes_frame([]))
    >>> print(report)
    Full sync of team 'Shop' (id 7):
      0 new, 0 changed, 0 removed, 60 unchanged
      1 requests sent (1 list pages, 0 details), 0 from cache, 0.5 s
    """

    team_id: int
    team_name: str
    kind: str
    window: pd.Timedelta | None
    anchor: pd.Timestamp | None
    cutoff: pd.Timestamp | None
    new: int
    changed: int
    removed: int
    unchanged: int
    requests: int
    from_cache: int
    list_pages: int
    details_fetched: int
    details_reused: int
    started_at: pd.Timestamp
    finished_at: pd.Timestamp
    changes: pd.DataFrame = field(repr=False)

    @property
    def backdated_new(self) -> int:
        """How many of the new transactions were backdated into already-mirrored history."""
        return int((self.changes["change"] == "backdated-new").sum())

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    def _lines(self) -> list[str]:
        what = "Full sync" if self.kind == "full" else "Window sync"
        head = f"{what} of team {self.team_name!r} (id {self.team_id})"
        if self.window is not None:
            head += (
                f", window {fmt_window(self.window)} back from {fmt_time(self.anchor)}"
                " (the newest transaction time in the list)"
            )
        bd, reused = self.backdated_new, self.details_reused
        lines = [
            head + ":",
            f"  {self.new} new{f' ({bd} backdated)' if bd else ''}, {self.changed} changed, "
            f"{self.removed} removed, {self.unchanged} unchanged",
            f"  {self.requests} requests sent ({self.list_pages} list pages, "
            f"{self.details_fetched} details), {self.from_cache} from cache, {self.seconds:.1f} s"
            + (f"; {reused} details reused from an interrupted sync" if reused else ""),
        ]
        if self.kind == "window":
            lines.append(
                f"  Only transactions from {fmt_time(self.cutoff)} on were compared: edits to "
                "older transactions are not seen until the next full sync (sync() without "
                "window), and removals were only inferred inside the window."
            )
        elif self.window is not None:
            lines.append("  The window reached the end of the list, so this was a full sync.")
        return lines

    def __str__(self) -> str:
        text = "\n".join(self._lines())
        if len(self.changes):
            shown = self.changes.drop(columns=["sync_id", "synced_at"]).head(10)
            text += "\n" + shown.to_string(index=False)
            if len(self.changes) > 10:
                text += f"\n  ... {len(self.changes) - 10} more in report.changes"
        return text

    def __repr__(self) -> str:
        return (
            f"SyncReport(kind={self.kind!r}, new={self.new}, changed={self.changed}, "
            f"removed={self.removed}, unchanged={self.unchanged}, "
            f"requests={self.requests}, window={fmt_window(self.window)!r})"
        )

    def _repr_html_(self) -> str:
        lines = self._lines()
        out = [f"<b>{html.escape(lines[0])}</b>", "<ul>"]
        out += [f"<li>{html.escape(line.strip())}</li>" for line in lines[1:]]
        out.append("</ul>")
        if len(self.changes):
            shown = self.changes.drop(columns=["sync_id", "synced_at"]).head(10)
            out.append(shown.to_html(index=False))
            if len(self.changes) > 10:
                out.append(
                    f"<p>... {len(self.changes) - 10} more rows in <code>report.changes</code></p>"
                )
        else:
            out.append("<p>No changes.</p>")
        return "\n".join(out)
