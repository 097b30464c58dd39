"""Seeded, deterministic demo data for the stand-in server.

Two teams:

* ``shop`` — "Greenfield Hardware & Garden", location mode (2): four locations, 320 items in
  eight categories with item attributes, suppliers and customers, members, and about 18 months
  of transactions ending at :data:`ANCHOR` (never wall time). The history is *simulated*:
  sales leave the shop floor (weekday/weekend rhythm, seasonal categories), shelves are
  refilled by moves from the back store or a warehouse, warehouses are restocked by supplier
  deliveries when they run low (a few items are on supplier backorder for weeks and sit at
  zero), cycle counts adjust stock with signed quantities. Then a few dozen transactions are
  marked backdated (recorded days later), a few dozen edited (older revisions kept) and a few
  deleted (duplicates). Stock never goes negative, and every level comes from replaying the
  history (:meth:`invtools.sandbox.store.TxLog.replay`).
* ``basic`` — "Corner Café", basic mode (0): a small catalogue, partners, members, attributes.

Same ``seed`` and ``size`` -> identical data; ``size`` is the number of live transactions of
the shop (default :data:`DEFAULT_SIZE`).

>>> stores = build(seed=0, size=300)
>>> stores["shop"].team["mode"], len(stores["shop"].log), stores["basic"].team["mode"]
(2, 300, 0)
"""

from __future__ import annotations

import heapq
import random
from datetime import datetime, timedelta, timezone
from itertools import accumulate

from invtools.sandbox.store import ADJUST, IN, MOVE, NO_ID, OUT, TeamStore, TxLog

DEFAULT_SIZE = 4000
#: The end of the demo history (business hours end on this day); the data's own "now".
ANCHOR = datetime(2026, 10, 31, 18, 0, tzinfo=timezone.utc)
DAYS = 549  # about 18 months: 2025-04-30 .. 2026-10-31

SHOP_TEAM_ID = 48213
BASIC_TEAM_ID = 51877

# Location ids, names, memos.
LOCATIONS = [
    (3101, "Back store", "Behind the tills; small parts and fasteners"),
    (3102, "Shop floor", None),
    (3103, "Warehouse North", "Unit 4, Mill Lane"),
    (3104, "Warehouse South", "Unit 9, Station Road"),
]
BACK, FLOOR, WH_N, WH_S = (loc[0] for loc in LOCATIONS)

# Seasonal demand multipliers per month (Jan..Dec).
SEASONS = {
    "steady": [1.0] * 12,
    "garden": [0.25, 0.35, 0.9, 1.7, 2.2, 2.1, 1.9, 1.4, 0.9, 0.5, 0.25, 0.25],
    "winter": [2.2, 1.8, 0.9, 0.3, 0.1, 0.05, 0.05, 0.1, 0.3, 0.9, 1.8, 2.4],
    "paint": [0.6, 0.7, 1.0, 1.3, 1.5, 1.4, 1.2, 1.1, 1.1, 0.9, 0.7, 0.6],
}
# Overall shop traffic per month and per weekday (Mon..Sun): busy spring Saturdays.
MONTH_TRAFFIC = [0.7, 0.75, 0.95, 1.2, 1.35, 1.25, 1.15, 1.05, 1.0, 0.9, 0.8, 0.9]
WEEKDAY_TRAFFIC = [1.0, 0.95, 0.95, 1.0, 1.15, 1.5, 0.45]

