"""The demo teams other than the shop: its branches (:data:`BRANCHES`, more location-mode teams
of the same business, each with its own token: town, team id, size, locations and members) and
the café ("Corner Café", basic mode: its team record, catalogue, partners, members and
attributes). Fixed data, no randomness; :mod:`invtools.sandbox.data` turns it into records.

>>> [b.key for b in BRANCHES], branch_team(BRANCHES[0])["name"], BASIC_TEAM["mode"]
(['harrogate', 'york', 'wakefield', 'ilkley'], 'Greenfield Hardware & Garden (Harrogate)', 0)
"""

from __future__ import annotations

from typing import NamedTuple

from invtools.sandbox.catalogue import SHOP_TEAM


# -- the shop's branches (location mode) -------------------------------------------------------
class Branch(NamedTuple):
    """A branch of the shop: a team of its own (its own token, seed, history and ids).

    ``size`` is its number of transactions as a fraction of the shop's. ``locations`` are
    (name, memo) in the roles of :data:`LOCATIONS` (back store, shop floor, the store the
    catalogue's "north" categories live in, the "south" one); ``members`` are (name, role,
    weight as transaction author). The branch's ids are the shop's plus ``number`` million
    (its transactions': plus ``number`` x 10 million): the service numbers ids across all of
    its teams, so the same product has the same SKU in every branch, never the same id.
    """

    number: int
    key: str
    town: str
    team_id: int
    size: float
    locations: tuple[tuple[str, str | None], ...]
    members: tuple[tuple[str, str, int], ...]


#: One paragraph per branch: "number key town team_id size", its four locations ("name" or
#: "name | memo"), then its members ("name | role | weight as transaction author").
_BRANCHES = """
1 harrogate Harrogate 48377 0.7
Back store
Shop floor
Stockroom | First floor, goods lift
Garden yard | Behind the car park; bulky and outdoor goods
Nadia Karim | admin | 2
Owen Price | member | 4
Ruth Adeyemi | member | 3
Callum Shaw | viewer | 0

2 york York 48502 0.55
Back store
Shop floor
Warehouse | Unit 2, Foss Islands Road
Outdoor store | Side gate, Walmgate
Hannah Lowe | admin | 3
Kwame Boateng | member | 4
Imogen Clarke | viewer | 0

3 wakefield Wakefield 48644 0.85
Back store
Shop floor
Warehouse East | Unit 7, Calder Park
Warehouse West | Unit 12, Calder Park
Declan Moss | admin | 2
Aisha Rahman | member | 4
Pete Lister | member | 3
Lena Vogel | member | 2
Marcus Webb | viewer | 0

4 ilkley Ilkley 48790 0.4
Back room
Shop floor
Cellar
Yard
Fran Whitaker | admin | 3
Joe Sutcliffe | member | 3
"""


def _branch(paragraph: str) -> Branch:
    """A branch from its paragraph of :data:`_BRANCHES`."""
    head, *rows = paragraph.splitlines()
    number, key, town, team_id, size = head.split()
    cells = [row.split(" | ") for row in rows]
    locations = tuple((place[0], place[1] if len(place) > 1 else None) for place in cells[:4])
    members = tuple((name, role, int(weight)) for name, role, weight in cells[4:])
    return Branch(int(number), key, town, int(team_id), float(size), locations, members)


BRANCHES = [_branch(paragraph) for paragraph in _BRANCHES.strip().split("\n\n")]


def branch_team(branch: Branch) -> dict:
    """The team record of a branch (as ``GET /v1/teams/linked`` answers it)."""
    return {
        **SHOP_TEAM,
        "id": branch.team_id,
        "name": f"{SHOP_TEAM['name']} ({branch.town})",
        "memo": f"Demo data: the {branch.town} branch of a hardware and garden shop",
    }


# -- the café (basic mode) -------------------------------------------------------------------
BASIC_TEAM = {**SHOP_TEAM, "id": 51877, "name": "Corner Café", "mode": 0, "memo": None}  # in £ too
#: The café's catalogue in order: a category, then its items as "name = cost" (a long category
#: takes two lines).
_CAFE_ITEMS = """
Coffee: Espresso Beans 1kg = 11.5; Decaf Beans 1kg = 12.9; Filter Coffee 500g = 6.2
Dairy: Oat Milk 1L = 1.4; Whole Milk 2L = 1.3; Butter 250g = 1.9
Bakery: Croissant (frozen, 10) = 4.8; Sourdough Loaf = 2.6; Blueberry Muffin (12) = 7.5
Tea: Earl Grey Tea (100) = 5.5; Green Tea (50) = 4.2
Syrups: Chai Syrup 1L = 7.9; Vanilla Syrup 1L = 6.9; Caramel Syrup 1L = 6.9
Packaging: Takeaway Cup 8oz (50) = 3.9; Takeaway Cup 12oz (50) = 4.4; Cup Lid (100) = 3.1
Packaging: Paper Napkins (500) = 4.9
Sundries: Sugar Sticks (1000) = 8.5; Wooden Stirrers (1000) = 3.5
Sundries: Hot Chocolate Powder 1kg = 7.2
Drinks: Sparkling Water (24) = 9.6; Orange Juice 1L = 1.8
Cleaning: Dish Soap 5L = 6.4
"""
CAFE_ITEMS = [  # name, category, cost
    (name, category, float(cost))
    for category, items in (line.split(": ") for line in _CAFE_ITEMS.strip().splitlines())
    for name, cost in (item.split(" = ") for item in items.split("; "))
]
#: partner type (0 supplier, 1 customer) -> the café's partners of that type, ids ascending
CAFE_PARTNERS = {
    0: ["Bean There Roasters", "Dale Farm Dairy", "Crumb & Co Bakery", "PackRight Catering"],
    1: ["Northgate Office Catering", "St Mary's Hall"],
}
CAFE_MEMBERS = [  # id, name, role, deleted
    (7101, "Jo Castillo", "admin", False),
    (7102, "Ade Mensah", "member", False),
    (7103, "Rosa Lind", "viewer", False),
]
CAFE_ATTRS = [(9201, "text", "Category", 1), (9202, "number", "Shelf life (days)", 2)]
