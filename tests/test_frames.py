"""invtools.frames: records (as recorded from the wire, tests/data/*.json) -> typed DataFrames.

The recorded files are hand-written in the wire format of api-facts.md: list endpoints are page
envelopes (``items, count, limit, cursor, has_more``), non-paginated ones ``{items, count}``,
and ``transaction_details.json`` is a list of single-object responses ``{"item": detail}``.
The scenario: two locations (1 Main Warehouse, 2 Shop Floor); transactions 1001 in, 1002 move
1 -> 2, 1003 out at 2 and 1004 adjust (-3) at 1 at the same instant, 1005 in (with a line of a
deleted item carrying an unknown ``unit`` field).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from invtools import frames
from invtools.errors import ConfigError
from invtools.frames import (
    BACKDATE_THRESHOLD,
    PARTNER_TYPE_DTYPE,
    PROVENANCE_KEYS,
    ROLE_DTYPE,
    SCHEMAS,
    TIME_DTYPE,
    TX_TYPE_DTYPE,
    attributes_df,
    items_df,
    lines_df,
    locations_df,
    members_df,
    partners_df,
    stock_df,
    stock_history,
    transactions_df,
    transactions_df_from_pages,
    with_provenance,
)
from invtools.frames.provenance import Provenance

DATA = Path(__file__).parent / "data"


def load(name: str):
    return json.loads((DATA / name).read_text())


@pytest.fixture
def tx_rows():
    return load("transactions_page.json")["items"]


@pytest.fixture
def details():
    """Unwrapped details, newest first (the list order) so sorting is exercised."""
    return [resp["item"] for resp in reversed(load("transaction_details.json"))]


@pytest.fixture
def item_rows():
    return load("items_page.json")["items"]


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text).tz_convert("UTC")


def assert_schema(df: pd.DataFrame, resource: str, extra: tuple[str, ...] = ()):
    schema = SCHEMAS[resource]
    assert list(df.columns) == [*schema, *extra]
    for col, dtype in schema.items():
        assert df[col].dtype == dtype, (col, df[col].dtype, dtype)


def values(series: pd.Series) -> list:
    """Values with every kind of missing turned into None, for plain list comparison."""
    return [None if pd.isna(v) else v for v in series.astype(object)]


# ------------------------------------------------------------------------------ schemas


def test_declared_dtypes_are_the_contract():
    assert str(TIME_DTYPE) == "datetime64[ms, UTC]"
    assert list(TX_TYPE_DTYPE.categories) == ["in", "out", "move", "adjust"]
    assert list(PARTNER_TYPE_DTYPE.categories) == ["supplier", "customer"]
    assert list(ROLE_DTYPE.categories) == ["admin", "member", "viewer"]
    assert SCHEMAS["transactions"]["memo"] == "string"
    assert list(SCHEMAS["stock_history"]) == [
        "transaction_time",
        "transaction_id",
        "item_id",
        "item_name",
        "location_id",
        "location_name",
        "stock",
        "change",
        "item_deleted",
    ]


@pytest.mark.parametrize(
    "build, resource",
    [
        (transactions_df, "transactions"),
        (lines_df, "lines"),
        (items_df, "items"),
        (stock_df, "stock"),
        (locations_df, "locations"),
        (partners_df, "partners"),
        (members_df, "members"),
        (attributes_df, "attributes"),
        (stock_history, "stock_history"),
    ],
)
def test_empty_input_gives_the_full_schema(build, resource):
    df = build([])
    assert len(df) == 0
    assert_schema(df, resource)


def test_empty_generator_works_too():
    assert_schema(transactions_df(r for r in []), "transactions")


# ------------------------------------------------------------------------------ transactions


def test_transactions_column_by_column(tx_rows):
    df = transactions_df(tx_rows)
    assert_schema(df, "transactions")
    assert df["transaction_time"].dt.tz is not None and str(df["transaction_time"].dt.tz) == "UTC"
    assert values(df["transaction_id"]) == [1005, 1004, 1003, 1002, 1001]
    assert values(df["type"]) == ["in", "adjust", "out", "move", "in"]
    assert df.loc[2, "transaction_time"] == ts("2026-04-05T15:45:10.250Z")
    assert df.loc[2, "created_at"] == ts("2026-04-05T15:45:12.004Z")
    assert values(df["revision"]) == [0, 0, 2, 1, 0]
    assert values(df["count_of_items"]) == [2, 1, 1, 2, 2]
    assert values(df["total_quantity"]) == [11.0, -3.0, 2.0, 15.0, 70.0]
    assert values(df["partner_id"]) == [501, None, 502, None, 501]
    assert values(df["partner_name"]) == ["Acme Ceramics", None, "Cafe Rosa", None, "Acme Ceramics"]
    assert values(df["partner_deleted"]) == [False, None, True, None, False]
    assert values(df["from_location_id"]) == [None, None, None, 1, None]
    assert values(df["from_location_name"]) == [None, None, None, "Main Warehouse", None]
    assert values(df["to_location_id"]) == [1, 1, 2, 2, 1]
    assert values(df["to_location_deleted"]) == [False] * 5
    assert values(df["created_by_id"]) == [1, 9, 2, 1, 1]
    assert values(df["created_by_name"]) == [
        "Ana Souza",
        "Former Staff",
        "Ben Okafor",
        "Ana Souza",
        "Ana Souza",
    ]
    assert values(df["created_by_deleted"]) == [False, True, False, False, False]
    assert values(df["memo"]) == [
        "Restock",
        "Stock count: 3 broken",
        None,
        "Fill the shop",
        "Opening stock",
    ]
    assert df.loc[0, "url"] == "https://web.boxhero-app.com/team/77/tx/1005"


def test_backdated_is_more_than_one_day_between_business_time_and_recording(tx_rows):
    assert BACKDATE_THRESHOLD == pd.Timedelta(days=1)
    df = transactions_df(tx_rows).set_index("transaction_id")
    # 1005: exactly one day later (not backdated); 1004: four days; 1002: one day and 1 ms.
    assert df["backdated"].to_dict() == {
        1005: False,
        1004: True,
        1003: False,
        1002: True,
        1001: False,
    }


def test_backdated_is_missing_when_a_time_is_missing_or_bad():
    df = transactions_df(
        [
            {"id": 1, "transaction_time": "2026-05-01T00:00:00.000Z"},
            {"id": 2, "transaction_time": "yesterday", "created_at": "2026-05-01T00:00:00.000Z"},
            {
                "id": 3,
                "transaction_time": "2026-05-05T00:00:00.000Z",
                "created_at": "2026-05-01T00:00:00.000Z",
            },  # dated in the future: not backdated
        ]
    )
    assert values(df["backdated"]) == [None, None, False]
    assert values(df["transaction_time"])[1] is None


def test_details_in_transactions_df_ignore_their_lines(details):
    df = transactions_df(details)
    assert_schema(df, "transactions")  # no stray "items" column
    assert sorted(values(df["transaction_id"])) == [1001, 1002, 1003, 1004, 1005]


def test_unknown_fields_are_kept_after_the_schema_and_missing_ones_are_na():
    rows = [
        {"id": 1, "type": "in", "source": "app"},
        {"id": 2, "type": 42, "tags": ["a", "b"], "backdated": "server says so"},
    ]
    df = transactions_df(rows)
    assert_schema(df, "transactions", extra=("source", "tags", "extra_backdated"))
    assert df["source"].dtype == object and df["tags"].dtype == object
    assert df["source"].tolist() == ["app", None]
    assert df["tags"].tolist() == [None, ["a", "b"]]
    assert df["extra_backdated"].tolist() == [None, "server says so"]
    assert values(df["type"]) == ["in", None]  # not text: missing, not a crash
    assert values(df["total_quantity"]) == [None, None]
    assert values(df["created_by_name"]) == [None, None]


def test_a_type_the_service_added_is_one_more_category_on_both_paths():
    """Issue 17: a fifth type must not vanish into a missing value."""
    rows = [
        {"id": 2, "type": "teleport", "transaction_time": "2026-05-02T00:00:00.000Z"},
        {"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00.000Z"},
    ]
    body = json.dumps({"items": rows, "cursor": None, "has_more": False}).encode()
    for df in (transactions_df(rows), transactions_df_from_pages([body])):
        assert values(df["type"]) == ["teleport", "in"]
        assert df["type"].cat.categories.tolist() == ["in", "out", "move", "adjust", "teleport"]


def test_odd_values_become_missing_not_errors():
    df = transactions_df(
        [
            {
                "id": "x",
                "revision": 1.5,
                "created_at": 1714000000,
                "partner": 501,
                "to_location": {"id": 2, "deleted": "no"},
                "total_quantity": "lots",
                "memo": 42,
            }
        ]
    )
    assert_schema(df, "transactions")
    assert (
        values(
            df[
                [
                    "transaction_id",
                    "revision",
                    "created_at",
                    "partner_id",
                    "total_quantity",
                    "to_location_deleted",
                ]
            ].iloc[0]
        )
        == [None] * 6
    )
    assert df.loc[0, "to_location_id"] == 2
    assert df.loc[0, "memo"] == "42"


def test_a_generator_is_consumed_once(tx_rows):
    consumed = []

    def gen():
        for row in tx_rows:
            consumed.append(row["id"])
            yield row

    df = transactions_df(gen())
    assert consumed == [1005, 1004, 1003, 1002, 1001]
    assert values(df["transaction_id"]) == consumed


def test_wrong_input_shapes_say_what_to_pass(tx_rows):
    envelope = load("transactions_page.json")
    with pytest.raises(TypeError, match="'items'"):
        transactions_df(envelope)
    with pytest.raises(TypeError, match="row 1 is a str, not a record dict"):
        transactions_df([tx_rows[0], "oops"])


# ------------------------------------------------------------------------------ lines


def test_lines_one_row_per_line_with_the_transaction_alongside(details):
    df = lines_df(details)
    assert_schema(df, "lines", extra=("unit",))
    assert values(df["transaction_id"]) == [1005, 1005, 1004, 1003, 1002, 1002, 1001, 1001]
    assert values(df["item_id"]) == [101, 104, 101, 101, 101, 102, 101, 102]
    assert values(df["type"]) == ["in", "in", "adjust", "out", "move", "move", "in", "in"]
    assert values(df["revision"]) == [0, 0, 0, 2, 1, 1, 0, 0]
    assert df.loc[0, "transaction_time"] == ts("2026-04-07T09:00:00.000Z")
    assert values(df["partner_name"]) == ["Acme Ceramics"] * 2 + [
        None,
        "Cafe Rosa",
        None,
        None,
        "Acme Ceramics",
        "Acme Ceramics",
    ]
    move = df[df["transaction_id"] == 1002]
    assert values(move["from_location_id"]) == [1, 1]
    assert values(move["from_location_name"]) == ["Main Warehouse"] * 2
    assert values(move["to_location_name"]) == ["Shop Floor"] * 2
    assert values(move["from_location_new_stock_level"]) == [28.0, 27.0]
    assert values(move["to_location_new_stock_level"]) == [12.0, 3.0]
    adjust = df[df["type"] == "adjust"].iloc[0]
    assert adjust["quantity"] == -3.0 and adjust["new_stock_level"] == 35.0
    assert values(df["item_name"])[:2] == ["Ceramic Mug", "Old Mug"]
    assert values(df["barcode"])[:2] == ["8801234567890", None]  # 104's line has no barcode
    assert values(df["item_deleted"])[:2] == [False, True]
    assert values(df["unit"]) == [None, "pcs", None, None, None, None, None, None]
    assert values(df["from_location_new_stock_level"])[0] is None


def test_who_and_where_on_every_line_and_every_transaction(details, tx_rows):
    """Issue 19: the member who recorded it, and the one location where the stock changed
    (a move's destination; a transaction without a to_location: its from_location)."""
    lines = lines_df(details)
    assert values(lines["created_by_id"]) == [1, 1, 9, 2, 1, 1, 1, 1]
    assert (
        values(lines["created_by_name"])
        == ["Ana Souza"] * 2 + ["Former Staff", "Ben Okafor"] + ["Ana Souza"] * 4
    )
    assert values(lines["location_id"]) == [1, 1, 1, 2, 2, 2, 1, 1]
    assert values(lines["location_name"])[4:6] == ["Shop Floor"] * 2  # the move's destination
    tx = transactions_df(tx_rows)
    assert values(tx["location_id"]) == values(tx["to_location_id"])
    assert values(tx["location_name"]) == values(tx["to_location_name"])
    for df in (lines, tx):
        assert df["location_id"].dtype == "Int64" and df["location_name"].dtype == "string"
        assert df["created_by_id"].dtype == "Int64" and df["created_by_name"].dtype == "string"
    # no to_location: the from_location; neither: missing
    odd = [
        {
            "id": 1,
            "type": "move",
            "from_location": {"id": 4, "name": "Yard", "deleted": False},
            "to_location": None,
            "items": [{"id": 9, "quantity": 1}],
        },
        {"id": 2, "type": "in", "items": [{"id": 9, "quantity": 1}]},
    ]
    rows = [{k: v for k, v in d.items() if k != "items"} for d in odd]  # pyarrow reads these
    body = json.dumps({"items": rows, "cursor": None, "has_more": False}).encode()
    for df in (lines_df(odd), transactions_df(odd), transactions_df_from_pages([body])):
        assert values(df["location_id"]) == [4, None]
        assert values(df["location_name"]) == ["Yard", None]


def test_lines_skip_transactions_without_lines_and_reject_wrapped_details(details):
    no_lines = dict(details[0], items=[])
    assert len(lines_df([no_lines, {"id": 7}])) == 0
    with pytest.raises(TypeError, match="unwrapped"):
        lines_df([{"item": details[0]}, "not a detail"])


# ------------------------------------------------------------------------------ items, stock


def test_items_columns_and_money(item_rows):
    df = items_df(item_rows)
    attrs = ("attr_Color", "attr_Weight (kg)", "attr_Supplier code", "attr_Expiry")
    assert_schema(df, "items", extra=(*attrs, "unit"))
    assert values(df["item_id"]) == [101, 102, 103]
    assert values(df["barcode"]) == ["8801234567890", None, "GC25"]
    assert values(df["photo_url"]) == ["https://img.example/mug.jpg", None, None]
    assert values(df["cost"]) == [4.2, 1.5, None]  # "n/a" -> NaN
    assert values(df["price"]) == [9.9, None, 25.0]  # "" -> NaN
    assert values(df["quantity"]) == [45.0, 30.0, 0.5]
    assert values(df["unit"]) == [None, None, "pcs"]


def test_item_attributes_typed_by_their_type(item_rows):
    df = items_df(item_rows)
    assert df["attr_Color"].dtype == "string"
    assert df["attr_Weight (kg)"].dtype == "float64"
    assert df["attr_Expiry"].dtype == TIME_DTYPE
    assert df["attr_Supplier code"].dtype == "string"
    assert values(df["attr_Color"]) == ["white", "blue", None]
    assert values(df["attr_Weight (kg)"]) == [0.35, None, None]
    assert values(df["attr_Expiry"]) == [None, ts("2027-01-31T00:00:00Z"), None]
    assert values(df["attr_Supplier code"]) == ["SUP-0077", None, None]


def test_item_attribute_specs_give_every_column_in_rank_order(item_rows):
    specs = load("item_attrs.json")["items"]
    df = items_df(item_rows, attributes=specs)
    assert list(df.columns[8:]) == [
        "attr_Color",
        "attr_Weight (kg)",
        "attr_Expiry",
        "attr_Supplier code",
        "attr_Notes",
        "unit",
    ]
    assert df["attr_Notes"].dtype == "string" and df["attr_Notes"].isna().all()
    # The same from an attributes_df frame, and for no items at all.
    empty = items_df([], attributes=attributes_df(specs))
    assert list(empty.columns[8:]) == list(df.columns[8:-1])
    assert empty["attr_Expiry"].dtype == TIME_DTYPE
    assert empty["attr_Weight (kg)"].dtype == "float64"


def test_attribute_values_that_do_not_parse_are_missing():
    df = items_df(
        [
            {
                "id": 1,
                "attrs": [
                    {"type": "number", "name": "W", "value": "heavy"},
                    {"type": "date", "name": "D", "value": "someday"},
                ],
            },
            {
                "id": 2,
                "attrs": [
                    {"type": "number", "name": "W", "value": "2.5"},
                    {"type": "date", "name": "D", "value": "2026-06-01"},
                ],
            },
        ]
    )
    assert values(df["attr_W"]) == [None, 2.5]
    assert values(df["attr_D"]) == [None, ts("2026-06-01T00:00:00Z")]


def test_stock_with_location_names(item_rows):
    locations = load("locations.json")["items"]
    for locs in (locations, locations_df(locations)):
        df = stock_df(item_rows, locs)
        assert_schema(df, "stock")
        assert values(df["item_id"]) == [101, 101, 102, 102]
        assert values(df["item_name"]) == ["Ceramic Mug"] * 2 + ["Tea Towel"] * 2
        assert values(df["sku"]) == ["MUG-01", "MUG-01", "TT-02", "TT-02"]
        assert values(df["location_id"]) == [1, 2, 1, 2]
        assert values(df["location_name"]) == ["Main Warehouse", "Shop Floor"] * 2
        assert values(df["quantity"]) == [35.0, 10.0, 27.0, 3.0]


def test_stock_without_locations_and_with_unknown_location(item_rows):
    df = stock_df(item_rows)
    assert_schema(df, "stock")
    assert df["location_name"].isna().all()
    assert values(df["location_id"]) == [1, 2, 1, 2]
    one = stock_df(
        [{"id": 5, "quantities": [{"location_id": 9, "quantity": 1}]}],
        [{"id": 1, "name": "Main Warehouse"}],
    )
    assert values(one["location_name"]) == [None]


def test_stock_sums_match_the_item_and_location_totals(item_rows):
    stock = stock_df(item_rows)
    items = items_df(item_rows).set_index("item_id")
    per_item = stock.groupby("item_id")["quantity"].sum()
    assert per_item.to_dict() == items.loc[per_item.index, "quantity"].to_dict()
    per_location = stock.groupby("location_id")["quantity"].sum()
    locations = locations_df(load("locations.json")["items"]).set_index("location_id")["quantity"]
    assert per_location.to_dict() == locations.to_dict()


# ------------------------------------------------------------------------------ small resources


def test_locations_partners_members_attributes():
    loc = locations_df(load("locations.json")["items"])
    assert_schema(loc, "locations")
    assert values(loc["memo"]) == ["Back entrance, dock 2", None]
    assert values(loc["quantity"]) == [62.0, 13.0]

    partners = partners_df(load("partners_page.json")["items"])
    assert_schema(partners, "partners")
    assert values(partners["type"]) == ["supplier", "customer"]
    assert values(partners["phone"]) == ["+1 555 0100", None]
    assert values(partners["address"]) == ["1 Kiln Road, Stoke", None]

    members = members_df(load("members.json")["items"])
    assert_schema(members, "members")
    assert values(members["role"]) == ["admin", "member", "viewer"]
    assert values(members_df([{"id": 4, "role": "owner"}])["role"]) == ["owner"]  # kept
    assert values(members_df([{"id": 4, "role": 7}])["role"]) == [None]

    attrs = attributes_df(load("item_attrs.json")["items"])
    assert_schema(attrs, "attributes")
    assert values(attrs["attr_type"]) == ["text", "barcode", "number", "date", "text"]
    assert values(attrs["rank"]) == [0, 3, 1, 2, 4]


def test_partner_type_outside_zero_and_one_is_missing():
    assert values(partners_df([{"id": 1, "type": 7}, {"id": 2, "type": None}])["type"]) == [
        None,
        None,
    ]


# ------------------------------------------------------------------------------ stock history


def history_tuples(df: pd.DataFrame) -> list[tuple]:
    return [
        (int(t), int(i), float(s), float(c))
        for t, i, s, c in df[["transaction_id", "item_id", "stock", "change"]].itertuples(
            index=False
        )
    ]


def test_stock_history_all_locations(details):
    df = stock_history(lines_df(details))
    assert_schema(df, "stock_history")
    assert df["location_id"].isna().all()
    # Hand-computed from the recorded levels; 1003 and 1004 share an instant: id order.
    assert history_tuples(df) == [
        (1001, 101, 40.0, 40.0),
        (1002, 101, 40.0, 0.0),
        (1003, 101, 38.0, -2.0),
        (1004, 101, 35.0, -3.0),
        (1005, 101, 45.0, 10.0),
        (1001, 102, 30.0, 30.0),
        (1002, 102, 30.0, 0.0),
        (1005, 104, 1.0, 1.0),
    ]
    assert values(df["item_name"])[-1] == "Old Mug"
    assert df.loc[2, "transaction_time"] == df.loc[3, "transaction_time"]


def test_stock_history_says_which_items_are_deleted(details):
    # issue 11 item 2: analyses and plots of a history must know a deleted item.
    df = stock_history(lines_df(details))
    flags = df.groupby("item_id")["item_deleted"].agg(lambda s: s.tolist()).to_dict()
    assert flags == {101: [False] * 5, 102: [False] * 2, 104: [True]}
    # a detail fetched before the deletion still says False: the item's newest word counts
    older = {
        **details[-1],
        "id": 999,
        "transaction_time": "2026-04-06T09:00:00.000Z",
        "items": [{**details[0]["items"][1], "deleted": False}],
    }
    assert details[0]["items"][1]["id"] == 104
    again = stock_history(lines_df([*details, older]))
    assert again.loc[again["item_id"] == 104, "item_deleted"].tolist() == [True, True]


def test_stock_history_one_location_sees_both_sides_of_a_move(details):
    lines = lines_df(details)
    warehouse = stock_history(lines, location_id=1)
    assert_schema(warehouse, "stock_history")
    assert values(warehouse["location_id"]) == [1] * len(warehouse)
    assert history_tuples(warehouse) == [
        (1001, 101, 40.0, 40.0),
        (1002, 101, 28.0, -12.0),
        (1004, 101, 25.0, -3.0),
        (1005, 101, 35.0, 10.0),
        (1001, 102, 30.0, 30.0),
        (1002, 102, 27.0, -3.0),
        (1005, 104, 1.0, 1.0),
    ]
    shop = stock_history(lines, location_id=2)
    assert history_tuples(shop) == [
        (1002, 101, 12.0, 12.0),
        (1003, 101, 10.0, -2.0),
        (1002, 102, 3.0, 3.0),
    ]
    # The last level per item and location is today's stock.
    stock = stock_df(load("items_page.json")["items"]).set_index(["item_id", "location_id"])
    for loc, hist in ((1, warehouse), (2, shop)):
        last = hist.groupby("item_id")["stock"].last()
        for item, level in last.items():
            if item != 104:  # deleted item: not listed any more
                assert stock.loc[(item, loc), "quantity"] == level


def test_stock_history_by_location_is_every_locations_history(details):
    lines = lines_df(details)
    each = stock_history(lines, by_location=True)
    assert_schema(each, "stock_history")
    assert set(each["location_id"]) == {1, 2}
    for loc in (1, 2):
        one = stock_history(lines, location_id=loc)
        mine = each[(each["location_id"] == loc).to_numpy(dtype=bool)].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, one)
    with pytest.raises(ConfigError, match="not both"):
        stock_history(lines, location_id=1, by_location=True)


