"""The shop's simulated history: about 18 months of a small business, ending at ``ANCHOR``.

Sales leave the shop floor (weekday/weekend rhythm, seasonal categories), shelves are refilled
by moves from the back store or a warehouse, warehouses are restocked by supplier deliveries
when they run low (a few items are on supplier backorder for weeks and sit at zero), cycle
counts adjust stock with signed quantities. Then a few dozen transactions are marked backdated
(recorded days later), a few dozen edited (older revisions kept) and a few deleted (duplicates).
Stock never goes negative, and every level comes from replaying the history
(:meth:`invtools.sandbox.txlog.TxLog.replay`).

Everything is drawn from one seeded generator, in a fixed order: same seed and size, same
history. :mod:`invtools.sandbox.data` builds the shop's records and the :class:`ShopPlan`; the
simulation draws the rest (popularity, the items on backorder and the discontinued ones).
"""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from itertools import accumulate
from typing import NamedTuple

from invtools.sandbox.catalogue import (
    ANCHOR,
    DAYS,
    MONTH_TRAFFIC,
    SEASONS,
    START_DAY,
    WEEKDAY_TRAFFIC,
)
from invtools.sandbox.store import TeamStore
from invtools.sandbox.txlog import ADJUST, IN, MOVE, NO_ID, OUT, TxLog

__all__ = ["ItemPlan", "ShopPlan", "simulate"]

DAY_MS = 86_400_000
# Lookup tables for hot-loop draws: lines per sale (50/30/15/5 %), units per sale line.
N_LINES = [1] * 50 + [2] * 30 + [3] * 15 + [4] * 5
SALE_QTY = [1] * 70 + [2] * 22 + [3] * 8
COUNT_MEMOS = ("Cycle count", "Cycle count", "Damaged in storage", "Found in stocktake")


class ItemPlan(NamedTuple):
    """How an item moves: its category's season, its home location (where deliveries go), whether
    it is sold in fractions, and its supplier (a partner id)."""

    season: str
    home: int
    fractional: bool
    supplier: int


@dataclass
class ShopPlan:
    """What the simulation knows of the shop beyond its records."""

    items: dict[int, ItemPlan]
    trade_ids: list[int]  # trade customers (partners)
    walkin_ids: list[int]  # walk-in customers with a loyalty record (partners)
    authors: list[tuple[int, int]]  # (member id, weight as a transaction's author)
    leaver: int | None  # a member who leaves after the first third of the history, if any


