"""One function per resource: records as the API sends them -> the resource's typed frame.

Transactions, items (with a column per item attribute), stock per item and location,
locations, partners, members and item attribute specs; transaction lines are in
:mod:`.lines`, the page-bytes path in :mod:`.arrow`. Every function reads its rows once
(:class:`~invtools.frames.reader.Reader`) and follows the conventions of :mod:`invtools.frames`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from invtools.frames.columns import as_int, as_time, location_of, typed
from invtools.frames.openings import OPENING_COUNT, opening_flags
from invtools.frames.reader import Reader, build_frame, check_columns, check_iterable, check_record
from invtools.frames.schemas import (
    ATTR_DTYPES,
    BACKDATE_THRESHOLD,
    PARTNER_TYPE_NAMES,
    SCHEMAS,
    STRING,
    TX_PLAIN,
    TX_REFS,
    wire_names,
)

__all__ = [
    "transactions_df",
    "items_df",
    "stock_df",
    "locations_df",
    "partners_df",
    "members_df",
    "attributes_df",
    "derived_columns",
]


def derived_columns(transaction_time, created_at, refs: dict[str, Any]) -> dict[str, Any]:
    """The transactions columns both paths (dicts, page bytes) derive alike: the two times read
    from their wire text (a list or an Arrow string array), the references' columns ``refs``,
    the location where the stock changed (:func:`~.columns.location_of`) and ``backdated``:
    ``created_at - transaction_time >`` :data:`BACKDATE_THRESHOLD`, <NA> where either is.

    >>> made = derived_columns(["2026-05-01T00:00:00Z"] * 3,
    ...     ["2026-05-03T00:00:00Z", "2026-05-02T00:00:00Z", None],
    ...     {"to_location_id": pd.array([1, 2, None], "Int64"),
    ...      "to_location_name": pd.array(["WH", "Shop", None], "string"),
    ...      "from_location_id": pd.array([None, None, 3], "Int64"),
    ...      "from_location_name": pd.array([None, None, "Van"], "string")})
    >>> made["backdated"].tolist(), made["location_name"].tolist()
    ([True, False, <NA>], ['WH', 'Shop', 'Van'])
    """
    business, created = as_time(transaction_time), as_time(created_at)
    lag = created - business
    return {
        "transaction_time": business,
        "created_at": created,
        **refs,
        **location_of(refs),
        "backdated": pd.arrays.BooleanArray(
            np.asarray(lag > BACKDATE_THRESHOLD), np.asarray(pd.isna(lag))
        ),
    }


def transactions_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Transaction rows (``/v1/location-txs``) as a typed frame, one row per transaction.

    Columns: transaction_id (the wire's ``id``), type (category in/out/move/adjust),
    transaction_time, created_at
    (datetime64[ms, UTC]), revision, count_of_items (Int64), total_quantity (float64),
    partner_id, partner_name, partner_deleted, from_location_id, from_location_name,
    from_location_deleted, to_location_id, to_location_name, to_location_deleted,
    location_id (Int64), location_name (string), created_by_id, created_by_name,
    created_by_deleted, memo, url, backdated, opening_count (boolean), then any unknown fields.

    - ``location_id``/``location_name``: where the stock changed, one location per row to
      group by. The service puts it in ``to_location``: the location an ``in``, ``out`` or
      ``adjust`` acts on, and for a ``move`` its **destination** (where the stock arrived;
      where it left is ``from_location_*``). A row without a ``to_location`` takes its
      ``from_location``.
    - ``created_by_id``/``created_by_name``: the team member who recorded it.
    - ``backdated`` is ``created_at - transaction_time >`` :data:`BACKDATE_THRESHOLD` (one day).
    - ``opening_count``: an opening stock count (:mod:`~invtools.frames.openings`), decided on
      these rows as a whole, so a slice of the frame keeps it.

    Transaction details are accepted too; their lines (``items``) are ignored here, see
    :func:`lines_df`.

    >>> df = transactions_df([{"id": 1, "type": "out",
    ...     "transaction_time": "2026-05-01T09:00:00.000Z",
    ...     "created_at": "2026-05-03T09:00:00.000Z", "total_quantity": 3,
    ...     "created_by": {"id": 7, "name": "Ana", "deleted": False},
    ...     "to_location": {"id": 2, "name": "Shop", "deleted": False}}])
    >>> df[["type", "location_name", "created_by_name", "total_quantity", "backdated"]]
      type location_name created_by_name  total_quantity  backdated
    0  out          Shop             Ana             3.0       True
    """
    check_iterable(records, "transactions_df")
    reader = Reader(wire_names("transactions", TX_PLAIN), TX_REFS, ignore=("items",))
    reader.read(records, "transactions_df")
    times = reader.lists["transaction_time"], reader.lists["created_at"]
    computed = derived_columns(*times, reader.ref_columns())
    schema = SCHEMAS["transactions"]
    computed.update({col: typed(reader.lists[col], schema[col]) for col in ("type", "memo")})
    computed[OPENING_COUNT] = opening_flags(
        computed["type"], computed["transaction_time"], computed["memo"]
    )
    return build_frame(schema, reader, computed)