# category -> (season, home location, fractional?, [(base name, variants, cost range, kg range)])
CATALOGUE = {
    "Garden": ("garden", WH_S, False, [
        ("Potting Compost {v}", ["20L", "40L", "70L"], (3.2, 9.5), (8, 30)),
        ("Garden Hose {v}", ["15m", "25m", "50m"], (9, 38), (1.5, 6)),
        ("Hose Connector {v}", ["1/2in", "3/4in", "Quick-click"], (1.2, 4.5), (0.05, 0.2)),
        ("Lawn Seed {v}", ["1kg", "2.5kg", "5kg", "Shade mix 1kg"], (6, 32), (1, 5)),
        ("Rose Fertiliser {v}", ["1kg", "3kg"], (4, 11), (1, 3)),
        ("Terracotta Pot {v}", ["15cm", "20cm", "30cm", "40cm"], (2, 19), (0.6, 7)),
        ("Seed Packet {v}", ["Tomato", "Basil", "Sunflower", "Carrot", "Lettuce", "Sweet Pea",
                             "Courgette", "Marigold"], (0.6, 1.4), (0.02, 0.05)),
        ("Pruning Shears {v}", ["Bypass", "Anvil", "Long reach"], (8, 29), (0.2, 0.9)),
        ("Watering Can {v}", ["5L", "10L"], (4, 12), (0.5, 1.1)),
        ("Slug Pellets {v}", ["350g", "800g"], (3, 6.5), (0.35, 0.8)),
        ("Bark Mulch {v}", ["50L", "100L"], (4.5, 8), (12, 22)),
        ("Garden Gloves {v}", ["S", "M", "L", "XL"], (2.5, 6), (0.1, 0.15)),
    ]),
    "Tools": ("steady", WH_N, False, [
        ("Claw Hammer {v}", ["16oz", "20oz"], (7, 16), (0.6, 0.8)),
        ("Screwdriver Set {v}", ["6pc", "12pc", "Precision 8pc"], (6, 24), (0.4, 1.2)),
        ("Tape Measure {v}", ["5m", "8m", "10m"], (3.5, 11), (0.2, 0.4)),
        ("Spirit Level {v}", ["600mm", "1200mm"], (8, 24), (0.5, 1.1)),
        ("Hand Saw {v}", ["450mm", "550mm"], (9, 17), (0.5, 0.7)),
        ("Utility Knife {v}", ["Standard", "Folding", "Spare blades 10pk"], (2, 9), (0.05, 0.2)),
        ("Adjustable Spanner {v}", ["150mm", "250mm", "300mm"], (6, 15), (0.2, 0.6)),
        ("Drill Bit Set {v}", ["HSS 13pc", "Masonry 5pc", "Wood 8pc"], (7, 22), (0.3, 0.6)),
        ("Cordless Drill {v}", ["18V", "18V Combi Kit"], (45, 95), (1.4, 2.2)),
        ("Pliers {v}", ["Combination", "Long nose", "Side cutters"], (5, 12), (0.2, 0.3)),
        ("Stepladder {v}", ["3 tread", "5 tread"], (28, 55), (4, 7)),
    ]),
    "Fasteners": ("steady", BACK, False, [
        ("Wood Screws {v} (200)", ["3x20mm", "3.5x30mm", "4x40mm", "4x50mm", "5x60mm",
                                   "5x80mm"], (2.5, 7.5), (0.3, 0.9)),
        ("Wall Plugs {v} (100)", ["Red 5mm", "Brown 7mm", "Blue 10mm"], (1.5, 3.5), (0.05, 0.2)),
        ("Nails {v} (1kg)", ["Round 50mm", "Round 75mm", "Oval 40mm", "Panel pins 25mm"],
         (2.5, 5), (1, 1)),
        ("Coach Bolt {v} (10)", ["M8x60", "M10x100"], (3, 6.5), (0.3, 0.7)),
        ("Hinge {v} (pair)", ["75mm Brass", "100mm Steel", "Concealed"], (2.5, 8), (0.1, 0.3)),
        ("Cable Ties {v} (100)", ["100mm", "200mm", "300mm"], (1.2, 4), (0.05, 0.2)),
    ]),
    "Paint": ("paint", WH_N, False, [
        ("Emulsion Paint {v} 2.5L", ["Brilliant White", "Magnolia", "Sage Green", "Dove Grey",
                                      "Duck Egg"], (11, 24), (3, 3.5)),
        ("Exterior Masonry Paint {v} 5L", ["White", "Cream", "Stone"], (19, 34), (6.5, 7)),
        ("Wood Stain {v} 750ml", ["Oak", "Walnut", "Ebony", "Clear"], (7, 13), (0.8, 1)),
        ("Paint Brush {v}", ["1in", "2in", "3in", "Set of 5"], (1.5, 9), (0.05, 0.3)),
        ("Paint Roller Kit {v}", ["9in", "4in Mini"], (4, 11), (0.4, 0.8)),
        ("Masking Tape {v}", ["25mm", "38mm", "50mm"], (1.5, 3.5), (0.1, 0.2)),
        ("Dust Sheet {v}", ["Cotton 12x9ft", "Plastic 3-pack"], (3, 12), (0.3, 1.3)),
    ]),
    "Plumbing": ("steady", WH_S, False, [
        ("Copper Pipe {v} 2m", ["15mm", "22mm"], (7, 14), (0.8, 1.3)),
        ("Compression Elbow {v}", ["15mm", "22mm"], (1.6, 3.2), (0.05, 0.1)),
        ("PTFE Tape {v}", ["12m", "Gas 5m"], (0.6, 1.5), (0.01, 0.02)),
        ("Silicone Sealant {v}", ["White", "Clear", "Anti-mould"], (3.5, 7), (0.3, 0.35)),
        ("Basin Waste {v}", ["Slotted", "Click-clack"], (6, 15), (0.2, 0.4)),
        ("Radiator Valve {v}", ["Straight", "Angled", "Thermostatic"], (6, 24), (0.3, 0.5)),
    ]),
    "Electrical": ("winter", WH_N, False, [
        ("LED Bulb {v}", ["E27 9W Warm", "E27 9W Cool", "GU10 5W", "B22 9W", "E14 5W Candle"],
         (1.2, 4), (0.03, 0.06)),
        ("Extension Lead {v}", ["4 gang 2m", "6 gang 5m", "Reel 25m"], (8, 38), (0.5, 3.5)),
        ("Fuse {v} (10)", ["3A", "5A", "13A"], (1.2, 2.2), (0.02, 0.03)),
        ("Batteries {v}", ["AA 8pk", "AAA 8pk", "9V 2pk"], (3, 8), (0.1, 0.2)),
        ("Outdoor Light {v}", ["PIR Floodlight", "Wall Lantern"], (18, 45), (0.8, 1.5)),
    ]),
    "Winter": ("winter", WH_S, False, [
        ("Snow Shovel {v}", ["Plastic", "Steel"], (11, 24), (1.2, 2)),
        ("De-icing Salt {v}", ["10kg", "25kg"], (4, 9), (10, 25)),
        ("Draught Excluder {v}", ["Door", "Window strip 5m"], (4, 12), (0.2, 0.6)),
        ("Pipe Lagging {v} 1m", ["15mm", "22mm"], (0.8, 1.6), (0.05, 0.08)),
        ("Windscreen De-icer {v}", ["500ml", "1L"], (2.5, 4.5), (0.5, 1)),
    ]),
    "Bulk": ("steady", WH_N, True, [  # sold by the metre: fractional quantities
        ("Rope {v} (per m)", ["6mm Nylon", "10mm Polyprop", "12mm Manila"], (0.4, 1.4),
         (0.02, 0.1)),
        ("Chain {v} (per m)", ["4mm Zinc", "6mm Zinc", "8mm Galvanised"], (1.2, 4.5), (0.3, 1.2)),
        ("Wire {v} (per m)", ["Garden 2mm", "Fencing 3mm"], (0.15, 0.4), (0.02, 0.05)),
    ]),
}