def simulate(store: TeamStore, rng: random.Random, plan: ShopPlan, *, seed: int, size: int) -> None:
    """Write the shop's history into ``store.log``: ``size`` live transactions, replayed, then
    a few backdated and a few edited ones; a few discontinued items are deleted at the end.
    ``rng`` continues the shop's seeded generator. The store's four locations are, in order,
    the back store, the shop floor and the two warehouses."""
    log = store.log
    assert log is not None, "simulate() needs a store with a transaction log"
    meta, trade_ids, walkin_ids = plan.items, plan.trade_ids, plan.walkin_ids
    back, floor, wh_n, wh_s = store.locations
    item_ids = list(store.items)
    # Popularity: a long tail (a few best sellers, many slow movers).
    pop = {i: 1.0 / (rank + 3) ** 0.9 for rank, i in enumerate(rng.sample(item_ids, len(item_ids)))}
    for i in rng.sample(item_ids, 12):  # the slowest movers
        pop[i] = 0.002
    discontinued = set(rng.sample(item_ids, 4))  # no restocks after mid-history, then deleted
    backorder = {i: _window(rng) for i in rng.sample(item_ids, 6)}  # supplier out of stock
    start_ms = int(START_DAY.timestamp() * 1000)

    # Expected sale units per item per day sets shelf sizes and order quantities, so the
    # shop behaves the same (restock rhythm, stock-outs) at any size.
    total_pop = sum(pop.values())
    daily_units = {i: size * 0.72 * 1.8 * 1.6 * pop[i] / total_pop / DAYS for i in item_ids}
    shelf_cap = {i: max(4, round(daily_units[i] * 8)) for i in item_ids}
    shelf_low = {i: max(1, round(daily_units[i] * 2.5)) for i in item_ids}
    order_qty = {i: max(10, round(daily_units[i] * 40)) for i in item_ids}
    reorder_at = {i: max(3, round(daily_units[i] * 12)) for i in item_ids}

    # Event days (all but the four opening stock counts): weighted by weekday and month
    # traffic, times within opening hours.
    dates = [START_DAY + timedelta(days=d) for d in range(DAYS)]
    day_weight = [WEEKDAY_TRAFFIC[date.weekday()] * MONTH_TRAFFIC[date.month - 1] for date in dates]
    days = sorted(rng.choices(range(DAYS), cum_weights=list(accumulate(day_weight)), k=size - 4))
    times = []
    prev = start_ms + 7 * 3_600_000  # the opening counts happen before 07:00 on day 0
    rand = rng.random  # hot loop: int(rand() * n) is several times cheaper than randint
    for d in days:
        t = start_ms + d * DAY_MS + (8 * 3600 + int(rand() * 36000)) * 1000
        # strictly increasing and at least 2 s apart: no ties in (time, id) order
        prev = t if t > prev + 2000 else prev + 2000
        times.append(prev)

    # Sale weights per month (popularity x category season), as cumulative weights.
    cum_by_month = [
        list(accumulate(pop[i] * SEASONS[meta[i].season][m] for i in item_ids)) for m in range(12)
    ]

    stock: dict[tuple[int, int], float] = defaultdict(float)  # units per (item, location)

    # Authors as a lookup table (one draw per transaction); the shop's Sam Doyle leaves after
    # a third of the history.
    authors_all = [mid for mid, w in plan.authors for _ in range(w)]
    authors_later = [mid for mid in authors_all if mid != plan.leaver]

    def emit(t: int, type_code: int, to: int, lines, *, frm=NO_ID, partner=NO_ID, memo=None, day=0):
        pool = authors_all if day <= DAYS // 3 else authors_later
        created = t + (5 + int(rand() * 86)) * 1000
        creator = pool[int(rand() * len(pool))]
        return log.append(t, created, type_code, partner, frm, to, creator, memo, lines)

    # Opening stock counts: shelf full, home location holds one order's worth.
    for k, loc in enumerate((back, floor, wh_n, wh_s)):
        lines = []
        for i in item_ids:
            units = shelf_cap[i] if loc == floor else (order_qty[i] if meta[i].home == loc else 0)
            if units:
                stock[(i, loc)] = float(units)
                lines.append((i, float(units)))
        emit(start_ms + (6 * 60 + 10 * k) * 60_000, ADJUST, loc, lines, memo="Opening stocktake")

    pending_moves: dict[int, None] = {}  # insertion-ordered set of items to refill
    orders: dict[tuple[int, int, bool], dict[int, float]] = {}  # open purchase orders
    arrivals: list[tuple[int, int, int, bool]] = []  # heap of (due ms, supplier, loc, backorder)
    on_order: set[int] = set()
    po_number = 4100

    def need_refill(i: int) -> None:
        if stock[(i, floor)] <= shelf_low[i] and i not in pending_moves:
            pending_moves[i] = None

    def check_reorder(i: int, t: int, day: int) -> None:
        if i in on_order or (i in discontinued and day > DAYS // 2):
            return
        held = sum(stock[(i, loc)] for loc in (back, wh_n, wh_s))
        if held > reorder_at[i]:
            return
        win = backorder.get(i)
        late = bool(win and win[0] <= day < win[1])
        key = (meta[i].supplier, meta[i].home, late)
        if key not in orders:
            orders[key] = {}
            due_day = (win[1] if win is not None and late else day) + rng.randint(2, 5)
            heapq.heappush(
                arrivals, (start_ms + due_day * DAY_MS + rng.randint(7, 9) * 3_600_000, *key)
            )
        orders[key][i] = float(order_qty[i])
        on_order.add(i)

    for t in times:
        day = (t - start_ms) // DAY_MS
        month = dates[min(day, DAYS - 1)].month - 1
        if arrivals and arrivals[0][0] <= t:
            _, sup, loc, late = heapq.heappop(arrivals)
            lines = list(orders.pop((sup, loc, late)).items())
            for i, q in lines:
                stock[(i, loc)] += q
                on_order.discard(i)
                need_refill(i)
            po_number += 1
            emit(t, IN, loc, lines, partner=sup, memo=f"PO-{po_number}", day=day)
            continue
        if pending_moves and (len(pending_moves) >= 4 or rand() < 0.35):
            first = next(iter(pending_moves))
            src = max((back, wh_n, wh_s), key=lambda loc: stock[(first, loc)])
            lines = []
            for i in list(pending_moves)[:12]:
                have = stock[(i, src)]
                q = min(have, shelf_cap[i] - stock[(i, floor)])  # what the shelf has room for
                if meta[i].fractional:
                    q = float(int(q))
                if q <= 0:
                    if i == first or have <= 0:
                        del pending_moves[i]  # nothing to move from here; a delivery re-queues it
                    continue
                lines.append((i, q))
                del pending_moves[i]
                if len(lines) == 6:
                    break
            if lines:
                for i, q in lines:
                    stock[(i, src)] -= q
                    stock[(i, floor)] += q
                    check_reorder(i, t, day)
                emit(t, MOVE, floor, lines, frm=src, memo="Shelf refill", day=day)
                continue
        if rand() < 0.03:
            loc = rng.choice((back, floor, wh_n, wh_s))
            lines = []
            for i in rng.sample(item_ids, 3):
                have = stock[(i, loc)]
                delta = max(float(rng.choice((-2, -1, -1, 1))), -have)  # never below zero
                if delta:
                    stock[(i, loc)] = have + delta
                    lines.append((i, delta))
                    need_refill(i)
            if lines:
                emit(t, ADJUST, loc, lines, memo=rng.choice(COUNT_MEMOS), day=day)
                continue
        # A sale: mostly walk-in at the shop floor, sometimes a trade order from a warehouse.
        trade = rand() < 0.08
        n_lines = N_LINES[int(rand() * 100)]
        picks = rng.choices(item_ids, cum_weights=cum_by_month[month], k=n_lines + 2)
        lines, seen = [], set()
        for i in picks:
            if i in seen or len(lines) == n_lines:
                continue
            seen.add(i)
            have = stock[(i, meta[i].home if trade else floor)]
            want: float = 4 + int(rand() * 17) if trade else SALE_QTY[int(rand() * 100)]
            if meta[i].fractional:
                want = rng.choice((1.5, 2.0, 2.5, 3.0, 5.0, 10.0))
            q = min(float(want), have)
            if q <= 0:
                continue
            lines.append((i, q))
        src = floor
        if trade:  # one location per transaction: keep lines from the first line's location
            src = meta[lines[0][0]].home if lines else wh_n
            lines = [(i, q) for i, q in lines if meta[i].home == src]
        if not lines:
            # Everything picked was sold out: the customer bought one unit of the best stocked
            # item on the floor instead.
            i = max(item_ids, key=lambda x: (stock[(x, floor)], -x))
            src, lines = floor, [(i, min(1.0, stock[(i, floor)]))]
        for i, q in lines:
            stock[(i, src)] -= q
            need_refill(i)
            if src != floor:
                check_reorder(i, t, day)
        partner = (
            rng.choice(trade_ids)
            if trade
            else (walkin_ids[int(rand() * len(walkin_ids))] if rand() < 0.25 else NO_ID)
        )
        memo = "Trade account" if trade else (None if rand() < 0.85 else "Card payment")
        r = emit(t, OUT, src, lines, partner=partner, memo=memo, day=day)
        if rand() < 0.0012:
            # A duplicate entered by mistake and deleted a minute later (never counted).
            creator = log.creator[r]
            log.append(t + 1000, t + 60_000, OUT, partner, NO_ID, src, creator, memo, lines, True)

    _mark_backdated(log, rng, size)
    if log.finish():  # the simulation keeps stock >= 0; replay must agree
        raise RuntimeError(f"demo data for seed {seed} went below zero stock: a bug")
    _mark_edited(store, rng, size)
    for i in discontinued:
        store.items[i]["deleted"] = True


def _window(rng: random.Random) -> tuple[int, int]:
    """A backorder window (day numbers) during which a supplier cannot deliver an item."""
    a = rng.randint(60, DAYS - 120)
    return a, a + rng.randint(25, 60)


def _mark_backdated(log: TxLog, rng: random.Random, size: int) -> None:
    """Deliveries and counts recorded days after they happened (created_at >> time)."""
    end_ms = int(ANCHOR.timestamp() * 1000)
    candidates = [
        r
        for r in range(4, len(log.time))
        if log.type[r] in (IN, ADJUST) and not log.deleted[r] and log.time[r] < end_ms - 14 * DAY_MS
    ]
    for r in rng.sample(candidates, min(len(candidates), max(24, size // 150))):
        log.created[r] = log.time[r] + rng.randint(2, 12) * DAY_MS + rng.randint(1, 5) * 3_600_000
        log.memo[r] = (log.memo.get(r, "") + " (entered late from the paper note)").strip()


def _mark_edited(store: TeamStore, rng: random.Random, size: int) -> None:
    """Give a few dozen transactions earlier revisions: a corrected quantity or memo.

    The current version is the simulated one, so stock stays valid; each older version is
    what was on record before the correction (its levels shifted by the corrected amount).
    """
    log = store.log
    assert log is not None
    candidates = [r for r in log.order[4:] if log.type[r] in (IN, OUT)]
    for r in rng.sample(candidates, min(len(candidates), max(30, size // 130))):
        current = store.tx_detail_json(r)
        memo_fixed = rng.random() < 0.25  # two edits: a memo fix after the quantity fix
        versions = [_with_other_quantity(current, rng)]
        if memo_fixed:
            versions.append(dict(current, memo=None if current["memo"] else "tbc"))
        for rev, v in enumerate(versions):
            v["revision"] = rev
        log.old_versions[r] = versions
        log.revision[r] = len(versions)


def _with_other_quantity(detail: dict, rng: random.Random) -> dict:
    old = {**detail, "items": [dict(line) for line in detail["items"]]}
    line = rng.choice(old["items"])
    # in: the delivery note first said more; out: the till first said fewer. Either way the
    # old version's levels were higher than now, so they never were negative.
    extra = rng.choice((1, 2, 5)) if detail["type"] == "in" else 0
    if detail["type"] == "out":
        if line["quantity"] <= 1:
            return {**detail, "memo": "tbc", "items": old["items"]}
        extra = -1
    line["quantity"] += extra
    shift = extra if detail["type"] == "in" else -extra
    line["new_stock_level"] += shift
    line["to_location_new_stock_level"] += shift
    old["total_quantity"] += extra
    return old