def test_stock_history_first_point_change_is_the_lines_own_effect(details):
    by_id = {d["id"]: d for d in details}
    out_and_adjust = stock_history([by_id[1003], by_id[1004]], item_ids=[101])
    assert history_tuples(out_and_adjust) == [(1003, 101, 38.0, -2.0), (1004, 101, 35.0, -3.0)]
    only_move = lines_df([by_id[1002]])
    assert history_tuples(stock_history(only_move, location_id=1)) == [
        (1002, 101, 28.0, -12.0),
        (1002, 102, 27.0, -3.0),
    ]
    assert history_tuples(stock_history(only_move, location_id=2)) == [
        (1002, 101, 12.0, 12.0),
        (1002, 102, 3.0, 3.0),
    ]
    assert history_tuples(stock_history(only_move)) == [
        (1002, 101, 40.0, 0.0),
        (1002, 102, 30.0, 0.0),
    ]


def test_stock_history_filters_items_and_skips_lines_without_levels(details):
    df = stock_history(lines_df(details), item_ids=[102, 104])
    assert values(df["item_id"]) == [102, 102, 104]
    changed = copy.deepcopy(details)
    changed[0]["items"][0]["new_stock_level"] = None  # 1005's mug line
    assert values(stock_history(lines_df(changed), item_ids=[101])["transaction_id"]) == [
        1001,
        1002,
        1003,
        1004,
    ]


