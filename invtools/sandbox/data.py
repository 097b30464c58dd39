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
module draws the rest (prices, barcodes, contacts) from seeded generators. Same
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
    BASE_TX_ID,
    CATALOGUE,
    CATEGORIES,
    FIRST,
    LAST,
    LOCATIONS,
    OLD_SUPPLIER,
    SHOP_ATTRS,
    SHOP_MEMBERS,
    SHOP_TEAM,
    START_DAY,
    STREETS,
    SUPPLIERS,
    TRADE_CUSTOMERS,
    TRADE_MEMO,
)
from invtools.sandbox.history import ItemPlan, ShopPlan, simulate
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
PHOTOS = "https://images.example.com/greenfield"
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


def _phone(rng: random.Random) -> str:
    return f"+44 1632 {rng.randint(100000, 999999)}"


def _slug(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())[:18]


def _partner(pid: int, type_: int, name: str, phone, email, address=None, memo=None) -> dict:
    return {
        "id": pid,
        "type": type_,
        "name": name,
        "phone": phone,
        "email": email,
        "address": address,
        "memo": memo,
        "deleted": False,
    }


def _item(iid: int, name: str, sku: str, barcode: str, photo_url, attrs, cost, price) -> dict:
    """An item's record; its cost and price as the API writes money, text with two decimals."""
    return {
        "id": iid,
        "name": name,
        "sku": sku,
        "barcode": barcode,
        "photo_url": photo_url,
        "attrs": attrs,
        "cost": f"{cost:.2f}",
        "price": f"{price:.2f}",
        "deleted": False,
    }


def _address(rng: random.Random, numbers: int, town: str) -> str:
    return f"{rng.randint(1, numbers)} {rng.choice(STREETS)}, {town}"


def _attr_defs(attrs, off: int = 0) -> dict[int, dict]:
    """Item attribute definitions from (id, type, name, rank) rows, their ids shifted by ``off``."""
    return {
        a + off: {"id": a + off, "attr_type": t, "attr_name": n, "rank": r} for a, t, n, r in attrs
    }


def _attr(row: tuple, value, off: int = 0) -> dict:
    """An item's value of the attribute defined by ``row`` (id, type, name, rank)."""
    return {"id": row[0] + off, "type": row[1], "name": row[2], "value": value}


def _members(staff) -> dict[int, dict]:
    """Members from (id, name, role, deleted, ...) rows."""
    return {m[0]: {"id": m[0], "name": m[1], "role": m[2], "deleted": m[3]} for m in staff}


