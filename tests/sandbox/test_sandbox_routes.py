"""Every route of the stand-in server answers in the wire format api-facts.md describes."""

from __future__ import annotations

import re

import pytest
from sandbox_helpers import call, walk

TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
MONEY = re.compile(r"^\d+\.\d{2}$")
REF_KEYS = {"id", "name", "deleted"}


def test_linked_team_is_bare_with_every_field(shop_server):
    r = call(shop_server, "/v1/teams/linked")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("application/json")
    team = r.json
    assert set(team) == {
        "id",
        "name",
        "mode",
        "currency_symbol",
        "memo",
        "currency_code",
        "price_decimal_places",
    }
    assert team["mode"] == 2
    basic = call(shop_server, "/v1/teams/linked", team="basic").json
    assert basic["mode"] == 0 and basic["id"] != team["id"]


def test_items_page_envelope_and_item_fields(shop_server):
    body = call(shop_server, "/v1/items", {"limit": 7}).json
    assert set(body) == {"items", "count", "limit", "cursor", "has_more"}
    assert body["count"] == 7 == len(body["items"]) and body["limit"] == 7
    assert body["has_more"] is True and body["cursor"] == body["items"][-1]["id"]
    ids = [i["id"] for i in body["items"]]
    assert ids == sorted(ids)
    item = body["items"][0]
    assert set(item) == {
        "id",
        "name",
        "sku",
        "barcode",
        "photo_url",
        "attrs",
        "cost",
        "price",
        "quantity",
        "quantities",
    }
    assert MONEY.match(item["cost"]) and MONEY.match(item["price"])
    assert len(item["barcode"]) == 13 and item["barcode"].isdigit()
    assert {a["type"] for a in item["attrs"]} <= {"text", "number", "date", "barcode"}
    assert all(set(a) == {"id", "type", "name", "value"} for a in item["attrs"])
    assert [q["location_id"] for q in item["quantities"]] == [3101, 3102, 3103, 3104]
    assert item["quantity"] == sum(q["quantity"] for q in item["quantities"])


def test_default_limit_is_100(shop_server):
    body = call(shop_server, "/v1/items").json
    assert body["limit"] == 100 and body["count"] == 100


def test_items_filter_by_location_ids_sums_only_those(shop_server):
    full = {i["id"]: i for i in call(shop_server, "/v1/items", {"limit": 100}).json["items"]}
    body = call(shop_server, "/v1/items", {"limit": 100, "location_ids": [3104, 3102]}).json
    for item in body["items"]:
        per_loc = {q["location_id"]: q["quantity"] for q in full[item["id"]]["quantities"]}
        assert {q["location_id"] for q in item["quantities"]} == {3102, 3104}
        assert item["quantity"] == per_loc[3102] + per_loc[3104]
    assert any(i["quantity"] != full[i["id"]]["quantity"] for i in body["items"])


def test_items_filter_by_item_ids(shop_server):
    body = call(shop_server, "/v1/items", {"item_ids": [100010, 100003, 100200]}).json
    assert [i["id"] for i in body["items"]] == [100003, 100010, 100200]
    assert body["has_more"] is False and body["cursor"] is None


def test_item_detail_is_wrapped_and_takes_location_ids(shop_server):
    item = call(shop_server, "/v1/items/100005").json["item"]
    listed = call(shop_server, "/v1/items", {"item_ids": 100005}).json["items"][0]
    assert item == listed
    one = call(shop_server, "/v1/items/100005", {"location_ids": 3102}).json["item"]
    assert one["quantities"] == [q for q in item["quantities"] if q["location_id"] == 3102]


@pytest.mark.parametrize("path", ["/v1/location-txs", "/v1/transactions"])
def test_transaction_rows_have_exactly_the_documented_fields(shop_server, path):
    body = call(shop_server, path, {"limit": 50}).json
    assert body["count"] == 50 and body["has_more"] is True
    for row in body["items"]:
        assert set(row) == {
            "id",
            "type",
            "transaction_time",
            "created_at",
            "created_by",
            "count_of_items",
            "total_quantity",
            "url",
            "memo",
            "revision",
            "partner",
            "from_location",
            "to_location",
        }
        assert row["type"] in {"in", "out", "move", "adjust"}
        assert TIME.match(row["transaction_time"]) and TIME.match(row["created_at"])
        assert set(row["created_by"]) == REF_KEYS and set(row["to_location"]) == REF_KEYS
        assert (row["from_location"] is not None) == (row["type"] == "move")
        assert row["partner"] is None or set(row["partner"]) == REF_KEYS


def test_transactions_alias_answers_the_same(shop_server):
    a = call(shop_server, "/v1/location-txs", {"limit": 30})
    b = call(shop_server, "/v1/transactions", {"limit": 30})
    assert a.raw == b.raw


