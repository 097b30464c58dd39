"""The demo teams' fixed data: who they are and what they stock; no randomness here.

The shop ("Greenfield Hardware & Garden", location mode): its team record, locations, seasons
and traffic, catalogue (categories, products and variants, cost and weight ranges), suppliers
and brands, trade customers, the names walk-in customers are drawn from, members and item
attributes, and where its history ends (:data:`ANCHOR`). The other teams (the shop's branches
and the café) are in :mod:`invtools.sandbox.teams`. :mod:`invtools.sandbox.data` turns these
into records with a seeded generator.

>>> len(LOCATIONS), sorted(CATALOGUE)[:3], SHOP_TEAM["mode"]
(4, ['Bulk', 'Electrical', 'Fasteners'], 2)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# -- the shop --------------------------------------------------------------------------------
SHOP_TEAM = {
    "id": 48213,
    "name": "Greenfield Hardware & Garden",
    "mode": 2,
    "currency_symbol": "£",
    "memo": "Demo data: a hardware and garden shop",
    "currency_code": "GBP",
    "price_decimal_places": 2,
}
BASE_TX_ID = 5_200_001  # the first transaction id; ids are dense and follow creation order

#: The end of the demo history (business hours end on this day); the data's own "now".
ANCHOR = datetime(2026, 10, 31, 18, 0, tzinfo=UTC)
DAYS = 549  # about 18 months: 2025-04-30 .. 2026-10-31
START_DAY = ANCHOR.replace(hour=0) - timedelta(days=DAYS - 1)  # midnight of the first day

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

#: category -> (season, home location, sold in fractions?, the main supplier's brand), in
#: catalogue order; "Bulk" is sold by the metre (fractional quantities)
CATEGORIES = {
    "Garden": ("garden", WH_S, False, "GreenThumb"),
    "Tools": ("steady", WH_N, False, "Brennan Pro"),
    "Fasteners": ("steady", BACK, False, "FixRight Trade"),
    "Paint": ("paint", WH_N, False, "Colourworks Trade"),
    "Plumbing": ("steady", WH_S, False, "Northflow Pro"),
    "Electrical": ("winter", WH_N, False, "Sparkline"),
    "Winter": ("winter", WH_S, False, "Frostguard"),
    "Bulk": ("steady", WH_N, True, "Harbour Marine"),
}
#: category -> products: (name with {v}, its variants as "a, b, c", cost range, kg range)
Product = tuple[str, str, tuple[float, float], tuple[float, float]]
#: The catalogue, a paragraph per category: a product a line, its fields as in :data:`Product`
#: (ranges as "low-high"); an indented line goes on with the line before.
_CATALOGUE = """
Garden
Potting Compost {v} | 20L, 40L, 70L | 3.2-9.5 | 8-30
Garden Hose {v} | 15m, 25m, 50m | 9-38 | 1.5-6
Hose Connector {v} | 1/2in, 3/4in, Quick-click | 1.2-4.5 | 0.05-0.2
Lawn Seed {v} | 1kg, 2.5kg, 5kg, Shade mix 1kg | 6-32 | 1-5
Rose Fertiliser {v} | 1kg, 3kg | 4-11 | 1-3
Terracotta Pot {v} | 15cm, 20cm, 30cm, 40cm | 2-19 | 0.6-7
Seed Packet {v} | Tomato, Basil, Sunflower, Carrot, Lettuce, Sweet Pea, Courgette,
    Marigold | 0.6-1.4 | 0.02-0.05
Pruning Shears {v} | Bypass, Anvil, Long reach | 8-29 | 0.2-0.9
Watering Can {v} | 5L, 10L | 4-12 | 0.5-1.1
Slug Pellets {v} | 350g, 800g | 3-6.5 | 0.35-0.8
Bark Mulch {v} | 50L, 100L | 4.5-8 | 12-22
Garden Gloves {v} | S, M, L, XL | 2.5-6 | 0.1-0.15

Tools
Claw Hammer {v} | 16oz, 20oz | 7-16 | 0.6-0.8
Screwdriver Set {v} | 6pc, 12pc, Precision 8pc | 6-24 | 0.4-1.2
Tape Measure {v} | 5m, 8m, 10m | 3.5-11 | 0.2-0.4
Spirit Level {v} | 600mm, 1200mm | 8-24 | 0.5-1.1
Hand Saw {v} | 450mm, 550mm | 9-17 | 0.5-0.7
Utility Knife {v} | Standard, Folding, Spare blades 10pk | 2-9 | 0.05-0.2
Adjustable Spanner {v} | 150mm, 250mm, 300mm | 6-15 | 0.2-0.6
Drill Bit Set {v} | HSS 13pc, Masonry 5pc, Wood 8pc | 7-22 | 0.3-0.6
Cordless Drill {v} | 18V, 18V Combi Kit | 45-95 | 1.4-2.2
Pliers {v} | Combination, Long nose, Side cutters | 5-12 | 0.2-0.3
Stepladder {v} | 3 tread, 5 tread | 28-55 | 4-7

