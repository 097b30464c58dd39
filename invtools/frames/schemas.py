"""The schemas: the single place that says which columns each frame has, in order, and their dtype.

Also the dtypes they are made of, the wire's partner-type codes, the ``backdated`` threshold,
the fields of a transaction row (read by :mod:`.resources` from dicts and by :mod:`.arrow`
from page bytes), and each frame's key: a frame of one kind of thing names it ``<thing>_id``
(:data:`KEYS`), where the wire says ``id``.

>>> {col: str(dtype) for col, dtype in SCHEMAS["members"].items()}
{'member_id': 'Int64', 'name': 'string', 'role': 'category'}
>>> TX_TYPE_DTYPE.categories.tolist()
['in', 'out', 'move', 'adjust']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from invtools._types import TX_TYPES

__all__ = [
    "TIME_DTYPE",
    "TX_TYPE_DTYPE",
    "PARTNER_TYPE_DTYPE",
    "ROLE_DTYPE",
    "STRING",
    "PARTNER_TYPE_NAMES",
    "BACKDATE_THRESHOLD",
    "SCHEMAS",
    "ATTR_DTYPES",
    "TX_PLAIN",
    "TX_REFS",
    "LOCATION",
    "KEYS",
    "wire_names",
]

TIME_DTYPE = pd.DatetimeTZDtype(unit="ms", tz="UTC")
TX_TYPE_DTYPE = pd.CategoricalDtype(list(TX_TYPES))
PARTNER_TYPE_DTYPE = pd.CategoricalDtype(["supplier", "customer"])
ROLE_DTYPE = pd.CategoricalDtype(["admin", "member", "viewer"])
STRING = pd.StringDtype()  # pyarrow-backed, missing values are pd.NA

#: The wire encodes a partner's type as an integer.
PARTNER_TYPE_NAMES = {0: "supplier", 1: "customer"}

#: A transaction is ``backdated`` when it was recorded (``created_at``) **more than** this long
#: after its business time (``transaction_time``). Exactly one day later is not backdated; a
#: transaction dated in the future of its recording is not backdated; <NA> if either time is.
BACKDATE_THRESHOLD = pd.Timedelta(days=1)

#: A transaction row's plain fields, as its frame's columns (the wire's ``id`` is the key:
#: :func:`wire_names`), and its embedded references ``{id, name, deleted}``.
TX_PLAIN = (
    "transaction_id",
    "type",
    "transaction_time",
    "created_at",
    "revision",
    "count_of_items",
    "total_quantity",
    "memo",
    "url",
)
TX_REFS = ("partner", "from_location", "to_location", "created_by")


#: Where the stock changed, one pair for every transaction (and line): the ``to_location`` --
#: the location an in, out or adjust acts on, and the destination of a move -- or, when a
#: transaction has none, its ``from_location``. A move's source stays in ``from_location_*``.
LOCATION: dict[str, Any] = {"location_id": "Int64", "location_name": STRING}


def _refs(*, deleted: bool = True) -> dict[str, Any]:
    """The columns of the references of :data:`TX_REFS`, in order: ``<ref>_id``, ``_name`` and
    (with ``deleted``) ``_deleted`` each, and :data:`LOCATION` after ``to_location``'s."""
    cols: dict[str, Any] = {}
    for ref in TX_REFS:
        cols.update({f"{ref}_id": "Int64", f"{ref}_name": STRING})
        if deleted:
            cols[f"{ref}_deleted"] = "boolean"
        if ref == "to_location":
            cols.update(LOCATION)
    return cols


SCHEMAS: dict[str, dict[str, Any]] = {
    "transactions": {
        "transaction_id": "Int64",
        "type": TX_TYPE_DTYPE,
        "transaction_time": TIME_DTYPE,
        "created_at": TIME_DTYPE,
        "revision": "Int64",
        "count_of_items": "Int64",
        "total_quantity": "float64",
        **_refs(),
        "memo": STRING,
        "url": STRING,
        "backdated": "boolean",
        "opening_count": "boolean",  # decided on the whole frame: invtools.frames.openings
    },
    "lines": {
        "transaction_id": "Int64",
        "transaction_time": TIME_DTYPE,
        "type": TX_TYPE_DTYPE,
        "revision": "Int64",
        **_refs(deleted=False),
        "opening_count": "boolean",  # the transaction's
        "item_id": "Int64",
        "item_name": STRING,
        "sku": STRING,
        "barcode": STRING,
        "quantity": "float64",
        "item_deleted": "boolean",
        "new_stock_level": "float64",
        "from_location_new_stock_level": "float64",
        "to_location_new_stock_level": "float64",
    },
    # items_df appends one attr_<name> column per item attribute after these.
    "items": {
        "item_id": "Int64",
        "name": STRING,
        "sku": STRING,
        "barcode": STRING,
        "photo_url": STRING,
        "cost": "float64",
        "price": "float64",
        "quantity": "float64",
    },
    "stock": {
        "item_id": "Int64",
        "item_name": STRING,
        "sku": STRING,
        "location_id": "Int64",
        "location_name": STRING,
        "quantity": "float64",
    },
    "locations": {"location_id": "Int64", "name": STRING, "quantity": "float64", "memo": STRING},
    "partners": {
        "partner_id": "Int64",
        "type": PARTNER_TYPE_DTYPE,
        "name": STRING,
        "phone": STRING,
        "email": STRING,
        "address": STRING,
        "memo": STRING,
    },
    "members": {"member_id": "Int64", "name": STRING, "role": ROLE_DTYPE},
    # attr_type stays text (not a category) so a type the server adds later is not lost.
    "attributes": {
        "attribute_id": "Int64",
        "attr_type": STRING,
        "attr_name": STRING,
        "rank": "Int64",
    },
    "stock_history": {
        "transaction_time": TIME_DTYPE,
        "transaction_id": "Int64",
        "item_id": "Int64",
        "item_name": STRING,
        "location_id": "Int64",
        "location_name": STRING,
        "stock": "float64",
        "change": "float64",
        "item_deleted": "boolean",
    },
}

#: A frame of one kind of thing names its key ``<thing>_id``, the way every other frame names
#: it (``stock.item_id``, ``lines.transaction_id``), so frames join on one name; the wire's
#: ``id``. The first column of its schema.
KEYS: dict[str, str] = {
    "items": "item_id",
    "locations": "location_id",
    "partners": "partner_id",
    "members": "member_id",
    "attributes": "attribute_id",
    "transactions": "transaction_id",
}


def wire_names(resource: str, columns: Iterable[str] | None = None) -> dict[str, str]:
    """Wire field -> column, for ``columns`` of ``resource``'s frame (default: its schema's):
    the wire's ``id`` is the frame's key (:data:`KEYS`).

    >>> wire_names("items")["id"], wire_names("items")["name"]
    ('item_id', 'name')
    """
    key = KEYS[resource]
    return {("id" if col == key else col): col for col in columns or SCHEMAS[resource]}


#: item attribute ``type`` -> dtype of its ``attr_<name>`` column (unknown types: string).
ATTR_DTYPES: dict[str, Any] = {
    "number": "float64",
    "date": TIME_DTYPE,
    "text": STRING,
    "barcode": STRING,
}
