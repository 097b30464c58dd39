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
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from invtools.frames import TIME_DTYPE
from invtools.frames.columns import as_time

__all__ = [
    "CHANGE_KINDS",
    "SyncReport",
    "read_changes",
    "what_changed",
    "ms_to_ts",
    "fmt_time",
    "fmt_duration",
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
    (``synced_at``: when its sync finished); for an edit, ``fields`` and ``what_changed``
    (:func:`what_changed`, from the two revisions' rows and details the file keeps)."""
    where, args = ("WHERE c.sync_id = ?", (sync_id,)) if sync_id is not None else ("", ())
    df = pd.read_sql_query(
        f"""SELECT c.sync_id, s.finished_at AS synced_at, c.transaction_id, c.change,
                   c.old_revision, c.new_revision, c.old_total_quantity, c.new_total_quantity,
                   c.old_t_ms AS old_transaction_time, c.new_t_ms AS new_transaction_time,
                   c.backdated,
                   CASE WHEN c.change = 'edited' THEN ro.row_json END AS old_row,
                   CASE WHEN c.change = 'edited' THEN rn.row_json END AS new_row,
                   CASE WHEN c.change = 'edited' THEN do.detail_json END AS old_detail,
                   CASE WHEN c.change = 'edited' THEN dn.detail_json END AS new_detail
            FROM changes c JOIN syncs s ON s.id = c.sync_id
            LEFT JOIN revisions ro ON ro.id = c.transaction_id AND ro.revision = c.old_revision
            LEFT JOIN revisions rn ON rn.id = c.transaction_id AND rn.revision = c.new_revision
            LEFT JOIN details do ON do.id = c.transaction_id AND do.revision = c.old_revision
            LEFT JOIN details dn ON dn.id = c.transaction_id AND dn.revision = c.new_revision
            {where}
            ORDER BY c.sync_id, coalesce(c.new_t_ms, c.old_t_ms) DESC, c.transaction_id DESC""",
        conn,
        params=args,
    )
    said = [
        what_changed(*(json.loads(j) if isinstance(j, str) else None for j in four))
        for four in zip(
            df.pop("old_row"),
            df.pop("new_row"),
            df.pop("old_detail"),
            df.pop("new_detail"),
            strict=True,
        )
    ]
    df = df.astype(_CHANGE_TYPES)
    df["synced_at"] = as_time(df["synced_at"].tolist())
    for col in ("old_transaction_time", "new_transaction_time"):
        df[col] = pd.to_datetime(df[col], unit="ms", utc=True).astype(TIME_DTYPE)
    df["fields"] = pd.array([", ".join(f) if f else None for f, _ in said], dtype="string")
    df["what_changed"] = pd.array([w or None for _, w in said], dtype="string")
    return df


#: What an edit can change, as the list row shows it: (field, how to read it off the row).
_FIELDS: tuple[tuple[str, Any], ...] = (
    ("transaction_time", lambda r: fmt_time(pd.Timestamp(r["transaction_time"]))),
    ("total_quantity", lambda r: r.get("total_quantity")),
    ("partner", lambda r: (r.get("partner") or {}).get("name")),
    ("memo", lambda r: r.get("memo")),
    ("from_location", lambda r: (r.get("from_location") or {}).get("name")),
    ("to_location", lambda r: (r.get("to_location") or {}).get("name")),
)


def what_changed(
    old: dict | None, new: dict | None, old_detail: dict | None, new_detail: dict | None
) -> tuple[list[str], str]:
    """The fields an edit changed and, for each, old -> new: the list row's time, total
    quantity, partner, memo and locations, and the detail's lines (per item: quantity old ->
    new, added, removed; "not compared" when the file lacks the old revision's detail).
    Nothing for a change that is no edit (``old`` or ``new`` None).

    >>> old = {"transaction_time": "2026-05-02T01:10:00Z", "memo": None, "total_quantity": 4}
    >>> what_changed(old, {**old, "memo": "recount"}, None, None)
    (['memo'], "memo: None → 'recount'")
    >>> lines = lambda *qs: {"items": [{"id": 9, "name": "Mug", "quantity": q} for q in qs]}
    >>> what_changed(old, {**old, "total_quantity": 5}, lines(4), lines(5))
    (['total_quantity', 'lines'], 'total_quantity: 4 → 5; lines: Mug 4 → 5')
    """
    if old is None or new is None:
        return [], ""
    fields, said = [], []
    for name, read in _FIELDS:
        a, b = read(old), read(new)
        if a != b:
            fields.append(name)
            said.append(f"{name}: {_shown(a)} → {_shown(b)}")
    if old_detail is None or new_detail is None:
        if new_detail is not None:
            fields.append("lines")
            said.append("lines: not compared (the old revision's detail was never fetched)")
        return fields, "; ".join(said)
    moved = _line_changes(old_detail.get("items") or [], new_detail.get("items") or [])
    if moved:
        fields.append("lines")
        said.append("lines: " + ", ".join(moved))
    return fields, "; ".join(said)


def _shown(value: Any) -> str:
    """A field's value as the report shows it: numbers plainly, text quoted."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{value:g}"
    return repr(value)


def _line_changes(old: list, new: list) -> list[str]:
    """Per item (by id): "name q1 → q2", "name added (q)", "name removed (q)"."""

    def by_item(lines: list) -> dict:
        out: dict = {}
        for line in lines:
            name, qty = line.get("name"), float(line.get("quantity") or 0)
            prev = out.get(line.get("id"), (name, 0.0))
            out[line.get("id")] = (name, prev[1] + qty)
        return out

    a, b = by_item(old), by_item(new)
    said = []
    for item in [*a, *(i for i in b if i not in a)]:
        if item not in b:
            said.append(f"{a[item][0]} removed ({a[item][1]:g})")
        elif item not in a:
            said.append(f"{b[item][0]} added ({b[item][1]:g})")
        elif a[item][1] != b[item][1]:
            said.append(f"{b[item][0]} {a[item][1]:g} → {b[item][1]:g}")
    return said


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
    this sync as a DataFrame; ``renames`` what the team's lists show renamed since the last
    sync, one line per record (:attr:`renamed` counts them).

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
    renames: tuple[str, ...] = ()

    @property
    def renamed(self) -> int:
        """How many records (items, partners, locations, members) the lists show renamed
        since the last sync (``renames`` says each): no transaction's revision moved, and the
        mirror's frames name them so now."""
        return len(self.renames)

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
        if self.renames:
            shown = "; ".join(self.renames[:10]) + ("; ..." if self.renamed > 10 else "")
            lines.append(f"  {self.renamed} renamed (no revision raised): {shown}")
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