SUPPLIERS = {  # category -> supplier names (first is the main one)
    "Garden": ["Verdant Growers Supply", "Hillside Horticulture"],
    "Tools": ["Brennan Tool Distribution", "Apex Trade Tools"],
    "Fasteners": ["FixRight Fixings Ltd"],
    "Paint": ["Colourworks Wholesale"],
    "Plumbing": ["Northflow Plumbing Supplies"],
    "Electrical": ["Sparkline Electrical", "Brennan Tool Distribution"],
    "Winter": ["Hillside Horticulture", "Northflow Plumbing Supplies"],
    "Bulk": ["Harbour Rope & Chain"],
}
BRANDS = {"Garden": "GreenThumb", "Tools": "Brennan Pro", "Fasteners": "FixRight Trade",
          "Paint": "Colourworks Trade", "Plumbing": "Northflow Pro", "Electrical": "Sparkline",
          "Winter": "Frostguard", "Bulk": "Harbour Marine"}
OLD_SUPPLIER = "Greaves & Sons Hardware"  # went out of business: a deleted partner

TRADE_CUSTOMERS = ["Oakfield Builders Ltd", "Marsh Lane Landscaping", "Riverside Property Care",
                   "Kestrel Joinery", "Town Council Parks Dept", "Bright Spark Electrics",
                   "Hartley & Daughter Plumbing", "Greenway Schools Trust"]
FIRST = ["Alice", "Ben", "Chloe", "Dev", "Ella", "Farid", "Grace", "Hugo", "Isla", "Jonah",
         "Keira", "Liam", "Mei", "Noah", "Olu", "Poppy", "Rafi", "Sofia", "Theo", "Uma"]
