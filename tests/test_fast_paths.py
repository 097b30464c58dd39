"""The bulk paths of a whole transactions walk (issue 4) give exactly what the dict paths give.

- ``frames.transactions_df_from_pages(bodies)`` == ``frames.transactions_df(rows of the bodies)``,
  for well-formed pages (pyarrow) and for pages pyarrow refuses (the forgiving dict path);
- ``pagination.raw_envelope`` reads cursor/has_more from bytes by the same rules;
- ``client.transactions_df()`` (raw bodies, read straight from a warm cache) == the frame of
  ``client.transactions()``, counts its cache hits, and sends nothing when warm.
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from invtools.api.pagination import iter_raw_pages, raw_envelope
from invtools.errors import PaginationError
from invtools.frames import transactions_df, transactions_df_from_pages

DATA = Path(__file__).parent / "data"
TXS = "/v1/location-txs"


@pytest.fixture
def page_body() -> bytes:
    return (DATA / "transactions_page.json").read_bytes()  # pretty-printed, several lines


def rows_of(bodies) -> list[dict]:
    return [row for body in bodies for row in json.loads(body)["items"]]


def pages(rows: list[dict], size: int = 2) -> list[bytes]:
    return [
        json.dumps(
            {
                "items": rows[i : i + size],
                "count": len(rows[i : i + size]),
                "limit": size,
                "cursor": i + size,
                "has_more": True,
            }
        ).encode()
        for i in range(0, len(rows), size)
    ]


def test_recorded_page_gives_the_dict_paths_frame(page_body):
    pd.testing.assert_frame_equal(
        transactions_df_from_pages([page_body]), transactions_df(rows_of([page_body]))
    )


def test_no_pages_give_the_empty_schema():
    pd.testing.assert_frame_equal(transactions_df_from_pages([]), transactions_df([]))


def test_bad_values_and_unknown_fields_in_some_blocks_match_the_dict_path(page_body):
    rows = rows_of([page_body])
    odd = copy.deepcopy(rows)
    odd[0]["id"] = "not an id"  # pyarrow refuses the block: dict path
    odd[1]["partner"] = 501  # not an object
    odd[2]["total_quantity"] = "4.5"  # numeric string -> 4.5 on the dict path
    odd[3]["unit"] = "box"  # unknown field: kept as-is, None elsewhere
    mixed = rows + odd + rows  # good block, odd blocks, good block
    bodies = pages(mixed)
    got = transactions_df_from_pages(bodies, block_bytes=1)  # one page per block
    pd.testing.assert_frame_equal(got, transactions_df(rows_of(bodies)))
    assert got["unit"].tolist().count("box") == 1 and got["unit"].isna().sum() == len(mixed) - 1
    assert got["unit"].dtype == object


def test_a_body_that_is_not_a_page_says_what_to_pass():
    with pytest.raises(TypeError, match="page envelope"):
        transactions_df_from_pages([b'[{"id": 1}]'])


def test_raw_envelope_reads_the_two_fields_by_the_envelope_rules():
    assert raw_envelope(b'{"items":[],"count":0,"cursor":null,"has_more":false}') == (
        None,
        False,
        0,
    )
    assert raw_envelope(b'{"has_more" : true, "cursor" : "abc", "count": 2, "items": [1,2]}') == (
        "abc",
        True,
        2,
    )
    # A row with a field of the same name: the body is decoded, the top level wins.
    body = b'{"items":[{"id":1,"cursor":9,"count":4}],"count":1,"cursor":5,"has_more":true}'
    assert raw_envelope(body) == (5, True, 1)
    # No count in the envelope: the rows are counted.
    assert raw_envelope(b'{"items":[1,2,3],"cursor":null,"has_more":false}') == (None, False, 3)
    # A quoted "cursor" inside a string value is escaped, so it is not a key.
    assert raw_envelope(
        b'{"items":[{"memo":"\\"cursor\\":7"}],"count":1,"cursor":3,"has_more":true}'
    ) == (3, True, 1)
    with pytest.raises(PaginationError, match="no cursor"):
        raw_envelope(b'{"items":[],"cursor":null,"has_more":true}')
    with pytest.raises(PaginationError, match="not JSON"):
        raw_envelope(b"<html>login</html>")


def test_raw_walk_follows_cursors_and_refuses_a_repeated_one():
    bodies = {
        None: b'{"items":[1],"cursor":2,"has_more":true}',
        2: b'{"items":[2],"cursor":3,"has_more":true}',
        3: b'{"items":[3],"cursor":null,"has_more":false}',
    }
    calls = []

    def fetch(params):
        calls.append(dict(params))
        return bodies[params.get("cursor")]

    assert [p.cursor for p in iter_raw_pages(fetch, {"type": "in"}, limit=1)] == [2, 3, None]
    assert calls == [
        {"type": "in", "limit": 1},
        {"type": "in", "limit": 1, "cursor": 2},
        {"type": "in", "limit": 1, "cursor": 3},
    ]
    loop = {
        None: b'{"items":[],"cursor":2,"has_more":true}',
        2: b'{"items":[],"cursor":2,"has_more":true}',
    }
    with pytest.raises(PaginationError, match="twice"):
        list(iter_raw_pages(lambda p: loop[p.get("cursor")]))


@pytest.mark.network
def test_client_whole_walk_matches_the_row_path_and_is_served_by_the_cache(sb, make_client):
    client = make_client(sb)
    expected = transactions_df(list(client.transactions()))  # also fills the cache
    sb.clear_log()
    got = client.transactions_df()
    pd.testing.assert_frame_equal(got, expected)
    assert [r for r in sb.requests if r.route.startswith(TXS)] == []
    n = len(sb.data("shop").transactions)
    # The first walk ran the head page and then one chain per type; the second replays those
    # pages from the cache (invtools.api.chains), so it counts more pages than n / 100.
    assert got.attrs["requests"] == 0 and len(got) == n
    assert got.attrs["pages"] == got.attrs["walk"]["pages"] >= -(-n // 100)
    assert client.stats.rows >= len(got)
    # A type filter is sent on every page, and cold pages are fetched and stored as usual.
    outs = client.transactions_df(type="out")
    assert set(outs["type"].astype(str)) == {"out"}
    assert outs.attrs["requests"] > 0
    assert all(r.params.get("type") == ["out"] for r in sb.requests if r.route == TXS)
    assert client.transactions_df(type="out").attrs["requests"] == 0


@pytest.mark.network
@pytest.mark.parametrize("tx_type", [None, "in"])
def test_a_walk_warmed_by_the_row_path_is_found_whole_by_the_bulk_path(sb, make_client, tx_type):
    # The bulk path reads the cache with keys built from URLs it encodes itself: they must be
    # the URLs requests sent, or every warm page would miss and be fetched again.
    client = make_client(sb)
    rows = list(client.transactions(type=tx_type))  # through requests: fills the cache
    sb.clear_log()
    got = client.transactions_df(type=tx_type)
    assert sb.requests == [] and len(got) == len(rows)
    assert got.attrs["requests"] == 0 and got.attrs["from_cache"] == got.attrs["pages"] >= 1


@pytest.mark.network
def test_a_pool_the_user_chose_is_left_as_it_is_while_and_after_frames_are_built(sb, make_client):
    # Issue 43: building a frame switched pyarrow's process-wide default pool to the system's
    # and put back the one before at the end, reverting a pool set meanwhile.
    client = make_client(sb)
    chosen, later = pa.jemalloc_memory_pool(), pa.system_memory_pool()
    previous = pa.default_memory_pool()
    pa.set_memory_pool(chosen)
    try:
        seen: set[str] = set()
        built = threading.Thread(target=client.lines_df)
        built.start()
        while built.is_alive():  # every moment of the build, as another thread sees it
            seen.add(pa.default_memory_pool().backend_name)
        built.join()
        assert seen == {"jemalloc"}
        sb.clear_log()
        building = threading.Thread(target=client.lines_df, kwargs={"refresh": True})
        building.start()
        while not sb.requests and building.is_alive():
            pass
        pa.set_memory_pool(later)  # the user's own choice, made while a frame is built
        building.join()
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(previous)


@pytest.mark.network
def test_client_frames_leave_pyarrow_as_they_found_it_and_their_text_whole(sb, make_client):
    client = make_client(sb)
    before = pa.default_memory_pool().backend_name
    lines = client.lines_df()
    tx = client.transactions_df()
    assert pa.default_memory_pool().backend_name == before
    truth = sb.data("shop")
    rows = [
        (t["id"], t["revision"], (t.get("partner") or {}).get("name")) for t in truth.transactions
    ]
    got = zip(tx["transaction_id"], tx["revision"], tx["partner_name"].astype(object), strict=True)
    assert [(i, r, None if pd.isna(p) else p) for i, r, p in got] == rows
    want = sorted(
        (t["id"], line["id"], line.get("name"), float(line["quantity"]))
        for t in truth.transactions
        for line in truth.transaction(t["id"])["items"]
    )
    cols = lines[["transaction_id", "item_id", "item_name", "quantity"]].astype(object)
    assert sorted(map(tuple, cols.itertuples(index=False))) == want
    for df, col in ((tx, "total_quantity"), (lines, "quantity")):
        before = df.drop(columns=col).copy(deep=True)
        df.loc[0, col] = 1234.5  # an analyst's own edit: the frames' arrays are their own
        assert df.loc[0, col] == 1234.5
        pd.testing.assert_frame_equal(df.drop(columns=col), before)
