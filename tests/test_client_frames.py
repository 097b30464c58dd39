"""Client *_df() methods: typed frames over real HTTP, provenance in df.attrs, detail counts."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from invtools import frames
from invtools.api import Client
from invtools.errors import LevelsWarning
from invtools.sandbox import serve

pytestmark = pytest.mark.network

DETAIL = "/v1/location-txs/{id}"


@pytest.fixture(scope="module")
def sb():
    with serve(rate_limit=0, size=120) as server:
        yield server


@pytest.fixture
def client(sb, tmp_path):
    with Client(
        sb.tokens["shop"],
        base_url=sb.base_url,
        cache=tmp_path / "c.sqlite",
        rate_limit=0,
        progress=False,
    ) as c:
        yield c


def test_every_frame_has_its_schema_and_says_where_it_came_from(sb, client):
    team = sb.data("shop").team
    built = {
        "items": client.items_df(),
        "transactions": client.transactions_df(),
        "locations": client.locations_df(),
        "partners": client.partners_df(),
        "members": client.members_df(),
        "attributes": client.attributes_df(),
        "stock": client.stock_df(),
    }
    for name, df in built.items():
        schema = list(frames.SCHEMAS[name])
        assert list(df.columns[: len(schema)]) == schema, name
        assert df.attrs["team_id"] == team["id"] and df.attrs["team_name"] == team["name"]
        assert df.attrs["requests"] + df.attrs["from_cache"] >= 1
        assert pd.Timestamp(df.attrs["fetched_at"]).tzinfo is not None
        assert df.attrs["base_url"] == sb.base_url and df.attrs["rows"] == len(df)
        assert json.loads(json.dumps(df.attrs)) == df.attrs  # plain JSON: exports keep it
        assert df.attrs["source"] == "api" and isinstance(df.attrs["fetched_at"], str)
    # 120 rows: the head page, then one page per type from its cursor (invtools.api.chains)
    assert len(built["transactions"]) == 120 and built["transactions"].attrs["pages"] == 5
    assert built["transactions"].attrs["endpoint"] == "/v1/location-txs"
    assert len(built["items"]) == len(sb.data("shop").items)
    assert built["stock"].attrs["requests"] == 0  # items and locations came from the cache
    assert sb.tokens["shop"] not in repr([df.attrs for df in built.values()])


@pytest.mark.parametrize(
    "asked",
    [{"since": "30D"}, {"type": "out", "since": "30D"}, {"until": "2026-10-01"}],
    ids=["anchored", "type", "until"],
)
@pytest.mark.parametrize("columns", [None, ["attr_Category"]], ids=["", "item_columns"])
def test_a_lines_frame_counts_every_request_its_call_sent(sb, client, asked, columns):
    """One rule: the items list that anchors or only names the lines, and the attribute
    definitions that ``item_columns`` needs, are the frame's requests like its details."""
    warnings.simplefilter("ignore", LevelsWarning)  # type= / until=: not anchored, said
    sb.clear_log()
    lines = client.lines_df(**asked, item_columns=columns)
    assert lines.attrs["requests"] == len(sb.requests) > 0
    sb.clear_log()
    again = client.lines_df(**asked, item_columns=columns)  # warm: nothing sent, none counted
    assert again.attrs["requests"] == len(sb.requests) == 0


def test_second_call_is_answered_from_the_cache_and_provenance_says_so(client):
    first = client.partners_df(type="supplier")
    again = client.partners_df(type="supplier")
    assert first.attrs["filters"] == {"type": "supplier"}
    assert first.attrs["requests"] >= 1 and again.attrs["requests"] == 0
    assert again.attrs["from_cache"] == again.attrs["pages"] >= 1
    pd.testing.assert_frame_equal(first, again, check_flags=False)


