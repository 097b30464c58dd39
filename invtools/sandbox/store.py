"""In-memory state of one team of the stand-in server, and its mutations.

The transaction history is stored column-wise (``array`` module columns, one entry per
transaction; lines in flat columns with per-transaction offsets), so a million transactions
fit in a few hundred MiB; JSON is rendered per request. Everything else (items, partners, ...)
is a few hundred small dicts.

Stock levels are never stored independently of the history: :meth:`TxLog.replay` walks every
live transaction in ``(transaction_time, id)`` order and writes each line's
``new_stock_level`` / ``from_location_new_stock_level`` / ``to_location_new_stock_level`` and
the final stock per item and location. Every mutation ends with a replay (O(history): cheap at
the default size, a few seconds at a million transactions), so levels always agree with the
history. The generated history never goes below zero; mutations are not refused when they
would (deleting a delivery may leave later sales overselling), the levels then simply show it,
as they would in the real service.

Location semantics of a line (the api-facts decision): ``in``, ``out`` and ``adjust`` act on
``to_location`` (``out`` removes stock there, ``adjust`` adds its signed quantity); ``move``
takes from ``from_location`` and adds to ``to_location``.

>>> log = TxLog(base_id=1)
>>> _ = log.append(time=0, created=0, type_code=IN, partner=-1, from_loc=-1, to_loc=7,
...                creator=1, memo=None, lines=[(10, 5.0)])
>>> _ = log.append(time=1000, created=1000, type_code=OUT, partner=-1, from_loc=-1, to_loc=7,
...                creator=1, memo=None, lines=[(10, 2.0)])
>>> log.finish()
[]
>>> log.stock_at[(10, 7)], list(log.l_lvl)
(3.0, [5.0, 3.0])
"""

from __future__ import annotations

from datetime import datetime, timezone

import bisect
import copy
import math
import threading
import time as _time
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

TYPES = ("in", "out", "move", "adjust")
IN, OUT, MOVE, ADJUST = range(4)
TYPE_CODE = {name: code for code, name in enumerate(TYPES)}
NO_ID = -1
NAN = float("nan")


def fmt_time(ms: int) -> str:
    """Milliseconds since the epoch -> the wire format ``2026-05-02T01:10:00.000Z``.

    >>> fmt_time(0)
    '1970-01-01T00:00:00.000Z'
    """
    s, rest = divmod(ms, 1000)
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(s)) + f".{rest:03d}Z"


def parse_time(text: str) -> int:
    """The wire format (or any ISO-8601 UTC string) -> milliseconds since the epoch.

    >>> parse_time("1970-01-01T00:00:01.500Z")
    1500
    """
    from datetime import datetime, timezone

    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return round(dt.timestamp() * 1000)


