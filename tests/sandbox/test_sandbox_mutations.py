"""Adding, editing and deleting transactions between walks, with stock levels following."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sandbox_helpers import assert_consistent, call, walk

from invtools.sandbox import serve


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=600) as server:
        yield server


def levels_of(sb, item_id):
    """(transaction id, new_stock_level) of every line of ``item_id``, oldest first."""
    view = sb.data("shop")
    out = []
    for row in view.transactions[::-1]:
        for line in view.transaction(row["id"])["items"]:
            if line["id"] == item_id:
                out.append((row["id"], line["new_stock_level"]))
    return out


def test_add_with_defaults_is_a_sale_newest_and_deterministic(sb):
    newest = sb.data("shop").transactions[0]
    tx = sb.add_transaction()
    assert tx["type"] == "out" and tx["revision"] == 0 and tx["items"]
    assert tx["transaction_time"] > newest["transaction_time"]
    assert tx["created_at"] == tx["transaction_time"]
    assert tx["id"] > max(r["id"] for r in sb.data("shop").transactions if r["id"] != tx["id"])
    assert call(sb, "/v1/location-txs", {"limit": 1}).json["items"][0]["id"] == tx["id"]
    with serve(rate_limit=0, size=600) as other:
        assert other.add_transaction() == tx  # no wall clock in new records
    assert_consistent(sb)


def test_add_with_every_field(sb):
    tx = sb.add_transaction(
        type="move",
        lines=[(100003, 1)],
        from_location=3103,
        to_location=3101,
        memo="to the back",
        created_by=7003,
    )
    assert tx["from_location"]["id"] == 3103 and tx["to_location"]["id"] == 3101
    assert tx["memo"] == "to the back" and tx["created_by"]["id"] == 7003
    with pytest.raises(ValueError, match="type"):
        sb.add_transaction(type="sale")
    with pytest.raises(ValueError, match="item"):
        sb.add_transaction(type="in", lines=[(200001, 1)])  # the café's item
    with pytest.raises(ValueError, match="basic mode"):
        sb.add_transaction(team="basic")


def test_backdated_add_recomputes_every_later_level(sb):
    item = 100010
    before = levels_of(sb, item)
    first_time = sb.data("shop").transaction(before[0][0])["transaction_time"]
    mid = sb.data("shop").transaction(before[len(before) // 2][0])
    # the same time as an existing row: the (time, id) tiebreak puts the new one after it
    tx = sb.add_transaction(
        type="in", lines=[(item, 7)], to_location=3103, transaction_time=mid["transaction_time"]
    )
    assert tx["created_at"] > tx["transaction_time"]  # backdated
    after = dict(levels_of(sb, item))
    for tx_id, level in before:
        t = sb.data("shop").transaction(tx_id)["transaction_time"]
        later = (t, tx_id) > (tx["transaction_time"], tx["id"])
        assert after[tx_id] == level + (7 if later else 0)
    assert first_time < tx["transaction_time"]
    assert_consistent(sb)


def test_edit_bumps_revision_keeps_the_old_version_and_recomputes(sb):
    delivery = next(r for r in sb.data("shop").transactions if r["type"] == "in")
    old = call(sb, f"/v1/location-txs/{delivery['id']}").json["item"]
    new = sb.edit_transaction(delivery["id"])
    assert new["revision"] == old["revision"] + 1
    assert [ln["quantity"] for ln in new["items"]] != [ln["quantity"] for ln in old["items"]]
    again = call(sb, f"/v1/location-txs/{delivery['id']}", {"revision": old["revision"]}).json[
        "item"
    ]
    assert again == old
    rows, _ = walk(sb, "/v1/location-txs", {"type": "in"})
    assert next(r for r in rows if r["id"] == delivery["id"])["revision"] == new["revision"]
    assert_consistent(sb)


def test_edit_with_changes(sb):
    row = next(r for r in sb.data("shop").transactions if r["type"] == "out")
    new = sb.edit_transaction(row["id"], memo="refund issued", lines=[(100001, 0.5)])
    assert new["memo"] == "refund issued" and new["revision"] == row["revision"] + 1
    assert [(ln["id"], ln["quantity"]) for ln in new["items"]] == [(100001, 0.5)]
    assert new["count_of_items"] == 1 and new["total_quantity"] == 0.5
    assert_consistent(sb)


def test_delete_removes_from_list_404s_detail_and_recomputes(sb):
    rows = sb.data("shop").transactions
    victim = next(r for r in rows[100:] if r["type"] == "out")
    item = sb.data("shop").transaction(victim["id"])["items"][0]
    before = dict(levels_of(sb, item["id"]))
    sb.delete_transaction(victim["id"])
    r = call(sb, f"/v1/location-txs/{victim['id']}")
    assert r.status == 404 and r.json["type"] == "/errors/not-found"
    assert call(sb, f"/v1/location-txs/{victim['id']}", {"revision": 0}).status == 404
    assert victim["id"] not in [x["id"] for x in sb.data("shop").transactions]
    after = dict(levels_of(sb, item["id"]))
    later = [
        t
        for t in after
        if (sb.data("shop").transaction(t)["transaction_time"], t)
        > (victim["transaction_time"], victim["id"])
    ]
    assert later and all(after[t] == before[t] + item["quantity"] for t in later)
    with pytest.raises(KeyError):
        sb.delete_transaction(victim["id"])
    assert_consistent(sb)


def test_mutations_from_threads_while_serving(sb):
    errors = []

    def reader():
        try:
            for _ in range(15):
                assert call(sb, "/v1/location-txs", {"limit": 50}).status == 200
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(10):
        sb.add_transaction(type="in", lines=[(100020, 1)])
    for t in threads:
        t.join()
    assert errors == []
    assert_consistent(sb)


def test_times_given_to_mutations_may_be_strings_milliseconds_or_datetimes(sb):
    wire = "2026-03-01T09:30:00.000Z"
    given = [
        wire,
        "2026-03-01T10:30:00+01:00",
        1772357400000,
        datetime(2026, 3, 1, 9, 30),
        datetime(2026, 3, 1, 9, 30, tzinfo=UTC),
    ]
    for when in given:
        tx = sb.add_transaction(type="in", lines=[(100001, 1)], transaction_time=when)
        assert tx["transaction_time"] == wire, when
    edited = sb.edit_transaction(tx["id"], transaction_time=datetime(2026, 3, 2))
    assert edited["transaction_time"] == "2026-03-02T00:00:00.000Z"
    with pytest.raises(TypeError, match="a time is"):
        sb.add_transaction(type="in", lines=[(100001, 1)], transaction_time=1.5)
    assert_consistent(sb)


# -- edits of the records transactions refer to ------------------------------------------------
def revisions(sb) -> dict[int, int]:
    """Every live transaction's revision, from a walk of the list over HTTP."""
    return {row["id"]: row["revision"] for row in walk(sb, "/v1/location-txs")[0]}


