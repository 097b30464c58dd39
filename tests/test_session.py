"""make_session() and its parts: route buckets, cache paths and modes, per-token cache keys."""

from __future__ import annotations

import os
import stat

import pytest
import requests
from requests_cache import CacheMixin
from requests_ratelimiter import LimiterMixin

from invtools.errors import ConfigError
from invtools.session import (
    EXPIRY,
    RouteLimiterMixin,
    _salt_for,
    cache_prefix,
    make_session,
    resolve_cache_path,
    route_of,
)


@pytest.mark.parametrize("path, route", [
    ("/v1/location-txs/123", "/v1/location-txs/{id}"),
    ("/v1/location-txs/9?revision=2", "/v1/location-txs/{id}"),
    ("/v1/location-txs", "/v1/location-txs"),
    ("/v1/items/7/", "/v1/items/{id}"),
    ("/v1/teams/linked", "/v1/teams/linked"),
])
def test_route_of_makes_one_template_per_endpoint(path, route):
    assert route_of(path) == route


def test_limiter_bucket_is_the_route_or_one_for_the_token(tmp_path):
    s = make_session(cache_path=None, rate_limit=5)
    t = make_session(cache_path=None, rate_limit=5, rate_limit_scope="token")
    try:
        req = lambda url: requests.Request("GET", url).prepare()  # noqa: E731
        a = s._bucket_name(req("http://127.0.0.1:1/v1/location-txs/1?revision=3"))
        b = s._bucket_name(req("http://127.0.0.1:1/v1/location-txs/2"))
        c = s._bucket_name(req("http://127.0.0.1:1/v1/items"))
        assert a == b == "/v1/location-txs/{id}" and c == "/v1/items"
        assert t._bucket_name(req("http://x/v1/items")) == t._bucket_name(req("http://x/v1/members"))
    finally:
        s.close()
        t.close()


def test_layers_cache_above_limiter_above_session(tmp_path):
    s = make_session(cache_path=tmp_path / "c.sqlite", rate_limit=5)
    try:
        mro = type(s).__mro__
        # The cache answers before the limiter is consulted: hits cost no budget.
        assert mro.index(CacheMixin) < mro.index(RouteLimiterMixin) < mro.index(requests.Session)
        assert isinstance(s, LimiterMixin) and s.per_host is False
    finally:
        s.close()


def test_no_cache_no_limit_is_a_plain_session():
    s = make_session(cache_path=None, rate_limit=0)
    assert type(s) is requests.Session
    s.close()


def test_bad_scope_is_refused():
    with pytest.raises(ConfigError, match="rate_limit_scope"):
        make_session(cache_path=None, rate_limit=5, rate_limit_scope="host")


def test_cache_file_is_private(tmp_path):
    path = tmp_path / "sub" / "deeper" / "c.sqlite"
    s = make_session(cache_path=path, rate_limit=0)
    s.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # Folders the session had to create are the user's only.
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent.parent).st_mode) == 0o700
    salt = path.with_name(path.name + ".salt")
    assert stat.S_IMODE(os.stat(salt).st_mode) == 0o600


def test_a_path_without_suffix_is_the_file_sqlite_uses(tmp_path):
    s = make_session(cache_path=tmp_path / "plain", rate_limit=0)
    s.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.sqlite", "plain.sqlite.salt"]
    assert stat.S_IMODE(os.stat(tmp_path / "plain.sqlite").st_mode) == 0o600


def test_an_existing_folder_keeps_its_mode(tmp_path, monkeypatch):
    # INVTOOLS_CACHE_DIR=/tmp must not turn /tmp into a private folder.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(shared))
    path = resolve_cache_path(True)
    s = make_session(cache_path=path, rate_limit=0)
    s.close()
    assert path.parent == shared
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o777
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("where", ["under_a_file", "a_folder_as_the_file", "not_sqlite"])
def test_an_unusable_cache_path_is_a_config_error_naming_it(tmp_path, where):
    afile = tmp_path / "afile.sqlite"
    afile.write_text("not a folder, not a database " * 20)
    (tmp_path / "folder.sqlite").mkdir()
    path = {"under_a_file": afile / "x" / "c.sqlite",
            "a_folder_as_the_file": tmp_path / "folder.sqlite",
            "not_sqlite": afile}[where]
    with pytest.raises(ConfigError) as info:
        make_session(cache_path=path, rate_limit=5)
    msg = str(info.value)
    assert str(path) in msg and "cache=False" in msg and "INVTOOLS_CACHE_DIR" in msg


