"""invtools.http: the session's cache (files, modes, per-token keys, expiry) and pacing budgets.

Pacing is tested on a fake clock (tests/conftest.py): nothing here sleeps in real time.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading

import pytest

from invtools._types import route_of
from invtools.api.endpoints import EXPIRY
from invtools.errors import CacheError, ConfigError
from invtools.http import Budget, make_session, shared_budget
from invtools.http.cache import resolve_cache_path
from invtools.http.pacing import PACING_MARGIN, bucket_of

#: The configured pace of 5 requests a second, evenly spaced.
SPACING = (1 + PACING_MARGIN) / 5


@pytest.mark.parametrize(
    "path, route",
    [
        ("/v1/location-txs/123", "/v1/location-txs/{id}"),
        ("/v1/location-txs/9?revision=2", "/v1/location-txs/{id}"),
        ("/v1/location-txs", "/v1/location-txs"),
        ("/v1/items/7/", "/v1/items/{id}"),
        ("/v1/teams/linked", "/v1/teams/linked"),
    ],
)
def test_route_of_makes_one_template_per_endpoint(path, route):
    assert route_of(path) == route


def test_a_request_spends_from_its_endpoint_or_from_the_one_token_bucket():
    assert (
        bucket_of("http://h/v1/location-txs/1?revision=3", "endpoint")
        == bucket_of("http://h/v1/location-txs/2", "endpoint")
        == "/v1/location-txs/{id}"
    )
    assert bucket_of("http://h/v1/items", "endpoint") == "/v1/items"
    assert bucket_of("http://h/v1/items", "token") == bucket_of("http://h/v1/members", "token")


# ------------------------------------------------------------------ budgets on a fake clock


def test_a_budget_spaces_requests_evenly_and_never_lets_more_than_the_rate_through(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent_at = []
    for _ in range(23):
        budget.acquire("/v1/items")
        sent_at.append(fake_clock.monotonic())
    for i, t in enumerate(sent_at):
        assert sum(t <= u < t + 1.0 for u in sent_at[i:]) <= 5
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(sent_at)}
    assert gaps == {round(SPACING, 6)}  # evenly: no bursts for jittered arrivals to bunch


def test_each_endpoint_has_its_own_budget_unless_the_scope_is_the_token(fake_clock):
    budget = Budget(2, clock=fake_clock)
    for bucket in ("/v1/items", "/v1/members"):
        assert budget.acquire(bucket) == 0.0  # two endpoints: neither waits for the other
    assert budget.acquire("/v1/items") == pytest.approx(SPACING * 5 / 2)
    assert bucket_of("http://h/v1/items", "token") == bucket_of("http://h/v1/members", "token")


def test_a_429_holds_its_bucket_from_when_the_refused_request_was_sent(fake_clock):
    budget = Budget(100, clock=fake_clock)
    sent = budget.admit("/v1/items")
    fake_clock.sleep(0.8)  # the 429 arrives a round trip later
    budget.observe("/v1/items", sent, status=429, headers={}, hold=3.0)
    start = fake_clock.monotonic()
    budget.acquire("/v1/items")  # 3 s after it was sent: 2.2 s from now
    assert fake_clock.monotonic() - start == pytest.approx(2.2)
    assert budget.acquire("/v1/members") == 0.0  # another endpoint's budget is not held
    assert budget.summary()["/v1/items"]["rate_limited"] == 1


def test_a_429_slows_the_pace_and_answers_bring_it_back(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    refused = budget.admit("b")
    budget.observe("b", refused, status=429, headers={})
    budget.observe("b", refused, status=429, headers={})
    slowed = budget.summary()["b"]["pace"] / 5
    assert slowed == pytest.approx(0.81)
    budget.acquire("b")
    start = fake_clock.monotonic()
    budget.acquire("b")
    assert fake_clock.monotonic() - start == pytest.approx(0.2 / slowed)
    for _ in range(100):
        budget.observe("b", refused, status=200, headers={})
    assert budget.summary()["b"]["pace"] == 5.0  # never faster than the configured pace


def test_a_stated_budget_is_spent_as_fast_as_asked_and_never_more(fake_clock):
    budget = Budget(5, clock=fake_clock)  # configured: 5/s for a server saying nothing
    sent = budget.admit("all")
    first = fake_clock.monotonic()
    budget.observe(
        "all",
        sent,
        status=200,
        headers={
            "X-Ratelimit-Limit": "300",
            "X-Ratelimit-Remaining": "299",
            "X-Ratelimit-Reset": "60.0",
        },
    )
    for _ in range(299):  # a minute's room: no wait at all
        assert budget.acquire("all") == 0.0
    budget.acquire("all")  # the 301st waits for the stated reset
    waited = fake_clock.monotonic() - first
    assert waited == pytest.approx(60.0)
    summary = budget.summary()["all"]
    assert summary["rate_limited"] == 0 and summary["stated_limit"] in (300, None)


def test_an_older_statement_never_overrides_a_newer_one(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=-0.99)  # no spacing to speak of

    def say(remaining):
        return {"X-Ratelimit-Remaining": str(remaining), "X-Ratelimit-Reset": "60"}

    early, late = budget.admit("all"), budget.admit("all")
    budget.observe("all", late, status=200, headers=say(10))
    budget.observe("all", early, status=200, headers=say(250))  # answered after the other
    assert budget.summary()["all"]["stated_room"] == 10


def test_a_waiting_request_stops_when_told(fake_clock):
    budget = Budget(1, clock=fake_clock)
    budget.acquire("/v1/items")
    stop = threading.Event()
    stop.set()
    start = fake_clock.monotonic()
    budget.acquire("/v1/items", cancel=stop)
    assert fake_clock.monotonic() == start  # returned at once, without waiting


def test_clients_of_one_token_share_one_budget(fake_clock):
    a = shared_budget("owner-a", 5, clock=fake_clock)
    assert shared_budget("owner-a", 5, clock=fake_clock) is a
    assert shared_budget("owner-b", 5, clock=fake_clock) is not a
    assert shared_budget("owner-a", 2, clock=fake_clock) is not a  # another rate: another budget


def test_the_budget_is_shared_by_threads(fake_clock):
    budget = Budget(5, clock=fake_clock)
    stamps, lock = [], threading.Lock()

    def worker():
        for _ in range(5):
            # the time the budget admitted it: read after admit returns, the shared fake clock
            # may have been moved on by another thread's wait (a sixth stamp in one second)
            admitted = budget.admit("/v1/location-txs/{id}")
            with lock:
                stamps.append(admitted.at)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stamps) == 20
    stamps.sort()
    # Admissions happen at the clock's time when they are granted: never 6 in a second.
    for i, t in enumerate(stamps):
        assert sum(t <= u < t + 1.0 for u in stamps[i:]) <= 5


def test_budgets_of_one_file_are_one_budget(tmp_path, fake_clock):
    """Two processes' budgets of one token meet in one file: what one sends, the other
    counts (here two objects on one file; tests/test_budgets.py runs two processes)."""
    path = tmp_path / "budgets.sqlite"
    one = Budget(5, clock=fake_clock, path=path, owner="tok")
    two = Budget(5, clock=fake_clock, path=path, owner="tok")
    other = Budget(5, clock=fake_clock, path=path, owner="another-token")
    assert one.shared and one.acquire("b") == 0.0
    assert two.acquire("b") == pytest.approx(SPACING)  # spaced after the other's request
    assert other.acquire("b") == 0.0  # another token's budget: its own
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


# ------------------------------------------------------------------ the cache's files


def test_bad_scope_is_refused():
    with pytest.raises(ConfigError, match="rate_limit_scope"):
        make_session(cache_path=None, rate_limit_scope="host")


def test_cache_file_is_private(tmp_path):
    path = tmp_path / "sub" / "deeper" / "c.sqlite"
    make_session(cache_path=path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # Folders the session had to create are the user's only.
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent.parent).st_mode) == 0o700
    salt = path.with_name(path.name + ".salt")
    assert stat.S_IMODE(os.stat(salt).st_mode) == 0o600


def test_a_path_without_suffix_is_the_file_sqlite_uses(tmp_path):
    make_session(cache_path=tmp_path / "plain").close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.sqlite", "plain.sqlite.salt"]
    assert stat.S_IMODE(os.stat(tmp_path / "plain.sqlite").st_mode) == 0o600


def test_an_existing_folder_keeps_its_mode(tmp_path, monkeypatch):
    # INVTOOLS_CACHE_DIR=/tmp must not turn /tmp into a private folder.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(shared))
    path = resolve_cache_path(True)
    make_session(cache_path=path).close()
    assert path.parent == shared
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o777
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("where", ["under_a_file", "a_folder_as_the_file"])
def test_an_unusable_cache_path_is_a_config_error_naming_it(tmp_path, where):
    afile = tmp_path / "afile.sqlite"
    afile.write_text("not a folder, not a database " * 20)
    (tmp_path / "folder.sqlite").mkdir()
    path = {
        "under_a_file": afile / "x" / "c.sqlite",
        "a_folder_as_the_file": tmp_path / "folder.sqlite",
    }[where]
    with pytest.raises(ConfigError) as info:
        make_session(cache_path=path)
    msg = str(info.value)
    assert str(path) in msg and "cache=False" in msg and "INVTOOLS_CACHE_DIR" in msg


def test_a_file_that_is_not_a_database_is_a_cache_error_naming_it(tmp_path):
    path = tmp_path / "afile.sqlite"
    path.write_text("not a folder, not a database " * 20)
    with pytest.raises(CacheError) as info:
        make_session(cache_path=path)
    msg = str(info.value)
    assert str(path) in msg and "cache=False" in msg and "Delete it" in msg


def test_sessions_on_one_file_key_a_token_alike_and_other_files_do_not(tmp_path):
    a = make_session(cache_path=tmp_path / "a.sqlite")
    a2 = make_session(cache_path=tmp_path / "a.sqlite")
    b = make_session(cache_path=tmp_path / "b.sqlite")
    try:
        url, auth = "http://h/v1/items?limit=100", "Bearer same-token"
        key = a.cache_keys.key(auth, "GET", url)
        assert key == a2.cache_keys.key(auth, "GET", url) != b.cache_keys.key(auth, "GET", url)
        assert key != a.cache_keys.key("Bearer other-token", "GET", url)
        assert "token" not in key
    finally:
        for s in (a, a2, b):
            s.close()


def test_a_damaged_salt_file_is_replaced_and_then_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("invtools.http.cache.time.sleep", lambda s: None)  # no real waiting
    path = tmp_path / "c.sqlite"
    path.with_name(path.name + ".salt").write_text("not hex")
    s1, s2 = make_session(cache_path=path), make_session(cache_path=path)
    try:
        auth, url = "Bearer t", "http://h/v1/items"
        assert s1.cache_keys.key(auth, "GET", url) == s2.cache_keys.key(auth, "GET", url)
        assert len(bytes.fromhex(path.with_name(path.name + ".salt").read_text())) == 16
    finally:
        s1.close()
        s2.close()


def test_resolve_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_cache_path(False) is None
    assert resolve_cache_path(True) == tmp_path / "xdg" / "invtools" / "responses.sqlite"
    assert resolve_cache_path(tmp_path) == tmp_path / "responses.sqlite"
    assert resolve_cache_path(tmp_path / "mine") == tmp_path / "mine.sqlite"
    assert resolve_cache_path(str(tmp_path / "x.db")) == tmp_path / "x.db"


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://h/v1/location-txs/5?revision=2", -1),
        # a list's pages: never stored one by one (its walk's record keeps them, whole)
        ("http://h/v1/location-txs?limit=100", None),
        ("http://h/v1/items?limit=100&cursor=3", None),
        ("http://h/v1/partners?type=0&limit=100", None),
        ("http://h/v1/location-txs/5", 60),
        ("http://h/v1/teams/linked", 6 * 3600),
        ("http://h/v1/item-attrs", 6 * 3600),
        ("http://h/v1/items/7", 600),
        ("http://h/v1/members", 600),
    ],
)
def test_expiry_per_endpoint(url, expected):
    from requests_cache import DO_NOT_CACHE
    from requests_cache.policy.expiration import get_expiration_seconds, get_url_expiration

    got = get_url_expiration(url, EXPIRY)
    assert got is not None
    if expected is None:
        assert got == DO_NOT_CACHE
    else:
        assert (got if got == -1 else get_expiration_seconds(got)) == pytest.approx(expected, abs=1)


def test_making_and_closing_sessions_leaves_no_thread_behind(tmp_path, fake_clock):
    before = set(threading.enumerate())
    for i in range(3):
        s = make_session(cache_path=tmp_path / f"c{i}.sqlite", budget=Budget(5, clock=fake_clock))
        s.close()
    assert set(threading.enumerate()) - before == set()