# -- the shop and its branches ---------------------------------------------------------------
def _build_shop(seed: int, size: int, branch: Branch | None = None) -> TeamStore:
    """The shop (``branch=None``) or one of its branches: same catalogue, own everything else."""
    key, town = (branch.key, branch.town) if branch else ("shop", "Leeds")
    off = branch.number * 1_000_000 if branch else 0  # every id of a branch is its own
    rng = random.Random(f"invtools-{key}-{seed}")

    # Partners: suppliers (type 0) then customers (type 1), ids ascending.
    partners: dict[int, dict] = {}

    def add(*fields, **more) -> int:
        pid = 6101 + off + len(partners)
        partners[pid] = _partner(pid, *fields, **more)
        return pid

    suppliers = sorted({s for names in SUPPLIERS.values() for s in names} | {OLD_SUPPLIER})
    supplier_id = {
        name: add(0, name, _phone(rng), f"orders@{_slug(name)}.example", _address(rng, 120, town))
        for name in suppliers
    }
    partners[supplier_id[OLD_SUPPLIER]].update(memo="Account closed", deleted=True)
    trade_ids = [
        add(1, n, _phone(rng), f"accounts@{_slug(n)}.example", _address(rng, 200, town), TRADE_MEMO)
        for n in TRADE_CUSTOMERS
    ]
    walkin_ids = []
    for name in rng.sample(sorted({f"{g} {f}" for g in FIRST for f in LAST}), 34):
        phone = _phone(rng) if rng.random() < 0.7 else None
        given, family = name.split()
        email = f"{given.lower()}.{_slug(family)}@mail.example" if rng.random() < 0.6 else None
        memo = "Loyalty card" if rng.random() < 0.3 else None
        walkin_ids.append(add(1, name, phone, email, memo=memo))
    partners[walkin_ids[-1]]["deleted"] = True  # asked to be forgotten; old sales still refer

    # (id, name, role, deleted, weight as transaction author)
    staff = SHOP_MEMBERS
    named = LOCATIONS
    if branch is not None:
        staff = [
            (7001 + off + k, n, role, False, w) for k, (n, role, w) in enumerate(branch.members)
        ]
        named = [(loc[0], *place) for loc, place in zip(LOCATIONS, branch.locations, strict=True)]
    locations = {loc + off: {"id": loc + off, "name": n, "memo": memo} for loc, n, memo in named}

    def attr(rank: int, value) -> dict:
        return _attr(SHOP_ATTRS[rank - 1], value, off)

    # Items.
    items: dict[int, dict] = {}
    meta: dict[int, ItemPlan] = {}
    iid = first = 100001 + off
    for cat, bases in CATALOGUE.items():
        season, home, fractional, own_brand = CATEGORIES[cat]
        sup_names = SUPPLIERS[cat]
        for base, variants, (c_lo, c_hi), (w_lo, w_hi) in bases:
            for v in variants.split(", "):
                # Each product comes as the shop's standard line and the supplier's brand.
                for brand, factor in (("", 1.0), (own_brand + " ", 1.3)):
                    cost = round(rng.uniform(c_lo, c_hi) * factor, 2)
                    price = round(cost * rng.uniform(1.45, 2.1), 2)
                    supplier = sup_names[0] if brand or rng.random() < 0.7 else sup_names[-1]
                    introduced = START_DAY - timedelta(days=rng.randint(60, 2400))
                    attrs = [attr(1, cat), attr(2, supplier)]
                    if rng.random() < 0.9:
                        attrs.append(attr(3, round(rng.uniform(w_lo, w_hi), 2)))
                    attrs.append(attr(4, introduced.strftime("%Y-%m-%d")))
                    if rng.random() < 0.4:
                        attrs.append(attr(5, _ean13(rng, "9")))
                    barcode = _ean13(rng)
                    photo = f"{PHOTOS}/{iid}.jpg" if rng.random() < 0.35 else None
                    sku = f"GH-{cat[:3].upper()}-{iid - first + 1:04d}"  # as the shop's
                    name = brand + base.format(v=v)
                    items[iid] = _item(iid, name, sku, barcode, photo, attrs, cost, price)
                    meta[iid] = ItemPlan(season, home + off, fractional, supplier_id[supplier])
                    iid += 1
    store = TeamStore(
        key=key,
        team=dict(SHOP_TEAM) if branch is None else branch_team(branch),
        items=items,
        locations=locations,
        partners=partners,
        members=_members(staff),
        attrs=_attr_defs(SHOP_ATTRS, off),
        log=TxLog(BASE_TX_ID + 10 * off),
    )
    authors = [(m[0], m[4]) for m in staff if m[4]]
    leaver = next((m[0] for m in staff if m[3]), None)
    plan = ShopPlan(meta, trade_ids, walkin_ids, authors, leaver)
    simulate(store, rng, plan, seed=seed, size=size)
    return store


# -- the café (basic mode) -------------------------------------------------------------------
def _build_basic(seed: int) -> TeamStore:
    rng = random.Random(f"invtools-basic-{seed}")
    items = {}
    for iid, (name, cat, cost) in enumerate(CAFE_ITEMS, start=200001):
        c = round(cost * rng.uniform(0.9, 1.1), 2)
        barcode = _ean13(rng)
        attrs = [_attr(CAFE_ATTRS[0], cat), _attr(CAFE_ATTRS[1], rng.choice((3, 7, 30, 180, 365)))]
        items[iid] = _item(iid, name, f"CC-{iid - 200000:03d}", barcode, None, attrs, c, c * 1.6)
    named = [(ptype, name) for ptype, names in CAFE_PARTNERS.items() for name in names]
    partners = {
        pid: _partner(pid, ptype, name, _phone(rng), f"hello@{_slug(name)}.example")
        for pid, (ptype, name) in enumerate(named, start=6601)
    }
    return TeamStore(
        key="basic",
        team=dict(BASIC_TEAM),
        items=items,
        locations={},
        partners=partners,
        members=_members(CAFE_MEMBERS),
        attrs=_attr_defs(CAFE_ATTRS),
        log=None,
    )