LAST = ["Ashworth", "Bennett", "Chowdhury", "Dalton", "Evans", "Fischer", "Garcia", "Hughes",
        "Iqbal", "Jensen", "Kowalski", "Lopez", "Murphy", "Nakamura", "O'Brien", "Patel"]
STREETS = ["High Street", "Mill Lane", "Station Road", "Church Walk", "Orchard Close",
           "Victoria Road", "Meadow Way", "Park Avenue"]

SHOP_MEMBERS = [  # id, name, role, deleted, weight as transaction author
    (7001, "Maya Okafor", "admin", False, 2),
    (7002, "Tom Reyes", "member", False, 4),
    (7003, "Priya Shah", "member", False, 3),
    (7004, "Lukas Berg", "viewer", False, 0),
    (7005, "Sam Doyle", "member", True, 2),  # left in the first winter: a deleted member
]

SHOP_ATTRS = [  # id, type, name, rank
    (9101, "text", "Category", 1),
    (9102, "text", "Supplier", 2),
    (9103, "number", "Weight (kg)", 3),
    (9104, "date", "Introduced", 4),
    (9105, "barcode", "Case barcode", 5),
]

DAY_MS = 86_400_000
BASE_TX_ID = 5_200_001


def build(seed: int = 0, size: int | None = None) -> dict[str, TeamStore]:
    """Both demo teams, keyed ``"shop"`` (location mode) and ``"basic"`` (basic mode).

    >>> a, b = build(seed=1, size=200), build(seed=1, size=200)
    >>> a["shop"].tx_detail_json(0) == b["shop"].tx_detail_json(0)
    True
    """
    size = DEFAULT_SIZE if size is None else int(size)
    if size < 50:
        raise ValueError(f"size is the number of shop transactions and must be >= 50, not {size}")
    return {"shop": _build_shop(seed, size), "basic": _build_basic(seed)}


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


