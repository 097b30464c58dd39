"""The response cache against the stand-in server: hits cost nothing, teams never share,
no token on disk, refresh, clear, expiry of immutable revisions."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat

import pytest

from invtools.api.records import Record

pytestmark = pytest.mark.network


def test_warm_walk_sends_nothing_and_pages_say_from_cache(sb, make_client):
    c = make_client(sb, rate_limit=5)
    cold = list(c.pages("/v1/items", limit=50))
    assert not any(p.from_cache for p in cold)
    sent = len(sb.requests)
    assert c.stats.sent == sent
    sb.clear_log()
    with c.measure() as m:
        warm = list(c.pages("/v1/items", limit=50))
    assert sb.requests == []  # not a single request reached the server
    assert all(p.from_cache for p in warm) and [p.rows for p in warm] == [p.rows for p in cold]
    assert m.sent == 0 and m.from_cache == len(warm) and m.pages == len(warm)


def test_cache_hits_cost_no_rate_limit_budget(sb, make_client):
    c = make_client(sb, rate_limit=2)  # 2/s per endpoint: 20 misses would take ~10 s
    c.get("/v1/members")
    import time

    start = time.monotonic()
    for _ in range(20):
        c.get("/v1/members")
    # Hits never wait for the limiter; generous bound for a slow machine.
    assert time.monotonic() - start < 3.0
    assert c.stats.from_cache == 20


def test_two_tokens_never_share_a_cached_response(sb, make_client):
    shop, basic = make_client(sb, "shop"), make_client(sb, "basic")  # same cache file
    assert shop.cache_path == basic.cache_path
    a = shop.members()
    b = basic.members()
    assert a == sb.data("shop").members and b == sb.data("basic").members and a != b
    assert [r.team for r in sb.requests if r.route == "/v1/members"] == ["shop", "basic"]
    assert shop.team().id != basic.team().id


def test_no_token_bytes_in_the_cache_file_after_a_full_walk(sb, make_client, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    c = make_client(sb, cache=tmp_path / "walk.sqlite")
    c.team()
    list(c.items())
    list(c.transactions(max_pages=3))
    c.transaction(next(c.transactions())["id"])
    c.locations(), c.members(), c.attributes(), list(c.partners())
    c.close()
    assert c.stats.sent > 5
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("walk.sqlite*") if p.is_file())
    records = [Record.from_bytes(p.read_bytes()) for p in tmp_path.glob("walk.sqlite.walks/*")]
    assert records and all(r is not None for r in records)  # the lists' walks, readable
    raw += b"".join(body for r in records for *_, body in r.pieces)
    assert len(raw) > 10_000
    for token in sb.tokens.values():
        assert token.encode() not in raw
        assert token not in caplog.text
    with sqlite3.connect(tmp_path / "walk.sqlite") as db:
        keys = [k for (k,) in db.execute("select key from responses")]
    assert keys and len({k.split(":")[0] for k in keys}) == 1
    assert stat.S_IMODE(os.stat(tmp_path / "walk.sqlite").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "walk.sqlite.walks").st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.glob("walk.sqlite.walks/*")} == {0o600}


def test_refresh_bypasses_the_cache_and_stores_the_new_answer(sb, make_client):
    c = make_client(sb)
    before = c.members()
    sb.clear_log()
    c.members(refresh=True)
    assert len(sb.requests) == 1
    sb.clear_log()
    assert c.members() == before and sb.requests == []


def test_new_transaction_seen_after_refresh(sb, make_client):
    c = make_client(sb)
    first = list(c.transactions())[0]  # noqa: RUF015 - a whole walk: the cache holds it as one snapshot
    new = sb.add_transaction(team="shop")
    assert next(c.transactions())["id"] == first["id"]  # still the cached walk
    assert next(c.transactions(refresh=True))["id"] == new["id"]


def test_clear_cache_deletes_only_this_teams_entries(sb, make_client):
    shop, basic = make_client(sb, "shop"), make_client(sb, "basic")
    shop.members(), shop.attributes(), basic.members()
    assert shop.clear_cache() >= 2
    sb.clear_log()
    basic.members()
    assert sb.requests == []  # the other team's entry survived
    shop.members()
    assert [r.route for r in sb.requests] == ["/v1/members"]  # this team's entry was gone


def test_only_200_is_cached(sb, make_client):
    from invtools.errors import NotFoundError

    c = make_client(sb)
    for _ in range(2):
        with pytest.raises(NotFoundError):
            c.transaction(2_000_000_000)
    assert len([r for r in sb.requests if r.status == 404]) == 2


def test_a_revision_is_cached_for_good_the_latest_briefly_and_a_list_as_a_whole_walk(
    sb, make_client
):
    c = make_client(sb)
    tx, *_ = c.transactions()  # a whole walk (one abandoned half way leaves no record)
    c.transaction(tx["id"], revision=tx["revision"])
    c.transaction(tx["id"])
    from requests_cache import SQLiteCache

    by_url = {}
    for resp in SQLiteCache(c.cache_path).responses.values():  # the file, read on its own
        by_url[resp.url] = resp.expires
    rev = [exp for url, exp in by_url.items() if "revision=" in url]
    latest = [exp for url, exp in by_url.items() if url.endswith(f"/v1/location-txs/{tx['id']}")]
    listing = [exp for url, exp in by_url.items() if "/v1/location-txs?" in url]
    assert rev == [None]  # never expires
    assert latest[0] is not None  # the current version: briefly
    # a list's pages are never stored one by one: its walk keeps them, whole
    assert listing == [] and list(c.cache_path.parent.glob("*.walks/*.walk"))


def test_cache_false_writes_nothing(sb, make_client, tmp_path):
    c = make_client(sb, cache=False)
    c.members(), c.members()
    assert len(sb.requests) == 2 and c.stats.from_cache == 0
    assert list(tmp_path.glob("*.sqlite")) == []


def test_default_cache_lives_in_the_user_cache_dir(sb, make_client):
    import platformdirs

    c = make_client(sb, cache=True)
    c.members()
    assert c.cache_path.parent == __import__("pathlib").Path(
        platformdirs.user_cache_dir("invtools")
    )
    assert c.cache_path.exists()
    assert stat.S_IMODE(os.stat(c.cache_path.parent).st_mode) == 0o700


def test_a_refused_token_is_served_none_of_its_cached_answers_again(sb, make_client):
    # issue 35, item 7: a revoked token got its own cached rows back until they expired
    from invtools.errors import AuthenticationError

    row = sb.data("shop").transactions[0]
    make_client(sb).transaction(row["id"], revision=row["revision"])  # cached for good
    cafe = make_client(sb, "basic")
    cafe.members()
    sb.revoke_token("shop")
    with pytest.raises(AuthenticationError):
        make_client(sb).members(refresh=True)  # the service says no once
    sb.clear_log()
    with pytest.raises(AuthenticationError):
        make_client(sb).transaction(row["id"], revision=row["revision"])
    assert len(sb.requests) == 1  # asked the server, not the cache
    sb.clear_log()
    assert cafe.members() == sb.data("basic").members  # another team's answers stay
    assert not sb.requests
