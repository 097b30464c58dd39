"""Pacing, 429s, 5xx bursts, dropped and slow responses against the stand-in server: every
walk ends with every row exactly once, and what happened shows in stats and logs."""

from __future__ import annotations

import logging

import pytest

from invtools.errors import RateLimitError, ServerError, TransportError
from invtools.http.pacing import PACING_MARGIN

#: The configured pace of 5 requests a second, evenly spaced.
SPACING = (1 + PACING_MARGIN) / 5

pytestmark = pytest.mark.network


def _ids(rows):
    return [r["id"] for r in rows]


def _expected_item_ids(sb):
    return sorted(i["id"] for i in sb.data("shop").items)


# Pacing and 429 tests: the server's rate window and the client's waits run on one fake clock
# that moves only when the client waits, so they take no real time and the waits can be read.


def test_pacing_keeps_a_walk_free_of_429s_at_the_pace_of_the_limit(sb, make_client, fake_clock):
    sb.rate_limit, sb.clock = 5, fake_clock
    c = make_client(sb, rate_limit=5, cache=False, clock=fake_clock)
    c.team()
    start = fake_clock.now
    rows = list(c.items(limit=3, max_pages=14))
    assert len(rows) == min(42, len(_expected_item_ids(sb)))
    assert [r.status for r in sb.requests].count(429) == 0
    assert c.stats.rate_limited == 0 and c.stats.retries == 0
    # 14 pages at 5/s, evenly spaced: the last goes out 13 spacings after the first.
    assert fake_clock.now - start == pytest.approx(13 * SPACING)


def test_token_scope_paces_a_shared_budget(sb, make_client, fake_clock):
    sb.rate_limit, sb.clock = 5, fake_clock
    sb.quirks = {"shared_rate_limit"}
    c = make_client(sb, rate_limit=5, rate_limit_scope="token", cache=False, clock=fake_clock)
    for _ in range(4):
        c.members(), c.attributes(), list(c.partners(max_pages=1))
    assert [r.status for r in sb.requests].count(429) == 0
    assert fake_clock.now - 1000.0 == pytest.approx(11 * SPACING)  # 12 on one budget of 5/s


def test_endpoint_scope_gives_each_endpoint_its_own_budget(sb, make_client, fake_clock):
    sb.rate_limit, sb.clock = 5, fake_clock
    c = make_client(sb, rate_limit=5, cache=False, clock=fake_clock)
    for _ in range(4):
        c.members(), c.attributes(), list(c.partners(max_pages=1))
    assert [r.status for r in sb.requests].count(429) == 0
    # four of each endpoint, side by side: each waits only for its own (3 spacings in all)
    assert fake_clock.now - 1000.0 == pytest.approx(3 * SPACING)


@pytest.mark.parametrize(
    "headers",
    ["ratelimit_headers:reset", "ratelimit_headers:retry_after", "ratelimit_headers:none", None],
)
def test_429_with_each_header_variant_is_waited_out(sb, make_client, headers, caplog, fake_clock):
    caplog.set_level(logging.INFO, logger="invtools")
    sb.rate_limit, sb.clock = 5, fake_clock
    if headers:
        sb.quirks = {headers}
    c = make_client(
        sb,
        rate_limit=0,
        cache=False,
        backoff=0.2,
        retries=8,  # unpaced: hits 429
        clock=fake_clock,
    )
    rows = list(c.items(limit=5, max_pages=8))
    assert _ids(rows) == _expected_item_ids(sb)[: len(rows)] and len(rows) == 40
    hits = [r.status for r in sb.requests].count(429)
    assert hits >= 1 and c.stats.rate_limited == hits and c.stats.retries >= hits
    assert "retry" in caplog.text and "429" in caplog.text
    # 8 requests at 5/s on the server's window: the 6th waited about a second. With a reset
    # header the client waits what it is told, once; without one, it backs off until allowed.
    assert fake_clock.now - 1000.0 >= 1.0
    if headers in (None, "ratelimit_headers:reset", "ratelimit_headers:retry_after"):
        assert hits == 1 and fake_clock.now - 1000.0 <= 2.0


def test_429_when_retries_run_out_is_rate_limit_error(sb, make_client):
    sb.rate_limit = 1
    c = make_client(sb, rate_limit=0, cache=False, retries=0)
    c.members()
    with pytest.raises(RateLimitError) as info:
        c.members()
    assert info.value.status == 429 and info.value.attempts == 1
    assert "rate_limit" in str(info.value)


def test_5xx_bursts_end_with_every_row_once(sb, make_client, fake_clock):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=0.3, kinds=("500", "502", "503"), seed=3)
    c = make_client(sb, cache=False, retries=10, backoff=0.5, clock=fake_clock)
    assert _ids(c.items(limit=20)) == _expected_item_ids(sb)
    faulted = [r for r in sb.requests if r.fault]
    assert faulted and c.stats.retries == len(faulted)
    # Each retry waited its exponential backoff (on the fake clock: no real sleeping).
    assert len(fake_clock.slept) == len(faulted) and all(0.25 <= w <= 30 for w in fake_clock.slept)


def test_server_error_after_retries_run_out(sb, make_client, fake_clock):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=1.0, kinds=("503",), seed=1)
    c = make_client(sb, cache=False, retries=2, backoff=1.0, clock=fake_clock)
    with pytest.raises(ServerError) as info:
        c.members()
    assert info.value.status == 503 and info.value.attempts == 3
    assert len(sb.requests) == 3
    first, second = fake_clock.slept  # backoff doubles: 0.5-1 s, then 1-2 s
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0


def test_dropped_connections_end_with_every_row_once(sb, make_client, fake_clock):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=0.3, kinds=("drop",), seed=5)
    c = make_client(sb, cache=False, retries=10, clock=fake_clock)
    assert _ids(c.items(limit=20)) == _expected_item_ids(sb)
    assert c.stats.retries >= 1


def test_slow_responses_time_out_and_are_retried(sb, make_client):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=0.0, kinds=("slow",), on_requests={2}, slow_seconds=2.0, seed=1)
    c = make_client(sb, cache=False, retries=3, timeout=(2.0, 0.5))
    assert _ids(c.items(limit=10)) == _expected_item_ids(sb)
    # the slow answer was retried; on a loaded machine another may pass 0.5 s too
    assert c.stats.retries >= 1


def test_transport_error_when_drops_never_stop(sb, make_client, fake_clock):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=1.0, kinds=("drop",), seed=1)
    c = make_client(sb, cache=False, retries=1, clock=fake_clock)
    with pytest.raises(TransportError) as info:
        c.members()
    assert info.value.attempts == 2 and sb.base_url in str(info.value)


def test_client_shared_by_threads_keeps_one_budget(sb, make_client):
    from concurrent.futures import ThreadPoolExecutor

    # Real time here: with threads, a fake clock that jumps while a request is on its way
    # would put the server's and the client's windows out of step, which real time never does.
    sb.rate_limit = 5
    c = make_client(sb, rate_limit=5, cache=False)
    c.team()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: c.members(), range(8)))
    assert all(r == results[0] for r in results)
    # One budget: the 9 requests go out 0.2 s apart. Four (one a thread) would send 4 at once
    # and meet at least 3 429s; a loaded machine can bunch two arrivals, so allow 2 (retried).
    refused = [r.status for r in sb.requests].count(429)
    assert refused <= 2 and c.stats.sent == 9 + refused
