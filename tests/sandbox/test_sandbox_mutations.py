"""Adding, editing and deleting transactions between walks, with stock levels following."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

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