# -- the shop --------------------------------------------------------------------------------
def _build_shop(seed: int, size: int) -> TeamStore:
    rng = random.Random(f"invtools-shop-{seed}")
    start_day = ANCHOR.replace(hour=0) - timedelta(days=DAYS - 1)

    # Partners: suppliers (type 0) then customers (type 1), ids ascending.
    partners: dict[int, dict] = {}
    supplier_id: dict[str, int] = {}
    pid = 6101
    for name in sorted({s for names in SUPPLIERS.values() for s in names} | {OLD_SUPPLIER}):
        partners[pid] = {"id": pid, "type": 0, "name": name, "phone": _phone(rng),
                         "email": f"orders@{_slug(name)}.example",
                         "address": f"{rng.randint(1, 120)} {rng.choice(STREETS)}, Leeds",
                         "memo": "Account closed" if name == OLD_SUPPLIER else None,
                         "deleted": name == OLD_SUPPLIER}
        supplier_id[name] = pid
        pid += 1
    trade_ids, walkin_ids = [], []
    for name in TRADE_CUSTOMERS:
        partners[pid] = {"id": pid, "type": 1, "name": name, "phone": _phone(rng),
                         "email": f"accounts@{_slug(name)}.example",
                         "address": f"{rng.randint(1, 200)} {rng.choice(STREETS)}, Leeds",
                         "memo": "Trade account, 30 days", "deleted": False}
        trade_ids.append(pid)
        pid += 1
    people = sorted({f"{f} {l}" for f in FIRST for l in LAST})
    for name in rng.sample(people, 34):
        partners[pid] = {"id": pid, "type": 1, "name": name,
                         "phone": _phone(rng) if rng.random() < 0.7 else None,
                         "email": (f"{name.split()[0].lower()}.{_slug(name.split()[1])}@mail.example"
                                   if rng.random() < 0.6 else None),
                         "address": None, "memo": "Loyalty card" if rng.random() < 0.3 else None,
                         "deleted": False}
        walkin_ids.append(pid)
        pid += 1
    partners[walkin_ids[-1]]["deleted"] = True  # asked to be forgotten; old sales still refer

    members = {m[0]: {"id": m[0], "name": m[1], "role": m[2], "deleted": m[3]}
               for m in SHOP_MEMBERS}
    attrs = {a[0]: {"id": a[0], "attr_type": a[1], "attr_name": a[2], "rank": a[3]}
             for a in SHOP_ATTRS}
    locations = {loc: {"id": loc, "name": name, "memo": memo} for loc, name, memo in LOCATIONS}

    # Items.
    items: dict[int, dict] = {}
    meta: dict[int, dict] = {}  # simulation parameters per item
    iid = 100001
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
                        {"id": 9101, "type": "text", "name": "Category", "value": cat},
                        {"id": 9102, "type": "text", "name": "Supplier", "value": supplier},
                    ]
                    if rng.random() < 0.9:
                        attr_vals.append({"id": 9103, "type": "number", "name": "Weight (kg)",
                                          "value": round(rng.uniform(w_lo, w_hi), 2)})
                    attr_vals.append({"id": 9104, "type": "date", "name": "Introduced",
                                      "value": introduced.strftime("%Y-%m-%d")})
                    if rng.random() < 0.4:
                        attr_vals.append({"id": 9105, "type": "barcode", "name": "Case barcode",
                                          "value": _ean13(rng, "9")})
                    items[iid] = {
                        "id": iid, "name": name,
                        "sku": f"GH-{cat[:3].upper()}-{iid - 100000:04d}",
                        "barcode": _ean13(rng),
                        "photo_url": (f"https://images.example.com/greenfield/{iid}.jpg"
                                      if rng.random() < 0.35 else None),
                        "attrs": attr_vals, "cost": _money(cost), "price": _money(price),
                        "deleted": False,
                    }
                    meta[iid] = {"season": season, "home": home, "fractional": fractional,
                                 "supplier": supplier_id[supplier]}
                    iid += 1
    item_ids = list(items)
    # Popularity: a long tail (a few best sellers, many slow movers).
    pop = {i: 1.0 / (rank + 3) ** 0.9 for rank, i in enumerate(rng.sample(item_ids, len(item_ids)))}
    for i in rng.sample(item_ids, 12):  # the slowest movers
        pop[i] = 0.002
    discontinued = set(rng.sample(item_ids, 4))  # no restocks after mid-history, then deleted
    backorder = {i: _window(rng) for i in rng.sample(item_ids, 6)}  # supplier out of stock

    store = TeamStore(
        key="shop",
        team={"id": SHOP_TEAM_ID, "name": "Greenfield Hardware & Garden", "mode": 2,
              "currency_symbol": "£", "memo": "Demo data: a hardware and garden shop",
              "currency_code": "GBP", "price_decimal_places": 2},
        items=items, locations=locations, partners=partners, members=members, attrs=attrs,
        log=TxLog(BASE_TX_ID),
    )
    _simulate(store, rng, size, start_day, meta, pop, discontinued, backorder, trade_ids,
              walkin_ids)
    for i in discontinued:
        items[i]["deleted"] = True
    return store


def _window(rng: random.Random) -> tuple[int, int]:
    """A backorder window (day numbers) during which a supplier cannot deliver an item."""
    a = rng.randint(60, DAYS - 120)
    return a, a + rng.randint(25, 60)