def test_stock_history_change_adds_up_to_stock(details):
    df = stock_history(lines_df(details), location_id=1)
    for _, group in df.groupby("item_id"):
        assert np.allclose(group["change"].cumsum(), group["stock"])


# ------------------------------------------------------------------------------ provenance


def test_provenance_attrs_hold_one_json_record():
    fetched = pd.Timestamp("2026-05-02T01:10:00Z")
    df = transactions_df([])
    # The call the client makes: keyword fields, fetched_at a Timestamp, source not given.
    out = with_provenance(
        df,
        team_id=77,
        team_name="Shop",
        endpoint="/v1/location-txs",
        filters={"type": "in"},
        fetched_at=fetched,
        pages=3,
        requests=1,
        from_cache=False,
    )
    assert out is df
    assert df.attrs == {
        "source": "api",
        "team_id": 77,
        "team_name": "Shop",
        "base_url": None,
        "endpoint": "/v1/location-txs",
        "filters": {"type": "in"},
        "window": None,
        "grain": None,
        "as_of": None,
        "fetched_at": "2026-05-02T01:10:00.000Z",
        "data_as_of": None,
        "pages": 3,
        "rows": 0,
        "requests": 1,
        "from_cache": False,
        "retries": 0,
    }
    assert json.loads(json.dumps(df.attrs)) == df.attrs  # JSON values only
    assert Provenance.from_attrs(df.attrs) == Provenance(
        source="api",
        team_id=77,
        team_name="Shop",
        endpoint="/v1/location-txs",
        filters={"type": "in"},
        fetched_at=fetched,
        pages=3,
        requests=1,
        from_cache=False,
    )
    assert list(PROVENANCE_KEYS) == [f.name for f in dataclasses.fields(Provenance)]
    assert all(isinstance(meaning, str) and meaning for meaning in PROVENANCE_KEYS.values())
    assert set(df.attrs) == set(PROVENANCE_KEYS)
    with pytest.raises(TypeError, match="team_nmae"):
        with_provenance(df, team_nmae="typo")


