"""Rate limit, quirks and injected faults, over real HTTP; the limiter also with a fake clock."""

from __future__ import annotations

import http.client
import time
import urllib.error

import pytest
from sandbox_helpers import call

from invtools.sandbox import Faults, serve
from invtools.sandbox.limits import RateLimiter


@pytest.fixture(scope="module")
def sb():
    with serve(size=200) as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(sb, fake_clock):
    # The rate window runs on a fake clock: a burst is at one instant however slow the
    # machine, and waiting out a reset takes no real time.
    sb.rate_limit, sb.quirks, sb.faults, sb.clock = 5, (), None, fake_clock
    sb.limiter.clear()
    sb.clear_log()
    yield


def burst(sb, path, n):
    return [call(sb, path) for _ in range(n)]


# -- the limiter itself ----------------------------------------------------------------------
def test_limiter_counts_a_rolling_second_and_rejections_cost_nothing():
    rl = RateLimiter()
    assert [rl.hit("k", limit=3, now=t)[0] for t in (0.0, 0.2, 0.4)] == [True] * 3
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):  # hammering while limited does not extend the wait
        allowed, remaining, reset = rl.hit("k", limit=3, now=t)
        assert not allowed and remaining == 0 and reset == pytest.approx(1.0 - t)
    assert rl.hit("k", limit=3, now=1.0001)[0] is True
    assert rl.hit("other", limit=3, now=0.9)[0] is True


# -- over HTTP -------------------------------------------------------------------------------
def test_sixth_rapid_request_is_429_with_headers_and_other_endpoints_are_not_affected(
    sb, fake_clock
):
    replies = burst(sb, "/v1/members", 6)
    assert [r.status for r in replies[:5]] == [200] * 5
    assert replies[0].headers["X-Ratelimit-Limit"] == "5"
    assert replies[0].headers["X-Ratelimit-Remaining"] == "4"
    r = replies[5]
    assert r.status == 429 and r.json["type"] == "/errors/too-many-requests"
    assert r.headers["X-Ratelimit-Limit"] == "5" and r.headers["X-Ratelimit-Remaining"] == "0"
    reset = float(r.headers["X-Ratelimit-Reset"])
    assert 0 < reset <= 1.0
    assert call(sb, "/v1/item-attrs").status == 200  # another endpoint has its own budget
    assert call(sb, "/v1/members", team="basic").status == 200  # and another token
    fake_clock.sleep(reset - 0.002)
    assert call(sb, "/v1/members").status == 429  # not a moment before the advertised time
    fake_clock.sleep(0.002)
    assert call(sb, "/v1/members").status == 200  # waiting the advertised time is enough


def test_ids_share_their_route_templates_budget(sb):
    replies = [call(sb, f"/v1/members/{i}") for i in (7001, 7002, 7003, 7001, 7002, 7003)]
    assert replies[-1].status == 429 and replies[-2].status == 200


def test_shared_rate_limit_quirk_is_one_budget_per_token(sb):
    sb.quirks = {"shared_rate_limit"}
    burst(sb, "/v1/members", 5)
    assert call(sb, "/v1/item-attrs").status == 429
    assert call(sb, "/v1/item-attrs", team="basic").status == 200


def test_rate_limit_is_settable_at_runtime(sb):
    sb.rate_limit = 0
    assert all(r.status == 200 for r in burst(sb, "/v1/members", 12))
    headers = call(sb, "/v1/members").headers  # no budget, and it says so
    assert headers["X-Ratelimit-Limit"] == headers["X-Ratelimit-Remaining"] == "unlimited"
    assert "X-Ratelimit-Reset" not in headers
    sb.rate_limit = 2
    assert [r.status for r in burst(sb, "/v1/item-attrs", 3)] == [200, 200, 429]