def test_lines_fetch_one_detail_per_transaction_in_the_window_once_for_life(sb, client):
    rows = sb.data("shop").transactions
    since = rows[29]["transaction_time"]  # the 30 newest rows (distinct times in the demo data)
    in_window = [r for r in rows if r["transaction_time"] >= since]
    sb.clear_log()
    lines = client.lines_df(since=since)
    detail_requests = [r for r in sb.requests if r.route == DETAIL]
    assert len(detail_requests) == len(in_window) == 30
    # + the team, one list page and the items list's pages (it anchors the levels and names
    # the items: issue 43)
    pages = -(-len(sb.data("shop").items) // 100)
    assert lines.attrs["requests"] == len(sb.requests) == 32 + pages
    assert all(r.params.get("revision") for r in detail_requests)  # pinned: cacheable for good
    assert set(lines["transaction_id"]) <= {r["id"] for r in in_window}
    view = sb.data("shop")
    want = frames.lines_df([view.transaction(r["id"]) for r in in_window])
    pd.testing.assert_frame_equal(lines, want, check_flags=False)

    sb.clear_log()
    joined = client.transactions_df(since=since, with_lines=True, refresh=True)
    # details came from the cache; the items list (it names the lines' items) fresh again
    assert [r.route for r in sb.requests if r.route != "/v1/items"] == ["/v1/location-txs"]
    assert len(joined) == len(lines)
    assert list(joined.columns[: len(frames.SCHEMAS["transactions"])]) == list(
        frames.SCHEMAS["transactions"]
    )
    assert {"item_id", "quantity", "new_stock_level"} <= set(joined.columns)
    assert joined["transaction_id"].tolist() == lines["transaction_id"].tolist()


def test_lines_df_levels_stay_true_after_an_earlier_edit(sb, make_client, tmp_path):
    # Details are cached for good per revision, but an edit of an earlier transaction moves
    # the stock levels of every later one without raising their revisions.
    client = make_client(sb, "shop")
    before = client.lines_df()
    rows = sorted(sb.data("shop").transactions, key=lambda t: t["transaction_time"])
    middle = next(t for t in rows[len(rows) // 2 :] if t["type"] in ("in", "out"))
    sb.edit_transaction(middle["id"])
    after = client.lines_df(refresh=True)  # a fresh list; the details come from the cache
    assert after.attrs["from_cache"] > 0
    fresh = make_client(sb, "shop", cache=False).lines_df()
    key = ["transaction_id", "item_id"]
    got = after.sort_values(key, ignore_index=True)
    want = fresh.sort_values(key, ignore_index=True)
    assert len(got) == len(want) == len(before)
    changed = (
        before.sort_values(key, ignore_index=True)["new_stock_level"] != want["new_stock_level"]
    ).sum()
    assert changed > 0  # the edit really moved later levels
    for col in ("new_stock_level", "to_location_new_stock_level", "from_location_new_stock_level"):
        pd.testing.assert_series_equal(got[col], want[col])


def _by_key(df):
    return df.sort_values(["transaction_id", "item_id"], ignore_index=True)


def test_lines_df_with_a_type_filter_keeps_the_servers_levels(sb, make_client):
    # Recomputing levels needs every type's effect; an "out"-only frame must not try, and says
    # its levels are not checked against the current stock.
    with pytest.warns(LevelsWarning, match=r"lines_df\(type='out', \.\.\.\)"):
        outs = make_client(sb, "shop").lines_df(type="out")
    fresh = make_client(sb, "shop", cache=False).lines_df()
    want = _by_key(fresh[fresh["type"] == "out"])
    assert set(outs["type"].astype(str)) == {"out"} and len(outs) == len(want)
    pd.testing.assert_series_equal(_by_key(outs)["new_stock_level"], want["new_stock_level"])


def test_an_edit_before_a_since_window_is_repaired_by_refresh(sb, make_client):
    rows = sorted(sb.data("shop").transactions, key=lambda t: t["transaction_time"])
    since = rows[len(rows) * 3 // 4]["transaction_time"]
    client = make_client(sb, "shop")
    client.lines_df(since=since)  # details of the window now cached for good
    early = next(t for t in rows[: len(rows) // 2] if t["type"] == "in")
    sb.edit_transaction(early["id"])  # shifts the true levels of every later line
    fresh = _by_key(make_client(sb, "shop", cache=False).lines_df(since=since))
    again = _by_key(client.lines_df(since=since, refresh=True))
    pd.testing.assert_series_equal(again["new_stock_level"], fresh["new_stock_level"])


# -- issue 11, item 8: no filter silently dropped; errors name the method called ------------
def test_until_with_keep_and_since_with_stop_at_both_apply(sb, make_client):
    c = make_client(sb)
    rows = list(c.transactions())
    n = len(rows)
    until = rows[n // 4]["transaction_time"]
    since = rows[n // 2]["transaction_time"]
    outs = [r["id"] for r in c.transactions(until=until, type="out")]
    assert outs and outs == [
        r["id"] for r in rows if r["type"] == "out" and r["transaction_time"] <= until
    ]
    early = [r["id"] for r in c.transactions(since=since, max_rows=10)]
    assert early == [r["id"] for r in rows[:10]]
    late = [r["id"] for r in c.transactions(since=since, max_rows=10**6)]
    assert late == [r["id"] for r in rows if r["transaction_time"] >= since]
    stop = rows[10]["id"]
    paged = c.pages("/v1/location-txs", stop_at=lambda r: r["id"] == stop, keep=lambda r: True)
    assert [r["id"] for p in paged for r in p.rows] == [r["id"] for r in rows[:10]]


def test_a_year_month_is_a_valid_since(sb, make_client):
    c = make_client(sb)
    df = c.transactions_df(since="2026-10")
    assert len(df) and df["transaction_id"].tolist() == (
        c.transactions_df(since="2026-10-01")["transaction_id"].tolist()
    )


# -- issue 11, item 11: an empty result keeps every column -----------------------------------
def test_an_empty_items_frame_has_the_same_columns_and_dtypes_as_a_full_one(sb, client):
    full = client.items_df()
    empty = client.items_df(item_ids=[999999])
    assert empty.empty and full.columns.tolist() == empty.columns.tolist()
    assert full.dtypes.astype(str).tolist() == empty.dtypes.astype(str).tolist()
    # one attr_<name> column per attribute the team defines, in rank order
    specs = sorted(sb.data("shop").attrs, key=lambda a: (a["rank"], a["id"]))
    assert [c for c in full.columns if c.startswith("attr_")] == [
        f"attr_{a['attr_name']}" for a in specs
    ]


def test_items_df_asks_for_the_attribute_list_once_then_the_cache_answers(sb, client):
    client.items_df(item_ids=[999999])
    sb.clear_log()
    client.items_df(item_ids=[999998])
    assert "/v1/item-attrs" not in [r.route for r in sb.requests]


def test_who_and_where_equal_the_raw_details_on_every_path(sb, client, tmp_path):
    """Issue 19: created_by_* and location_* of lines_df() and transactions_df() -- the whole
    walk (page bytes, pyarrow), a filtered walk (dicts), a mirror -- are the server's own
    created_by and to_location (from_location when there is none) of each detail."""
    from invtools import TransactionMirror

    view = sb.data("shop")
    raw = {row["id"]: view.transaction(row["id"]) for row in view.transactions}

    def expected(tx_id: int) -> tuple:
        d = raw[tx_id]
        where = d["to_location"] or d["from_location"]
        return (
            d["created_by"]["id"],
            d["created_by"]["name"],
            where["id"],
            where["name"],
            (d["from_location"] or {}).get("id"),
            d["to_location"]["id"],
        )

    def got(df, id_column):
        return [
            (
                int(getattr(r, id_column)),
                r.created_by_id,
                r.created_by_name,
                r.location_id,
                r.location_name,
                None if pd.isna(r.from_location_id) else r.from_location_id,
                r.to_location_id,
            )
            for r in df.itertuples()
        ]

    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync()
    frames_ = {
        "lines": (client.lines_df(), "transaction_id"),
        "whole walk": (client.transactions_df(), "transaction_id"),
        "type=move": (client.transactions_df(type="move"), "transaction_id"),
        "mirror lines": (mirror.lines_df(), "transaction_id"),
        "mirror transactions": (mirror.transactions_df(), "transaction_id"),
    }
    for name, (df, id_column) in frames_.items():
        assert len(df) > 0, name
        for row in got(df, id_column):
            assert row[1:] == expected(row[0]), (name, row)
        assert df["location_id"].dtype == "Int64" and df["created_by_name"].dtype == "string"
    moves = frames_["type=move"][0]
    assert (moves["location_id"] == moves["to_location_id"]).all()  # a move: its destination
    assert (moves["from_location_id"] != moves["location_id"]).all()
