"""Seeded, deterministic demo data for the stand-in server: the demo teams' records.

The teams:

* ``shop`` — "Greenfield Hardware & Garden", location mode (2): four locations, 320 items in
  eight categories with item attributes, suppliers and customers, members, and about 18 months
  of simulated transactions ending at :data:`~invtools.sandbox.catalogue.ANCHOR` (never wall
  time; the simulation is :mod:`invtools.sandbox.history`).
* ``basic`` — "Corner Café", basic mode (0): a small catalogue, partners, members, attributes.
* with ``shops=N`` (default 1), the shop's first N-1 branches
  (:data:`~invtools.sandbox.teams.BRANCHES`: ``harrogate``, ``york``, ...), location mode:
  the same catalogue and suppliers, each with its own seeded prices, popularity, customers and
  history, its own size (a fraction of the shop's), locations, members and ids.

The fixed data (names, catalogue, locations, ...) is :mod:`invtools.sandbox.catalogue`; this
module draws the rest (prices, barcodes, contacts, popularity) from seeded generators. Same
``seed`` and ``size`` -> identical data; ``size`` is the number of live transactions of the
shop (default :data:`DEFAULT_SIZE`).

>>> stores = build(seed=0, size=300)
>>> stores["shop"].team["mode"], len(stores["shop"].log), stores["basic"].team["mode"]
(2, 300, 0)
>>> branches = build(seed=0, size=300, shops=3)
>>> list(branches), len(branches["york"].log), branches["york"].team["name"]
(['shop', 'basic', 'harrogate', 'york'], 165, 'Greenfield Hardware & Garden (York)')
"""

from __future__ import annotations

import random
from datetime import timedelta

from invtools.sandbox.catalogue import (
    ANCHOR,
    BASE_TX_ID,
    BRANDS,
    CATALOGUE,
    DAYS,
    FIRST,
    LAST,
    LOCATIONS,
    OLD_SUPPLIER,
    SHOP_ATTRS,
    SHOP_MEMBERS,
    SHOP_TEAM,
    STREETS,
    SUPPLIERS,
    TRADE_CUSTOMERS,
)
from invtools.sandbox.history import ShopPlan, simulate
from invtools.sandbox.store import TeamStore
from invtools.sandbox.teams import (
    BASIC_TEAM,
    BRANCHES,
    CAFE_ATTRS,
    CAFE_ITEMS,
    CAFE_MEMBERS,
    CAFE_PARTNERS,
    Branch,
    branch_team,
)
from invtools.sandbox.txlog import TxLog

__all__ = ["build", "DEFAULT_SIZE", "MAX_SHOPS"]

DEFAULT_SIZE = 4000
#: The most location-mode teams :func:`build` makes: the shop and its branches.
MAX_SHOPS = 1 + len(BRANCHES)


def build(seed: int = 0, size: int | None = None, shops: int = 1) -> dict[str, TeamStore]:
    """The demo teams, keyed ``"shop"`` (location mode), ``"basic"`` (basic mode) and, with
    ``shops`` > 1, the shop's first ``shops - 1`` branches (location mode) by their keys.
    Adding branches changes nothing of the shop's or the café's data.

    >>> a, b = build(seed=1, size=200), build(seed=1, size=200, shops=2)
    >>> a["shop"].tx_detail_json(0) == b["shop"].tx_detail_json(0)
    True
    """
    size = DEFAULT_SIZE if size is None else int(size)
    if size < 50:
        raise ValueError(f"size is the number of shop transactions and must be >= 50, not {size}")
    if isinstance(shops, bool) or not isinstance(shops, int) or not 1 <= shops <= MAX_SHOPS:
        raise ValueError(
            f"shops is how many location-mode demo teams to serve, from 1 to "
            f"{MAX_SHOPS} (the shop and its branches), not {shops!r}"
        )
    stores = {"shop": _build_shop(seed, size), "basic": _build_basic(seed)}
    for branch in BRANCHES[: shops - 1]:
        stores[branch.key] = _build_shop(seed, max(50, round(size * branch.size)), branch)
    return stores


# -- helpers ---------------------------------------------------------------------------------
def _ean13(rng: random.Random, prefix: str = "50") -> str:
    digits = prefix + "".join(rng.choice("0123456789") for _ in range(12 - len(prefix)))
    check = (10 - sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10) % 10
    return digits + str(check)


def _money(x: float) -> str:
    return f"{x:.2f}"


def _phone(rng: random.Random) -> str:
    return f"+44 1632 {rng.randint(100000, 999999)}"


def _slug(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())[:18]


