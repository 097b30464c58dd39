"""One team of the stand-in server: its records, their JSON views, and its mutations.

:class:`TeamStore` holds everything a token can see (team, items, locations, partners, members,
item attributes) and, for a location-mode team, the transaction history as a
:class:`~invtools.sandbox.txlog.TxLog`. It renders records in the wire format (the API's JSON,
per request) and adds, edits and deletes transactions. :class:`TeamView` is read access to one
team's current state in wire format, for tests and notebooks.

Every mutation ends with a replay of the history (O(history): cheap at the default size, a few
seconds at a million transactions), so levels always agree with the history. The generated
history never goes below zero; mutations are not refused when they would (deleting a delivery
may leave later sales overselling), the levels then simply show it, as they would in the real
service.
"""

from __future__ import annotations

import copy
import math
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from invtools.sandbox.txlog import ADJUST, COUNT, IN, MOVE, NO_ID, OUT, TYPE_CODE, TYPES, TxLog
from invtools.sandbox.wire import fmt_time, num, parse_time

__all__ = ["TeamStore", "TeamView", "public"]

Time = str | int | datetime  # a time given to a mutation: see wire.parse_time


def public(rec: dict) -> dict:
    """A record without the store's own bookkeeping (``deleted`` of listed records).

    >>> public({"id": 1, "name": "Ann", "deleted": False})
    {'id': 1, 'name': 'Ann'}
    """
    return {k: v for k, v in rec.items() if k != "deleted"}


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

    def _tx_log(self) -> TxLog:
        """``log`` where a team must have one (every team but the basic plan's has)."""
        assert self.log is not None, f"team {self.key!r} has no transaction log"
        return self.log

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
        locs = [
            loc
            for loc in (location_ids if location_ids else sorted(self.locations))
            if loc in self.locations
        ]
        at = self.log.stock_at if self.log else {}
        quantities = [
            {"location_id": loc, "quantity": num(at.get((item_id, loc), 0.0))} for loc in locs
        ]
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
            lines.append(
                {
                    "id": log.l_item[j],
                    "name": rec["name"],
                    "sku": rec["sku"],
                    "barcode": rec["barcode"],
                    "quantity": num(log.l_qty[j]),
                    "deleted": rec["deleted"],
                    "new_stock_level": num(log.l_lvl[j]),
                    "from_location_new_stock_level": None if math.isnan(f) else num(f),
                    "to_location_new_stock_level": None if math.isnan(t) else num(t),
                }
            )
        out["items"] = lines
        return out

    def tx_version_json(self, tx_id: int, revision: int | None = None) -> dict | None:
        """The transaction's detail at ``revision`` (None = current); None if unknown/deleted."""
        log = self.log
        if log is None:
            return None
        r = log.row(tx_id)
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
        log = self._tx_log()
        newest = max(max(log.time, default=0), max(log.created, default=0))
        return newest + 60_000

    def _check_lines(self, lines: list[tuple[int, float]]) -> None:
        if not lines:
            raise ValueError("a transaction needs at least one line: lines=[(item_id, qty), ...]")
        for item, _qty in lines:
            if item not in self.items:
                raise ValueError(f"item {item} does not belong to team {self.key!r}")

    def _default_lines(self, type_code: int, loc: int, count: int = 2) -> list[tuple[int, float]]:
        log = self._tx_log()
        if type_code in (IN, ADJUST, COUNT):
            live = [i for i, rec in sorted(self.items.items()) if not rec["deleted"]]
            return [(i, 3.0) for i in live[:count]]
        # out/move: items that have stock at the location, one unit each
        have = sorted(
            i
            for (i, at_loc), q in log.stock_at.items()
            if at_loc == loc and q >= 1 and not self.items[i]["deleted"]
        )
        if not have:
            raise ValueError(f"no stock at location {loc}; pass lines=[(item_id, qty), ...]")
        return [(i, 1.0) for i in have[:count]]

    def add_transaction(
        self,
        *,
        type: str = "out",
        lines=None,
        partner: int | None = None,  # noqa: A002
        from_location: int | None = None,
        to_location: int | None = None,
        memo: str | None = None,
        transaction_time: Time | None = None,
        created_at: Time | None = None,
        created_by: int | None = None,
    ) -> dict:
        """Append a transaction; defaults are realistic (a shop-floor sale of one unit of two
        items that have stock). A ``transaction_time`` earlier than ``created_at`` backdates it;
        later levels are recomputed. Times are what :func:`~invtools.sandbox.wire.parse_time`
        takes (a wire or ISO-8601 string, ms since the epoch, a datetime). Returns its detail."""
        log = self._tx_log()
        if type not in TYPE_CODE:
            raise ValueError(f"type must be one of {TYPES}, not {type!r}")
        code = TYPE_CODE[type]
        locs = sorted(self.locations)
        floor = next((i for i, lo in self.locations.items() if lo["name"] == "Shop floor"), locs[0])
        if code == MOVE:
            frm = (
                from_location
                if from_location is not None
                else next((i for i in locs if i != floor), locs[0])
            )
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
        lines = (
            [(int(i), float(q)) for i, q in lines]
            if lines is not None
            else self._default_lines(code, frm if code == MOVE else to)
        )
        self._check_lines(lines)
        created = parse_time(created_at) if created_at is not None else self._clock()
        when = parse_time(transaction_time) if transaction_time is not None else created
        creator = (
            created_by
            if created_by is not None
            else min(
                i for i, m in self.members.items() if m["role"] != "viewer" and not m["deleted"]
            )
        )
        r = log.append(
            time=when,
            created=created,
            type_code=code,
            partner=NO_ID if partner is None else partner,
            from_loc=frm,
            to_loc=to,
            creator=creator,
            memo=memo,
            lines=lines,
            tx_id=log.base_id + len(log.row_of_id),
        )
        log.row_of_id.append(r)
        log.insert_live(r)
        log.replay()
        return self.tx_detail_json(r)

    def edit_transaction(
        self,
        tx_id: int,
        *,
        lines=None,
        memo: Any = ...,
        partner: Any = ...,
        transaction_time: Time | None = None,
    ) -> dict:
        """Edit a live transaction: revision + 1, the old version kept for ``?revision=N``.

        With no changes, one line's quantity changes (in/adjust: +1; out/move: -1 when the
        quantity is above 1, else +1), which is what a user correcting a typo does.
        """
        log = self._tx_log()
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
            log.set_lines(r, lines)
        if memo is not ...:
            log.memo.pop(r, None)
            if memo:
                log.memo[r] = memo
        if partner is not ...:
            log.partner[r] = NO_ID if partner is None else partner
        if transaction_time is not None:
            log.time[r] = parse_time(transaction_time)
        log.insert_live(r)
        log.revision[r] += 1
        log.old_versions.setdefault(r, []).append(snapshot)
        log.replay()
        return self.tx_detail_json(r)

    def delete_transaction(self, tx_id: int) -> None:
        """Delete a live transaction: gone from the list, its detail 404, later levels replayed."""
        log = self._tx_log()
        r = log.row(tx_id)
        if r is None or log.deleted[r]:
            raise KeyError(f"no live transaction {tx_id} in team {self.key!r}")
        log.remove_live(r)
        log.deleted[r] = 1
        log.replay()

    def edit_partner(self, partner_id: int, **changes) -> dict:
        """Change a partner's ``name``, ``phone``, ``email``, ``address`` or ``memo``, or delete
        it (``deleted=True``: it leaves the partners list; transactions still refer to it).
        Returns the partner as the list shows it."""
        rec = self.partners.get(partner_id)
        if rec is None or rec["deleted"]:
            raise KeyError(f"no live partner {partner_id} in team {self.key!r}")
        unknown = set(changes) - {"name", "phone", "email", "address", "memo", "deleted"}
        if unknown:
            raise ValueError(f"a partner has no field(s) {sorted(unknown)} to edit")
        rec.update(changes)
        return public(rec)


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