def item_of(sb, path: str, rec_id: int, **params) -> dict:
    """The single record ``path/rec_id`` answers over HTTP (``{"item": ...}``), checked 200."""
    reply = call(sb, f"{path}/{rec_id}", params)
    assert reply.status == 200, reply.json
    return reply.json["item"]


def listed(sb, path: str) -> dict[int, dict]:
    """A list endpoint's records over HTTP (walked when paginated), by id."""
    body = call(sb, path).json
    rows = walk(sb, path)[0] if "has_more" in body else body["items"]
    return {row["id"]: row for row in rows}


def details_with(sb, keep) -> list[dict]:
    """Over HTTP, under both transaction paths (they agree), the details of the live
    transactions whose detail in ``sb.data()`` passes ``keep``; at least one."""
    view = sb.data("shop")
    ids = [r["id"] for r in view.transactions if keep(view.transaction(r["id"]))]
    assert ids
    out = [item_of(sb, "/v1/location-txs", i) for i in ids]
    assert out == [item_of(sb, "/v1/transactions", i) for i in ids]
    return out


def lines_of(detail: dict, item_id: int) -> list[dict]:
    return [line for line in detail["items"] if line["id"] == item_id]


def test_an_item_edit_shows_in_its_list_its_detail_and_every_line_that_names_it(sb):
    item = sb.data("shop").items[4]["id"]
    before, revs = listed(sb, "/v1/items")[item], revisions(sb)
    changes = dict(name="Compost (peat free) 20L", sku="GH-GAR-X1", barcode="5000000000017")
    shown = sb.edit_item(item, cost="4.2", price=9, **changes)
    assert shown == {**before, **changes, "cost": "4.20", "price": "9.00"}
    assert listed(sb, "/v1/items")[item] == shown == item_of(sb, "/v1/items", item)
    assert call(sb, "/v1/items", {"item_ids": item}).json["items"] == [shown]
    assert [i for i in sb.data("shop").items if i["id"] == item] == [shown]
    assert sb.edit_item(item, cost=Decimal("3.10"), price="12.5")["cost"] == "3.10"
    assert item_of(sb, "/v1/items", item)["price"] == "12.50"
    for detail in details_with(sb, lambda d: lines_of(d, item)):
        for line in lines_of(detail, item):
            assert {k: line[k] for k in changes} == changes and line["deleted"] is False
        assert sb.data("shop").transaction(detail["id"]) == detail
    assert revisions(sb) == revs
    basic = sb.edit_item(200001, team="basic", name="Espresso Beans (house) 1kg")
    assert basic in sb.data("basic").items and "quantity" not in basic


