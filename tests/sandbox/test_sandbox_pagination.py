"""Walking every page collects every row exactly once, also when rows change between pages."""

from __future__ import annotations

import pytest
from sandbox_helpers import call, walk

from invtools.sandbox import serve


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=1500) as server:
        yield server


def ids(rows):
    return [r["id"] for r in rows]


def test_items_walk_collects_every_item_once(shop_server):
    rows, pages = walk(shop_server, "/v1/items", limit=33)
    assert ids(rows) == [i["id"] for i in shop_server.data("shop").items]
    assert len(rows) >= 300 and pages == -(-len(rows) // 33)


def test_transactions_walk_collects_every_row_once_newest_first(shop_server):
    rows, pages = walk(shop_server, "/v1/location-txs")
    expected = shop_server.data("shop").transactions
    assert rows == expected
    assert len(rows) >= 3000 and pages == -(-len(rows) // 100)


def test_last_page_has_null_cursor_and_exact_fit_has_no_extra_page(shop_server):
    n = len(shop_server.data("shop").items)
    body = call(shop_server, "/v1/items", {"limit": 100, "cursor": 0}).json
    assert body["has_more"] is True
    last = call(
        shop_server,
        "/v1/items",
        {"limit": 100, "cursor": shop_server.data("shop").items[-101]["id"]},
    )
    assert last.json["has_more"] is False and last.json["cursor"] is None
    assert last.json["count"] == 100 == min(100, n)


def test_last_cursor_not_null_quirk(shop_server):
    shop_server.quirks = {"last_cursor_not_null"}
    try:
        body = call(shop_server, "/v1/items", {"item_ids": [100001, 100002]}).json
        assert body["has_more"] is False and body["cursor"] == 100002
        tail = call(
            shop_server, "/v1/items", {"cursor": body["cursor"], "item_ids": [100001, 100002]}
        ).json
        assert tail["items"] == [] and tail["cursor"] is None and tail["has_more"] is False
    finally:
        shop_server.quirks = ()
    assert call(shop_server, "/v1/items", {"item_ids": 100001}).json["cursor"] is None


def test_added_newer_rows_are_not_seen_and_older_backdated_ones_are(sb):
    added = {}

    def mutate(page_no, page):
        if page_no == 2:
            added["new"] = sb.add_transaction(type="in", lines=[(100001, 5)], partner=6101)
            oldest_seen = page["items"][-1]["transaction_time"]
            # backdated to a week before the oldest row seen so far: still ahead of the walk
            t = page["items"][-1]["transaction_time"].replace(
                oldest_seen[:4], str(int(oldest_seen[:4]) - 1)
            )
            added["old"] = sb.add_transaction(type="in", lines=[(100002, 2)], transaction_time=t)

    rows, _ = walk(sb, "/v1/location-txs", between=mutate)
    got = ids(rows)
    assert len(got) == len(set(got))
    assert added["new"]["id"] not in got
    assert added["old"]["id"] in got
    assert set(got) | {added["new"]["id"]} == set(ids(sb.data("shop").transactions))


def test_deleting_rows_between_pages_skips_nothing_else(sb):
    before = sb.data("shop").transactions
    removed = []

    def mutate(page_no, page):
        if page_no == 1:
            # a row not yet seen, far down the list
            victim = before[700]["id"]
            sb.delete_transaction(victim)
            removed.append(victim)
        if page_no == 3:
            # the very row the cursor points to
            sb.delete_transaction(page["cursor"])
            removed.append(page["cursor"])

    rows, _ = walk(sb, "/v1/location-txs", between=mutate)
    got = ids(rows)
    assert len(got) == len(set(got))
    assert removed[0] not in got
    assert removed[1] in got  # it was on page 3, before being deleted
    assert got == [r["id"] for r in before if r["id"] != removed[0]]


def test_filtered_walk_resumes_after_deleted_cursor_row(sb):
    first = call(sb, "/v1/location-txs", {"type": "out", "limit": 40}).json
    sb.delete_transaction(first["cursor"])
    rest, _ = walk(sb, "/v1/location-txs", {"type": "out", "cursor": first["cursor"]})
    expected = [r["id"] for r in sb.data("shop").transactions if r["type"] == "out"]
    assert ids(first["items"][:-1]) + ids(rest) == expected


def test_items_walk_with_item_filter_pages_within_the_filter(shop_server):
    wanted = [100001, 100050, 100100, 100150, 100200]
    rows, pages = walk(shop_server, "/v1/items", {"item_ids": wanted}, limit=2)
    assert ids(rows) == wanted and pages == 3