def test_provenance_from_a_record_a_mapping_or_keywords():
    record = Provenance(
        source="mirror",
        team_id=5,
        endpoint="/v1/location-txs",
        rows=12,
        filters={"since": pd.Timestamp("2026-05-01", tz="UTC"), "ids": (3, 1), "type": None},
    )
    df = members_df([])
    df.attrs["note"] = "kept"  # attrs that are not provenance stay
    with_provenance(df, record)
    assert df.attrs == {**record.as_attrs(), "note": "kept"}
    assert df.attrs["filters"] == {"since": "2026-05-01T00:00:00.000Z", "ids": [3, 1]}
    assert df.attrs["source"] == "mirror"  # a given source is kept
    # Keywords add to the record or replace its values; a mapping of fields works the same way.
    with_provenance(df, record, rows=13, retries=2)
    assert (df.attrs["rows"], df.attrs["retries"], df.attrs["team_id"]) == (13, 2, 5)
    with_provenance(df, {"team_id": 6, "endpoint": "/v1/members"}, pages=1)
    assert Provenance.from_attrs(df.attrs) == Provenance(
        source="api", team_id=6, endpoint="/v1/members", pages=1
    )
    with pytest.raises(TypeError, match=r"\['teem_id'\].*known keys: source, team_id"):
        with_provenance(df, {"teem_id": 6})
    with pytest.raises(TypeError, match="Provenance or a mapping"):
        with_provenance(df, 6)


