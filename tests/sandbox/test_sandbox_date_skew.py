"""``date_skew``: a stand-in whose ``Date`` is wrong (behind, ahead, missing, absurd, jumping),
over real HTTP with urllib and http.client only. The data never move: only what ``Date`` says.
"""

from __future__ import annotations

import http.client
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import pytest
from sandbox_helpers import call

from invtools.sandbox import Faults, Sandbox, serve

SIZE = 50
TEAM_ANSWERS = ["/v1/teams/linked", "/v1/items", "/v1/location-txs", "/v1/members/7001"]


@pytest.fixture(scope="module")
def sb():
    with serve(size=SIZE, rate_limit=0) as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(sb):
    sb.date_skew, sb.faults = None, None
    yield
    sb.date_skew, sb.faults = None, None


def team_clock(sb) -> datetime:
    """The team's clock as the stand-in keeps it: its data's end and a minute."""
    newest = max(
        max(datetime.fromisoformat(t[k]) for k in ("transaction_time", "created_at"))
        for t in sb.data("shop").transactions
    )
    return (newest + timedelta(minutes=1)).replace(microsecond=0)


def date_headers(sb, path: str, token: str | None) -> list[str]:
    """Every ``Date`` header of one answer, as sent (http.client: repeated ones too)."""
    conn = http.client.HTTPConnection(urlsplit(sb.base_url).netloc, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        resp.read()
        return resp.msg.get_all("Date") or []
    finally:
        conn.close()


def stated(reply) -> datetime:
    return parsedate_to_datetime(reply.headers["Date"])


def test_without_a_skew_a_team_answer_states_the_teams_clock(sb):
    for path in TEAM_ANSWERS:
        assert date_headers(sb, path, sb.tokens["shop"]) == [
            team_clock(sb).strftime("%a, %d %b %Y %H:%M:%S GMT")
        ]


@pytest.mark.parametrize("days", [-30, -400, 400, 63_300])  # 63,300 days ahead: in 2200
def test_a_duration_moves_what_date_says_and_not_the_data(sb, days):
    before = {p: call(sb, p).raw for p in TEAM_ANSWERS}
    sb.date_skew = timedelta(days=days)
    for path in TEAM_ANSWERS:
        reply = call(sb, path)
        assert stated(reply) == team_clock(sb) + timedelta(days=days)
        assert reply.raw == before[path]  # the same rows, times and stock
    if days == 63_300:
        assert stated(call(sb, "/v1/teams/linked")).year == 2200


def test_a_new_transaction_is_made_at_the_teams_clock_not_the_skewed_one():
    with serve(size=SIZE, rate_limit=0, date_skew=timedelta(days=-400)) as sb:
        clock = team_clock(sb)
        made = sb.add_transaction(type="in", lines=[(sb.data().items[0]["id"], 1)])
        assert datetime.fromisoformat(made["created_at"]) == clock
        assert stated(call(sb, "/v1/teams/linked")) == team_clock(sb) - timedelta(days=400)


def test_missing_leaves_date_out_of_every_answer(sb):
    sb.date_skew = "missing"
    for path in TEAM_ANSWERS:
        assert date_headers(sb, path, sb.tokens["shop"]) == []
    assert date_headers(sb, "/v1/teams/linked", "sbx_not_a_token") == []  # a 401
    assert date_headers(sb, "/v1/nowhere", sb.tokens["shop"]) == []  # a team's 404
    sb.faults = Faults(on_requests={1}, kinds=("503",))
    assert date_headers(sb, "/v1/items", sb.tokens["shop"]) == []  # an injected proxy 503
    sb.date_skew = None  # and back: one Date again
    assert len(date_headers(sb, "/v1/items", sb.tokens["shop"])) == 1


def test_unparseable_states_year_one(sb):
    sb.date_skew = "unparseable"
    for path in TEAM_ANSWERS:
        assert date_headers(sb, path, sb.tokens["shop"]) == ["Mon, 01 Jan 0001 00:00:00 GMT"]


def test_jumping_answers_alternate_173_years_apart_counted_from_when_it_is_set(sb):
    sb.date_skew = "jumping"
    clock = team_clock(sb)
    got = [stated(call(sb, path)) for path in TEAM_ANSWERS * 2]
    assert got[0::2] == [clock] * 4
    assert {d - clock for d in got[1::2]} == {timedelta(days=63_188)}  # 2026 -> 2199
    assert got[1].year == 2199
    sb.date_skew = "jumping"  # set again: counts from the start again
    assert stated(call(sb, "/v1/items")) == clock
    assert stated(call(sb, "/v1/items")).year == 2199


def test_answers_that_are_no_teams_state_the_wall_clock_whatever_the_skew(sb):
    sb.date_skew = timedelta(days=-400)
    for reply in (call(sb, "/v1/items", token="sbx_not_a_token"), call(sb, "/v1/items", team=None)):
        assert reply.status == 401
        assert abs(stated(reply) - datetime.now(UTC)) < timedelta(minutes=1)


def test_it_is_set_at_runtime_and_in_the_constructor(sb):
    assert Sandbox(size=SIZE, date_skew="missing").date_skew == "missing"
    sb.date_skew = timedelta(days=-30)
    assert stated(call(sb, "/v1/items")) == team_clock(sb) - timedelta(days=30)
    sb.date_skew = None
    assert stated(call(sb, "/v1/items")) == team_clock(sb)


@pytest.mark.parametrize(
    ("value", "error", "says"),
    [
        ("late", ValueError, "one of 'missing', 'unparseable', 'jumping'; got 'late'"),
        (30, TypeError, "date_skew is a datetime.timedelta (negative: behind)"),
        (-30.0, TypeError, "got -30.0 (float)"),
        (datetime(2200, 1, 1), TypeError, "(datetime)"),
        (timedelta(days=400_000), ValueError, "at most 1000 years either way"),
        (timedelta(days=-400_000), ValueError, "date_skew='unparseable'"),
    ],
)
def test_a_wrong_skew_is_refused_with_what_to_give_and_the_old_one_kept(sb, value, error, says):
    sb.date_skew = "missing"
    with pytest.raises(error) as raised:
        sb.date_skew = value
    assert says in str(raised.value)
    assert sb.date_skew == "missing"
    with pytest.raises(error):
        Sandbox(size=SIZE, date_skew=value)