def test_salt_is_made_once_and_then_kept(tmp_path):
    path = tmp_path / "c.sqlite"
    salt_file = path.with_name(path.name + ".salt")
    first = _salt_for(path)
    assert len(first) == 16 and _salt_for(path) == first
    assert stat.S_IMODE(os.stat(salt_file).st_mode) == 0o600
    salt_file.write_text("00" * 16)  # e.g. written by another process a moment earlier
    assert _salt_for(path) == bytes(16)


def test_a_damaged_salt_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr("invtools.session.time.sleep", lambda s: None)
    path = tmp_path / "c.sqlite"
    path.with_name(path.name + ".salt").write_text("not hex")
    salt = _salt_for(path)
    assert len(salt) == 16 and _salt_for(path) == salt


def test_salt_file_is_read_once_per_session(tmp_path, monkeypatch):
    import invtools.session as session

    calls = []
    real = session._salt_for
    monkeypatch.setattr(session, "_salt_for", lambda p: calls.append(p) or real(p))
    s = make_session(cache_path=tmp_path / "c.sqlite", rate_limit=0)
    s.close()
    assert len(calls) == 1


def test_resolve_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_cache_path(False) is None
    assert resolve_cache_path(True) == tmp_path / "xdg" / "invtools" / "responses.sqlite"
    assert resolve_cache_path(tmp_path) == tmp_path / "responses.sqlite"
    assert resolve_cache_path(tmp_path / "mine") == tmp_path / "mine.sqlite"
    assert resolve_cache_path(str(tmp_path / "x.db")) == tmp_path / "x.db"


def test_cache_keys_differ_per_token_and_carry_no_token(tmp_path):
    s = make_session(cache_path=tmp_path / "c.sqlite", rate_limit=0)
    try:
        def key(token):
            req = requests.Request("GET", "http://127.0.0.1:1/v1/items?limit=100",
                                   headers={"Authorization": f"Bearer {token}"}).prepare()
            return s.cache.create_key(req)

        ka, ka2, kb = key("token-A-secret"), key("token-A-secret"), key("token-B-secret")
        assert ka == ka2 and ka != kb
        assert ka.split(":")[1] == kb.split(":")[1]  # same request, different namespace
        assert "secret" not in ka and "token" not in ka
        assert ka.startswith(s.cache_prefix_for("Bearer token-A-secret") + ":")
    finally:
        s.close()


def test_salt_is_per_cache_and_stable(tmp_path):
    a = make_session(cache_path=tmp_path / "a.sqlite", rate_limit=0)
    a2 = make_session(cache_path=tmp_path / "a.sqlite", rate_limit=0)
    b = make_session(cache_path=tmp_path / "b.sqlite", rate_limit=0)
    try:
        auth = "Bearer same"
        assert a.cache_prefix_for(auth) == a2.cache_prefix_for(auth) != b.cache_prefix_for(auth)
        assert cache_prefix(auth, b"x") != cache_prefix(auth, b"y")
    finally:
        for s in (a, a2, b):
            s.close()


@pytest.mark.parametrize("url, expected", [
    ("http://h/v1/location-txs/5?revision=2", -1),
    ("http://h/v1/location-txs?limit=100", 60),
    ("http://h/v1/location-txs/5", 60),
    ("http://h/v1/teams/linked", 6 * 3600),
    ("http://h/v1/item-attrs", 6 * 3600),
    ("http://h/v1/items?limit=100&cursor=3", 600),
    ("http://h/v1/members", 600),
])
def test_expiry_per_endpoint(url, expected):
    from requests_cache.policy.expiration import get_expiration_seconds, get_url_expiration

    got = get_url_expiration(url, EXPIRY)
    assert got is not None
    assert (got if got == -1 else get_expiration_seconds(got)) == pytest.approx(expected, abs=1)


def test_close_stops_the_limiter_thread():
    s = make_session(cache_path=None, rate_limit=5)
    s._bucket_name(requests.Request("GET", "http://x/v1/items").prepare())
    s.limiter.bucket_factory.get(
        s.limiter.bucket_factory.wrap_item("/v1/items"))  # creates the bucket + leak thread
    leaker = s.limiter.bucket_factory._leaker
    assert leaker is not None and not leaker._stop_event.is_set()  # there is a thread to stop
    s.close()
    assert leaker._stop_event.is_set()
