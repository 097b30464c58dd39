"""Reading a mirror for a loader (:mod:`invtools.dlt`): the file's rows in batches, so a long
history is never one frame in memory. It reads the file only (no network, no client needed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pandas as pd

from invtools import frames
from invtools._types import check_ids
from invtools.errors import ArgumentTypeError
from invtools.frames.columns import as_time
from invtools.frames.openings import OPENING_COUNT, decide_openings
from invtools.mirror import names, store

if TYPE_CHECKING:
    from invtools.mirror.mirror import TransactionMirror

__all__ = ["batches"]

#: The lines' stock levels: they hold only over a whole history (``lines_df`` rebuilds them).
_LEVELS = ("new_stock_level", "from_location_new_stock_level", "to_location_new_stock_level")
#: Each stored transaction's current revision (list row, detail, removed_at), newest first.
_NEWEST_FIRST = """SELECT {cols} FROM transactions t
    JOIN revisions r ON r.id = t.id AND r.revision = t.revision
    LEFT JOIN details d ON d.id = t.id AND d.revision = t.revision
    {where} ORDER BY t.t_ms DESC, t.id DESC"""

#: The time (epoch ms) of the first current in, out or move: when the history opened.
_FIRST_ACTIVITY = """SELECT MIN(t.t_ms) FROM transactions t
    JOIN revisions r ON r.id = t.id AND r.revision = t.revision
    WHERE t.removed_at IS NULL AND json_extract(r.row_json, '$.type') IN ('in', 'out', 'move')"""


def batches(
    mirror: TransactionMirror, ids: Iterable[int] | None = None, *, size: int = 5000
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """The file's transactions in batches of at most ``size``, for a loader that must not
    hold a whole history in memory: ``(transactions, lines)`` per batch, with the schemas
    of the mirror's ``transactions_df(include_removed=True)`` (removed rows too, with their
    ``removed_at``) and of its ``lines_df()`` (the lines of the current, not removed, rows)
    without its three stock-level columns: a level holds only over the whole history
    (``lines_df`` rebuilds them). ``opening_count`` is decided on the whole history (the
    file's current rows), as the mirror's frames decide it, never on a batch. ``ids``: only
    these transactions (ids the file does not hold are left out); ``None``: all, newest first.
    Their references are named as the team's lists said at the file's last sync, as the
    mirror's frames name them.

    >>> sizes = [(len(t), t["transaction_id"].is_unique) for t, _ in batches(mirror, size=100)]
    >>> sum(n for n, _ in sizes) == mirror.info()["transactions"] + mirror.info()["removed"]
    True
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ArgumentTypeError(f"batches: size must be a positive int, not {size!r}")
    if ids is not None:
        ids = sorted(set(check_ids(list(ids), name="batches: ids") or []))
    with store.connect(mirror.path, readonly=mirror.read_only) as conn:
        origin, named = store.origin_of(conn), names.lists(conn)
        (first_ms,) = conn.execute(_FIRST_ACTIVITY).fetchone()
        if ids is None:
            ids = [i for (i,) in conn.execute(_NEWEST_FIRST.format(cols="t.id", where=""))]
    opened = pd.NaT if first_ms is None else pd.Timestamp(first_ms, unit="ms", tz="UTC")
    for start in range(0, len(ids), size):
        chosen = json.dumps(ids[start : start + size])
        where = "WHERE t.id IN (SELECT value FROM json_each(?))"
        with store.connect(mirror.path, readonly=mirror.read_only) as conn:
            fetched = conn.execute(
                _NEWEST_FIRST.format(cols="r.row_json, d.detail_json, t.removed_at", where=where),
                (chosen,),
            ).fetchall()
        txs = frames.current_names(
            frames.transactions_df([json.loads(row) for row, _, _ in fetched]), named
        )
        txs["removed_at"] = as_time([removed for _, _, removed in fetched])
        decide_openings(txs, opened=opened)  # of the whole history, not of this batch
        lines = frames.lines_df(
            [json.loads(d) for _, d, removed in fetched if removed is None and d is not None]
        ).drop(columns=list(_LEVELS))
        lines = frames.current_names(lines, named)
        flags = txs.drop_duplicates("transaction_id").set_index("transaction_id")[OPENING_COUNT]
        lines[OPENING_COUNT] = flags.reindex(lines["transaction_id"].array).array
        yield (
            frames.with_provenance(txs, origin, filters={"include_removed": True}, rows=len(txs)),
            frames.with_provenance(lines, origin, rows=len(lines)),
        )
