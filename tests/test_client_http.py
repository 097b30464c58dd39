"""The client against the stand-in server over real HTTP: team, walks, filters, team mode,
errors as the server sends them."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest

from invtools.api import Client
from invtools.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PaginationError,
    TeamModeError,
)

pytestmark = pytest.mark.network


def _requests_to(sb, route):
    return [r for r in sb.requests if r.route == route]


def _time(row):
    return datetime.fromisoformat(row["transaction_time"])


def test_team_is_fetched_once_and_describes_the_mode(sb, make_client):
    shop, basic = make_client(sb, "shop"), make_client(sb, "basic")
    t = shop.team()
    assert t.uses_locations and t.mode == 2 and t.mode_name == "Location"
    assert t.id == sb.data("shop").team["id"] and t.name == sb.data("shop").team["name"]
    assert shop.team() is t
    b = basic.team()
    assert b.uses_locations is False and b.mode in (0, 1)
    assert len(_requests_to(sb, "/v1/teams/linked")) == 2
    assert repr(t.name) in repr(shop) and t.mode_name in shop._repr_html_()


def test_team_wrapped_quirk_is_tolerated(sb, make_client):
    sb.quirks = {"team_wrapped"}
    t = make_client(sb, "shop", cache=False).team()
    assert t.name == sb.data("shop").team["name"] and t.uses_locations


def test_items_walk_every_row_once_in_id_order(sb, make_client):
    c = make_client(sb)
    ids = [r["id"] for r in c.items(limit=37)]
    expected = sorted(i["id"] for i in sb.data("shop").items)
    assert ids == expected
    pages = _requests_to(sb, "/v1/items")
    assert len(pages) == -(-len(expected) // 37) and c.stats.pages == len(pages)
    # the filters and limit travel unchanged on every page
    assert all(r.params.get("limit") == ["37"] for r in pages)
    assert "cursor" not in pages[0].params


def test_array_filters_repeat_the_key(sb, make_client):
    c = make_client(sb)
    wanted = sorted(i["id"] for i in sb.data("shop").items)[:3]
    rows = list(c.items(item_ids=wanted))
    assert [r["id"] for r in rows] == wanted
    assert _requests_to(sb, "/v1/items")[0].params["item_ids"] == [str(i) for i in wanted]


def test_partners_by_type_on_every_page(sb, make_client):
    c = make_client(sb, "basic")
    rows = list(c.partners(type="customer", limit=3))
    expected = [p["id"] for p in sb.data("basic").partners if p["type"] == 1]
    assert [r["id"] for r in rows] == sorted(expected) and rows
    assert all(r.params.get("type") == ["1"] for r in _requests_to(sb, "/v1/partners"))


def test_transactions_newest_first_and_max_rows_max_pages(sb, make_client):
    c = make_client(sb)
    rows = list(c.transactions(limit=10, max_rows=25))
    assert len(rows) == 25
    assert [_time(r) for r in rows] == sorted((_time(r) for r in rows), reverse=True)
    assert len(_requests_to(sb, "/v1/location-txs")) == 3
    sb.clear_log()
    assert len(list(c.pages("/v1/location-txs", limit=5, max_pages=2, refresh=True))) == 2
    assert len(_requests_to(sb, "/v1/location-txs")) == 2


def test_since_stops_the_walk_early_and_until_filters(sb, make_client):
    c = make_client(sb)
    newest = list(c.transactions(limit=10, max_rows=40))
    since, until = newest[34]["transaction_time"], newest[5]["transaction_time"]
    sb.clear_log()
    # One plain chain (chains=1): how since stops several chains is in test_client_chains.py.
    rows = list(c.transactions(since=since, until=until, limit=10, refresh=True, chains=1))
    lo, hi = datetime.fromisoformat(since), datetime.fromisoformat(until)
    expected = [r["id"] for r in newest if lo <= _time(r) <= hi]
    assert [r["id"] for r in rows] == expected
    # 35 rows are at or after `since`: pages 1-4 hold them; no page after the first older row
    sent = _requests_to(sb, "/v1/location-txs")
    assert len(sent) <= 4 + 1 and len(sent) < len(sb.data("shop").transactions) / 10


def test_last_cursor_not_null_quirk_does_not_loop(sb, make_client):
    sb.quirks = {"last_cursor_not_null"}
    c = make_client(sb, cache=False)
    pages = list(c.pages("/v1/items", limit=40))
    assert pages[-1].has_more is False and pages[-1].cursor is not None
    assert [r["id"] for p in pages for r in p.rows] == sorted(
        i["id"] for i in sb.data("shop").items
    )
    assert len(_requests_to(sb, "/v1/items")) == len(pages)


def test_transaction_detail_and_revision(sb, make_client):
    c = make_client(sb)
    row = next(c.transactions())
    detail = c.transaction(row["id"])
    assert detail["id"] == row["id"] and isinstance(detail["items"], list)
    edited = sb.edit_transaction(row["id"])
    assert c.transaction(row["id"], revision=edited["revision"])["revision"] == edited["revision"]
    assert c.transaction(row["id"], revision=detail["revision"])["revision"] == detail["revision"]


def test_plain_lists(sb, make_client):
    c = make_client(sb)
    assert {x["id"] for x in c.locations()} == {x["id"] for x in sb.data("shop").locations}
    assert {x["id"] for x in c.members()} == {x["id"] for x in sb.data("shop").members}
    assert {x["id"] for x in c.attributes()} == {x["id"] for x in sb.data("shop").attrs}


@pytest.mark.parametrize(
    "call, path",
    [
        (lambda c: list(c.items()), "/v1/items"),
        (lambda c: c.item(1), "/v1/items/{id}"),
        (lambda c: list(c.transactions()), "/v1/location-txs"),
        (lambda c: c.transaction(1), "/v1/location-txs/{id}"),
        (lambda c: c.locations(), "/v1/locations"),
        (lambda c: c.transactions_df(), "/v1/location-txs"),
        (lambda c: c.items_df(), "/v1/items"),
        (lambda c: c.stock_df(), "/v1/items"),
        (lambda c: c.lines_df(), "/v1/items"),  # its levels' anchor, read first
        (lambda c: list(c.transaction_details([(1, 0)])), "/v1/location-txs"),
        # the general walk too: any walk of a location-only list checks the mode first
        (lambda c: list(c.pages("/v1/location-txs")), "/v1/location-txs"),
        (lambda c: list(c.pages("/v1/items", {"item_ids": [1]})), "/v1/items"),
        (lambda c: list(c.transactions(type=("in", "out"))), "/v1/location-txs"),
    ],
)
def test_location_only_endpoints_refused_client_side_without_a_request(sb, make_client, call, path):
    c = make_client(sb, "basic")
    team = c.team()
    sb.clear_log()
    with pytest.raises(TeamModeError) as info:
        call(c)
    assert sb.requests == []  # the cached team answered; nothing was sent
    msg = str(info.value)
    assert repr(team.name) in msg and f"{team.mode_name} mode ({team.mode})" in msg
    assert path in msg and "members()" in msg and "partners()" in msg and "attributes()" in msg


def test_location_only_endpoint_refused_server_side(sb, make_client):
    c = make_client(sb, "basic")
    with pytest.raises(TeamModeError) as info:
        c.get("/v1/items")  # the raw layer does not check first: the server says no
    err = info.value
    assert err.status == 400 and err.type == "/errors/invalid-team-mode"
    assert err.correlation_id and err.correlation_id in str(err)
    assert repr(c.team().name) in str(err) and "members()" in str(err)


def test_basic_team_can_use_every_team_endpoints(sb, make_client):
    c = make_client(sb, "basic")
    assert c.members() and c.attributes() is not None
    assert list(c.partners()) == sorted(sb.data("basic").partners, key=lambda p: p["id"])


def test_invalid_token_is_authentication_error_without_the_token(sb, caplog):
    caplog.set_level(logging.DEBUG)
    bad = "tok_not_a_real_one_ABCDEFGH123"
    c = Client(bad, base_url=sb.base_url, cache=False, rate_limit=0, progress=False)
    with pytest.raises(AuthenticationError) as info:
        c.team()
    err = info.value
    assert err.status == 401 and err.type == "/errors/tokens/invalid"
    for text in (str(err), repr(err), repr(err.details), caplog.text, repr(c)):
        assert bad not in text
    assert err.details.get("given") is None


def test_not_found_and_invalid_request(sb, make_client):
    c = make_client(sb)
    with pytest.raises(NotFoundError) as nf:
        c.transaction(2_000_000_000)
    assert nf.value.status == 404 and nf.value.type == "/errors/not-found"
    with pytest.raises(NotFoundError):
        c.get("/v1/no-such-thing")
    with pytest.raises(InvalidRequestError) as ir:
        c.get("/v1/items", {"limit": 1000})
    assert ir.value.status == 400 and ir.value.type == "/errors/invalid-request"
    assert c.stats.retries == 0  # 4xx other than 429 is never retried


def test_walking_a_plain_list_as_pages_is_a_pagination_error(sb, make_client):
    with pytest.raises(PaginationError, match="page envelope"):
        list(make_client(sb).pages("/v1/members"))


def test_measure_and_provenance_say_where_rows_came_from(sb, make_client):
    c = make_client(sb)
    c.team()  # known before: a walk of a location-only list asks for it first
    with c.measure() as first_pages:
        pages = list(c.pages("/v1/location-txs", {"type": "in"}, limit=5, max_pages=2))
    m = first_pages
    assert (m.sent, m.from_cache, m.pages, m.rows) == (2, 0, 2, sum(len(p.rows) for p in pages))
    df = c.transactions_df(type="in")
    prov = df.attrs
    team = sb.data("shop").team
    ins = [t for t in sb.data("shop").transactions if t["type"] == "in"]
    assert (prov["team_id"], prov["team_name"]) == (team["id"], team["name"])
    assert prov["base_url"] == sb.base_url and prov["source"] == "api"
    assert prov["endpoint"] == "/v1/location-txs" and prov["filters"]["type"] == "in"
    pages = -(-len(ins) // 100)
    assert prov["pages"] == pages and prov["requests"] == pages and prov["from_cache"] == 0
    assert prov["rows"] == len(df) == len(ins) and df["transaction_id"].tolist() == [
        t["id"] for t in ins
    ]
    assert prov["fetched_at"].endswith("Z") and set(df["type"]) == {"in"}
    with c.measure() as warm:
        again = c.transactions_df(type="in")
    assert (warm.sent, warm.from_cache, warm.pages, warm.rows) == (0, pages, pages, len(ins))
    assert again.attrs["requests"] == 0 and again.attrs["data_as_of"] == prov["data_as_of"]
    assert all(str(t) not in repr(prov) for t in sb.tokens.values())


def test_repr_html_shows_the_bound_team_not_the_token(sb, make_client):
    c = make_client(sb)
    c.team()
    out = c._repr_html_()
    team = sb.data("shop").team
    assert str(team["id"]) in out and "Location mode (2)" in out
    assert sb.tokens["shop"] not in out and sb.tokens["shop"] not in repr(c)


def test_list_methods_are_lazy(sb, make_client):
    c = make_client(sb, "basic")
    walk = c.items()
    c.transactions(since="2026-01-01"), c.partners(), c.pages("/v1/partners")
    assert sb.requests == []
    with pytest.raises(TeamModeError):
        next(walk)


def test_a_netrc_entry_for_the_host_does_not_replace_the_token(
    sb, make_client, tmp_path, monkeypatch
):
    # requests fills in credentials from ~/.netrc when a session has no auth of its own;
    # that must never override the team's Bearer token.
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password other-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HOME", str(tmp_path))
    client = make_client(sb, "shop")
    assert client.team().name == sb.data("shop").team["name"]
    assert "other-secret" not in repr(client.__dict__)
    assert all(r.status == 200 for r in sb.requests)  # the server saw the team's token


@pytest.mark.parametrize(
    "method",
    ["pages", "items", "partners", "transactions", "transaction_details", "items_df",
     "stock_df", "transactions_df", "lines_df", "partners_df", "locations_df"],
)  # fmt: skip
def test_every_option_is_a_keyword_help_and_editors_show_and_a_typo_is_a_type_error(
    sb, make_client, method
):
    # issue 24: no **kwargs: help(), tab completion and mypy see every option, and a typo is
    # Python's own TypeError naming the keyword, before anything is sent
    import inspect

    c = make_client(sb)
    params = inspect.signature(getattr(c, method)).parameters.values()
    assert all(p.kind is not p.VAR_KEYWORD for p in params)
    options = [p for p in params if p.default is not p.empty and p.name != "params"]
    assert options and all(p.kind is p.KEYWORD_ONLY for p in options)
    sb.clear_log()
    args = ("/v1/items",) if method == "pages" else ([(1, 0)],) if "details" in method else ()
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'max_agee'"):
        getattr(c, method)(*args, max_agee="1h")
    assert sb.requests == []


# -- issue 24: what a call counts, how it chains, how often it checks the team -------------------


def test_stats_count_the_rows_handed_out_not_the_rows_fetched(sb, make_client):
    c = make_client(sb)
    c.team()
    with c.measure() as m:
        rows = list(c.transactions(max_rows=47))
    assert len(rows) == 47 and (m.pages, m.rows) == (1, 47)  # a page of 100 was read
    with c.measure() as m:
        df = c.transactions_df(type="in", max_rows=5)
    assert len(df) == 5 and m.rows == 5 and df.attrs["rows"] == 5


@pytest.mark.parametrize("kind", [None, "in", ("in", "out")])
def test_a_walk_cut_short_reads_only_the_pages_it_needs(sb, make_client, kind):
    c = make_client(sb, cache=False)
    c.team()
    sb.clear_log()
    assert len(list(c.transactions(type=kind, max_pages=2, limit=10))) <= 20
    assert len(list(c.transactions(type=kind, max_rows=5, limit=10))) == 5
    sent = [r for r in sb.requests if r.route == "/v1/location-txs"]
    assert len(sent) == 3  # two pages, then one: not every chain's first pages


def test_one_chain_asked_for_several_types_is_one_plain_chain(sb, make_client):
    c = make_client(sb, cache=False)
    c.team()
    sb.clear_log()
    walk = c.transactions(type=("in", "adjust"), chains=1)
    got = [(r["id"], r["revision"]) for r in walk]
    truth = sb.data("shop").transactions
    assert got == [(t["id"], t["revision"]) for t in truth if t["type"] in ("in", "adjust")]
    sent = [r for r in sb.requests if r.route == "/v1/location-txs"]
    assert walk.plan.kind == "one" and all("type" not in r.params for r in sent)
    assert len(sent) == -(-len(truth) // 100)  # the unfiltered list, each page once
    df = c.transactions_df(type=("in", "adjust"), chains=1)
    assert df.attrs["filters"]["type"] == ["in", "adjust"] and set(df["type"]) == {"in", "adjust"}


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.items_df(),
        lambda c: c.stock_df(),
        lambda c: c.transactions_df(since="30D"),
        lambda c: c.transactions_df(since="30D", with_lines=True),
        lambda c: c.lines_df(since="30D"),
        lambda c: list(c.transaction_details([(t, 0) for t in (1, 2, 3)])),
        lambda c: list(c.transactions(type=("in", "out"))),
    ],
)
def test_a_call_checks_the_teams_mode_once(sb, make_client, monkeypatch, call):
    # issue 24: transaction_details() checked again what the walk had checked, once per
    # detail; items_df() checked twice and stock_df() three times
    import invtools.api.resources as client_module

    checks = []
    real = client_module.require_locations
    monkeypatch.setattr(
        client_module, "require_locations", lambda *a: checks.append(a[1]) or real(*a)
    )
    c = make_client(sb)
    call(c)
    assert len(checks) == len(set(checks)) >= 1, checks  # once per list walked