Fasteners
Wood Screws {v} (200) | 3x20mm, 3.5x30mm, 4x40mm, 4x50mm, 5x60mm, 5x80mm | 2.5-7.5 | 0.3-0.9
Wall Plugs {v} (100) | Red 5mm, Brown 7mm, Blue 10mm | 1.5-3.5 | 0.05-0.2
Nails {v} (1kg) | Round 50mm, Round 75mm, Oval 40mm, Panel pins 25mm | 2.5-5 | 1-1
Coach Bolt {v} (10) | M8x60, M10x100 | 3-6.5 | 0.3-0.7
Hinge {v} (pair) | 75mm Brass, 100mm Steel, Concealed | 2.5-8 | 0.1-0.3
Cable Ties {v} (100) | 100mm, 200mm, 300mm | 1.2-4 | 0.05-0.2

Paint
Emulsion Paint {v} 2.5L | Brilliant White, Magnolia, Sage Green, Dove Grey, Duck Egg | 11-24 | 3-3.5
Exterior Masonry Paint {v} 5L | White, Cream, Stone | 19-34 | 6.5-7
Wood Stain {v} 750ml | Oak, Walnut, Ebony, Clear | 7-13 | 0.8-1
Paint Brush {v} | 1in, 2in, 3in, Set of 5 | 1.5-9 | 0.05-0.3
Paint Roller Kit {v} | 9in, 4in Mini | 4-11 | 0.4-0.8
Masking Tape {v} | 25mm, 38mm, 50mm | 1.5-3.5 | 0.1-0.2
Dust Sheet {v} | Cotton 12x9ft, Plastic 3-pack | 3-12 | 0.3-1.3

Plumbing
Copper Pipe {v} 2m | 15mm, 22mm | 7-14 | 0.8-1.3
Compression Elbow {v} | 15mm, 22mm | 1.6-3.2 | 0.05-0.1
PTFE Tape {v} | 12m, Gas 5m | 0.6-1.5 | 0.01-0.02
Silicone Sealant {v} | White, Clear, Anti-mould | 3.5-7 | 0.3-0.35
Basin Waste {v} | Slotted, Click-clack | 6-15 | 0.2-0.4
Radiator Valve {v} | Straight, Angled, Thermostatic | 6-24 | 0.3-0.5

Electrical
LED Bulb {v} | E27 9W Warm, E27 9W Cool, GU10 5W, B22 9W, E14 5W Candle | 1.2-4 | 0.03-0.06
Extension Lead {v} | 4 gang 2m, 6 gang 5m, Reel 25m | 8-38 | 0.5-3.5
Fuse {v} (10) | 3A, 5A, 13A | 1.2-2.2 | 0.02-0.03
Batteries {v} | AA 8pk, AAA 8pk, 9V 2pk | 3-8 | 0.1-0.2
Outdoor Light {v} | PIR Floodlight, Wall Lantern | 18-45 | 0.8-1.5

Winter
Snow Shovel {v} | Plastic, Steel | 11-24 | 1.2-2
De-icing Salt {v} | 10kg, 25kg | 4-9 | 10-25
Draught Excluder {v} | Door, Window strip 5m | 4-12 | 0.2-0.6
Pipe Lagging {v} 1m | 15mm, 22mm | 0.8-1.6 | 0.05-0.08
Windscreen De-icer {v} | 500ml, 1L | 2.5-4.5 | 0.5-1

Bulk
Rope {v} (per m) | 6mm Nylon, 10mm Polyprop, 12mm Manila | 0.4-1.4 | 0.02-0.1
Chain {v} (per m) | 4mm Zinc, 6mm Zinc, 8mm Galvanised | 1.2-4.5 | 0.3-1.2
Wire {v} (per m) | Garden 2mm, Fencing 3mm | 0.15-0.4 | 0.02-0.05
"""


def _range(text: str) -> tuple[float, float]:
    low, high = text.split("-")
    return float(low), float(high)


def _product(line: str) -> Product:
    name, variants, cost, kg = line.split(" | ")
    return name, variants, _range(cost), _range(kg)


CATALOGUE: dict[str, list[Product]] = {
    category: [_product(line) for line in lines]
    for category, *lines in (
        paragraph.splitlines()
        for paragraph in _CATALOGUE.replace("\n    ", " ").strip().split("\n\n")
    )
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
OLD_SUPPLIER = "Greaves & Sons Hardware"  # went out of business: a deleted partner

TRADE_CUSTOMERS = (
    "Oakfield Builders Ltd, Marsh Lane Landscaping, Riverside Property Care, Kestrel Joinery, "
    "Town Council Parks Dept, Bright Spark Electrics, Hartley & Daughter Plumbing, "
    "Greenway Schools Trust"
).split(", ")
TRADE_MEMO = "Trade account, 30 days"
# Walk-in customers' names are drawn from these.
FIRST = (
    "Alice Ben Chloe Dev Ella Farid Grace Hugo Isla Jonah Keira Liam Mei Noah Olu Poppy Rafi "
    "Sofia Theo Uma"
).split()
LAST = (
    "Ashworth Bennett Chowdhury Dalton Evans Fischer Garcia Hughes Iqbal Jensen Kowalski Lopez "
    "Murphy Nakamura O'Brien Patel"
).split()
STREETS = (
    "High Street, Mill Lane, Station Road, Church Walk, Orchard Close, Victoria Road, Meadow Way, "
    "Park Avenue"
).split(", ")

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