def num(x: float) -> int | float:
    """A quantity as JSON wants it: ``5`` rather than ``5.0``, fractions kept.

    >>> num(5.0), num(2.5)
    (5, 2.5)
    """
    return int(x) if x == int(x) else x


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
        self.stock_total: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self.order)

    # -- building ------------------------------------------------------------------------
    def append(self, *, time: int, created: int, type_code: int, partner: int, from_loc: int,
               to_loc: int, creator: int, memo: str | None, lines: list[tuple[int, float]],
               deleted: bool = False, tx_id: int | None = None) -> int:
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
        self._set_lines(r, lines, new=True)
        if memo:
            self.memo[r] = memo
        return r

    def _set_lines(self, r: int, lines: list[tuple[int, float]], *, new: bool = False) -> None:
        # Edited lines are appended as a fresh block; the old block is simply left behind.
        # Level columns are sized by replay(), which fills them.
        off = len(self.l_item)
        n = len(lines)
        for item, qty in lines:
            self.l_item.append(item)
            self.l_qty.append(qty)
        if new:
            self.line_off.append(off)
            self.line_cnt.append(n)
        else:
            self.line_off[r] = off
            self.line_cnt[r] = n

    def assign_ids_by(self, key) -> None:
        """Give rows without an id dense ids in ``key`` order (ids follow creation order)."""
        rows = sorted(range(len(self.time)), key=key)
        self.row_of_id = array("l", [0]) * len(rows)
        for i, r in enumerate(rows):
            self.ids[r] = self.base_id + i
            self.row_of_id[i] = r

    def finish(self) -> list[int]:
        """Build ``order`` and replay the levels (see :meth:`replay` for the return value)."""
        if not self.row_of_id and len(self.time):
            self.assign_ids_by(lambda r: (self.created[r], r))
        live = [r for r in range(len(self.time)) if not self.deleted[r]]
        live.sort(key=self.sort_key)
        self.order = array("l", live)
        return self.replay()

    def sort_key(self, r: int) -> tuple[int, int]:
        return (self.time[r], self.ids[r])

    # -- levels --------------------------------------------------------------------------
    def replay(self) -> list[int]:
        """Recompute every line's stock levels and the final stock; return rows that went negative.

        >>> log = TxLog(base_id=1)
        >>> _ = log.append(time=0, created=0, type_code=OUT, partner=-1, from_loc=-1, to_loc=7,
        ...                creator=1, memo=None, lines=[(10, 1.0)])
        >>> log.finish()
        [0]
        """
        at: dict[tuple[int, int], float] = defaultdict(float)
        total: dict[int, float] = defaultdict(float)
        typ, off_, cnt_ = self.type, self.line_off, self.line_cnt
        frm_, to_ = self.from_loc, self.to_loc
        l_item, l_qty, l_lvl, l_from, l_to = self.l_item, self.l_qty, self.l_lvl, self.l_from, self.l_to
        negative: list[int] = []
        missing = len(l_item) - len(l_lvl)
        if missing:
            pad = array("d", [NAN]) * missing
            l_lvl.extend(pad)
            l_from.extend(pad)
            l_to.extend(pad)
        for r in self.order:
            t = typ[r]
            off = off_[r]
            to = to_[r]
            bad = False
            if t == MOVE:
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
                    bad = bad or a < 0
            else:
                sign = -1.0 if t == OUT else 1.0
                for j in range(off, off + cnt_[r]):
                    it = l_item[j]
                    d = sign * l_qty[j]
                    b = at[(it, to)] + d
                    at[(it, to)] = b
                    tot = total[it] + d
                    total[it] = tot
                    l_lvl[j] = tot
                    l_from[j] = NAN
                    l_to[j] = b
                    bad = bad or b < 0
            if bad:
                negative.append(r)
        self.stock_at = dict(at)
        self.stock_total = dict(total)
        return negative

    # -- live order ----------------------------------------------------------------------
    def insert_live(self, r: int) -> None:
        bisect.insort(self.order, r, key=self.sort_key)

    def remove_live(self, r: int) -> None:
        i = bisect.bisect_left(self.order, self.sort_key(r), key=self.sort_key)
        if i < len(self.order) and self.order[i] == r:
            del self.order[i]

    def row(self, tx_id: int) -> int | None:
        """Row of a transaction id (deleted ones included), or None if the id never existed."""
        i = tx_id - self.base_id
        if 0 <= i < len(self.row_of_id):
            return self.row_of_id[i]
        return None

    def page_newest_first(self, after_row: int | None, limit: int,
                          type_code: int | None = None) -> tuple[list[int], bool]:
        """Rows strictly older than ``after_row``'s ``(time, id)`` key, newest first.

        Returns up to ``limit`` rows and whether more match. ``after_row`` may be a deleted
        row: its key is kept, so the walk resumes exactly where it was.
        """
        order = self.order
        if after_row is None:
            pos = len(order)
        else:
            pos = bisect.bisect_left(order, self.sort_key(after_row), key=self.sort_key)
        out: list[int] = []
        typ = self.type
        i = pos - 1
        while i >= 0:
            r = order[i]
            if type_code is None or typ[r] == type_code:
                if len(out) == limit:
                    return out, True
                out.append(r)
            i -= 1
        return out, False

    def lines(self, r: int) -> range:
        off = self.line_off[r]
        return range(off, off + self.line_cnt[r])


