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


BRANCHES = [
    Branch(
        1,
        "harrogate",
        "Harrogate",
        48377,
        0.7,
        (
            ("Back store", None),
            ("Shop floor", None),
            ("Stockroom", "First floor, goods lift"),
            ("Garden yard", "Behind the car park; bulky and outdoor goods"),
        ),
        (
            ("Nadia Karim", "admin", 2),
            ("Owen Price", "member", 4),
            ("Ruth Adeyemi", "member", 3),
            ("Callum Shaw", "viewer", 0),
        ),
    ),
    Branch(
        2,
        "york",
        "York",
        48502,
        0.55,
        (
            ("Back store", None),
            ("Shop floor", None),
            ("Warehouse", "Unit 2, Foss Islands Road"),
            ("Outdoor store", "Side gate, Walmgate"),
        ),
        (
            ("Hannah Lowe", "admin", 3),
            ("Kwame Boateng", "member", 4),
            ("Imogen Clarke", "viewer", 0),
        ),
    ),
    Branch(
        3,
        "wakefield",
        "Wakefield",
        48644,
        0.85,
        (
            ("Back store", None),
            ("Shop floor", None),
            ("Warehouse East", "Unit 7, Calder Park"),
            ("Warehouse West", "Unit 12, Calder Park"),
        ),
        (
            ("Declan Moss", "admin", 2),
            ("Aisha Rahman", "member", 4),
            ("Pete Lister", "member", 3),
            ("Lena Vogel", "member", 2),
            ("Marcus Webb", "viewer", 0),
        ),
    ),
    Branch(
        4,
        "ilkley",
        "Ilkley",
        48790,
        0.4,
        (("Back room", None), ("Shop floor", None), ("Cellar", None), ("Yard", None)),
        (("Fran Whitaker", "admin", 3), ("Joe Sutcliffe", "member", 3)),
    ),
]


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
CAFE_ITEMS = [  # name, category, cost
    ("Espresso Beans 1kg", "Coffee", 11.5),
    ("Decaf Beans 1kg", "Coffee", 12.9),
    ("Filter Coffee 500g", "Coffee", 6.2),
    ("Oat Milk 1L", "Dairy", 1.4),
    ("Whole Milk 2L", "Dairy", 1.3),
    ("Butter 250g", "Dairy", 1.9),
    ("Croissant (frozen, 10)", "Bakery", 4.8),
    ("Sourdough Loaf", "Bakery", 2.6),
    ("Blueberry Muffin (12)", "Bakery", 7.5),
    ("Earl Grey Tea (100)", "Tea", 5.5),
    ("Green Tea (50)", "Tea", 4.2),
    ("Chai Syrup 1L", "Syrups", 7.9),
    ("Vanilla Syrup 1L", "Syrups", 6.9),
    ("Caramel Syrup 1L", "Syrups", 6.9),
    ("Takeaway Cup 8oz (50)", "Packaging", 3.9),
    ("Takeaway Cup 12oz (50)", "Packaging", 4.4),
    ("Cup Lid (100)", "Packaging", 3.1),
    ("Paper Napkins (500)", "Packaging", 4.9),
    ("Sugar Sticks (1000)", "Sundries", 8.5),
    ("Wooden Stirrers (1000)", "Sundries", 3.5),
    ("Hot Chocolate Powder 1kg", "Sundries", 7.2),
    ("Sparkling Water (24)", "Drinks", 9.6),
    ("Orange Juice 1L", "Drinks", 1.8),
    ("Dish Soap 5L", "Cleaning", 6.4),
]
CAFE_PARTNERS = [
    (0, "Bean There Roasters"),
    (0, "Dale Farm Dairy"),
    (0, "Crumb & Co Bakery"),
    (0, "PackRight Catering"),
    (1, "Northgate Office Catering"),
    (1, "St Mary's Hall"),
]  # type, name
CAFE_MEMBERS = [  # id, name, role, deleted
    (7101, "Jo Castillo", "admin", False),
    (7102, "Ade Mensah", "member", False),
    (7103, "Rosa Lind", "viewer", False),
]
CAFE_ATTRS = [(9201, "text", "Category", 1), (9202, "number", "Shelf life (days)", 2)]