# -- the shop and its branches ---------------------------------------------------------------
def _build_shop(seed: int, size: int, branch: Branch | None = None) -> TeamStore:
    """The shop (``branch=None``) or one of its branches: same catalogue, own everything else."""
    key, town = (branch.key, branch.town) if branch else ("shop", "Leeds")
    off = branch.number * 1_000_000 if branch else 0  # every id of a branch is its own
    rng = random.Random(f"invtools-{key}-{seed}")
    start_day = ANCHOR.replace(hour=0) - timedelta(days=DAYS - 1)

    # Partners: suppliers (type 0) then customers (type 1), ids ascending.
    partners: dict[int, dict] = {}
    supplier_id: dict[str, int] = {}
    pid = 6101 + off
    for name in sorted({s for names in SUPPLIERS.values() for s in names} | {OLD_SUPPLIER}):
        partners[pid] = {
            "id": pid,
            "type": 0,
            "name": name,
            "phone": _phone(rng),
            "email": f"orders@{_slug(name)}.example",
            "address": f"{rng.randint(1, 120)} {rng.choice(STREETS)}, {town}",
            "memo": "Account closed" if name == OLD_SUPPLIER else None,
            "deleted": name == OLD_SUPPLIER,
        }
        supplier_id[name] = pid
        pid += 1
    trade_ids, walkin_ids = [], []
    for name in TRADE_CUSTOMERS:
        partners[pid] = {
            "id": pid,
            "type": 1,
            "name": name,
            "phone": _phone(rng),
            "email": f"accounts@{_slug(name)}.example",
            "address": f"{rng.randint(1, 200)} {rng.choice(STREETS)}, {town}",
            "memo": "Trade account, 30 days",
            "deleted": False,
        }
        trade_ids.append(pid)
        pid += 1
    people = sorted({f"{given} {family}" for given in FIRST for family in LAST})
    for name in rng.sample(people, 34):
        partners[pid] = {
            "id": pid,
            "type": 1,
            "name": name,
            "phone": _phone(rng) if rng.random() < 0.7 else None,
            "email": (
                f"{name.split()[0].lower()}.{_slug(name.split()[1])}@mail.example"
                if rng.random() < 0.6
                else None
            ),
            "address": None,
            "memo": "Loyalty card" if rng.random() < 0.3 else None,
            "deleted": False,
        }
        walkin_ids.append(pid)
        pid += 1
    partners[walkin_ids[-1]]["deleted"] = True  # asked to be forgotten; old sales still refer

    # (id, name, role, deleted, weight as transaction author)
    staff = (
        SHOP_MEMBERS
        if branch is None
        else [
            (7001 + off + k, name, role, False, weight)
            for k, (name, role, weight) in enumerate(branch.members)
        ]
    )
    members = {m[0]: {"id": m[0], "name": m[1], "role": m[2], "deleted": m[3]} for m in staff}
    attrs = {
        a[0] + off: {"id": a[0] + off, "attr_type": a[1], "attr_name": a[2], "rank": a[3]}
        for a in SHOP_ATTRS
    }
    named = (
        LOCATIONS
        if branch is None
        else [
            (loc[0], name, memo)
            for loc, (name, memo) in zip(LOCATIONS, branch.locations, strict=True)
        ]
    )
    locations = {
        loc + off: {"id": loc + off, "name": name, "memo": memo} for loc, name, memo in named
    }
    a = 9100 + off  # item attribute ids: a + rank

    # Items.
    items: dict[int, dict] = {}
    meta: dict[int, dict] = {}  # simulation parameters per item
    iid = first = 100001 + off
    for cat, (season, home, fractional, bases) in CATALOGUE.items():
        sup_names = SUPPLIERS[cat]
        for base, variants, (c_lo, c_hi), (w_lo, w_hi) in bases:
            for v in variants:
                # Each product comes as the shop's standard line and the supplier's brand.
                for brand, factor in (("", 1.0), (BRANDS[cat] + " ", 1.3)):
                    name = brand + base.format(v=v)
                    cost = round(rng.uniform(c_lo, c_hi) * factor, 2)
                    price = round(cost * rng.uniform(1.45, 2.1), 2)
                    supplier = sup_names[0] if brand or rng.random() < 0.7 else sup_names[-1]
                    introduced = start_day - timedelta(days=rng.randint(60, 2400))
                    attr_vals = [
                        {"id": a + 1, "type": "text", "name": "Category", "value": cat},
                        {"id": a + 2, "type": "text", "name": "Supplier", "value": supplier},
                    ]
                    if rng.random() < 0.9:
                        attr_vals.append(
                            {
                                "id": a + 3,
                                "type": "number",
                                "name": "Weight (kg)",
                                "value": round(rng.uniform(w_lo, w_hi), 2),
                            }
                        )
                    attr_vals.append(
                        {
                            "id": a + 4,
                            "type": "date",
                            "name": "Introduced",
                            "value": introduced.strftime("%Y-%m-%d"),
                        }
                    )
                    if rng.random() < 0.4:
                        attr_vals.append(
                            {
                                "id": a + 5,
                                "type": "barcode",
                                "name": "Case barcode",
                                "value": _ean13(rng, "9"),
                            }
                        )
                    items[iid] = {
                        "id": iid,
                        "name": name,
                        "sku": f"GH-{cat[:3].upper()}-{iid - first + 1:04d}",  # as the shop's
                        "barcode": _ean13(rng),
                        "photo_url": (
                            f"https://images.example.com/greenfield/{iid}.jpg"
                            if rng.random() < 0.35
                            else None
                        ),
                        "attrs": attr_vals,
                        "cost": _money(cost),
                        "price": _money(price),
                        "deleted": False,
                    }
                    meta[iid] = {
                        "season": season,
                        "home": home + off,
                        "fractional": fractional,
                        "supplier": supplier_id[supplier],
                    }
                    iid += 1
    item_ids = list(items)
    # Popularity: a long tail (a few best sellers, many slow movers).
    pop = {i: 1.0 / (rank + 3) ** 0.9 for rank, i in enumerate(rng.sample(item_ids, len(item_ids)))}
    for i in rng.sample(item_ids, 12):  # the slowest movers
        pop[i] = 0.002
    discontinued = set(rng.sample(item_ids, 4))  # no restocks after mid-history, then deleted
    backorder = {i: _window(rng) for i in rng.sample(item_ids, 6)}  # supplier out of stock

    team = dict(SHOP_TEAM) if branch is None else branch_team(branch)
    store = TeamStore(
        key=key,
        team=team,
        items=items,
        locations=locations,
        partners=partners,
        members=members,
        attrs=attrs,
        log=TxLog(BASE_TX_ID + 10 * off),
    )
    plan = ShopPlan(
        start_day=start_day,
        meta=meta,
        pop=pop,
        discontinued=discontinued,
        backorder=backorder,
        trade_ids=trade_ids,
        walkin_ids=walkin_ids,
        locations=tuple(locations),
        authors=[(m[0], m[4]) for m in staff if m[4]],
        leaver=next((m[0] for m in staff if m[3]), None),
    )
    simulate(store, rng, plan, seed=seed, size=size)
    for i in discontinued:
        items[i]["deleted"] = True
    return store