@pytest.mark.parametrize(
    "quirk,present,absent",
    [
        (
            "ratelimit_headers:reset",
            {"X-Ratelimit-Reset"},
            {"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "Retry-After"},
        ),
        (
            "ratelimit_headers:retry_after",
            {"Retry-After"},
            {"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
        ),
        (
            "ratelimit_headers:none",
            set(),
            {"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"},
        ),
    ],
)
def test_ratelimit_header_variants(sb, quirk, present, absent):
    sb.quirks = {quirk}
    r = burst(sb, "/v1/members", 6)[-1]
    assert r.status == 429
    assert present <= set(r.headers) and not absent & set(r.headers)
    if "Retry-After" in present:
        assert r.headers["Retry-After"] == "1"  # whole seconds, rounded up


def test_unknown_quirks_are_refused(sb):
    with pytest.raises(ValueError, match="unknown quirks"):
        sb.quirks = {"ratelimit_headers:sometimes"}


def test_team_wrapped_quirk(sb):
    bare = call(sb, "/v1/teams/linked").json
    sb.quirks = {"team_wrapped"}
    assert call(sb, "/v1/teams/linked").json == {"item": bare}


# -- faults ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["500", "502", "503"])
def test_server_errors_have_non_json_bodies(sb, kind):
    sb.rate_limit = 0
    sb.faults = Faults(on_requests={2}, kinds=(kind,))
    first, second, third = (call(sb, "/v1/members") for _ in range(3))
    assert first.status == 200 and third.status == 200
    assert second.status == int(kind)
    assert second.headers["Content-Type"].startswith("text/html")
    assert second.raw.lstrip().startswith(b"<html")
    assert [r.fault for r in sb.requests] == [None, kind, None]
    assert sb.requests[1].status == int(kind)


def test_dropped_connection_gets_no_response(sb):
    sb.faults = Faults(on_requests={1}, kinds=("drop",))
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
        call(sb, "/v1/members")
    assert call(sb, "/v1/members").status == 200
    assert sb.requests[0].fault == "drop" and sb.requests[0].status is None


def test_slow_response_answers_late_but_normally(sb):
    sb.faults = Faults(on_requests={1}, kinds=("slow",), slow_seconds=0.4)
    started = time.monotonic()
    r = call(sb, "/v1/members")
    assert r.status == 200 and time.monotonic() - started >= 0.4
    assert sb.requests[0].fault == "slow" and sb.requests[0].status == 200


def test_fault_rate_is_seeded_and_reproducible(sb):
    sb.rate_limit = 0
    runs = []
    for _ in range(2):
        sb.clear_log()
        sb.faults = Faults(rate=0.3, kinds=("500", "503"), seed=7)
        for _ in range(30):
            call(sb, "/v1/item-attrs")
        runs.append([r.fault for r in sb.requests])
    assert runs[0] == runs[1]
    assert 3 <= sum(f is not None for f in runs[0]) <= 20
    sb.faults = None
    assert call(sb, "/v1/item-attrs").status == 200


def test_faults_are_validated():
    with pytest.raises(ValueError, match="kinds"):
        Faults(kinds=("404",))
    with pytest.raises(ValueError, match="rate"):
        Faults(rate=1.5)


# -- latency: the stand-in answering like the real service -----------------------------------
def test_latency_delays_every_answer_within_its_jitter_and_overlaps_requests():
    from concurrent.futures import ThreadPoolExecutor

    with serve(size=200, rate_limit=0, latency=0.2, jitter=0.25) as slow:
        started = time.monotonic()
        assert call(slow, "/v1/members").status == 200
        one = time.monotonic() - started
        assert 0.15 <= one < 0.4
        started = time.monotonic()
        with ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(lambda _: call(slow, "/v1/members").status, range(6)))
        six = time.monotonic() - started
    assert statuses == [200] * 6
    # Answered side by side, as a real server does: six at once take about as long as one.
    assert six < 0.6 and slow.max_in_flight >= 4


def test_a_rejected_request_is_counted_on_arrival_not_after_the_latency(fake_clock):
    with serve(size=200, rate_limit=2, latency=0.05, clock=fake_clock) as slow:
        assert [call(slow, "/v1/members").status for _ in range(3)] == [200, 200, 429]


def test_token_scope_is_one_budget_for_all_endpoints(fake_clock):
    with serve(size=200, rate_limit=2, rate_limit_scope="token", clock=fake_clock) as shared:
        assert call(shared, "/v1/members").status == 200
        assert call(shared, "/v1/item-attrs").status == 200
        assert call(shared, "/v1/locations").status == 429
    with pytest.raises(ValueError, match="rate_limit_scope"):
        with serve(size=200, rate_limit_scope="team"):
            pass


@pytest.mark.parametrize("latency, jitter", [(-1, 0.25), (float("nan"), 0.25), (0.5, 2)])
def test_latency_must_be_seconds_and_jitter_a_fraction(latency, jitter):
    with pytest.raises(ValueError, match=r"latency|jitter"):
        with serve(size=200, latency=latency, jitter=jitter):
            pass


# -- other models of the service's budget (issue 18) -----------------------------------------
def test_a_minutes_budget_counts_over_its_window(fake_clock):
    with serve(size=200, rate_limit=3, rate_window=60, clock=fake_clock) as minute:
        assert [call(minute, "/v1/members").status for _ in range(4)] == [200, 200, 200, 429]
        refused = call(minute, "/v1/members")
        assert float(refused.headers["X-Ratelimit-Reset"]) == pytest.approx(60.0)
        assert "3 per 60 seconds" in refused.json["title"]
        fake_clock.sleep(59.0)
        assert call(minute, "/v1/members").status == 429
        fake_clock.sleep(1.001)
        assert call(minute, "/v1/members").status == 200


def test_a_stated_budget_is_on_every_answer(fake_clock):
    with serve(size=200, rate_limit=3, stated_budget=True, clock=fake_clock) as stated:
        replies = [call(stated, "/v1/members") for _ in range(3)]
        fake_clock.sleep(0.25)
        later = call(stated, "/v1/members")
    assert [r.headers["X-Ratelimit-Remaining"] for r in replies] == ["2", "1", "0"]
    assert all(r.headers["X-Ratelimit-Reset"] == "1.000" for r in replies)
    assert later.status == 429 and later.headers["X-Ratelimit-Reset"] == "0.750"


def test_a_coarse_budget_states_a_minute_and_whole_seconds_on_every_answer(fake_clock):
    with serve(size=200, rate_limit=3, coarse_budget=True, clock=fake_clock) as coarse:
        replies = [call(coarse, "/v1/members") for _ in range(3)]
        fake_clock.sleep(0.25)
        later = call(coarse, "/v1/members")
        fake_clock.sleep(0.75)
        again = call(coarse, "/v1/members")
    assert [r.headers["X-Ratelimit-Limit"] for r in replies] == ["180"] * 3  # 3/s, a minute
    assert [r.headers["X-Ratelimit-Remaining"] for r in replies] == ["2", "1", "0"]
    assert all(r.headers["X-Ratelimit-Reset"] == "1" for r in replies)
    assert later.status == 429 and later.headers["X-Ratelimit-Reset"] == "1"  # 0.75, rounded up
    assert later.headers["X-Ratelimit-Remaining"] == "0" and again.status == 200


def test_the_budget_says_nothing_of_its_reset_on_a_success_by_default(sb):
    reply = call(sb, "/v1/members")
    assert reply.status == 200 and "X-Ratelimit-Reset" not in reply.headers


class _Order:
    """A clock and a latency that note when each is asked: the counter reads the clock."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def monotonic(self) -> float:
        self.events.append("count")
        return time.monotonic()

    def draw(self) -> float:
        self.events.append("latency")
        return 0.01


@pytest.mark.parametrize(
    "after, expected", [(False, ["count", "latency"]), (True, ["latency", "count"])]
)
def test_a_request_is_counted_on_arrival_or_after_its_latency(after, expected):
    order = _Order()
    with serve(size=200, clock=order, count_after_latency=after) as server:
        server.latency = order
        assert call(server, "/v1/members").status == 200
    assert order.events == expected