def test_a_frame_keeps_its_provenance_through_parquet_and_pickle(tx_rows, tmp_path):
    df = with_provenance(
        transactions_df(tx_rows),
        team_id=77,
        team_name="Shop",
        base_url="https://h.example",
        endpoint="/v1/location-txs",
        fetched_at=pd.Timestamp("2026-05-02T01:10:00.123Z"),
        filters={
            "since": pd.Timestamp("2026-05-01", tz="UTC"),
            "location_ids": (1, 2),
            "type": "in",
        },
        pages=1,
        rows=len(tx_rows),
        requests=1,
        from_cache=0,
    )
    df.to_parquet(tmp_path / "tx.parquet")
    back = pd.read_parquet(tmp_path / "tx.parquet")
    assert back.attrs == df.attrs and back.attrs["filters"]["location_ids"] == [1, 2]
    assert Provenance.from_attrs(back.attrs) == Provenance.from_attrs(df.attrs)
    pd.testing.assert_frame_equal(back, df)
    df.to_pickle(tmp_path / "tx.pickle")
    assert pd.read_pickle(tmp_path / "tx.pickle").attrs == df.attrs


def test_docstring_examples_run():
    # Every module of the package, as `pytest --doctest-modules invtools` runs them.
    import doctest
    import importlib
    import pkgutil

    attempted = 0
    for module in [
        frames,
        *(
            importlib.import_module(f"{frames.__name__}.{info.name}")
            for info in pkgutil.iter_modules(frames.__path__)
        ),
    ]:
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted >= 10