def _window(rng: random.Random) -> tuple[int, int]:
    """A backorder window (day numbers) during which a supplier cannot deliver an item."""
    a = rng.randint(60, DAYS - 120)
    return a, a + rng.randint(25, 60)


# -- the café (basic mode) -------------------------------------------------------------------
def _build_basic(seed: int) -> TeamStore:
    rng = random.Random(f"invtools-basic-{seed}")
    attrs = {
        a[0]: {"id": a[0], "attr_type": a[1], "attr_name": a[2], "rank": a[3]} for a in CAFE_ATTRS
    }
    items = {}
    for k, (name, cat, cost) in enumerate(CAFE_ITEMS):
        iid = 200001 + k
        c = round(cost * rng.uniform(0.9, 1.1), 2)
        items[iid] = {
            "id": iid,
            "name": name,
            "sku": f"CC-{k + 1:03d}",
            "barcode": _ean13(rng),
            "photo_url": None,
            "attrs": [
                {"id": 9201, "type": "text", "name": "Category", "value": cat},
                {
                    "id": 9202,
                    "type": "number",
                    "name": "Shelf life (days)",
                    "value": rng.choice((3, 7, 30, 180, 365)),
                },
            ],
            "cost": _money(c),
            "price": _money(c * 1.6),
            "deleted": False,
        }
    partners = {}
    for k, (ptype, name) in enumerate(CAFE_PARTNERS):
        pid = 6601 + k
        partners[pid] = {
            "id": pid,
            "type": ptype,
            "name": name,
            "phone": _phone(rng),
            "email": f"hello@{_slug(name)}.example",
            "address": None,
            "memo": None,
            "deleted": False,
        }
    members = {
        m[0]: {"id": m[0], "name": m[1], "role": m[2], "deleted": False} for m in CAFE_MEMBERS
    }
    return TeamStore(
        key="basic",
        team=dict(BASIC_TEAM),
        items=items,
        locations={},
        partners=partners,
        members=members,
        attrs=attrs,
        log=None,
    )