def items_df(
    records: Iterable[Mapping[str, Any]],
    attributes: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Items (``/v1/items``) as a typed frame, with one column per item attribute.

    Columns: item_id (Int64; the wire's ``id``), name, sku, barcode, photo_url (string), cost,
    price (float64 from the decimal strings; unparsable -> NaN), quantity (float64), then
    ``attr_<attribute name>`` for each attribute (number -> float64, date -> datetime64[ms,
    UTC], text/barcode -> string), then unknown fields. Per-location ``quantities`` are not a
    column: see :func:`stock_df`.

    ``attributes`` (the ``/v1/item-attrs`` records, or :func:`attributes_df`) is optional: with
    it, every attribute gets its column, in ``rank`` order and typed by ``attr_type``, even if
    no item has a value; without it, columns follow first appearance, typed by each value's
    ``type``.

    >>> df = items_df([{"id": 3, "name": "Mug", "cost": "4.20", "price": "n/a",
    ...     "attrs": [{"id": 1, "type": "number", "name": "Weight", "value": 0.3}]}])
    >>> df.loc[0, ["cost", "attr_Weight"]].tolist(), bool(pd.isna(df.loc[0, "price"]))
    ([4.2, 0.3], True)
    """
    check_iterable(records, "items_df")
    schema = SCHEMAS["items"]
    attr_types: dict[str, Any] = {}  # name -> its type as given (None: not said)
    if attributes is not None:
        specs = attributes if isinstance(attributes, pd.DataFrame) else attributes_df(attributes)
        check_columns(
            specs, "attribute_id rank attr_name attr_type", "items_df: attributes (attributes_df())"
        )
        specs = specs.sort_values(["rank", "attribute_id"], kind="stable", na_position="last")
        for name, kind in zip(specs["attr_name"], specs["attr_type"], strict=True):
            if not pd.isna(name):
                attr_types.setdefault(name, None if pd.isna(kind) else kind)
    attr_values: dict[str, dict[int, Any]] = {name: {} for name in attr_types}

    def rows_noting_attrs():  # attrs are collected on the way through the one pass
        for row, rec in enumerate(records):
            for attr in (rec.get("attrs") if isinstance(rec, Mapping) else None) or ():
                name = attr.get("name")
                if name is None:
                    continue
                attr_values.setdefault(name, {})[row] = attr.get("value")
                if attr_types.get(name) is None:
                    attr_types[name] = attr.get("type")
            yield rec

    reader = Reader(wire_names("items"), ignore=("attrs", "quantities"))
    reader.read(rows_noting_attrs(), "items_df")
    attr_cols = {
        f"attr_{name}": typed(
            list(map(sparse.get, range(reader.n))), ATTR_DTYPES.get(attr_types[name], STRING)
        )
        for name, sparse in attr_values.items()
    }
    # Attribute columns go right after the schema columns, before any unknown fields.
    return build_frame({**schema, **dict.fromkeys(attr_cols)}, reader, computed=attr_cols)


def stock_df(
    items: Iterable[Mapping[str, Any]],
    locations: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Stock per item and location, one row per entry of each item's ``quantities``.

    Columns: item_id (Int64), item_name, sku (string), location_id (Int64), location_name
    (string; <NA> unless ``locations`` - records or :func:`locations_df` - names that id),
    quantity (float64). Rows keep the items' order, then the order of their ``quantities``.

    >>> stock_df([{"id": 3, "name": "Mug", "sku": "M-1",
    ...            "quantities": [{"location_id": 1, "quantity": 5}]}],
    ...          [{"id": 1, "name": "Warehouse"}])
       item_id item_name  sku  location_id location_name  quantity
    0        3       Mug  M-1            1     Warehouse       5.0
    """
    check_iterable(items, "stock_df")
    schema = SCHEMAS["stock"]
    heads: dict[str, list] = {"item_id": [], "item_name": [], "sku": []}

    def entries():  # one per item and location; the item's fields are noted alongside
        for row, item in enumerate(items):
            check_record(item, row, "stock_df")
            head = (item.get("id"), item.get("name"), item.get("sku"))
            for entry in item.get("quantities") or ():
                for values, value in zip(heads.values(), head, strict=True):
                    values.append(value)
                yield entry

    reader = Reader(["location_id", "quantity"])
    reader.read(entries(), "stock_df")
    computed = {col: typed(values, schema[col]) for col, values in heads.items()}
    computed["location_id"] = location_ids = as_int(reader.lists["location_id"])
    locs = locations if isinstance(locations, pd.DataFrame) else locations_df(locations or ())
    check_columns(locs, "location_id name", "stock_df: locations (locations_df())")
    lookup = locs.drop_duplicates("location_id").set_index("location_id")[
        "name"
    ]  # each id named by its first row
    computed["location_name"] = pd.array(lookup.reindex(location_ids).array, dtype=STRING)
    return build_frame(schema, reader, computed=computed)


def locations_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Locations (``/v1/locations``): location_id (Int64), name (string), quantity (float64),
    memo (string).

    >>> df = locations_df([{"id": 1, "name": "Warehouse", "quantity": 120, "memo": None}])
    >>> df.dtypes.astype(str).tolist()
    ['Int64', 'string', 'float64', 'string']
    """
    return _simple("locations", records)


def partners_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Partners (``/v1/partners``): partner_id (Int64), type (category supplier/customer, from
    the wire's 0/1), name, phone, email, address, memo (string).

    >>> partners_df([{"id": 4, "type": 1, "name": "Cafe Rosa"}]).loc[0, ["type", "email"]].tolist()
    ['customer', <NA>]
    """
    return _simple("partners", records, names={"type": PARTNER_TYPE_NAMES})


def members_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Team members (``/v1/members``): member_id (Int64), name (string), role (category
    admin/member/viewer).

    >>> members_df([{"id": 2, "name": "Ana", "role": "admin"}])["role"].cat.categories.tolist()
    ['admin', 'member', 'viewer']
    """
    return _simple("members", records)


def attributes_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Item attribute specs (``/v1/item-attrs``): attribute_id (Int64), attr_type, attr_name
    (string), rank (Int64).

    >>> attributes_df([{"id": 1, "attr_type": "date", "attr_name": "Expiry", "rank": 0}])
       attribute_id attr_type attr_name  rank
    0             1      date    Expiry     0
    """
    return _simple("attributes", records)


def _simple(resource: str, records, names: Mapping[str, Mapping] = MappingProxyType({})):
    what = f"{resource}_df"
    check_iterable(records, what)
    schema = SCHEMAS[resource]
    reader = Reader(wire_names(resource))
    reader.read(records, what)
    return build_frame(schema, reader, names=names)