def _simulate(store: TeamStore, rng: random.Random, size: int, start_day: datetime, meta, pop,
              discontinued, backorder, trade_ids, walkin_ids) -> None:
    log = store.log
    item_ids = list(store.items)
    n_events = size - 4  # four opening stock counts
    start_ms = int(start_day.timestamp() * 1000)

    # Expected sale units per item per day sets shelf sizes and order quantities, so the
    # shop behaves the same (restock rhythm, stock-outs) at any size.
    total_pop = sum(pop.values())
    daily_units = {i: size * 0.72 * 1.8 * 1.6 * pop[i] / total_pop / DAYS for i in item_ids}
    shelf_cap = {i: max(3, round(daily_units[i] * 8)) for i in item_ids}
    shelf_low = {i: max(1, round(daily_units[i] * 2.5)) for i in item_ids}
    order_qty = {i: max(6, round(daily_units[i] * 40)) for i in item_ids}
    reorder_at = {i: max(2, round(daily_units[i] * 12)) for i in item_ids}

    # Event days: weighted by weekday and month traffic, times within opening hours.
    day_month, day_weight = [], []
    for d in range(DAYS):
        day = start_day + timedelta(days=d)
        day_month.append(day.month - 1)
        day_weight.append(WEEKDAY_TRAFFIC[day.weekday()] * MONTH_TRAFFIC[day.month - 1])
    days = sorted(rng.choices(range(DAYS), cum_weights=list(accumulate(day_weight)), k=n_events))
    times = []
    prev = start_ms + 7 * 3_600_000  # the opening counts happen before 07:00 on day 0
    for d in days:
        t = start_ms + d * DAY_MS + rng.randint(8 * 3600, 18 * 3600 - 1) * 1000
        # strictly increasing and at least 2 s apart: no ties in (time, id) order
        prev = t if t > prev + 2000 else prev + 2000
        times.append(prev)
    times.sort()

    # Sale weights per month (popularity x category season), as cumulative weights.
    cum_by_month = [list(accumulate(pop[i] * SEASONS[meta[i]["season"]][m] for i in item_ids))
                    for m in range(12)]

    stock: dict[tuple[int, int], float] = {}
    members_w = [(m[0], m[4]) for m in SHOP_MEMBERS if m[4]]
    doyle_leaves = DAYS // 3

    def author(day: int) -> int:
        pool = [(mid, w) for mid, w in members_w if not (mid == 7005 and day > doyle_leaves)]
        return rng.choices([p[0] for p in pool], weights=[p[1] for p in pool])[0]

    def emit(t: int, type_code: int, to: int, lines, *, frm: int = NO_ID, partner: int = NO_ID,
             memo=None, day: int = 0) -> int:
        return log.append(time=t, created=t + rng.randint(5, 90) * 1000, type_code=type_code,
                          partner=partner, from_loc=frm, to_loc=to, creator=author(day),
                          memo=memo, lines=lines)

    # Opening stock counts: shelf full, home location holds one order's worth.
    for k, loc in enumerate((BACK, FLOOR, WH_N, WH_S)):
        lines = []
        for i in item_ids:
            q = shelf_cap[i] if loc == FLOOR else (order_qty[i] if meta[i]["home"] == loc else 0)
            if q:
                stock[(i, loc)] = float(q)
                lines.append((i, float(q)))
        emit(start_ms + (6 * 60 + 10 * k) * 60_000, ADJUST, loc, lines, memo="Opening stocktake")

    pending_moves: dict[int, None] = {}  # insertion-ordered set of items to refill
    orders: dict[tuple[int, int, bool], dict[int, float]] = {}  # open purchase orders
    arrivals: list[tuple[int, int, int, bool]] = []  # heap of (due ms, supplier, loc, backorder)
    on_order: set[int] = set()
    po_number = 4100

    def need_refill(i: int) -> None:
        if stock.get((i, FLOOR), 0.0) <= shelf_low[i] and i not in pending_moves:
            pending_moves[i] = None

    def check_reorder(i: int, t: int, day: int) -> None:
        if i in on_order or (i in discontinued and day > DAYS // 2):
            return
        held = sum(stock.get((i, loc), 0.0) for loc in (BACK, WH_N, WH_S))
        if held > reorder_at[i]:
            return
        win = backorder.get(i)
        late = bool(win and win[0] <= day < win[1])
        key = (meta[i]["supplier"], meta[i]["home"], late)
        if key not in orders:
            orders[key] = {}
            due_day = (win[1] if late else day) + rng.randint(2, 5)
            heapq.heappush(arrivals, (start_ms + due_day * DAY_MS + rng.randint(7, 9) * 3_600_000,
                                      *key))
        orders[key][i] = float(order_qty[i])
        on_order.add(i)

    for k, t in enumerate(times):
        day = (t - start_ms) // DAY_MS
        month = day_month[min(day, DAYS - 1)]
        if arrivals and arrivals[0][0] <= t:
            _, sup, loc, late = heapq.heappop(arrivals)
            lines = list(orders.pop((sup, loc, late)).items())
            for i, q in lines:
                stock[(i, loc)] = stock.get((i, loc), 0.0) + q
                on_order.discard(i)
                need_refill(i)
            po_number += 1
            emit(t, IN, loc, lines, partner=sup, memo=f"PO-{po_number}", day=day)
            continue
        if pending_moves and (len(pending_moves) >= 4 or rng.random() < 0.35):
            first = next(iter(pending_moves))
            src = max((BACK, WH_N, WH_S), key=lambda loc: stock.get((first, loc), 0.0))
            lines = []
            for i in list(pending_moves)[:12]:
                have = stock.get((i, src), 0.0)
                want = shelf_cap[i] - stock.get((i, FLOOR), 0.0)
                q = min(have, want)
                if meta[i]["fractional"]:
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
                    stock[(i, FLOOR)] = stock.get((i, FLOOR), 0.0) + q
                    check_reorder(i, t, day)
                emit(t, MOVE, FLOOR, lines, frm=src, memo="Shelf refill", day=day)
                continue
        if rng.random() < 0.03:
            loc = rng.choice((BACK, FLOOR, WH_N, WH_S))
            lines = []
            for i in rng.sample(item_ids, 3):
                have = stock.get((i, loc), 0.0)
                d = float(rng.choice((-2, -1, -1, 1)))
                d = max(d, -have)
                if d:
                    stock[(i, loc)] = have + d
                    lines.append((i, d))
                    need_refill(i)
            if lines:
                emit(t, ADJUST, loc, lines, memo=rng.choice(
                    ("Cycle count", "Cycle count", "Damaged in storage", "Found in stocktake")),
                     day=day)
                continue
        # A sale: mostly walk-in at the shop floor, sometimes a trade order from a warehouse.
        trade = rng.random() < 0.08
        n_lines = rng.choices((1, 2, 3, 4), weights=(50, 30, 15, 5))[0]
        picks = rng.choices(item_ids, cum_weights=cum_by_month[month], k=n_lines + 2)
        lines, seen = [], set()
        for i in picks:
            if i in seen or len(lines) == n_lines:
                continue
            seen.add(i)
            loc = meta[i]["home"] if trade else FLOOR
            have = stock.get((i, loc), 0.0)
            want = (rng.randint(4, 20) if trade else rng.choices((1, 2, 3), (70, 22, 8))[0])
            if meta[i]["fractional"]:
                want = rng.choice((1.5, 2.0, 2.5, 3.0, 5.0, 10.0))
            q = min(float(want), have)
            if q <= 0:
                continue
            lines.append((i, q))
        if trade:
            # one location per transaction: keep lines from the first line's location
            src = meta[lines[0][0]]["home"] if lines else WH_N
            lines = [(i, q) for i, q in lines if meta[i]["home"] == src]
        else:
            src = FLOOR
        if not lines:
            # Everything picked was sold out: the customer bought one unit of the best stocked
            # item on the floor instead.
            i = max(item_ids, key=lambda x: (stock.get((x, FLOOR), 0.0), -x))
            src, lines = FLOOR, [(i, min(1.0, stock.get((i, FLOOR), 0.0)))]
        for i, q in lines:
            stock[(i, src)] -= q
            need_refill(i)
            if src != FLOOR:
                check_reorder(i, t, day)
        partner = (rng.choice(trade_ids) if trade else
                   (rng.choice(walkin_ids) if rng.random() < 0.25 else NO_ID))
        memo = "Trade account" if trade else (None if rng.random() < 0.85 else "Card payment")
        r = emit(t, OUT, src, lines, partner=partner, memo=memo, day=day)
        if rng.random() < 0.0012:
            # A duplicate entered by mistake and deleted a minute later (never counted).
            log.append(time=t + 1000, created=t + 60_000, type_code=OUT, partner=partner,
                       from_loc=NO_ID, to_loc=src, creator=log.creator[r], memo=memo,
                       lines=lines, deleted=True)

    _mark_backdated(log, rng, size, start_ms)
    log.finish()
    _mark_edited(store, rng, size)


def _mark_backdated(log: TxLog, rng: random.Random, size: int, start_ms: int) -> None:
    """Deliveries and counts recorded days after they happened (created_at >> time)."""
    end_ms = int(ANCHOR.timestamp() * 1000)
    candidates = [r for r in range(4, len(log.time))
                  if log.type[r] in (IN, ADJUST) and not log.deleted[r]
                  and log.time[r] < end_ms - 14 * DAY_MS]
    for r in rng.sample(candidates, min(len(candidates), max(24, size // 150))):
        log.created[r] = log.time[r] + rng.randint(2, 12) * DAY_MS + rng.randint(1, 5) * 3_600_000
        log.memo[r] = (log.memo.get(r, "") + " (entered late from the paper note)").strip()


def _mark_edited(store: TeamStore, rng: random.Random, size: int) -> None:
    """Give a few dozen transactions earlier revisions: a corrected quantity or memo.

    The current version is the simulated one, so stock stays valid; each older version is
    what was on record before the correction (its levels shifted by the corrected amount).
    """
    log = store.log
    candidates = [r for r in log.order[4:] if log.type[r] in (IN, OUT)]
    for r in rng.sample(candidates, min(len(candidates), max(30, size // 130))):
        current = store.tx_detail_json(r)
        versions = []
        if rng.random() < 0.25:  # two edits: a memo fix after the quantity fix
            older_memo = dict(current, memo=None if current["memo"] else "tbc", revision=1)
            versions.append(older_memo)
        old = _with_other_quantity(current, rng)
        versions.insert(0, old)
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


# -- the café (basic mode) -------------------------------------------------------------------
CAFE_ITEMS = [
    ("Espresso Beans 1kg", "Coffee", 11.5), ("Decaf Beans 1kg", "Coffee", 12.9),
    ("Filter Coffee 500g", "Coffee", 6.2), ("Oat Milk 1L", "Dairy", 1.4),
    ("Whole Milk 2L", "Dairy", 1.3), ("Butter 250g", "Dairy", 1.9),
    ("Croissant (frozen, 10)", "Bakery", 4.8), ("Sourdough Loaf", "Bakery", 2.6),
    ("Blueberry Muffin (12)", "Bakery", 7.5), ("Earl Grey Tea (100)", "Tea", 5.5),
    ("Green Tea (50)", "Tea", 4.2), ("Chai Syrup 1L", "Syrups", 7.9),
    ("Vanilla Syrup 1L", "Syrups", 6.9), ("Caramel Syrup 1L", "Syrups", 6.9),
    ("Takeaway Cup 8oz (50)", "Packaging", 3.9), ("Takeaway Cup 12oz (50)", "Packaging", 4.4),
    ("Cup Lid (100)", "Packaging", 3.1), ("Paper Napkins (500)", "Packaging", 4.9),
    ("Sugar Sticks (1000)", "Sundries", 8.5), ("Wooden Stirrers (1000)", "Sundries", 3.5),
    ("Hot Chocolate Powder 1kg", "Sundries", 7.2), ("Sparkling Water (24)", "Drinks", 9.6),
    ("Orange Juice 1L", "Drinks", 1.8), ("Dish Soap 5L", "Cleaning", 6.4),
]


def _build_basic(seed: int) -> TeamStore:
    rng = random.Random(f"invtools-basic-{seed}")
    attrs = {9201: {"id": 9201, "attr_type": "text", "attr_name": "Category", "rank": 1},
             9202: {"id": 9202, "attr_type": "number", "attr_name": "Shelf life (days)",
                    "rank": 2}}
    items = {}
    for k, (name, cat, cost) in enumerate(CAFE_ITEMS):
        iid = 200001 + k
        c = round(cost * rng.uniform(0.9, 1.1), 2)
        items[iid] = {
            "id": iid, "name": name, "sku": f"CC-{k + 1:03d}", "barcode": _ean13(rng),
            "photo_url": None,
            "attrs": [{"id": 9201, "type": "text", "name": "Category", "value": cat},
                      {"id": 9202, "type": "number", "name": "Shelf life (days)",
                       "value": rng.choice((3, 7, 30, 180, 365))}],
            "cost": _money(c), "price": _money(c * 1.6), "deleted": False,
        }
    partners = {}
    for k, (ptype, name) in enumerate([(0, "Bean There Roasters"), (0, "Dale Farm Dairy"),
                                       (0, "Crumb & Co Bakery"), (0, "PackRight Catering"),
                                       (1, "Northgate Office Catering"), (1, "St Mary's Hall")]):
        pid = 6601 + k
        partners[pid] = {"id": pid, "type": ptype, "name": name, "phone": _phone(rng),
                         "email": f"hello@{_slug(name)}.example", "address": None, "memo": None,
                         "deleted": False}
    members = {7101: {"id": 7101, "name": "Jo Castillo", "role": "admin", "deleted": False},
               7102: {"id": 7102, "name": "Ade Mensah", "role": "member", "deleted": False},
               7103: {"id": 7103, "name": "Rosa Lind", "role": "viewer", "deleted": False}}
    return TeamStore(
        key="basic",
        team={"id": BASIC_TEAM_ID, "name": "Corner Café", "mode": 0, "currency_symbol": "£",
              "memo": None, "currency_code": "GBP", "price_decimal_places": 2},
        items=items, locations={}, partners=partners, members=members, attrs=attrs, log=None)