@dataclass
class TeamStore:
    """Everything one team owns, plus a lock; a token is bound to exactly one of these.

    ``items``/``partners``/``members`` include soft-deleted records (``deleted: True``); they
    are referenced by transactions but not listed and their ids answer 404.
    """

    key: str  # "shop" / "basic": the name tests and the CLI use
    team: dict[str, Any]
    items: dict[int, dict[str, Any]]
    locations: dict[int, dict[str, Any]]
    partners: dict[int, dict[str, Any]]
    members: dict[int, dict[str, Any]]
    attrs: dict[int, dict[str, Any]]
    log: TxLog | None = None
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def uses_locations(self) -> bool:
        return self.team["mode"] == 2

    # -- refs ----------------------------------------------------------------------------
    @staticmethod
    def _ref(table: dict[int, dict], ref_id: int) -> dict | None:
        if ref_id == NO_ID:
            return None
        rec = table[ref_id]
        return {"id": ref_id, "name": rec["name"], "deleted": bool(rec.get("deleted", False))}

    # -- rendering (wire format) ---------------------------------------------------------
    def item_json(self, item_id: int, location_ids: list[int] | None = None) -> dict:
        rec = self.items[item_id]
        locs = [loc for loc in (location_ids if location_ids else sorted(self.locations))
                if loc in self.locations]
        at = self.log.stock_at if self.log else {}
        quantities = [{"location_id": loc, "quantity": num(at.get((item_id, loc), 0.0))}
                      for loc in locs]
        return {
            "id": item_id,
            "name": rec["name"],
            "sku": rec["sku"],
            "barcode": rec["barcode"],
            "photo_url": rec["photo_url"],
            "attrs": copy.deepcopy(rec["attrs"]),
            "cost": rec["cost"],
            "price": rec["price"],
            "quantity": num(sum(q["quantity"] for q in quantities)),
            "quantities": quantities,
        }

    def location_json(self, loc_id: int) -> dict:
        rec = self.locations[loc_id]
        at = self.log.stock_at if self.log else {}
        qty = sum(at.get((i, loc_id), 0.0) for i, it in self.items.items() if not it["deleted"])
        return {"id": loc_id, "name": rec["name"], "quantity": num(qty), "memo": rec["memo"]}

    def tx_row_json(self, r: int) -> dict:
        log = self.log
        assert log is not None
        tx_id = log.ids[r]
        qty = sum(log.l_qty[j] for j in log.lines(r))
        return {
            "id": tx_id,
            "type": TYPES[log.type[r]],
            "transaction_time": fmt_time(log.time[r]),
            "created_at": fmt_time(log.created[r]),
            "created_by": self._ref(self.members, log.creator[r]),
            "count_of_items": log.line_cnt[r],
            "total_quantity": num(qty),
            "url": f"https://web.boxhero-app.com/team/{self.team['id']}/location-txs/{tx_id}",
            "memo": log.memo.get(r),
            "revision": log.revision[r],
            "partner": self._ref(self.partners, log.partner[r]),
            "from_location": self._ref(self.locations, log.from_loc[r]),
            "to_location": self._ref(self.locations, log.to_loc[r]),
        }

    def tx_detail_json(self, r: int) -> dict:
        log = self.log
        assert log is not None
        out = self.tx_row_json(r)
        lines = []
        for j in log.lines(r):
            rec = self.items[log.l_item[j]]
            f, t = log.l_from[j], log.l_to[j]
            lines.append({
                "id": log.l_item[j],
                "name": rec["name"],
                "sku": rec["sku"],
                "barcode": rec["barcode"],
                "quantity": num(log.l_qty[j]),
                "deleted": rec["deleted"],
                "new_stock_level": num(log.l_lvl[j]),
                "from_location_new_stock_level": None if math.isnan(f) else num(f),
                "to_location_new_stock_level": None if math.isnan(t) else num(t),
            })
        out["items"] = lines
        return out

    def tx_version_json(self, tx_id: int, revision: int | None = None) -> dict | None:
        """The transaction's detail at ``revision`` (None = current); None if unknown/deleted."""
        log = self.log
        r = log.row(tx_id) if log else None
        if r is None or log.deleted[r]:
            return None
        if revision is None or revision == log.revision[r]:
            return self.tx_detail_json(r)
        old = log.old_versions.get(r, [])
        if 0 <= revision < len(old):
            return copy.deepcopy(old[revision])
        return None

    # -- mutations (callers hold self.lock) ----------------------------------------------
    def _clock(self) -> int:
        """A deterministic "now" for new records: just after the newest time the data knows."""
        log = self.log
        newest = max(max(log.time, default=0), max(log.created, default=0))
        return newest + 60_000

    def _check_lines(self, lines: list[tuple[int, float]]) -> None:
        if not lines:
            raise ValueError("a transaction needs at least one line: lines=[(item_id, qty), ...]")
        for item, _qty in lines:
            if item not in self.items:
                raise ValueError(f"item {item} does not belong to team {self.key!r}")

    def _default_lines(self, type_code: int, loc: int, count: int = 2) -> list[tuple[int, float]]:
        log = self.log
        if type_code in (IN, ADJUST):
            live = [i for i, rec in sorted(self.items.items()) if not rec["deleted"]]
            return [(i, 3.0) for i in live[:count]]
        # out/move: items that have stock at the location, one unit each
        have = sorted(i for (i, l), q in log.stock_at.items()
                      if l == loc and q >= 1 and not self.items[i]["deleted"])
        if not have:
            raise ValueError(f"no stock at location {loc}; pass lines=[(item_id, qty), ...]")
        return [(i, 1.0) for i in have[:count]]

    def add_transaction(self, *, type: str = "out", lines=None, partner: int | None = None,  # noqa: A002
                        from_location: int | None = None, to_location: int | None = None,
                        memo: str | None = None, transaction_time: str | int | None = None,
                        created_at: str | int | None = None, created_by: int | None = None) -> dict:
        """Append a transaction; defaults are realistic (a shop-floor sale of one unit of two
        items that have stock). A ``transaction_time`` earlier than ``created_at`` backdates it;
        later levels are recomputed. Returns its detail."""
        log = self.log
        if type not in TYPE_CODE:
            raise ValueError(f"type must be one of {TYPES}, not {type!r}")
        code = TYPE_CODE[type]
        locs = sorted(self.locations)
        floor = next((i for i, l in self.locations.items() if l["name"] == "Shop floor"), locs[0])
        if code == MOVE:
            frm = from_location if from_location is not None else next(
                (i for i in locs if i != floor), locs[0])
            to = to_location if to_location is not None else floor
            if frm == to:
                raise ValueError("a move needs different from_location and to_location")
        else:
            frm = NO_ID
            to = to_location if to_location is not None else floor
        for loc in (frm, to):
            if loc != NO_ID and loc not in self.locations:
                raise ValueError(f"location {loc} does not belong to team {self.key!r}")
        if partner is not None and partner not in self.partners:
            raise ValueError(f"partner {partner} does not belong to team {self.key!r}")
        if created_by is not None and created_by not in self.members:
            raise ValueError(f"member {created_by} does not belong to team {self.key!r}")
        lines = ([(int(i), float(q)) for i, q in lines] if lines is not None
                 else self._default_lines(code, frm if code == MOVE else to))
        self._check_lines(lines)
        created = _as_ms(created_at) if created_at is not None else self._clock()
        when = _as_ms(transaction_time) if transaction_time is not None else created
        creator = created_by if created_by is not None else min(
            i for i, m in self.members.items() if m["role"] != "viewer" and not m["deleted"])
        r = log.append(time=when, created=created, type_code=code,
                       partner=NO_ID if partner is None else partner, from_loc=frm, to_loc=to,
                       creator=creator, memo=memo, lines=lines,
                       tx_id=log.base_id + len(log.row_of_id))
        log.row_of_id.append(r)
        log.insert_live(r)
        log.replay()
        return self.tx_detail_json(r)

    def edit_transaction(self, tx_id: int, *, lines=None, memo: Any = ..., partner: Any = ...,
                         transaction_time: str | int | None = None) -> dict:
        """Edit a live transaction: revision + 1, the old version kept for ``?revision=N``.

        With no changes, one line's quantity changes (in/adjust: +1; out/move: -1 when the
        quantity is above 1, else +1), which is what a user correcting a typo does.
        """
        log = self.log
        r = log.row(tx_id)
        if r is None or log.deleted[r]:
            raise KeyError(f"no live transaction {tx_id} in team {self.key!r}")
        snapshot = self.tx_detail_json(r)
        if lines is None and memo is ... and partner is ... and transaction_time is None:
            lines = _nudged([(log.l_item[j], log.l_qty[j]) for j in log.lines(r)], log.type[r])
        if lines is not None:
            lines = [(int(i), float(q)) for i, q in lines]
            self._check_lines(lines)
        if partner is not ... and partner is not None and partner not in self.partners:
            raise ValueError(f"partner {partner} does not belong to team {self.key!r}")

        log.remove_live(r)
        if lines is not None:
            log._set_lines(r, lines)
        if memo is not ...:
            log.memo.pop(r, None)
            if memo:
                log.memo[r] = memo
        if partner is not ...:
            log.partner[r] = NO_ID if partner is None else partner
        if transaction_time is not None:
            log.time[r] = _as_ms(transaction_time)
        log.insert_live(r)
        log.revision[r] += 1
        log.old_versions.setdefault(r, []).append(snapshot)
        log.replay()
        return self.tx_detail_json(r)

    def delete_transaction(self, tx_id: int) -> None:
        """Delete a live transaction: gone from the list, its detail 404, later levels replayed."""
        log = self.log
        r = log.row(tx_id)
        if r is None or log.deleted[r]:
            raise KeyError(f"no live transaction {tx_id} in team {self.key!r}")
        log.remove_live(r)
        log.deleted[r] = 1
        log.replay()


def _nudged(lines: list[tuple[int, float]], type_code: int) -> list[tuple[int, float]]:
    out = list(lines)
    if type_code in (OUT, MOVE):
        for k, (item, qty) in enumerate(out):
            if qty > 1:
                out[k] = (item, qty - 1)
                return out
    item, qty = out[0]
    out[0] = (item, qty + 1)
    return out


def _as_ms(value: str | int | datetime) -> int:
    """A time given to a mutation: ms since the epoch, a wire/ISO string, or a datetime
    (naive = UTC; a pandas Timestamp is one)."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return round(aware.timestamp() * 1000)
    return value if isinstance(value, int) else parse_time(value)
