"""One team of the stand-in server: its records, their JSON views, and its mutations.

:class:`TeamStore` holds everything a token can see (team, items, locations, partners, members,
item attributes) and, for a location-mode team, the transaction history as a
:class:`~invtools.sandbox.txlog.TxLog`. It renders records in the wire format (the API's JSON,
per request), adds, edits and deletes transactions, and edits and deletes the records they refer
to (:meth:`TeamStore.edit`). :class:`TeamView` is read access to one team's current state in wire
format, for tests and notebooks.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from invtools.sandbox.catalogue import ANCHOR
from invtools.sandbox.txlog import ADJUST, COUNT, IN, MOVE, NO_ID, OUT, TYPE_CODE, TYPES, TxLog
from invtools.sandbox.wire import fmt_time, money, num, parse_time

__all__ = ["TeamStore", "TeamView"]

Time = str | int | datetime  # a time given to a mutation: see wire.parse_time
T = TypeVar("T")

#: What :meth:`TeamStore.edit` may change, per table: its fields and, where listed,
#: ``deleted`` (``deleted=True`` soft-deletes the record).
EDITABLE = {
    "items": ("name", "sku", "barcode", "cost", "price", "deleted"),
    "locations": ("name", "memo"),
    "partners": ("name", "phone", "email", "address", "memo", "deleted"),
    "members": ("name", "role", "deleted"),
    "attrs": ("attr_name", "rank"),
}
ROLES = ("admin", "member", "viewer")  # a member's role
_NOUNS = {
    "items": "item",
    "locations": "location",
    "partners": "partner",
    "members": "member",
    "attrs": "item attribute",
}


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

    def _tx_log(self) -> TxLog:
        """``log`` where a team must have one (every team but the basic plan's has)."""
        if self.log is None:
            raise ValueError(f"team {self.key!r} is in basic mode and has no location transactions")
        return self.log

    def locked(self, method: Callable[..., T], *args, **kwargs) -> T:
        """``method(self, *args, **kwargs)``, holding the team's lock: how a mutation is called."""
        with self.lock:
            return method(self, *args, **kwargs)

    def _check(self, table: dict[int, dict], ref_id: int | None, what: str) -> None:
        if ref_id is not None and ref_id not in table:
            raise ValueError(f"{what} {ref_id} does not belong to team {self.key!r}")

    # -- records (wire format) -----------------------------------------------------------
    def listed(self, kind: str, rec_id: int) -> bool:
        """Whether record ``rec_id`` of ``kind`` (the name of a table: ``items``, ``locations``,
        ``partners``, ``members``, ``attrs``) exists and is not deleted."""
        rec = getattr(self, kind).get(rec_id)
        return rec is not None and not rec.get("deleted")

    def ids(self, kind: str) -> list[int]:
        """The listed ids of ``kind``, ascending."""
        return [i for i in sorted(getattr(self, kind)) if self.listed(kind, i)]

    def record(self, kind: str, rec_id: int, location_ids: list[int] | None = None) -> dict:
        """One record as the API answers it, without the store's ``deleted`` flag: an item with
        its stock at ``location_ids`` (all locations by default; a team without a history has
        no stock to show), a location with its stock."""
        rec = getattr(self, kind)[rec_id]
        if kind == "locations":
            at, items = self._tx_log().stock_at, self.ids("items")
            qty = num(sum(at.get((i, rec_id), 0.0) for i in items))
            return {"id": rec_id, "name": rec["name"], "quantity": qty, "memo": rec["memo"]}
        out = {k: copy.deepcopy(v) for k, v in rec.items() if k != "deleted"}
        if kind == "items":  # each attribute under its current name: a rename shows on every item
            out["attrs"] = [{**a, "name": self.attrs[a["id"]]["attr_name"]} for a in out["attrs"]]
        if kind == "items" and self.log is not None:
            at, locs = self.log.stock_at, location_ids or sorted(self.locations)
            quantities = [
                {"location_id": loc, "quantity": num(at.get((rec_id, loc), 0.0))}
                for loc in locs
                if loc in self.locations
            ]
            out["quantity"] = num(sum(q["quantity"] for q in quantities))
            out["quantities"] = quantities
        return out

    def records(self, kind: str) -> list[dict]:
        """Every listed record of ``kind``, id ascending."""
        with self.lock:
            return [self.record(kind, i) for i in self.ids(kind)]

    @staticmethod
    def _ref(table: dict[int, dict], ref_id: int) -> dict | None:
        if ref_id == NO_ID:
            return None
        rec = table[ref_id]
        return {"id": ref_id, "name": rec["name"], "deleted": bool(rec.get("deleted", False))}

    def tx_row_json(self, r: int) -> dict:
        log = self._tx_log()
        tx_id = log.ids[r]
        return {
            "id": tx_id,
            "type": TYPES[log.type[r]],
            "transaction_time": fmt_time(log.time[r]),
            "created_at": fmt_time(log.created[r]),
            "created_by": self._ref(self.members, log.creator[r]),
            "count_of_items": log.line_cnt[r],
            "total_quantity": num(sum(log.l_qty[j] for j in log.lines(r))),
            "url": f"https://web.boxhero-app.com/team/{self.team['id']}/location-txs/{tx_id}",
            "memo": log.memo.get(r),
            "revision": log.revision[r],
            "partner": self._ref(self.partners, log.partner[r]),
            "from_location": self._ref(self.locations, log.from_loc[r]),
            "to_location": self._ref(self.locations, log.to_loc[r]),
        }

    def tx_detail_json(self, r: int) -> dict:
        log = self._tx_log()
        lines = []
        for j in log.lines(r):
            rec = self.items[log.l_item[j]]
            f, t = log.l_from[j], log.l_to[j]
            lines.append(
                {
                    **{k: rec[k] for k in ("id", "name", "sku", "barcode")},
                    "quantity": num(log.l_qty[j]),
                    "deleted": rec["deleted"],
                    "new_stock_level": num(log.l_lvl[j]),
                    "from_location_new_stock_level": None if math.isnan(f) else num(f),
                    "to_location_new_stock_level": None if math.isnan(t) else num(t),
                }
            )
        return {**self.tx_row_json(r), "items": lines}

    def tx_version_json(self, tx_id: int, revision: int | None = None) -> dict | None:
        """The transaction's detail at ``revision`` (None = current); None if unknown/deleted."""
        log = self.log
        r = log.row(tx_id) if log is not None else None
        if log is None or r is None or log.deleted[r]:
            return None
        if revision is None or revision == log.revision[r]:
            return self.tx_detail_json(r)
        old = log.old_versions.get(r, [])
        return copy.deepcopy(old[revision]) if 0 <= revision < len(old) else None

    def now_ms(self) -> int:
        """The team's clock (epoch ms): just after the newest time its data knows, so the demo
        data always end "now" (a basic team's, which has no transactions: the history's end).
        The service states it in each answer's ``Date``; new records are made at it."""
        log = self.log
        if log is None:
            return int(ANCHOR.timestamp() * 1000)
        return max(max(log.time, default=0), max(log.created, default=0)) + 60_000

    # -- mutations (callers hold self.lock) ----------------------------------------------
    def _lines(self, lines) -> list[tuple[int, float]]:
        lines = [(int(i), float(q)) for i, q in lines]
        if not lines:
            raise ValueError("a transaction needs at least one line: lines=[(item_id, qty), ...]")
        for item, _qty in lines:
            self._check(self.items, item, "item")
        return lines

    def _default_lines(self, type_code: int, loc: int, count: int = 2) -> list[tuple[int, float]]:
        if type_code in (IN, ADJUST, COUNT):
            return [(i, 3.0) for i in self.ids("items")[:count]]
        # out/move: items that have stock at the location, one unit each
        have = sorted(
            i
            for (i, at_loc), q in self._tx_log().stock_at.items()
            if at_loc == loc and q >= 1 and not self.items[i]["deleted"]
        )
        if not have:
            raise ValueError(f"no stock at location {loc}; pass lines=[(item_id, qty), ...]")
        return [(i, 1.0) for i in have[:count]]

    def add_transaction(
        self,
        *,
        type: str = "out",  # noqa: A002
        lines=None,
        partner: int | None = None,
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
        back, floor = sorted(self.locations)[:2]  # every shop's locations: back store, floor, ...
        to, frm = floor if to_location is None else to_location, NO_ID
        if code == MOVE:
            frm = back if from_location is None else from_location
            if frm == to:
                raise ValueError("a move needs different from_location and to_location")
        for loc in (frm, to):
            self._check(self.locations, None if loc == NO_ID else loc, "location")
        self._check(self.partners, partner, "partner")
        self._check(self.members, created_by, "member")
        if lines is None:
            lines = self._default_lines(code, frm if code == MOVE else to)
        lines = self._lines(lines)
        created = parse_time(created_at) if created_at is not None else self.now_ms()
        when = parse_time(transaction_time) if transaction_time is not None else created
        if created_by is None:
            staff = self.members.items()
            created_by = min(i for i, m in staff if m["role"] != "viewer" and not m["deleted"])
        partner = NO_ID if partner is None else partner
        tx_id = log.base_id + len(log.row_of_id)
        r = log.append(when, created, code, partner, frm, to, created_by, memo, lines, tx_id=tx_id)
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
        log, r = self._tx_log(), self._live_row(tx_id)
        snapshot = self.tx_detail_json(r)
        if lines is None and memo is ... and partner is ... and transaction_time is None:
            lines = _nudged([(log.l_item[j], log.l_qty[j]) for j in log.lines(r)], log.type[r])
        if lines is not None:
            lines = self._lines(lines)
        if partner is not ...:
            self._check(self.partners, partner, "partner")
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
        log, r = self._tx_log(), self._live_row(tx_id)
        log.remove_live(r)
        log.deleted[r] = 1
        log.replay()

    def _live_row(self, tx_id: int) -> int:
        r = self._tx_log().row(tx_id)
        if r is None or self._tx_log().deleted[r]:
            raise KeyError(f"no live transaction {tx_id} in team {self.key!r}")
        return r

    def edit(self, kind: str, rec_id: int, **changes) -> dict:
        """Change the fields :data:`EDITABLE` lists for ``kind`` (a table's name) of its live
        record ``rec_id``, or delete the record (``deleted=True``). Returns the record as its list
        shows it. Every reference shows it at once: references, item lines and an item's
        attributes are rendered from the record when asked for (older revisions of a transaction
        are kept as they were). No transaction changes, so no ``revision`` does.

        Refused: an unknown or deleted id (``KeyError``); a field ``kind`` does not have, an
        empty name, ``deleted`` other than True, a ``role`` not in :data:`ROLES`, a ``rank`` that
        is not an int, a ``cost`` or ``price`` :func:`~invtools.sandbox.wire.money` refuses
        (``ValueError``). Nothing is changed then.
        """
        noun = _NOUNS[kind]
        if not self.listed(kind, rec_id):
            raise KeyError(f"no live {noun} {rec_id} in team {self.key!r}")
        if unknown := set(changes) - set(EDITABLE[kind]):
            article = "an" if noun[0] in "aeiou" else "a"
            raise ValueError(f"{article} {noun} has no field(s) {sorted(unknown)} to edit")
        for name in {"name", "attr_name"} & changes.keys():
            if not isinstance(changes[name], str) or not changes[name].strip():
                raise ValueError(f"{name} is non-empty text, not {changes[name]!r}")
        if changes.get("deleted", True) is not True:
            raise ValueError(f"deleted=True deletes a {noun} (a deleted one cannot come back)")
        if changes.get("role", ROLES[0]) not in ROLES:
            raise ValueError(f"role is one of {ROLES}, not {changes['role']!r}")
        if type(changes.get("rank", 0)) is not int:
            raise ValueError(f"rank is an int, not {changes['rank']!r}")
        places = self.team.get("price_decimal_places", 2)
        changes.update({f: money(changes[f], places, f) for f in ("cost", "price") if f in changes})
        getattr(self, kind)[rec_id].update(changes)
        return self.record(kind, rec_id)


def _nudged(lines: list[tuple[int, float]], type_code: int) -> list[tuple[int, float]]:
    """``lines`` (changed in place) with one quantity corrected: see ``edit_transaction``."""
    if type_code in (OUT, MOVE):
        for k, (item, qty) in enumerate(lines):
            if qty > 1:
                lines[k] = (item, qty - 1)
                return lines
    item, qty = lines[0]
    lines[0] = (item, qty + 1)
    return lines


def _listed(kind: str, doc: str) -> property:
    """A property of :class:`TeamView`: the listed records of ``kind``, in wire format."""

    def rows(view: TeamView) -> list[dict]:
        return view._store.records(kind)

    return property(rows, doc=doc)


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

    items = _listed("items", "Live items (not deleted) with their current stock, id ascending.")
    locations = _listed("locations", "Locations with their stock, id ascending.")
    partners = _listed("partners", "Live partners, id ascending.")
    members = _listed("members", "Live members, id ascending.")
    attrs = _listed("attrs", "Item attribute definitions, id ascending.")

    @property
    def transactions(self) -> list[dict]:
        """Live transaction rows, newest first (as the list endpoint orders them)."""
        s = self._store
        with s.lock:
            return [s.tx_row_json(r) for r in reversed(s.log.order)] if s.log else []

    def transaction(self, tx_id: int, revision: int | None = None) -> dict | None:
        """A transaction's detail (with lines), or None if it is unknown or deleted."""
        with self._store.lock:
            return self._store.tx_version_json(tx_id, revision)
