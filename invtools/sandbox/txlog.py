"""The columnar transaction log of one location-mode team: rows, replay, keyset paging.

The history is stored column-wise (``array`` module columns, one entry per transaction; lines
in flat columns with per-transaction offsets), so a million transactions fit in a few hundred
MiB; JSON is rendered per request (by :mod:`invtools.sandbox.store`).

Stock levels are never stored independently of the history: :meth:`TxLog.replay` walks every
live transaction in ``(transaction_time, id)`` order and writes each line's
``new_stock_level`` / ``from_location_new_stock_level`` / ``to_location_new_stock_level`` and
the final stock per item and location.

Location semantics of a line (the api-facts decision): ``in``, ``out`` and ``adjust`` act on
``to_location`` (``out`` removes stock there, ``adjust`` adds its signed quantity); ``move``
takes from ``from_location`` and adds to ``to_location``; ``count`` (see :data:`TYPES`) acts like
``adjust``.

>>> log = TxLog(base_id=1)
>>> _ = log.append(time=0, created=0, type_code=IN, partner=-1, from_loc=-1, to_loc=7,
...                creator=1, memo=None, lines=[(10, 5.0)])
>>> _ = log.append(time=1000, created=1000, type_code=OUT, partner=-1, from_loc=-1, to_loc=7,
...                creator=1, memo=None, lines=[(10, 2.0)])
>>> log.finish()
False
>>> log.stock_at[(10, 7)], list(log.l_lvl)
(3.0, [5.0, 3.0])
"""

from __future__ import annotations

import bisect
from array import array
from collections import defaultdict
from itertools import islice

__all__ = ["TxLog", "TYPES", "TYPE_CODE", "IN", "OUT", "MOVE", "ADJUST", "COUNT", "NO_ID"]

#: The documented four, then ``count`` (a stock count): a type the documentation does not list,
#: which the service could add any day. The demo data never holds one; tests add one
#: (``add_transaction(type="count")``) to check that no client loses rows of a type it does not
#: know. It acts like ``adjust`` (its signed quantity added at ``to_location``).
TYPES = ("in", "out", "move", "adjust", "count")
IN, OUT, MOVE, ADJUST, COUNT = range(5)
TYPE_CODE = {name: code for code, name in enumerate(TYPES)}
NO_ID = -1  # no partner / no from_location
NAN = float("nan")  # a null level


