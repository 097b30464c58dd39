"""How long a retry waits (invtools.http.retries), and what a client does with it.

The reset a 429 gives comes as seconds, as a Unix timestamp (some servers send the moment the
budget resets) or as an HTTP date; the client waits for it, a little past it, or raises when
it is longer than a notebook should block. Pure functions first, then the requester waiting on
the fake clock (tests/conftest.py) for answers built by hand, as tests/test_client_errors.py
builds them: no test sleeps.
"""

from __future__ import annotations

import json
import time
from email.utils import formatdate

import pytest
import requests

from invtools.api.requester import Requester
from invtools.api.stats import Counters
from invtools.errors import RateLimitError
from invtools.http.retries import (
    MAX_BACKOFF,
    MAX_RATE_LIMIT_WAIT,
    backoff,
    comes_back,
    rate_limit_wait,
    wait_seconds,
)

NOW = 1_750_000_000.0  # a wall-clock time (2025), as time.time() gives it


# ------------------------------------------------------------------------- wait_seconds


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2.5", 2.5),
        ("0", 0.0),
        ("-3", -3.0),
        ("1000000000", 1e9),  # up to 1e9: seconds (31 years; never waited)
        ("1000000000.5", 1e9 + 0.5 - NOW),  # beyond: a Unix timestamp (here, of 2001)
        (str(NOW + 30), 30.0),  # 30 s from now
        (str(int(NOW) + 7), 7.0),
        (str(NOW - 5), -5.0),  # a reset already past
        (formatdate(NOW + 12, usegmt=True), 12.0),  # an HTTP date
    ],
)
def test_a_reset_header_is_read_as_seconds_a_timestamp_or_a_date(value, expected):
    assert wait_seconds(value, now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize("value", [None, "", "soon", "nan", "NaN", "-inf", "-Infinity"])
def test_a_reset_header_that_says_nothing_usable_is_none(value):
    assert wait_seconds(value, now=NOW) is None


# ------------------------------------------------------------------------ rate_limit_wait


def test_the_wait_is_a_little_past_the_reset_and_says_which_header_gave_it():
    assert rate_limit_wait({"X-Ratelimit-Reset": "2"}, now=NOW) == (
        pytest.approx(2.05),
        "429, X-Ratelimit-Reset: 2",
    )
    assert rate_limit_wait({"Retry-After": str(NOW + 3)}, now=NOW) == (
        pytest.approx(3.05),
        f"429, Retry-After: {NOW + 3}",
    )


def test_x_ratelimit_reset_is_read_before_retry_after_and_a_bad_one_is_skipped():
    both = {"X-Ratelimit-Reset": "1.5", "Retry-After": "9"}
    assert rate_limit_wait(both, now=NOW) == (pytest.approx(1.55), "429, X-Ratelimit-Reset: 1.5")
    bad_first = {"X-Ratelimit-Reset": "later", "Retry-After": "9"}
    assert rate_limit_wait(bad_first, now=NOW) == (pytest.approx(9.05), "429, Retry-After: 9")


def test_a_reset_in_the_past_waits_only_the_margin():
    assert rate_limit_wait({"Retry-After": "-4"}, now=NOW)[0] == pytest.approx(0.05)
    assert rate_limit_wait({"X-Ratelimit-Reset": str(NOW - 60)}, now=NOW)[0] == pytest.approx(0.05)


def test_a_reset_longer_than_the_longest_wait_is_not_waited_for():
    longest = str(MAX_RATE_LIMIT_WAIT)
    assert rate_limit_wait({"Retry-After": longest}, now=NOW) == (
        pytest.approx(MAX_RATE_LIMIT_WAIT + 0.05),
        f"429, Retry-After: {longest}",
    )
    wait, why = rate_limit_wait({"Retry-After": str(MAX_RATE_LIMIT_WAIT + 1)}, now=NOW)
    assert wait == float("inf") and why.startswith(f"429, Retry-After: {MAX_RATE_LIMIT_WAIT + 1}")
    assert "max_wait=120 s" in why
    # the client's own max_wait
    assert rate_limit_wait({"Retry-After": "600"}, now=NOW, max_wait=600)[0] == pytest.approx(
        600.05
    )
    assert rate_limit_wait({"Retry-After": "601"}, now=NOW, max_wait=600)[0] == float("inf")


def test_when_the_budget_comes_back_is_said_in_utc_whatever_the_local_zone(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert comes_back(7200.0, NOW) == "2025-06-15 17:06:40 UTC (in 2 h)"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_429_without_a_reset_header_says_so():
    assert rate_limit_wait({}, now=NOW) == (None, "429 without a reset header")
    assert rate_limit_wait({"Retry-After": "whenever"}, now=NOW) == (
        None,
        "429 without a reset header",
    )


# ---------------------------------------------------------------------------- backoff


class Extreme:
    """A random source that always draws the lowest (or highest) value allowed."""

    def __init__(self, high: bool) -> None:
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


@pytest.mark.parametrize(
    "attempt, low, high", [(1, 0.25, 0.5), (2, 0.5, 1.0), (3, 1.0, 2.0), (4, 2.0, 4.0)]
)
def test_backoff_doubles_per_attempt_half_fixed_half_random(attempt, low, high):
    assert backoff(attempt, 0.5, rng=Extreme(False)) == pytest.approx(low)
    assert backoff(attempt, 0.5, rng=Extreme(True)) == pytest.approx(high)


def test_backoff_is_capped():
    assert backoff(30, 1.0, rng=Extreme(True)) == pytest.approx(MAX_BACKOFF)
    assert backoff(30, 1.0, rng=Extreme(False)) == pytest.approx(MAX_BACKOFF / 2)


# ------------------------------------------------------------- the client waiting for it


class Answers:
    """A session answering GETs from a list of (status, headers) in turn, recording when (on
    the test's clock) each request was sent."""

    cache_keys = None
    budget = None

    def __init__(self, clock, answers):
        self.clock, self.answers, self.sent_at = clock, list(answers), []

    def get(self, url, **kwargs):
        self.sent_at.append(self.clock.monotonic())
        status, headers = self.answers.pop(0)
        r = requests.Response()
        r.status_code, r.reason = status, "Too Many Requests" if status == 429 else "OK"
        r.headers.update({"Content-Type": "application/json", **headers})
        r._content = json.dumps(
            {"items": [], "count": 0}
            if status == 200
            else {"type": "/errors/rate-limit", "title": "Too many requests"}
        ).encode()
        r.encoding = "utf-8"
        r.url = url
        return r


def requester(session, clock, retries=3):
    return Requester(
        session,
        base_url="http://127.0.0.1:9",
        timeout=(1.0, 1.0),
        retries=retries,
        backoff=0.01,
        counters=Counters(),
        clock=clock,
    )


@pytest.mark.parametrize("header", ["X-Ratelimit-Reset", "Retry-After"])
def test_a_reset_sent_as_a_unix_timestamp_is_waited_for_then_the_request_succeeds(
    fake_clock, header
):
    fake_clock.now = time.time()  # the wall clock, as the server's epoch times need
    reset = f"{fake_clock.now + 20:.3f}"  # the server's clock: 20 s from now
    session = Answers(fake_clock, [(429, {header: reset}), (200, {})])
    data, _ = requester(session, fake_clock).send("/v1/members", None)
    assert data == {"items": [], "count": 0}
    waited = session.sent_at[1] - session.sent_at[0]
    assert 19 <= waited <= 21  # the reset (less the moments this test took), not 0 nor days


def test_a_reset_sent_as_an_http_date_is_waited_for(fake_clock):
    fake_clock.now = time.time()
    session = Answers(
        fake_clock,
        [(429, {"Retry-After": formatdate(fake_clock.now + 30, usegmt=True)}), (200, {})],
    )
    requester(session, fake_clock).send("/v1/members", None)
    assert 28 <= session.sent_at[1] - session.sent_at[0] <= 31


def test_a_reset_further_than_the_longest_wait_fails_at_once_in_words(fake_clock):
    fake_clock.now = time.time()
    reset = f"{fake_clock.now + 3600:.0f}"  # an hour
    session = Answers(fake_clock, [(429, {"X-Ratelimit-Reset": reset}), (200, {})])
    with pytest.raises(RateLimitError, match=r"comes back at \d{4}-\d\d-\d\d .* \(in 60 min\)"):
        requester(session, fake_clock).send("/v1/members", None)
    assert len(session.sent_at) == 1 and fake_clock.slept == []


# ------------------------------------------------------------------- absurd resets (issue 32)
#
# What a 429's reset says, read as the rule in invtools.http.retries's docstring: a number,
# epoch time or date more than a year ahead (infinity too) is no rate limit's: the 429 cannot be
# waited for, a RateLimitError at once naming the header and its value; a reset further in the
# past than max_wait (year 1, -1e308) is another clock's or a broken header: as no header, the
# backoff; nan or words: no header. Such values raised OverflowError/ValueError from datetime.

FAR = [
    ("X-Ratelimit-Reset", "1e308"),
    ("X-Ratelimit-Reset", "1e20"),
    ("Retry-After", "1e12"),  # an epoch time in year 33658
    ("Retry-After", "inf"),
    ("Retry-After", "1e400"),  # a float's infinity too
    ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ("Retry-After", str(NOW + 400 * 86400)),  # an epoch time 400 days ahead
]
UNUSABLE = [
    ("Retry-After", "nan"),
    ("Retry-After", "-inf"),
    ("Retry-After", "-1e308"),
    ("X-Ratelimit-Reset", "Mon, 01 Jan 0001 00:00:00 GMT"),
    ("Retry-After", "Sat, 01 Jan 2000 00:00:00 GMT"),
    ("X-Ratelimit-Reset", str(NOW - 3600)),  # an epoch time an hour past: another clock's
]


def test_a_reset_of_for_ever_is_infinite_and_nan_says_nothing():
    assert wait_seconds("inf", now=NOW) == wait_seconds("1e400", now=NOW) == float("inf")
    assert wait_seconds("nan", now=NOW) is None and wait_seconds("-inf", now=NOW) is None


@pytest.mark.parametrize("header, value", FAR)
def test_a_reset_more_than_a_year_ahead_is_not_waited_for_and_says_what_the_server_said(
    header, value
):
    for max_wait in (MAX_RATE_LIMIT_WAIT, 1e12):  # whatever the client's max_wait
        wait, why = rate_limit_wait({header: value}, now=NOW, max_wait=max_wait)
        assert wait == float("inf")
        assert why.startswith(f"429, {header}: {value}: ") and "more than a year" in why


@pytest.mark.parametrize("header, value", UNUSABLE)
def test_a_reset_long_past_or_not_a_number_is_as_no_header(header, value):
    assert rate_limit_wait({header: value}, now=NOW) == (None, "429 without a reset header")
    if header == "X-Ratelimit-Reset":  # ... and the next header is read
        both = {header: value, "Retry-After": "4"}
        assert rate_limit_wait(both, now=NOW) == (pytest.approx(4.05), "429, Retry-After: 4")


def test_a_reset_a_little_past_goes_at_once_and_one_past_max_wait_is_as_none():
    assert rate_limit_wait({"Retry-After": str(NOW - 120)}, now=NOW)[0] == pytest.approx(0.05)
    assert rate_limit_wait({"Retry-After": str(NOW - 121)}, now=NOW)[0] is None
    assert rate_limit_wait({"Retry-After": str(NOW - 500)}, now=NOW, max_wait=600)[0] == (
        pytest.approx(0.05)
    )


def test_a_year_ahead_is_still_a_time_and_a_moment_past_it_is_not():
    year = 366 * 86400
    assert "comes back at" in rate_limit_wait({"Retry-After": str(year)}, now=NOW)[1]
    assert "more than a year" in rate_limit_wait({"Retry-After": str(year + 1)}, now=NOW)[1]


@pytest.mark.parametrize("seconds", [1e12, 1e308, float("inf")])
def test_when_the_budget_comes_back_is_said_even_beyond_the_calendar(seconds):
    assert comes_back(seconds, NOW).startswith("more than a year from now")


def _answering_429(sb, headers_of):
    """``sb`` answers the members list with a 429 carrying ``headers_of(n)`` (the n-th time),
    or as usual when that is None."""
    original, calls = sb.handle, []

    def handle(method, target, authorization, fault=None):
        if target.startswith("/v1/members"):
            calls.append(target)
            headers = headers_of(len(calls))
            if headers is not None:
                body = {"type": "/errors/too-many-requests", "title": "Too many requests"}
                headers = {"Content-Type": "application/json", **headers}
                return 429, headers, json.dumps(body).encode()
        return original(method, target, authorization, fault=fault)

    sb.handle = handle
    return original, calls


@pytest.mark.parametrize("header, value", FAR)
def test_a_429_asking_for_an_absurd_wait_fails_at_once_naming_the_header_over_http(
    sb, make_client, fake_clock, header, value
):
    fake_clock.now = NOW  # the wall clock the epoch values are read against
    original, calls = _answering_429(sb, lambda n: {header: value})
    client = make_client(sb, clock=fake_clock, rate_limit=5, cache=False)
    with pytest.raises(RateLimitError) as caught:
        client.members_df()
    message = str(caught.value)
    assert f"GET /v1/members: 429, {header}: {value}: " in message
    assert "more than a year" in message and sb.tokens["shop"] not in message
    assert len(calls) == 1 and all(s < 1 for s in fake_clock.slept)  # nothing waited for it
    sb.handle = original  # the server fixed: the same client goes on
    truth = [m["id"] for m in sb.data("shop").members]
    assert sorted(client.members_df()["member_id"]) == truth


@pytest.mark.parametrize("header, value", UNUSABLE)
def test_a_429_with_an_unusable_reset_backs_off_and_retries_over_http(
    sb, make_client, fake_clock, header, value
):
    fake_clock.now = NOW
    _, calls = _answering_429(sb, lambda n: {header: value} if n == 1 else None)
    client = make_client(sb, clock=fake_clock, rate_limit=0, cache=False, backoff=0.5)
    truth = [m["id"] for m in sb.data("shop").members]
    assert sorted(client.members_df()["member_id"]) == truth
    assert len(calls) == 2
    [waited] = fake_clock.slept
    assert 0.25 <= waited <= 0.5  # the first backoff of 0.5 s, not the 0.05 s of a reset past