class TeamView:
    """Read access to one team's current state, in wire format, for tests and notebooks.

    >>> from invtools.sandbox.data import build
    >>> view = TeamView(build(size=200)["shop"])
    >>> view.team["mode"], len(view.transactions), view.transactions[0]["revision"]
    (2, 200, 0)
    """

    def __init__(self, store: TeamStore) -> None:
        self._store = store

    @property
    def team(self) -> dict:
        return dict(self._store.team)

    @property
    def items(self) -> list[dict]:
        """Live items (not deleted) with their current stock, id ascending."""
        s = self._store
        with s.lock:
            if s.log is None:
                return [public(rec) for _, rec in sorted(s.items.items()) if not rec["deleted"]]
            return [s.item_json(i) for i in sorted(s.items) if not s.items[i]["deleted"]]

    @property
    def locations(self) -> list[dict]:
        s = self._store
        with s.lock:
            return [s.location_json(i) for i in sorted(s.locations)]

    @property
    def partners(self) -> list[dict]:
        return [public(p) for _, p in sorted(self._store.partners.items()) if not p["deleted"]]

    @property
    def members(self) -> list[dict]:
        return [public(m) for _, m in sorted(self._store.members.items()) if not m["deleted"]]

    @property
    def attrs(self) -> list[dict]:
        return [dict(a) for _, a in sorted(self._store.attrs.items())]

    @property
    def transactions(self) -> list[dict]:
        """Live transaction rows, newest first (as the list endpoint orders them)."""
        s = self._store
        if s.log is None:
            return []
        with s.lock:
            return [s.tx_row_json(r) for r in reversed(s.log.order)]

    def transaction(self, tx_id: int, revision: int | None = None) -> dict | None:
        """A transaction's detail (with lines), or None if it is unknown or deleted."""
        s = self._store
        with s.lock:
            return s.tx_version_json(tx_id, revision) if s.log else None
