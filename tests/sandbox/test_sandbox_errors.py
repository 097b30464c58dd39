"""Every error answers with the envelope; auth, parameters, ids, paths, team isolation."""

from __future__ import annotations

import re

import pytest
from sandbox_helpers import call, walk

ERROR_ID = re.compile(r"^ex_[a-z0-9]{24}$")
CORRELATION_ID = re.compile(r"^rq_[a-z0-9]{24}$")


def assert_envelope(reply, status: int, type_: str) -> dict:
    assert reply.status == status, reply.raw
    body = reply.json
    assert body["type"] == type_
    assert ERROR_ID.match(body["id"]) and CORRELATION_ID.match(body["correlation_id"])
    assert isinstance(body["title"], str) and body["title"]
    return body


@pytest.mark.parametrize("auth", [None, "", "Bearer ", "Bearer    "])
def test_missing_or_empty_token_is_401_required(shop_server, auth):
    r = call(shop_server, "/v1/items", team=None, auth=auth)
    body = assert_envelope(r, 401, "/errors/tokens/required")
    assert "given" not in body


def test_unknown_token_is_401_invalid_echoing_it(shop_server):
    r = call(shop_server, "/v1/teams/linked", token="not-a-real-token-123")
    body = assert_envelope(r, 401, "/errors/tokens/invalid")
    assert body["given"] == "not-a-real-token-123"  # the real service does this too


def test_a_revoked_token_is_401_invalid_and_the_other_teams_are_not():
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=50) as sb:
        assert call(sb, "/v1/teams/linked", token=sb.tokens["shop"]).status == 200
        sb.revoke_token("shop")
        assert_envelope(
            call(sb, "/v1/teams/linked", token=sb.tokens["shop"]), 401, "/errors/tokens/invalid"
        )
        assert call(sb, "/v1/teams/linked", token=sb.tokens["basic"]).status == 200
        with pytest.raises(KeyError, match="teams"):
            sb.revoke_token("nope")


def test_every_endpoint_needs_a_token(shop_server):
    for path in [
        "/v1/teams/linked",
        "/v1/partners",
        "/v1/members",
        "/v1/item-attrs",
        "/v1/location-txs/5200001",
    ]:
        assert call(shop_server, path, team=None).status == 401


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"limit": 0}, ["limit"]),
        ({"limit": 101}, ["limit"]),
        ({"limit": "ten"}, ["limit"]),
        ({"cursor": "abc"}, ["cursor"]),
        ({"cursor": -5}, ["cursor"]),
        ({"limit": 500, "cursor": "x"}, ["limit", "cursor"]),
    ],
)
@pytest.mark.parametrize("path", ["/v1/items", "/v1/location-txs", "/v1/partners"])
def test_bad_paging_parameters_are_400_with_errors(shop_server, path, params, bad):
    r = call(shop_server, path, params)
    body = assert_envelope(r, 400, "/errors/invalid-request")
    assert [e["parameter"] for e in body["errors"]] == bad
    assert all(e["message"] for e in body["errors"])


@pytest.mark.parametrize(
    "path,params,bad",
    [
        ("/v1/location-txs", {"type": "sale"}, "type"),
        ("/v1/partners", {"type": 2}, "type"),
        ("/v1/items", {"location_ids": "north"}, "location_ids"),
        ("/v1/items", {"item_ids": "1.5"}, "item_ids"),
        ("/v1/location-txs/5200010", {"revision": "latest"}, "revision"),
    ],
)
def test_bad_filters_are_400(shop_server, path, params, bad):
    body = assert_envelope(call(shop_server, path, params), 400, "/errors/invalid-request")
    assert body["errors"][0]["parameter"] == bad


def test_a_cursor_that_was_never_handed_out_is_400(shop_server):
    r = call(shop_server, "/v1/location-txs", {"cursor": 99})
    body = assert_envelope(r, 400, "/errors/invalid-request")
    assert body["errors"][0]["parameter"] == "cursor"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/items/999999",
        "/v1/location-txs/1",
        "/v1/transactions/2147483647",
        "/v1/locations/1",
        "/v1/members/1",
        "/v1/item-attrs/1",
    ],
)
def test_unknown_ids_are_404(shop_server, path):
    assert_envelope(call(shop_server, path), 404, "/errors/not-found")


@pytest.mark.parametrize(
    "path", ["/v1/nothing", "/v2/items", "/v1/items/", "/v1/items/abc", "/", "/v1/teams"]
)
def test_unknown_paths_are_404(shop_server, path):
    assert_envelope(call(shop_server, path), 404, "/errors/not-found")


def test_unknown_revision_is_404(shop_server):
    row = shop_server.data("shop").transactions[0]
    r = call(shop_server, f"/v1/location-txs/{row['id']}", {"revision": row["revision"] + 1})
    assert_envelope(r, 404, "/errors/not-found")


def test_writes_are_refused(shop_server):
    r = call(shop_server, "/v1/items", method="POST")
    assert_envelope(r, 405, "/errors/method-not-allowed")


def test_deleted_records_are_referenced_but_not_served(shop_server):
    view = shop_server.data("shop")
    rows = view.transactions
    lines = [ln for r in rows for ln in view.transaction(r["id"])["items"]]
    deleted_items = {ln["id"] for ln in lines if ln["deleted"]}
    deleted_members = {r["created_by"]["id"] for r in rows if r["created_by"]["deleted"]}
    deleted_partners = {
        r["partner"]["id"] for r in rows if r["partner"] and r["partner"]["deleted"]
    }
    assert deleted_items and deleted_members and deleted_partners  # still referenced
    for item in deleted_items:
        assert call(shop_server, f"/v1/items/{item}").status == 404
    for member in deleted_members:
        assert call(shop_server, f"/v1/members/{member}").status == 404
    assert not {i["id"] for i in view.items} & deleted_items
    assert not {m["id"] for m in view.members} & deleted_members
    listed = {p["id"] for p in walk(shop_server, "/v1/partners")[0]}
    assert listed and not listed & deleted_partners


def test_one_team_never_sees_another_teams_objects(shop_server):
    shop, basic = shop_server.data("shop"), shop_server.data("basic")
    shop_member, basic_member = shop.members[0]["id"], basic.members[0]["id"]
    assert call(shop_server, f"/v1/members/{shop_member}", team="basic").status == 404
    assert call(shop_server, f"/v1/members/{basic_member}", team="shop").status == 404
    shop_attr, basic_attr = shop.attrs[0]["id"], basic.attrs[0]["id"]
    assert call(shop_server, f"/v1/item-attrs/{shop_attr}", team="basic").status == 404
    assert call(shop_server, f"/v1/item-attrs/{basic_attr}", team="shop").status == 404
    shop_partners = {p["id"] for p in call(shop_server, "/v1/partners").json["items"]}
    basic_partners = {
        p["id"] for p in call(shop_server, "/v1/partners", team="basic").json["items"]
    }
    assert shop_partners and basic_partners and not shop_partners & basic_partners
    basic_item = basic.items[0]["id"]
    assert call(shop_server, f"/v1/items/{basic_item}").status == 404


def test_the_server_repr_and_log_never_hold_a_token(shop_server):
    call(shop_server, "/v1/teams/linked")
    call(shop_server, "/v1/teams/linked", token="leaked-secret")
    text = repr(shop_server) + repr(shop_server.requests)
    for token in [*shop_server.tokens.values(), "leaked-secret"]:
        assert token not in text
    assert shop_server.requests[-2].team == "shop"
    assert shop_server.requests[-1].team is None and shop_server.requests[-1].status == 401