def test_many_rows_across_chunks_with_late_extras_and_non_dict_mappings():
    from types import MappingProxyType

    n = frames.CHUNK_ROWS * 2 + 5
    rows = (
        {
            "id": i,
            "type": "out",
            "total_quantity": i / 2,
            "partner": None if i % 3 else {"id": i, "name": f"P{i}", "deleted": False},
        }
        for i in range(n)
    )
    rows = [dict(r) for r in rows]
    rows[-1]["late"] = "x"  # unknown field in the last chunk
    # a mapping, not a dict
    rows[frames.CHUNK_ROWS + 1] = MappingProxyType(rows[frames.CHUNK_ROWS + 1])
    df = transactions_df(iter(rows))
    assert_schema(df, "transactions", extra=("late",))
    assert values(df["transaction_id"]) == list(range(n))
    assert df["total_quantity"].tolist() == [i / 2 for i in range(n)]
    assert values(df["partner_id"]) == [None if i % 3 else i for i in range(n)]
    assert values(df["partner_name"])[frames.CHUNK_ROWS + 1] == (
        None if (frames.CHUNK_ROWS + 1) % 3 else f"P{frames.CHUNK_ROWS + 1}"
    )
    assert df["late"].iloc[-1] == "x" and df["late"].iloc[:-1].isna().all()