def test_a_deleted_item_leaves_the_items_and_the_stock_and_its_lines_say_deleted(sb):
    stock = {loc["id"]: loc["quantity"] for loc in listed(sb, "/v1/locations").values()}
    item = next(i for i in listed(sb, "/v1/items").values() if i["quantity"] > 0)
    lines_before = details_with(sb, lambda d: lines_of(d, item["id"]))
    revs = revisions(sb)
    assert sb.edit_item(item["id"], deleted=True)["quantity"] == item["quantity"]

    assert item["id"] not in listed(sb, "/v1/items")
    assert item["id"] not in [i["id"] for i in sb.data("shop").items]
    assert call(sb, "/v1/items", {"item_ids": item["id"]}).json["items"] == []
    for path in (f"/v1/items/{item['id']}", f"/v1/items/{item['id']}?location_ids=3101"):
        gone = call(sb, path)
        assert gone.status == 404 and gone.json["type"] == "/errors/not-found"
        assert gone.json["id"].startswith("ex_") and gone.json["correlation_id"].startswith("rq_")
        assert gone.json["title"] == f"Item {item['id']} was not found"
    # Its stock is not written off (no transaction), but no location counts it any more.
    locations = listed(sb, "/v1/locations")
    for at in item["quantities"]:
        loc = at["location_id"]
        assert locations[loc]["quantity"] == pytest.approx(stock[loc] - at["quantity"])
        assert item_of(sb, "/v1/locations", loc) == locations[loc]
        live = sum(
            q["quantity"]
            for i in listed(sb, "/v1/items").values()
            for q in i["quantities"]
            if q["location_id"] == loc
        )
        assert locations[loc]["quantity"] == pytest.approx(live)
    assert sb.data("shop").locations == list(locations.values())
    # Every line that names it says so, the levels as they were; no revision moves.
    lines_after = details_with(sb, lambda d: lines_of(d, item["id"]))
    for old, new in zip(lines_before, lines_after, strict=True):
        assert all(line["deleted"] for line in lines_of(new, item["id"]))
        for line in lines_of(old, item["id"]):
            line["deleted"] = True
        assert new == old == sb.data("shop").transaction(new["id"])
    assert revisions(sb) == revs and len(revs) == len(sb.data("shop").transactions)
    assert_consistent(sb)
    with pytest.raises(KeyError, match=f"no live item {item['id']}"):
        sb.edit_item(item["id"], name="back again")


def test_a_location_edit_shows_in_its_list_its_detail_and_every_row_that_names_it(sb):
    loc = sb.data("shop").locations[2]
    revs = revisions(sb)
    shown = sb.edit_location(loc["id"], name="Unit 4 (North)", memo=None)
    assert shown == {**loc, "name": "Unit 4 (North)", "memo": None}
    assert (
        listed(sb, "/v1/locations")[loc["id"]] == shown == item_of(sb, "/v1/locations", loc["id"])
    )
    assert shown in sb.data("shop").locations
    ref = {"id": loc["id"], "name": "Unit 4 (North)", "deleted": False}
    rows = walk(sb, "/v1/location-txs")[0]
    named = [
        r
        for r in rows
        if loc["id"] in (r["to_location"]["id"], (r["from_location"] or {}).get("id"))
    ]
    assert named and all(ref in (r["to_location"], r["from_location"]) for r in named)
    moves = details_with(
        sb, lambda d: d["type"] == "move" and d["from_location"]["id"] == loc["id"]
    )
    assert all(d["from_location"] == ref for d in moves)
    assert revisions(sb) == revs


def test_a_member_edit_and_deletion_show_in_the_members_and_every_row_they_made(sb):
    member = sb.data("shop").members[1]
    revs = revisions(sb)
    shown = sb.edit_member(member["id"], name="Tom Reyes-Hart", role="admin")
    assert shown == {"id": member["id"], "name": "Tom Reyes-Hart", "role": "admin"}
    assert listed(sb, "/v1/members")[member["id"]] == shown
    assert item_of(sb, "/v1/members", member["id"]) == shown
    sb.edit_member(member["id"], deleted=True)
    assert member["id"] not in listed(sb, "/v1/members")
    assert member["id"] not in [m["id"] for m in sb.data("shop").members]
    gone = call(sb, f"/v1/members/{member['id']}")
    assert gone.status == 404 and gone.json["type"] == "/errors/not-found"
    ref = {"id": member["id"], "name": "Tom Reyes-Hart", "deleted": True}
    made = [r for r in walk(sb, "/v1/location-txs")[0] if r["created_by"]["id"] == member["id"]]
    assert made and all(r["created_by"] == ref for r in made)
    made_details = details_with(sb, lambda d: d["created_by"]["id"] == member["id"])
    assert all(d["created_by"] == ref for d in made_details)
    assert revisions(sb) == revs
    with pytest.raises(KeyError, match="no live member"):
        sb.edit_member(member["id"], deleted=True)


