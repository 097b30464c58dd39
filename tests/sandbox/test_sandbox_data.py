"""The demo data: deterministic, realistic, and its stock levels agree with its history."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime

import pytest
from sandbox_helpers import assert_consistent, call, history

from invtools.sandbox import serve


def test_levels_and_current_stock_agree_with_the_history(shop_server):
    details = assert_consistent(shop_server)
    levels = [
        line[k]
        for d in details
        for line in d["items"]
        for k in ("new_stock_level", "to_location_new_stock_level", "from_location_new_stock_level")
        if line[k] is not None
    ]
    assert min(levels) >= 0  # stock never negative


def test_levels_over_http_match_the_view(shop_server):
    rows = shop_server.data("shop").transactions
    for row in rows[::400]:
        body = call(shop_server, f"/v1/location-txs/{row['id']}").json
        assert body["item"] == shop_server.data("shop").transaction(row["id"])


def test_the_shop_looks_like_a_small_business(shop_server):
    view = shop_server.data("shop")
    rows = view.transactions
    assert len(rows) == 4000 and len(view.items) >= 300
    types = Counter(r["type"] for r in rows)
    assert types["out"] > types["move"] > types["in"] > types["adjust"] > 20
    times = [datetime.fromisoformat(r["transaction_time"].replace("Z", "+00:00")) for r in rows]
    assert max(times).date().isoformat() == "2026-10-31"
    assert (max(times) - min(times)).days >= 540
    weekday = Counter(t.weekday() for t, r in zip(times, rows, strict=True) if r["type"] == "out")
    assert weekday[5] > weekday[0] > weekday[6]  # busy Saturdays, quiet Sundays
    backdated = [
        r
        for r in rows
        if r["created_at"][:10] > r["transaction_time"][:10]
        and (
            datetime.fromisoformat(r["created_at"][:19])
            - datetime.fromisoformat(r["transaction_time"][:19])
        ).days
        >= 1
    ]
    assert len(backdated) >= 20
    edited = [r for r in rows if r["revision"] > 0]
    assert 20 <= len(edited) <= 100
    assert any(r["partner"] and r["partner"]["deleted"] for r in rows)
    assert {p["type"] for p in view.partners} == {0, 1}
    assert {m["role"] for m in view.members} == {"admin", "member", "viewer"}
    # ids follow creation: a backdated row has a higher id than rows around its time
    assert any(r["id"] > rows[i - 1]["id"] for i, r in enumerate(rows) if r in backdated)


def test_garden_sales_peak_in_spring_and_summer(shop_server):
    view = shop_server.data("shop")
    garden = {
        i["id"]
        for i in view.items
        if any(a["name"] == "Category" and a["value"] == "Garden" for a in i["attrs"])
    }
    by_month = Counter()
    for row in view.transactions:
        if row["type"] == "out":
            d = view.transaction(row["id"])
            by_month[row["transaction_time"][5:7]] += sum(
                1 for ln in d["items"] if ln["id"] in garden
            )
    assert by_month["05"] > 2 * by_month["01"] and by_month["06"] > 2 * by_month["11"]


def test_some_items_sit_at_zero_for_a_while_then_come_back(shop_server):
    details = history(shop_server)
    floor_levels = defaultdict(list)
    for d in details:
        for line in d["items"]:
            floor_levels[line["id"]].append((d["transaction_time"], line["new_stock_level"]))
    came_back = [
        i
        for i, seq in floor_levels.items()
        if any(lvl == 0 for _, lvl in seq[:-1]) and seq[-1][1] > 0
    ]
    assert len(came_back) >= 3


def test_edited_transactions_keep_their_older_revisions(shop_server):
    row = next(r for r in shop_server.data("shop").transactions if r["revision"] > 0)
    now = call(shop_server, f"/v1/location-txs/{row['id']}").json["item"]
    old = call(shop_server, f"/v1/location-txs/{row['id']}", {"revision": 0}).json["item"]
    assert old["revision"] == 0 and now["revision"] == row["revision"]
    assert old != {**now, "revision": 0}
    assert old["id"] == now["id"]


def test_basic_team_has_a_catalogue_but_no_history(shop_server):
    view = shop_server.data("basic")
    assert view.team["mode"] == 0 and len(view.items) >= 20 and view.transactions == []


def test_same_seed_same_bytes_other_seed_other_data():
    paths = [
        "/v1/items",
        "/v1/location-txs",
        "/v1/partners",
        "/v1/locations",
        "/v1/members",
        "/v1/teams/linked",
    ]
    with (
        serve(seed=3, size=400, rate_limit=0) as a,
        serve(seed=3, size=400, rate_limit=0) as b,
        serve(seed=4, size=400, rate_limit=0) as c,
    ):
        assert a.tokens == b.tokens and a.tokens != c.tokens
        tx = a.data("shop").transactions[10]["id"]
        for path in [*paths, f"/v1/location-txs/{tx}"]:
            assert call(a, path).raw == call(b, path).raw, path
        assert call(a, "/v1/items").raw != call(c, "/v1/items").raw
        assert call(a, "/v1/location-txs").raw != call(c, "/v1/location-txs").raw


def test_a_medium_history_is_consistent_too():
    with serve(seed=11, size=10_000, rate_limit=0) as sb:
        assert len(sb.data("shop").transactions) == 10_000
        assert_consistent(sb)


# ------------------------------------------------------------------ the shop's branches


def test_branches_are_location_teams_of_their_own_and_change_nothing_of_the_others():
    with serve(rate_limit=0, size=300) as one, serve(rate_limit=0, size=300, shops=3) as three:
        assert sorted(one.tokens) == ["basic", "shop"]  # the default is unchanged
        assert sorted(three.tokens) == ["basic", "harrogate", "shop", "york"]
        assert len(set(three.tokens.values())) == 4  # one token each
        for team in ("shop", "basic"):  # adding branches changes no other team's data or token
            assert three.tokens[team] == one.tokens[team]
            a, b = one.data(team), three.data(team)
            assert (a.team, a.items, a.transactions) == (b.team, b.items, b.transactions)
        views = {k: three.data(k) for k in ("shop", "harrogate", "york")}
        assert len({v.team["id"] for v in views.values()}) == 3
        assert len({v.team["name"] for v in views.values()}) == 3
        assert {v.team["mode"] for v in views.values()} == {2}
        # Each has its own history (its own size) and its own ids; the same products share
        # SKUs, as a chain's branches would.
        assert [len(v.transactions) for v in views.values()] == [300, 210, 165]
        for kind in ("items", "partners", "members", "locations", "transactions"):
            ids = [{r["id"] for r in getattr(v, kind)} for v in views.values()]
            assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2]), kind
        skus = [{i["sku"] for i in v.items} for v in views.values()]
        assert skus[0] & skus[1] & skus[2]
        # ... and answers its own token only.
        york = call(three, "/v1/teams/linked", team="york").json
        assert york["name"] == "Greenfield Hardware & Garden (York)"
        assert (
            call(three, "/v1/location-txs", {"limit": 1}, team="york").json["items"][0]["id"]
            == views["york"].transactions[0]["id"]
        )


def test_branch_histories_are_consistent_and_seeded():
    with (
        serve(rate_limit=0, size=400, shops=5, seed=3) as sb,
        serve(rate_limit=0, size=400, shops=5, seed=3) as again,
    ):
        for team in ("harrogate", "york", "wakefield", "ilkley"):
            assert_consistent(sb, team)
            assert sb.data(team).transactions == again.data(team).transactions
        assert sb.data("york").transactions != sb.data("harrogate").transactions


def test_shops_out_of_range_are_refused():
    for bad in (0, 6, True, 2.0):
        with pytest.raises(ValueError, match="shops"):
            with serve(rate_limit=0, size=100, shops=bad):
                pass