def test_transactions_are_newest_first_with_id_tiebreak(shop_server):
    rows = shop_server.data("shop").transactions
    keys = [(r["transaction_time"], r["id"]) for r in rows]
    assert keys == sorted(keys, reverse=True)
    body = call(shop_server, "/v1/location-txs", {"limit": 100}).json
    assert [r["id"] for r in body["items"]] == [r["id"] for r in rows[:100]]


@pytest.mark.parametrize("kind", ["in", "out", "move", "adjust"])
def test_transactions_filter_by_type(shop_server, kind):
    rows, _ = walk(shop_server, "/v1/location-txs", {"type": kind})
    expected = [r["id"] for r in shop_server.data("shop").transactions if r["type"] == kind]
    assert [r["id"] for r in rows] == expected and expected


def test_transaction_detail_has_lines(shop_server):
    row = call(shop_server, "/v1/location-txs", {"limit": 1, "type": "move"}).json["items"][0]
    detail = call(shop_server, f"/v1/location-txs/{row['id']}").json["item"]
    assert {k: v for k, v in detail.items() if k != "items"} == row
    assert len(detail["items"]) == row["count_of_items"]
    assert sum(line["quantity"] for line in detail["items"]) == row["total_quantity"]
    for line in detail["items"]:
        assert set(line) == {
            "id",
            "name",
            "sku",
            "barcode",
            "quantity",
            "deleted",
            "new_stock_level",
            "from_location_new_stock_level",
            "to_location_new_stock_level",
        }
        assert line["from_location_new_stock_level"] is not None  # a move has both
    sale = call(shop_server, "/v1/location-txs", {"limit": 1, "type": "out"}).json["items"][0]
    line = call(shop_server, f"/v1/transactions/{sale['id']}").json["item"]["items"][0]
    assert line["from_location_new_stock_level"] is None
    assert line["to_location_new_stock_level"] is not None


def test_locations_list_and_detail(shop_server):
    body = call(shop_server, "/v1/locations").json
    assert set(body) == {"items", "count"} and body["count"] == 4
    names = [loc["name"] for loc in body["items"]]
    assert names == ["Back store", "Shop floor", "Warehouse North", "Warehouse South"]
    items = shop_server.data("shop").items
    for loc in body["items"]:
        assert set(loc) == {"id", "name", "quantity", "memo"}
        total = sum(
            q["quantity"] for i in items for q in i["quantities"] if q["location_id"] == loc["id"]
        )
        assert loc["quantity"] == pytest.approx(total)
    one = call(shop_server, f"/v1/locations/{body['items'][1]['id']}").json
    assert one == {"item": body["items"][1]}


def test_partners_walk_and_type_filter(shop_server):
    rows, pages = walk(shop_server, "/v1/partners", limit=10)
    assert pages > 2
    ids = [p["id"] for p in rows]
    assert ids == sorted(set(ids))
    assert all(set(p) == {"id", "type", "name", "phone", "email", "address", "memo"} for p in rows)
    suppliers, _ = walk(shop_server, "/v1/partners", {"type": 0}, limit=3)
    customers, _ = walk(shop_server, "/v1/partners", {"type": 1})
    assert suppliers and all(p["type"] == 0 for p in suppliers)
    assert customers and all(p["type"] == 1 for p in customers)
    assert len(suppliers) + len(customers) == len(rows)


@pytest.mark.parametrize("team", ["shop", "basic"])
def test_members_and_attrs_work_for_every_team(shop_server, team):
    members = call(shop_server, "/v1/members", team=team).json
    assert members["count"] == len(members["items"]) >= 3
    assert {m["role"] for m in members["items"]} == {"admin", "member", "viewer"}
    first = members["items"][0]
    assert call(shop_server, f"/v1/members/{first['id']}", team=team).json == {"item": first}
    attrs = call(shop_server, "/v1/item-attrs", team=team).json
    assert attrs["count"] == len(attrs["items"]) >= 2
    assert all(set(a) == {"id", "attr_type", "attr_name", "rank"} for a in attrs["items"])
    a = attrs["items"][-1]
    assert call(shop_server, f"/v1/item-attrs/{a['id']}", team=team).json == {"item": a}
    partners = call(shop_server, "/v1/partners", team=team).json
    assert partners["count"] > 0


def test_shop_item_attributes_cover_every_type(shop_server):
    attrs = call(shop_server, "/v1/item-attrs").json["items"]
    assert {a["attr_type"] for a in attrs} == {"text", "number", "date", "barcode"}
    assert [a["rank"] for a in attrs] == sorted(a["rank"] for a in attrs)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/items",
        "/v1/items/100001",
        "/v1/location-txs",
        "/v1/transactions",
        "/v1/location-txs/5200001",
        "/v1/locations",
        "/v1/locations/3101",
    ],
)
def test_location_only_endpoints_refuse_the_basic_team(shop_server, path):
    r = call(shop_server, path, team="basic")
    assert r.status == 400
    assert r.json["type"] == "/errors/invalid-team-mode"
    assert "Corner Café" in r.json["title"]
