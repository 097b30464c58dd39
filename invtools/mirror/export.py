"""Reading a mirror for a loader (:mod:`invtools.dlt`): which transactions changed after a
given sync, and the file's rows in batches, so a long history is never one frame in memory.

Both read the file only (no network, no client needed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pandas as pd

from invtools import frames
from invtools._types import check_ids
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames.columns import as_time
from invtools.mirror import store
from invtools.mirror.report import CHANGE_KINDS

if TYPE_CHECKING:
    from invtools.mirror.mirror import TransactionMirror

__all__ = ["changed_since", "batches"]

#: The lines' stock levels: they hold only over a whole history (``lines_df`` rebuilds them).
_LEVELS = ("new_stock_level", "from_location_new_stock_level", "to_location_new_stock_level")
#: Each stored transaction's current revision (list row, detail, removed_at), newest first.
_NEWEST_FIRST = """SELECT {cols} FROM transactions t
    JOIN revisions r ON r.id = t.id AND r.revision = t.revision
    LEFT JOIN details d ON d.id = t.id AND d.revision = t.revision
    {where} ORDER BY t.t_ms DESC, t.id DESC"""


def changed_since(mirror: TransactionMirror, sync_id: int = 0) -> tuple[int, pd.DataFrame]:
    """What a copy loaded up to sync ``sync_id`` must load next: the id of the last completed
    sync, and one row per transaction that the syncs after ``sync_id`` changed
    (``transaction_id``, ascending), with the first and the last of those changes (``first``,
    ``last``: new, backdated-new, edited, removed or restored). A file whose last sync is
    before ``sync_id`` is not the file that copy was loaded from: a
    :class:`~invtools.errors.ConfigError`.

    >>> last, changed = changed_since(mirror, 0)          # everything ever seen
    >>> bool(changed["first"].isin(["new", "backdated-new"]).all())
    True
    >>> len(changed_since(mirror, last)[1])               # nothing changed since the last sync
    0
    """
    if isinstance(sync_id, bool) or not isinstance(sync_id, int) or sync_id < 0:
        raise ArgumentTypeError(
            f"changed_since: sync_id must be a sync's id (an int, 0 for all), not {sync_id!r}"
        )
    with store.connect(mirror.path, readonly=mirror.read_only) as conn:
        (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM syncs").fetchone()
        if last < sync_id:
            raise ConfigError(
                f"{mirror.path} has {last} syncs, not the {sync_id} a copy was loaded up to: it "
                "is another mirror file"
            )
        # a sync writes one change per transaction, appended: rowid order is sync order
        found = conn.execute(
            """WITH span AS (SELECT transaction_id, min(rowid) AS a, max(rowid) AS b
                             FROM changes WHERE sync_id > ? GROUP BY transaction_id)
               SELECT s.transaction_id, f.change, l.change FROM span s
               JOIN changes f ON f.rowid = s.a JOIN changes l ON l.rowid = s.b ORDER BY 1""",
            (sync_id,),
        ).fetchall()
    kinds = pd.CategoricalDtype(CHANGE_KINDS)
    changed = pd.DataFrame(
        {
            "transaction_id": pd.array([t for t, _, _ in found], dtype="Int64"),
            "first": pd.Series([f for _, f, _ in found], dtype=kinds),
            "last": pd.Series([x for _, _, x in found], dtype=kinds),
        }
    )
    return last, changed


def batches(
    mirror: TransactionMirror, ids: Iterable[int] | None = None, *, size: int = 5000
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """The file's transactions in batches of at most ``size``, for a loader that must not
    hold a whole history in memory: ``(transactions, lines)`` per batch, with the schemas
    of the mirror's ``transactions_df(include_removed=True)`` (removed rows too, with their
    ``removed_at``) and of its ``lines_df()`` (the lines of the current, not removed, rows)
    without its three stock-level columns: a level holds only over the whole history
    (``lines_df`` rebuilds them). ``ids``: only these transactions (ids the file
    does not hold are left out); ``None``: all, newest first.

    >>> sizes = [(len(t), t["id"].is_unique) for t, _ in batches(mirror, size=100)]
    >>> sum(n for n, _ in sizes) == mirror.info()["transactions"] + mirror.info()["removed"]
    True
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ArgumentTypeError(f"batches: size must be a positive int, not {size!r}")
    if ids is not None:
        ids = sorted(set(check_ids(list(ids), name="batches: ids") or []))
    with store.connect(mirror.path, readonly=mirror.read_only) as conn:
        origin = store.origin_of(conn)
        if ids is None:
            ids = [i for (i,) in conn.execute(_NEWEST_FIRST.format(cols="t.id", where=""))]
    for start in range(0, len(ids), size):
        chosen = json.dumps(ids[start : start + size])
        where = "WHERE t.id IN (SELECT value FROM json_each(?))"
        with store.connect(mirror.path, readonly=mirror.read_only) as conn:
            fetched = conn.execute(
                _NEWEST_FIRST.format(cols="r.row_json, d.detail_json, t.removed_at", where=where),
                (chosen,),
            ).fetchall()
        txs = frames.transactions_df([json.loads(row) for row, _, _ in fetched])
        txs["removed_at"] = as_time([removed for _, _, removed in fetched])
        lines = frames.lines_df(
            [json.loads(d) for _, d, removed in fetched if removed is None and d is not None]
        ).drop(columns=list(_LEVELS))
        yield (
            frames.with_provenance(txs, origin, filters={"include_removed": True}, rows=len(txs)),
            frames.with_provenance(lines, origin, rows=len(lines)),
        )
