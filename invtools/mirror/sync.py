"""The four steps of a sync, each safe to interrupt (see :mod:`invtools.mirror`):

1. :func:`walk_list` -- the list, fresh, into ``staging``, committed page by page;
2. :func:`fetch_new_details` -- details not stored yet, several in flight, each committed as
   it arrives;
3. :func:`check_unseen` -- window syncs only (a ``look_back``): stored rows from the cutoff on
   that the walk did not see; then the team's lists, fresh, for the names
   (:func:`~invtools.mirror.names.fetch_names`);
4. :func:`apply_staged` -- everything else, in ONE SQLite transaction.

:func:`run_sync` runs them on an open, locked, team-checked connection (that part is
:meth:`TransactionMirror.sync`'s). The client is used through its public methods
(``pages``, ``transaction_details``, ``transaction``, ``items``, ``partners``, ``locations``,
``members``, ``measure``, ``progress``); a full sync's
list is a fresh walk of the client's (``client.transactions(refresh=True)``, in several
chains from the seams its last whole walk recorded beside the client's cache).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from invtools import frames
from invtools._types import TXS_PATH, to_ms
from invtools.api.pagination import DEFAULT_LIMIT
from invtools.errors import NotFoundError
from invtools.frames.provenance import utc_stamp
from invtools.mirror.names import fetch_names, store_names
from invtools.mirror.report import SyncReport, ms_to_ts, read_changes
from invtools.mirror.store import read_meta, set_meta, stage, store_detail, write_transaction

__all__ = ["Walk", "run_sync", "walk_list", "fetch_new_details", "check_unseen", "apply_staged"]

# Staged rows that differ from the file (new, a new revision, or seen again after their
# removal), with the stored revision's row (``t``, ``r``) where there is one.
_CHANGED = """FROM staging s LEFT JOIN transactions t ON t.id = s.id
    LEFT JOIN revisions r ON r.id = t.id AND r.revision = t.revision
    WHERE t.id IS NULL OR t.revision != s.revision OR t.removed_at IS NOT NULL"""
# Current rows with a transaction time from ``?`` on that the walk did not stage.
_UNSEEN = """FROM transactions t JOIN revisions r ON r.id = t.id AND r.revision = t.revision
    WHERE t.removed_at IS NULL AND t.t_ms >= ? AND t.id NOT IN (SELECT id FROM staging)"""


@dataclass
class Walk:
    """Where step 1 got to: the anchor/cutoff it used, pages read, whether it saw the end."""

    anchor_ms: int | None = None
    cutoff_ms: int | None = None
    list_pages: int = 0
    complete: bool = False


def run_sync(
    conn: sqlite3.Connection,
    client: Any,
    *,
    team: Any,
    look_back: pd.Timedelta | None,
    progress: bool | None,
    chains: int | None = None,
) -> SyncReport:
    """Steps 1-4 on ``conn``, counting the requests they send; the :class:`SyncReport`."""
    started = pd.Timestamp.now(tz="UTC")  # the rows are as fresh as the walk's start
    with client.measure() as m:
        walk = walk_list(conn, client, look_back, progress, chains=chains)  # step 1
        fetched, reused = fetch_new_details(conn, client, progress)  # step 2
        if not walk.complete:
            fetched += check_unseen(conn, client, walk.cutoff_ms)  # step 3
        found = fetch_names(client, progress)  # the names now: a rename raises no revision
    counts = {"requests": int(m.sent), "from_cache": int(m.from_cache)}
    return apply_staged(  # step 4
        conn,
        team,
        walk,
        look_back,
        started,
        found,
        details_fetched=fetched,
        details_reused=reused,
        **counts,
    )


def _stamp(row: dict) -> tuple[int, dict]:
    return to_ms(row["transaction_time"], name="transaction_time"), row


# ------------------------------------------------------------------------------ step 1


def walk_list(
    conn: sqlite3.Connection,
    client: Any,
    look_back: pd.Timedelta | None,
    progress: bool | None,
    *,
    chains: int | None = None,
) -> Walk:
    """Step 1: stage the list rows (fresh, not from cache), committed a batch at a time. With
    a ``look_back``, page by page, stopping at the first page that reaches past the cutoff
    ``anchor - look_back``, the anchor being the service's clock when the walk starts
    (``client.now()``: a future-dated row moves nothing). A full sync is a walk of the
    client's in several chains at once (at most ``chains``) from the seams its last whole walk
    of the list recorded, staged a hundred rows at a time."""
    anchor = to_ms(client.now(), name="the service's clock")
    walk = Walk(anchor_ms=anchor)
    if look_back is not None:
        walk.cutoff_ms = anchor - look_back // pd.Timedelta(milliseconds=1)
    with write_transaction(conn):
        conn.execute("DELETE FROM staging")  # leftovers of an interrupted sync: re-walk
    if look_back is None:  # a fresh walk of the client's, whose record gives the next one's seams
        rows = client.transactions(chains=chains, refresh=True, progress=progress)
        batches = iter(lambda: list(itertools.islice(rows, DEFAULT_LIMIT)), [])
    else:
        rows = client.pages(TXS_PATH, refresh=True, progress=progress)
        batches = (page.rows for page in rows)
    newest = ""  # the latest created_at staged (ISO UTC text sorts as time)
    with rows:  # closed early too
        for batch in batches:
            stamped = [_stamp(row) for row in batch]
            newest = max([newest, *(str(r.get("created_at") or "") for _, r in stamped)])
            cutoff = walk.cutoff_ms
            keep = [(ms, row) for ms, row in stamped if cutoff is None or ms >= cutoff]
            stage(conn, keep)
            if len(keep) < len(stamped):
                break  # the list is newest first: everything from the cutoff on is staged
        else:
            walk.complete = True
    walk.list_pages = rows.pages
    # the service's clock is never older than rows it recorded: the client's rule
    clock = getattr(client, "service_clock", None)
    shift = clock.saw_recorded(pd.Timestamp(newest)) if clock is not None and newest else None
    if shift:
        walk.anchor_ms = anchor + shift // pd.Timedelta(milliseconds=1)
        if walk.cutoff_ms is not None:
            walk.cutoff_ms += shift // pd.Timedelta(milliseconds=1)
    return walk


# ------------------------------------------------------------------------------ step 2


def fetch_new_details(
    conn: sqlite3.Connection, client: Any, progress: bool | None
) -> tuple[int, int]:
    """Step 2: details of staged rows that are new or whose revision changed, unless a
    previous (interrupted) sync stored them already; fetched concurrently
    (``client.transaction_details``) and each committed as it arrives, so Ctrl-C or a
    failure keeps every one handed back so far. Returns (fetched, reused)."""
    needed = conn.execute(
        "SELECT s.id, s.revision, EXISTS (SELECT 1 FROM details d WHERE d.id = s.id AND "
        f"d.revision = s.revision) {_CHANGED} ORDER BY s.t_ms DESC, s.id DESC"
    ).fetchall()
    todo = [(tid, rev) for tid, rev, stored in needed if not stored]
    # An explicit revision never changes, so the client may cache it forever.
    with closing(client.transaction_details(todo, progress=progress)) as fetched:
        for (tid, _rev), detail in fetched:
            if detail is None:  # deleted since the walk: step 4 treats it as unseen
                conn.execute("DELETE FROM staging WHERE id = ?", (tid,))
            else:
                store_detail(conn, detail)
    return len(todo), len(needed) - len(todo)


# ------------------------------------------------------------------------------ step 3


def check_unseen(conn: sqlite3.Connection, client: Any, cutoff_ms: int | None) -> int:
    """Step 3 (window syncs): a stored row inside the window that the walk did not see was
    deleted (404) -- or edited to a time before the window, which the detail shows.
    Returns the number of details asked for."""
    unseen = conn.execute(f"SELECT t.id {_UNSEEN}", (cutoff_ms,)).fetchall()
    for (tid,) in unseen:
        try:
            detail = client.transaction(tid, refresh=True)
        except NotFoundError:
            continue  # deleted: step 4 marks it removed
        store_detail(conn, detail)
        stage(conn, [_stamp({k: v for k, v in detail.items() if k != "items"})])
    return len(unseen)


# ------------------------------------------------------------------------------ step 4


def apply_staged(
    conn: sqlite3.Connection,
    team: Any,
    walk: Walk,
    look_back: pd.Timedelta | None,
    started: pd.Timestamp,
    found: dict[str, list[dict]],
    **counts: int,
) -> SyncReport:
    """Step 4, ONE transaction: current rows, removals, history, change log, the run, and
    the names of ``found`` (:func:`~invtools.mirror.names.store_names`: what they renamed)."""
    kind = "full" if walk.complete else "window"
    with write_transaction(conn):
        finished = utc_stamp()
        # the id SQLite would give the run's row, which is written last, with its counts
        sync_id = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM syncs").fetchone()[0]
        prev_newest = conn.execute(
            "SELECT max(t_ms) FROM transactions WHERE removed_at IS NULL"
        ).fetchone()[0]
        known = read_meta(conn).get("newest_created_ms")  # when the newest row it knew was recorded
        prev_created = pd.NaT if known is None else ms_to_ts(int(known))
        differ = conn.execute(
            "SELECT s.id, s.revision, s.t_ms, s.row_json, t.revision, t.t_ms, t.removed_at, "
            f"r.total_quantity {_CHANGED}"
        ).fetchall()
        # Unseen = removed; a window sync only judges rows inside its window (step 3
        # already staged those that merely moved out of it).
        floor = walk.cutoff_ms if kind == "window" else -(2**62)
        unseen = conn.execute(
            f"SELECT t.id, t.revision, t.t_ms, r.total_quantity, r.row_json {_UNSEEN}", (floor,)
        ).fetchall()

        # The version each change-log row describes, as the frames read it: its created_at,
        # and its backdated flag (so the change log and the frames agree on what that means).
        quantities, shown = _versions([row[3] for row in differ] + [row[4] for row in unseen])
        changes: list[list] = []
        revisions = []
        for (tid, rev, ms, row_json, old_rev, old_ms, removed_at, old_q), qty, created in zip(
            differ, quantities, shown["created_at"], strict=False
        ):
            if old_rev is not None:
                change = "restored" if removed_at is not None else "edited"
            # New, before the newest row the file knew, and recorded after every row it knew
            # (one recorded earlier was merely not seen: a window sync did not reach back).
            elif prev_newest is not None and ms < prev_newest and not created <= prev_created:
                change = "backdated-new"
            else:
                change = "new"
            revisions.append((tid, rev, ms, qty, row_json, sync_id))
            changes.append([sync_id, tid, change, old_rev, rev, old_q, qty, old_ms, ms])
        for tid, rev, ms, qty, _ in unseen:
            changes.append([sync_id, tid, "removed", rev, None, qty, None, ms, None])
        for logged, flag in zip(changes, shown["backdated"], strict=True):
            logged.append(None if pd.isna(flag) else bool(flag))
        new = sum(c[2] in ("new", "backdated-new") for c in changes)
        unchanged = conn.execute("SELECT count(*) FROM staging").fetchone()[0] - len(differ)
        n = dict(new=new, changed=len(differ) - new, removed=len(unseen), unchanged=unchanged)

        conn.executemany("INSERT OR IGNORE INTO revisions VALUES (?, ?, ?, ?, ?, ?)", revisions)
        conn.executemany(
            """INSERT INTO transactions VALUES (?, ?, ?, NULL, NULL)
               ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,
               t_ms = excluded.t_ms, removed_at = NULL, removed_sync = NULL""",
            [r[:3] for r in revisions],
        )
        conn.executemany(
            "UPDATE transactions SET removed_at = ?, removed_sync = ? WHERE id = ?",
            [(finished, sync_id, row[0]) for row in unseen],
        )
        conn.executemany("INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", changes)
        span = None if look_back is None else look_back.total_seconds()
        run = dict(id=sync_id, started_at=started.isoformat(), finished_at=finished, kind=kind)
        conn.execute(
            "INSERT INTO syncs VALUES (:id, :started_at, :finished_at, :kind, :window_seconds, "
            ":anchor_ms, :cutoff_ms, :new, :changed, :removed, :unchanged, :requests, "
            ":list_pages, :details_fetched, :details_reused)",
            {**run, "window_seconds": span, **asdict(walk), **n, **counts},
        )
        set_meta(conn, as_of=utc_stamp(ms_to_ts(walk.anchor_ms)))  # what the file is as of
        newest = shown["created_at"].iloc[: len(differ)].max()
        if pd.notna(newest) and not newest <= prev_created:
            set_meta(conn, newest_created_ms=str(to_ms(newest)))
        conn.execute("DELETE FROM staging")
        renames = store_names(conn, found)
    return SyncReport(
        team_id=int(team.id),
        team_name=str(team.name),
        kind=kind,
        look_back=look_back,
        anchor=ms_to_ts(walk.anchor_ms),
        cutoff=ms_to_ts(walk.cutoff_ms),
        **n,
        **counts,
        list_pages=walk.list_pages,
        started_at=started,
        finished_at=pd.Timestamp(finished),
        changes=read_changes(conn, sync_id),
        renames=tuple(renames),
    )


#: Rows decoded at a time by :func:`_versions`.
_VERSIONS_CHUNK = 5000


def _versions(texts: list[str]) -> tuple[list[Any], pd.DataFrame]:
    """For each row's JSON text, its ``total_quantity`` as the row gives it, and its
    ``created_at`` and ``backdated`` as the frames read them; the rows decoded a chunk at a
    time (a first sync's 100,000 rows held as dicts raised its peak by 256 MiB)."""
    quantities: list[Any] = []
    parts = []
    for start in range(0, len(texts), _VERSIONS_CHUNK):
        rows = [json.loads(text) for text in texts[start : start + _VERSIONS_CHUNK]]
        quantities += [row.get("total_quantity") for row in rows]
        parts.append(frames.transactions_df(rows)[["created_at", "backdated"]])
    if not parts:  # pandas 2.2 warns when an empty frame is concatenated
        parts.append(frames.transactions_df([])[["created_at", "backdated"]])
    return quantities, pd.concat(parts, ignore_index=True)