def test_an_attribute_rename_shows_on_every_item_and_a_rank_in_its_list(sb):
    attr = sb.data("shop").attrs[2]
    revs = revisions(sb)
    shown = sb.edit_attribute(attr["id"], attr_name="Weight (kg, boxed)", rank=9)
    assert shown == {**attr, "attr_name": "Weight (kg, boxed)", "rank": 9}
    assert listed(sb, "/v1/item-attrs")[attr["id"]] == shown
    assert item_of(sb, "/v1/item-attrs", attr["id"]) == shown == sb.data("shop").attrs[2]
    items = listed(sb, "/v1/items")
    entries = [a for i in items.values() for a in i["attrs"] if a["id"] == attr["id"]]
    assert entries and all(a["name"] == "Weight (kg, boxed)" for a in entries)
    assert all(
        a["name"] != "Weight (kg, boxed)"
        for i in items.values()
        for a in i["attrs"]
        if a["id"] != attr["id"]
    )
    one = next(i for i in items.values() if any(a["id"] == attr["id"] for a in i["attrs"]))
    assert item_of(sb, "/v1/items", one["id"]) == one
    assert revisions(sb) == revs
    sb.edit_attribute(9202, team="basic", attr_name="Keeps (days)")
    assert call(sb, "/v1/item-attrs/9202", team="basic").json["item"]["attr_name"] == "Keeps (days)"
    cafe = [a for i in sb.data("basic").items for a in i["attrs"] if a["id"] == 9202]
    assert cafe and all(a["name"] == "Keeps (days)" for a in cafe)


#: helper -> (an id of the shop's, a change it takes, changes it refuses as ValueError)
EDITS = {
    "edit_item": (
        100001,
        {"name": "x"},
        [{"name": ""}, {"cost": "4.205"}, {"price": -1}, {"cost": "x"}, {"deleted": False}],
    ),
    "edit_location": (3101, {"memo": "x"}, [{"name": None}, {"deleted": True}]),
    "edit_member": (7001, {"name": "x"}, [{"role": "owner"}, {"deleted": "yes"}]),
    "edit_attribute": (9101, {"rank": 7}, [{"rank": "2"}, {"rank": True}, {"attr_name": ""}]),
    "edit_partner": (6101, {"phone": "x"}, [{"name": " "}, {"deleted": 1}, {"type": 0}]),
}


def everything(sb) -> list:
    view = sb.data("shop")
    listed = [view.items, view.locations, view.members, view.attrs, view.partners]
    return [*listed, view.transactions, [view.transaction(r["id"]) for r in view.transactions]]


@pytest.mark.parametrize("helper", list(EDITS))
def test_edits_refuse_unknown_fields_and_ids_and_bad_values_and_change_nothing_then(sb, helper):
    edit, (rec_id, good, bad) = getattr(sb, helper), EDITS[helper]
    before = everything(sb)
    with pytest.raises(ValueError, match=r"has no field\(s\) \['colour'\] to edit"):
        edit(rec_id, colour="red", **good)
    for gone in (999, 200001, 7005 if helper == "edit_member" else 6105):  # 200001: the café's
        with pytest.raises(KeyError, match=f"no live .* {gone} in team 'shop'"):
            edit(gone, **good)
    for change in bad:
        with pytest.raises(ValueError):
            edit(rec_id, **{**good, **change})
    assert everything(sb) == before
    assert edit(rec_id, **good).items() >= good.items()


@pytest.mark.parametrize("helper", list(EDITS))
def test_edits_wait_for_the_teams_lock(sb, helper):
    rec_id, change, _bad = EDITS[helper]
    done = threading.Event()

    def edit() -> None:
        getattr(sb, helper)(rec_id, **change)
        done.set()

    with sb.store("shop").lock:
        thread = threading.Thread(target=edit)
        thread.start()
        assert not done.wait(0.2)  # held back while another thread holds the team's lock
    thread.join(5)
    assert done.is_set()