class TxLog:
    """The transaction history of one location-mode team, column-wise.

    Rows are addressed by their position ``r`` (append order); ``ids[r]`` is the public id.
    A deleted row keeps its columns (a tombstone, so a cursor pointing at it still has a sort
    key) but leaves ``order``, the live rows sorted ascending by ``(transaction_time, id)``.
    """

    def __init__(self, base_id: int) -> None:
        self.base_id = base_id
        self.ids = array("l")
        self.time = array("q")  # transaction_time, ms since epoch
        self.created = array("q")  # created_at, ms since epoch
        self.type = array("b")
        self.partner = array("l")  # partner id or NO_ID
        self.from_loc = array("l")
        self.to_loc = array("l")
        self.creator = array("l")
        self.revision = array("l")
        self.deleted = bytearray()
        self.line_off = array("q")
        self.line_cnt = array("l")
        self.memo: dict[int, str] = {}  # sparse: most transactions carry no memo
        self.l_item = array("l")
        self.l_qty = array("d")
        self.l_lvl = array("d")
        self.l_from = array("d")  # NaN = null
        self.l_to = array("d")
        self.order = array("l")
        self.row_of_id = array("l")  # indexed by id - base_id; ids are dense
        self.old_versions: dict[int, list[dict]] = {}  # row -> rendered details, index = revision
        self.stock_at: dict[tuple[int, int], float] = {}

    def __len__(self) -> int:
        return len(self.order)

    # -- building ------------------------------------------------------------------------
    def append(
        self,
        time: int,
        created: int,
        type_code: int,
        partner: int,
        from_loc: int,
        to_loc: int,
        creator: int,
        memo: str | None,
        lines: list[tuple[int, float]],
        deleted: bool = False,
        tx_id: int | None = None,
    ) -> int:
        """Add a row (not yet in ``order``; call :meth:`finish` or :meth:`insert_live`)."""
        r = len(self.time)
        self.ids.append(-1 if tx_id is None else tx_id)
        self.time.append(time)
        self.created.append(created)
        self.type.append(type_code)
        self.partner.append(partner)
        self.from_loc.append(from_loc)
        self.to_loc.append(to_loc)
        self.creator.append(creator)
        self.revision.append(0)
        self.deleted.append(1 if deleted else 0)
        self.line_off.append(0)
        self.line_cnt.append(0)
        self.set_lines(r, lines)
        if memo:
            self.memo[r] = memo
        return r

    def set_lines(self, r: int, lines: list[tuple[int, float]]) -> None:
        """Give row ``r`` these ``(item, quantity)`` lines."""
        # Edited lines are appended as a fresh block; the old block is simply left behind.
        # Level columns are sized by replay(), which fills them.
        self.line_off[r], self.line_cnt[r] = len(self.l_item), len(lines)
        for item, qty in lines:
            self.l_item.append(item)
            self.l_qty.append(qty)

    def finish(self) -> bool:
        """Give the rows dense ids in creation order, build ``order`` and replay the levels (see
        :meth:`replay` for the return value)."""
        rows = range(len(self.time))
        self.row_of_id = array("l", sorted(rows, key=lambda r: (self.created[r], r)))
        for i, r in enumerate(self.row_of_id):
            self.ids[r] = self.base_id + i
        self.order = array("l", sorted((r for r in rows if not self.deleted[r]), key=self.sort_key))
        return self.replay()

    def sort_key(self, r: int) -> tuple[int, int]:
        return (self.time[r], self.ids[r])

    # -- levels --------------------------------------------------------------------------
    def replay(self) -> bool:
        """Recompute every line's stock levels and the final stock; return whether a level went
        below zero.

        >>> log = TxLog(base_id=1)
        >>> _ = log.append(time=0, created=0, type_code=OUT, partner=-1, from_loc=-1, to_loc=7,
        ...                creator=1, memo=None, lines=[(10, 1.0)])
        >>> log.finish()
        True
        """
        at: dict[tuple[int, int], float] = defaultdict(float)
        total: dict[int, float] = defaultdict(float)
        typ, off_, cnt_ = self.type, self.line_off, self.line_cnt
        frm_, to_ = self.from_loc, self.to_loc
        l_item, l_qty, l_lvl = self.l_item, self.l_qty, self.l_lvl
        l_from, l_to = self.l_from, self.l_to
        negative = False
        pad = array("d", [NAN]) * (len(l_item) - len(l_lvl))  # the level columns of new lines
        for column in (l_lvl, l_from, l_to):
            column.extend(pad)
        for r in self.order:
            off = off_[r]
            to = to_[r]
            if typ[r] == MOVE:
                frm = frm_[r]
                for j in range(off, off + cnt_[r]):
                    it, q = l_item[j], l_qty[j]
                    a = at[(it, frm)] - q
                    b = at[(it, to)] + q
                    at[(it, frm)] = a
                    at[(it, to)] = b
                    l_lvl[j] = total[it]
                    l_from[j] = a
                    l_to[j] = b
                    negative = negative or a < 0
            else:
                sign = -1.0 if typ[r] == OUT else 1.0
                for j in range(off, off + cnt_[r]):
                    it = l_item[j]
                    d = sign * l_qty[j]
                    b = at[(it, to)] + d
                    at[(it, to)] = b
                    tot = total[it] + d
                    total[it] = tot
                    l_lvl[j] = tot
                    l_to[j] = b  # from_location_new_stock_level stays null (NaN)
                    negative = negative or b < 0
        self.stock_at = dict(at)
        return negative

    # -- live order ----------------------------------------------------------------------
    def insert_live(self, r: int) -> None:
        bisect.insort(self.order, r, key=self.sort_key)

    def remove_live(self, r: int) -> None:
        self.order.remove(r)  # a live row is always in order (ValueError otherwise)

    def row(self, tx_id: int) -> int | None:
        """Row of a transaction id (deleted ones included), or None if the id never existed."""
        i = tx_id - self.base_id
        return self.row_of_id[i] if 0 <= i < len(self.row_of_id) else None

    def page_newest_first(
        self, after_row: int | None, limit: int, type_code: int | None = None
    ) -> tuple[list[int], bool]:
        """Rows strictly older than ``after_row``'s ``(time, id)`` key, newest first.

        Returns up to ``limit`` rows and whether more match. ``after_row`` may be a deleted
        row: its key is kept, so the walk resumes exactly where it was.
        """
        order, typ = self.order, self.type
        pos = len(order)
        if after_row is not None:
            pos = bisect.bisect_left(order, self.sort_key(after_row), key=self.sort_key)
        rows = (order[i] for i in range(pos - 1, -1, -1))
        if type_code is not None:
            rows = (r for r in rows if typ[r] == type_code)
        out = list(islice(rows, limit + 1))
        return out[:limit], len(out) > limit

    def lines(self, r: int) -> range:
        off = self.line_off[r]
        return range(off, off + self.line_cnt[r])