def test_the_three_ways_of_reading_a_chunk_give_the_same_frame(tx_rows):
    """Uniform chunks (itemgetter), mixed chunks (dict.get) and non-dict rows (row by row).

    Each variant fills exactly one chunk of ``CHUNK_ROWS`` rows, so each is read on its own.
    """
    from types import MappingProxyType

    size = frames.CHUNK_ROWS
    base = [{**copy.deepcopy(tx_rows[i % len(tx_rows)]), "id": i} for i in range(size)]
    reordered = [dict(reversed(list(r.items()))) for r in base]  # same keys, other order
    with_unit = [{**r, "unit": f"box{i}"} for i, r in enumerate(base)]  # unknown, every row
    no_memo = [{k: v for k, v in r.items() if k != "memo"} for r in base]  # known, no row
    swapped = copy.deepcopy(base)  # same width, other key
    swapped[1]["colour"] = swapped[1].pop("url")
    ragged = copy.deepcopy(base)
    ragged[2]["late"] = 1  # one row wider
    rows = base + reordered + with_unit + no_memo + swapped + ragged
    reference = transactions_df([MappingProxyType(r) for r in rows])  # forces row by row
    got = transactions_df(rows)
    pd.testing.assert_frame_equal(got, reference)
    assert list(got.columns[-3:]) == ["unit", "colour", "late"]
    assert got["unit"].tolist()[2 * size : 3 * size] == [f"box{i}" for i in range(size)]
    assert got["unit"].iloc[: 2 * size].isna().all() and got["unit"].iloc[3 * size :].isna().all()
    assert got["memo"].iloc[3 * size : 4 * size].isna().all()
    assert values(got["memo"].iloc[:size]) == [r["memo"] for r in base]
    assert got["url"].iloc[4 * size + 1] is pd.NA
    assert got["colour"].iloc[4 * size + 1] == base[1]["url"]
    assert got["colour"].notna().sum() == 1
    assert got["late"].iloc[5 * size + 2] == 1 and got["late"].notna().sum() == 1


