"""What a sync did, for people: :class:`SyncReport`, the change-log frame, and the small
formatting helpers the report and the mirror's repr share.

>>> fmt_duration(pd.Timedelta("90D")), fmt_duration(pd.Timedelta("12h")), fmt_duration(None)
('90 days', '0 days 12:00:00', '-')
>>> fmt_time(ms_to_ts(1_777_684_200_000))
'2026-05-02 01:10 UTC'
>>> import sqlite3
>>> from invtools.mirror.store import init_schema
>>> conn = sqlite3.connect(":memory:", isolation_level=None)
>>> init_schema(conn)
>>> read_changes(conn).dtypes.astype(str).tolist()[:4]
['Int64', 'datetime64[ms, UTC]', 'Int64', 'category']
"""

from __future__ import annotations

import html
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from invtools.frames import TIME_DTYPE
from invtools.frames.columns import as_time

__all__ = ["CHANGE_KINDS", "SyncReport", "read_changes", "ms_to_ts", "fmt_time", "fmt_duration"]

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


def fmt_duration(td: pd.Timedelta | None) -> str:
    """A duration (a sync's look-back) in whole days when it is whole days."""
    if td is None:
        return "-"
    if td % pd.Timedelta(days=1) == pd.Timedelta(0):
        return f"{td.days} days"
    return str(td)


# ------------------------------------------------------------------------------ the change log


def read_changes(conn: sqlite3.Connection, sync_id: int | None = None) -> pd.DataFrame:
    """The change log of one sync (or of all), newest transaction first within a sync, typed
    (``synced_at``: when its sync finished)."""
    where, args = ("WHERE c.sync_id = ?", (sync_id,)) if sync_id is not None else ("", ())
    df = pd.read_sql_query(
        f"""SELECT c.sync_id, s.finished_at AS synced_at, c.transaction_id, c.change,
                   c.old_revision, c.new_revision, c.old_total_quantity, c.new_total_quantity,
                   c.old_t_ms AS old_transaction_time, c.new_t_ms AS new_transaction_time,
                   c.backdated
            FROM changes c JOIN syncs s ON s.id = c.sync_id {where}
            ORDER BY c.sync_id, coalesce(c.new_t_ms, c.old_t_ms) DESC, c.transaction_id DESC""",
        conn,
        params=args,
    ).astype(_CHANGE_TYPES)
    df["synced_at"] = as_time(df["synced_at"].tolist())
    for col in ("old_transaction_time", "new_transaction_time"):
        df[col] = pd.to_datetime(df[col], unit="ms", utc=True).astype(TIME_DTYPE)
    return df


_CHANGE_TYPES: dict[str, Any] = {
    "sync_id": "Int64",
    "transaction_id": "Int64",
    "change": pd.CategoricalDtype(CHANGE_KINDS),
    "old_revision": "Int64",
    "new_revision": "Int64",
    "old_total_quantity": "float64",
    "new_total_quantity": "float64",
    "old_transaction_time": "Int64",  # epoch milliseconds, made times above
    "new_transaction_time": "Int64",
    "backdated": "boolean",
}


# ------------------------------------------------------------------------------ the report


@dataclass(frozen=True, eq=False)
class SyncReport:
    """What one :meth:`TransactionMirror.sync` did. Displays itself in a notebook.

    ``new`` counts backdated-new too; ``changed`` counts edited and restored rows;
    ``requests`` is what was actually sent over the network during the sync (cache hits are in
    ``from_cache``); ``look_back`` is what ``sync(look_back=...)`` was given (None: a full
    sync); ``kind`` is ``"full"`` (the whole list was walked) or ``"window"`` (only the window
    of transaction times from ``cutoff`` = ``anchor`` - ``look_back`` on, ``anchor`` being the
    service's clock when the walk began, ``client.now()``). ``changes`` is the change log of
    this sync as a DataFrame.

    >>> report = SyncReport(team_id=7, team_name="Shop", kind="full", look_back=None,
    ...     anchor=None, cutoff=None, new=0, changed=0, removed=0, unchanged=60, requests=1,
    ...     from_cache=0, list_pages=1, details_fetched=0, details_reused=0,
    ...     started_at=pd.Timestamp("2026-05-02T01:10:00Z"),
    ...     finished_at=pd.Timestamp("2026-05-02T01:10:00.500Z"),
    ...     changes=pd.DataFrame({"change": []}))
    >>> print(report)
    Full sync of team 'Shop' (id 7):
      0 new, 0 changed, 0 removed, 60 unchanged
      1 requests sent (1 list pages, 0 details), 0 from cache, 0.5 s
    """

    team_id: int
    team_name: str
    kind: str
    look_back: pd.Timedelta | None
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
        head = f"{self.kind.title()} sync of team {self.team_name!r} (id {self.team_id})"
        if self.look_back is not None:
            head += (
                f", looking back {fmt_duration(self.look_back)} from {fmt_time(self.anchor)}"
                " (the service's clock)"
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
                "look_back), and removals were only inferred from the cutoff on."
            )
        elif self.look_back is not None:
            lines.append("  The look-back reached the end of the list, so this was a full sync.")
        if len(self.changes) > 10:
            lines.append(f"  The first 10 of {len(self.changes)} changes; all in report.changes.")
        return lines

    def _shown(self) -> pd.DataFrame:
        return self.changes.drop(columns=["sync_id", "synced_at"]).head(10)

    def __str__(self) -> str:
        table = [self._shown().to_string(index=False)] if len(self.changes) else []
        return "\n".join(self._lines() + table)

    def __repr__(self) -> str:
        return (
            f"SyncReport(kind={self.kind!r}, new={self.new}, changed={self.changed}, "
            f"removed={self.removed}, unchanged={self.unchanged}, "
            f"requests={self.requests}, look_back={fmt_duration(self.look_back)!r})"
        )

    def _repr_html_(self) -> str:
        head, *rest = self._lines()
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in rest)
        table = self._shown().to_html(index=False) if len(self.changes) else "<p>No changes.</p>"
        return f"<b>{html.escape(head)}</b>\n<ul>{items}</ul>\n{table}"