def test_a_generator_is_read_a_chunk_at_a_time_and_its_rows_freed():
    """Only about one chunk of the input is held at a time (the module's promise)."""
    alive = most = 0

    class Row(dict):  # a dict that says when it is freed
        def __del__(self):
            nonlocal alive
            alive -= 1

    n = 8 * frames.CHUNK_ROWS

    def rows():
        nonlocal alive, most
        for i in range(n):
            most = max(most, alive)
            alive += 1
            yield Row(id=i, type="in", memo=f"m{i}", partner={"id": i, "name": f"P{i}"})

    df = transactions_df(rows())
    assert len(df) == n and values(df["transaction_id"]) == list(range(n))
    assert values(df["partner_name"])[-1] == f"P{n - 1}" and df["memo"].iloc[-1] == f"m{n - 1}"
    # The chunk being read and the one before it, never the whole input.
    assert frames.CHUNK_ROWS <= most <= 2 * frames.CHUNK_ROWS


def test_stock_history_refuses_what_it_cannot_use_in_words():
    """Issue 13, item 7: item_ids="100001" was silently empty; a transactions frame gave
    KeyError: 'quantity'."""
    lines = frames.lines_df(
        [
            {
                "id": 1,
                "type": "in",
                "transaction_time": "2026-05-01T00:00:00Z",
                "items": [{"id": 100001, "name": "Mug", "quantity": 5, "new_stock_level": 5}],
            }
        ]
    )
    assert len(frames.stock_history(lines, item_ids="100001")) == 1
    with pytest.raises(ConfigError, match="whole numbers"):
        frames.stock_history(lines, item_ids=[1.5])
    tx = frames.transactions_df(
        [{"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00Z"}]
    )
    with pytest.raises(ConfigError, match="needs a lines frame"):
        frames.stock_history(tx)


def _page(rows: list[dict]) -> bytes:
    return json.dumps({"items": rows, "cursor": None, "has_more": False}).encode()


#: Each frame builder, from the recorded rows (transactions, details, items).
BUILDERS = {
    "transactions_df": lambda tx, details, items: frames.transactions_df(tx),
    "transactions_df_from_pages": lambda tx, d, i: frames.transactions_df_from_pages([_page(tx)]),
    "lines_df": lambda tx, details, items: frames.lines_df(details),
    "lines_of": lambda tx, details, i: frames.lines.lines_of(
        frames.transactions_df(details), details
    ),
    "items_df": lambda tx, details, items: frames.items_df(items),
    "rebase_levels": lambda tx, details, items: frames.rebase_levels(frames.lines_df(details)),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_writing_into_one_column_of_a_frame_changes_no_other(tx_rows, details, item_rows, name):
    # The frames hold the arrays they were built from, not copies (pandas copies a dict's by
    # default): no two columns may share one, and each is writable, or an analyst's
    # df.loc[...] = ... raises or writes another column too.
    df = BUILDERS[name](tx_rows, details, item_rows)
    assert len(df) >= 2
    for col in df.columns:
        # plain values, no view of the column kept: a view would make the write a copy
        first, known = df[col].iloc[0], df[col].dropna().tolist()
        other = next((v for v in known if pd.isna(first) or v != first), None)
        if other is None:  # every value the first one: nothing to write that shows
            continue
        before = df.copy(deep=True)
        df.loc[0, col] = other
        assert df.loc[0, col] == other
        rest = [c for c in df.columns if c != col]
        pd.testing.assert_frame_equal(df[rest], before[rest], obj=f"{name} after writing {col}")
        df.loc[0, col] = before.loc[0, col]
