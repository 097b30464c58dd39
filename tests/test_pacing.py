"""What a budget reports and estimates (invtools.http.pacing), to the digit: ``client.budget``
shows ``summary()``/``view()``, the cost line of a long fetch uses ``expected_seconds``; and the
edges of its rules -- what an answer states and what it does not, a statement's room and life,
a reset beyond ``max_wait``, a hold shorter than the spacing, a long wait said, times of another
clock, states of another shape, a locked budget file.

Pure functions and :class:`Budget` on the fake clock of tests/conftest.py: nothing sleeps.
(tests/test_http.py has the pacing itself; tests/test_budgets.py the client against servers.)
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import pytest

from invtools.errors import RateLimitError
from invtools.http import Budget, shared_budget
from invtools.http.budgetstore import State
from invtools.http.pacing import PACING_MARGIN, SAY_AFTER, BudgetView, describe

SPACING = (1 + PACING_MARGIN) / 5

STATED = {"X-Ratelimit-Limit": "20", "X-Ratelimit-Remaining": "10", "X-Ratelimit-Reset": "30"}


# ---------------------------------------------------------------- what client.budget shows


def test_the_summary_of_a_silent_server_is_the_configured_pace(fake_clock):
    budget = Budget(5, clock=fake_clock)
    budget.acquire("b")
    assert budget.summary() == {
        "b": {
            "pace": round(5 / (1 + PACING_MARGIN), 3),
            "stated_room": None,
            "stated_limit": None,
            "reset_in": None,
            "held_for": 0.0,
            "rate_limited": 0,
            "seen": None,
        }
    }


def test_the_summary_counts_a_statements_room_down_and_its_reset_to_the_millisecond(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    stated = budget.admit("b")
    budget.observe("b", stated, status=200, headers={**STATED, "X-Ratelimit-Reset": "30.1234"})
    budget.acquire("b")
    budget.acquire("b")  # two sent since the statement
    fake_clock.sleep(5.0)
    assert budget.summary()["b"] == {
        "pace": 5.0,
        "stated_room": 8,
        "stated_limit": 20,
        "reset_in": 25.123,
        "held_for": 0.0,
        "rate_limited": 0,
        "seen": None,
    }
    fake_clock.sleep(25.1234)  # the reset: the statement no longer holds
    assert budget.summary()["b"]["stated_room"] is None
    assert budget.summary()["b"]["reset_in"] is None


def test_the_summary_shows_a_429s_hold_and_the_slower_pace(fake_clock):
    budget = Budget(5, clock=fake_clock)
    refused = budget.admit("b")
    budget.observe("b", refused, status=429, headers={}, hold=2.34567)
    fake_clock.sleep(1.0)
    summary = budget.summary()["b"]
    assert summary["held_for"] == 1.346 and summary["rate_limited"] == 1
    assert summary["pace"] == round(0.9 * 5 / (1 + PACING_MARGIN), 3)
    fake_clock.sleep(10.0)
    assert budget.summary()["b"]["held_for"] == 0.0
    budget.observe("b", budget.admit("b"), status=429, headers={})
    assert budget.summary()["b"]["rate_limited"] == 2


def test_the_summary_of_a_statement_with_no_room_left_says_none_left(fake_clock):
    budget = Budget(5, clock=fake_clock)
    budget.observe(
        "b", budget.admit("b"), status=200, headers={**STATED, "X-Ratelimit-Remaining": "0"}
    )
    assert budget.summary()["b"]["stated_room"] == 0


def test_the_view_says_the_rate_the_scope_and_whether_other_processes_share_it(
    fake_clock, tmp_path
):
    budget = Budget(4, clock=fake_clock)
    budget.acquire("all-endpoints")
    view = budget.view("token")
    assert (view.rate_limit, view.scope, view.shared) == (4.0, "token", False)
    assert view.buckets == budget.summary()
    assert repr(view).startswith("BudgetView(4/s per token; all-endpoints: ")
    shared = Budget(4, clock=fake_clock, path=tmp_path / "b.sqlite", owner="o").view("endpoint")
    assert isinstance(shared, BudgetView) and shared.shared and shared.scope == "endpoint"


# ----------------------------------------------------------- the estimate of a long fetch


def test_the_estimate_of_a_silent_server_is_its_pace(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    assert budget.expected_seconds("b", 10, in_flight=100.0) == pytest.approx(2.0)
    assert budget.expected_seconds("b", 10, in_flight=2.0) == pytest.approx(5.0)  # latency
    refused = budget.admit("b")
    budget.observe("b", refused, status=429, headers={})
    assert budget.expected_seconds("b", 9, in_flight=100.0) == pytest.approx(2.0)  # 4.5/s


def test_the_estimate_spends_a_stated_room_at_once_and_waits_for_its_reset_for_more(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    stated = budget.admit("b")
    budget.observe("b", stated, status=200, headers=STATED)  # 10 left
    budget.acquire("b")  # 9 left
    # 9 at once, then the 10th and later wait for the reset (30 s, a second sooner when whole)
    assert budget.expected_seconds("b", 15, in_flight=3.0) == pytest.approx(29 + 6 / 3)
    assert budget.expected_seconds("b", 4, in_flight=8.0) == pytest.approx(4 / 8)
    fake_clock.sleep(30.0)  # the statement ran out
    assert budget.expected_seconds("b", 10, in_flight=100.0) == pytest.approx(2.0)


def test_the_estimate_follows_the_pace_the_last_batch_saw_in_a_new_process_too(
    fake_clock, tmp_path
):
    """Whatever slowed the last batch (429s, a budget counted after the latency, a minute's
    budget), the next estimate is its pace: the wait for the first answer, then the rest at
    the pace between the first answer and the last."""
    path = tmp_path / "budgets.sqlite"
    budget = Budget(5, clock=fake_clock, margin=0.0, path=path, owner="o")
    assert budget.expected_seconds("b", 101, in_flight=10.0) == pytest.approx(101 / 5)
    budget.saw("b", 101, first=0.8, last=40.8)  # 100 answers in 40 s after the first: 2.5/s
    assert budget.expected_seconds("b", 201, in_flight=10.0) == pytest.approx(0.8 + 200 / 2.5)
    assert budget.summary()["b"]["seen"] == 2.5
    # what it saw beats what it guessed (one in flight at an assumed 0.8 s an answer: 1.25/s)
    assert budget.expected_seconds("b", 201, in_flight=1.25) == pytest.approx(80.8)
    kernel = Budget(5, clock=fake_clock, margin=0.0, path=path, owner="o")  # Restart & Run All
    assert kernel.expected_seconds("b", 201, in_flight=10.0) == pytest.approx(80.8)
    assert kernel.expected_seconds("other", 201, in_flight=10.0) == pytest.approx(201 / 5)
    other = Budget(5, clock=fake_clock, margin=0.0, path=path, owner="another token")
    assert other.expected_seconds("b", 201, in_flight=10.0) == pytest.approx(201 / 5)


def test_a_seen_pace_spends_a_stated_room_and_waits_for_its_reset_for_more(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    budget.saw("b", 101, first=0.8, last=40.8)  # 2.5/s
    budget.observe("b", budget.admit("b"), status=200, headers=STATED)  # 10 left, reset in 29 s
    budget.acquire("b")  # 9 left
    assert budget.expected_seconds("b", 5, in_flight=10.0) == pytest.approx(0.8 + 4 / 2.5)
    assert budget.expected_seconds("b", 15, in_flight=10.0) == pytest.approx(0.8 + 29 + 5 / 2.5)


def test_a_batch_too_small_or_instant_to_tell_a_pace_leaves_the_estimate(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    budget.saw("b", 101, first=0.8, last=40.8)
    for n, first, last in [(3, 0.8, 2.0), (101, 1.0, 1.0), (101, 2.0, 1.0), (0, 0.0, 0.0)]:
        budget.saw("b", n, first=first, last=last)  # too few answers, or no time between
        assert budget.expected_seconds("b", 201, in_flight=10.0) == pytest.approx(80.8)
    budget.saw("b", 51, first=0.5, last=10.5)  # a newer batch replaces it: 5/s
    assert budget.expected_seconds("b", 201, in_flight=10.0) == pytest.approx(0.5 + 200 / 5)


# ------------------------------------------------------------- what an answer states


def stated(remaining, reset, limit=None) -> dict[str, str]:
    headers = {"X-Ratelimit-Remaining": str(remaining), "X-Ratelimit-Reset": str(reset)}
    return headers | ({} if limit is None else {"X-Ratelimit-Limit": str(limit)})


def after_statement(budget, clock, headers, *, status=200) -> float:
    """Seconds the next request waits after the answer to one sent now stated ``headers``."""
    sent = budget.admit("b")
    budget.observe("b", sent, status=status, headers=headers)
    start = clock.time()
    budget.acquire("b")
    return clock.time() - start


@pytest.mark.parametrize(
    "reset, wait",
    [
        ("2.5", 2.5),  # a success with no room left is believed: wait for its reset
        ("0.4", 0.4),  # a sub-second reset is a statement too (the spacing alone: 0.2 s)
        ("3", 2.0),  # whole seconds, rounded up: the room may come back a second sooner
        ("1", 0.2),  # ... so "1" says no more than the spacing does
    ],
)
def test_a_success_stating_no_room_left_waits_for_its_reset(fake_clock, reset, wait):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    assert after_statement(budget, fake_clock, stated(0, reset)) == pytest.approx(wait)


def test_an_epoch_reset_is_read_as_the_time_it_names_not_as_seconds(fake_clock):
    clock = type(fake_clock)(start=1_800_000_000.0)  # the wall clock, as servers' epoch times need
    budget = Budget(5, clock=clock, margin=0.0)
    headers = stated(0, f"{clock.time() + 30:.3f}")
    assert after_statement(budget, clock, headers) == pytest.approx(30.0)


def test_a_stated_room_is_spent_at_once_however_recent_the_last_send(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(3, "0.9"))
    assert [budget.acquire("b") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert budget.acquire("b") == pytest.approx(0.9)  # none left: until the reset


def test_a_statement_of_a_whole_budget_left_is_believed(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(3, "0.9", limit=3))  # a fresh window
    assert [budget.acquire("b") for _ in range(3)] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "headers",
    [
        stated(400, "60.0", limit=300),  # more left than the limit: not believed
        stated(5, "-1"),
        stated(-1, "60.0"),
        {"X-Ratelimit-Remaining": "5"},  # no reset: nothing said of when
        {"X-Ratelimit-Remaining": "five", "X-Ratelimit-Reset": "60.0"},
        stated(5, "soon"),
        # issue 32: resets no rate limit means, on a success: no statement (they raised
        # OverflowError/ValueError from datetime at the next request, or stopped it for ever)
        stated(0, "1e308"),
        stated(0, "1e12"),  # an epoch time in year 33658
        stated(0, "inf"),
        stated(0, "Fri, 31 Dec 9999 23:59:59 GMT"),
        stated(0, str(367 * 86400)),  # more than a year
        stated(3, "1e308"),
        stated(0, "Mon, 01 Jan 0001 00:00:00 GMT"),
        stated(0, "-1e308"),
        stated(0, "nan"),
    ],
)
def test_what_is_not_a_statement_leaves_the_configured_pace(fake_clock, headers):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=headers)
    assert budget.acquire("b") == pytest.approx(SPACING)
    assert budget.summary()["b"]["stated_room"] is None


def test_a_statement_lives_until_a_newer_answer_says_otherwise(fake_clock):
    budget = Budget(5, clock=fake_clock)
    early, late = budget.admit("b"), budget.admit("b")
    budget.observe("b", early, status=200, headers=stated(50, "60.0"))
    assert budget.summary()["b"]["stated_room"] == 49
    budget.observe("b", late, status=200, headers={})  # the server no longer says it
    assert budget.summary()["b"]["stated_room"] is None
    assert budget.acquire("b") == pytest.approx(SPACING)


def test_a_statement_beyond_max_wait_raises_once_naming_the_time(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(0, "86400.0"), max_wait=600)
    advice = r"1970-01-02 00:16:40 UTC.*max_wait=600 s; nothing was sent. Try again then, or"
    with pytest.raises(RateLimitError, match=advice):
        budget.admit("b", max_wait=600)
    assert fake_clock.slept == [] and budget.summary()["b"]["stated_room"] is None
    assert budget.admit("b", max_wait=600) is not None  # then the server is asked again


@pytest.mark.parametrize(
    "reset", ["1e308", "1e12", "inf", "Fri, 31 Dec 9999 23:59:59 GMT", "-1e308", "nan"]
)
def test_a_success_stating_an_absurd_reset_is_no_statement_over_http(
    sb, make_client, fake_clock, reset
):
    """Issue 32: the next request raised OverflowError/ValueError from datetime (1e308,
    1e12), or a RateLimitError saying no request may go until the year 9999."""
    original = sb.handle

    def handle(method, target, authorization, fault=None):
        status, headers, body = original(method, target, authorization, fault=fault)
        if target.startswith("/v1/members"):
            headers = {**headers, **stated(0, reset, limit=300)}
        return status, headers, body

    sb.handle = handle
    client = make_client(sb, clock=fake_clock, rate_limit=5, cache=False)
    truth = [m["id"] for m in sb.data("shop").members]
    for _ in range(3):
        assert sorted(client.members_df()["member_id"]) == truth
    assert all(s <= SPACING + 1e-9 for s in fake_clock.slept)  # the configured pace only
    assert client.budget.buckets["/v1/members"]["stated_room"] is None


def test_a_statement_a_year_ahead_still_raises_naming_the_time(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(0, f"{366 * 86400}.0"))
    with pytest.raises(RateLimitError, match=r"until 1971-01-02 00:16:40 UTC \(in 8784 h\)"):
        budget.admit("b")


def test_a_statement_of_a_reset_at_max_wait_is_waited_for(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(0, "600.0"), max_wait=600)
    assert budget.admit("b", max_wait=600).waited == pytest.approx(600.0)


def test_a_statement_beyond_max_wait_with_room_left_is_not_believed(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=200, headers=stated(9000, "86400.0"))  # a day's quota
    assert budget.acquire("b") == pytest.approx(SPACING)  # nothing raised, the pace kept


def test_a_429s_statement_neither_raises_nor_is_kept_beyond_max_wait(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=429, headers=stated(0, "86400.0"))  # the requester raises
    assert budget.acquire("b") == pytest.approx(SPACING / 0.9)


def test_the_seconds_waited_add_up_over_a_hold_and_then_the_spacing(fake_clock):
    budget = Budget(1, clock=fake_clock)  # one a second: spacing 1.02 s
    refused = budget.admit("b")
    budget.observe("b", refused, status=429, headers={}, hold=0.1)
    waited = budget.acquire("b")  # 0.1 s held, then the rest of the spacing
    assert waited == pytest.approx((1 + PACING_MARGIN) / 0.9)
    assert waited == pytest.approx(fake_clock.time() - refused.at)


def test_a_wait_longer_than_a_few_seconds_says_so_once(fake_clock, capsys):
    budget = Budget(5, clock=fake_clock)
    sent = budget.admit("b")
    budget.observe("b", sent, status=429, headers={}, hold=SAY_AFTER + 2)
    budget.acquire("b")
    err = capsys.readouterr().err
    assert err == "invtools: waiting 7 s for b (held after a 429); Ctrl-C stops it\n"
    budget.observe("b", budget.admit("b"), status=429, headers={}, hold=SAY_AFTER)
    budget.acquire("b")
    assert capsys.readouterr().err == ""  # a short wait says nothing


@pytest.mark.parametrize(
    "per_second, headers, why",
    [
        (5, stated(0, "30.0"), "waiting 30 s for b (the server stated no room left)"),
        (0.1, {}, "waiting 10 s for b (the configured pace)"),
    ],
)
def test_a_long_wait_says_why(fake_clock, capsys, per_second, headers, why):
    budget = Budget(per_second, clock=fake_clock)
    budget.observe("b", budget.admit("b"), status=200, headers=headers)
    budget.acquire("b")
    assert capsys.readouterr().err == f"invtools: {why}; Ctrl-C stops it\n"


def test_requests_waiting_for_the_same_end_say_it_once(fake_clock, capsys):
    class Together(type(fake_clock)):
        waiting, both = threading.Event(), threading.Barrier(2, timeout=5)

        def wait(self, event, seconds):
            if seconds > SAY_AFTER:
                self.waiting.set()
                self.both.wait()  # the two requests both wait before the time moves on
            return super().wait(event, seconds)

    budget = Budget(5, clock=Together())
    budget.observe("b", budget.admit("b"), status=429, headers={}, hold=20.0)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(budget.admit, "b")
        assert Together.waiting.wait(5)  # the first waits, and has said so
        second = pool.submit(budget.admit, "b")
        assert first.result() and second.result()
    assert capsys.readouterr().err.count("waiting 20 s") == 1


def test_a_stopped_wait_reports_no_time_waited(fake_clock):
    budget = Budget(1, clock=fake_clock)
    budget.acquire("b")
    stop = threading.Event()
    stop.set()
    assert budget.acquire("b", cancel=stop) == 0.0 and budget.admit("b", cancel=stop) is None


def test_send_numbers_keep_counting_after_an_idle_hour(fake_clock):
    budget = Budget(5, clock=fake_clock)
    assert [budget.admit("b").seq for _ in range(2)] == [1, 2]
    fake_clock.sleep(3600)
    assert budget.admit("b").seq == 3


# ------------------------------------------------------------- times of another clock


def test_times_a_month_ahead_in_the_shared_file_are_another_clocks(tmp_path, fake_clock):
    path = tmp_path / "budgets.sqlite"
    ahead, now = type(fake_clock)(start=1000.0 + 30 * 86400), fake_clock
    one = Budget(5, clock=ahead, path=path, owner="o")
    sent = one.admit("b")
    one.observe("b", sent, status=429, headers={}, hold=60.0)
    one.observe("b", one.admit("b"), status=200, headers=stated(0, "60.0"))
    two = Budget(5, clock=now, path=path, owner="o")
    assert two.acquire("b") == 0.0 and two.summary()["b"]["held_for"] == 0.0


def test_a_hold_within_max_wait_is_shared_with_the_other_process(tmp_path, fake_clock):
    path = tmp_path / "budgets.sqlite"
    one = Budget(5, clock=fake_clock, path=path, owner="o")
    one.observe("b", one.admit("b"), status=429, headers={}, hold=30.0)
    two = Budget(5, clock=type(fake_clock)(start=fake_clock.now), path=path, owner="o")
    assert two.acquire("b") == pytest.approx(30.0)


@pytest.mark.parametrize(
    "text",
    [
        '"another shape"',
        "[]",
        "null",
        "not json",
        '{"seq": 1}',
        '{"seq": "x", "last": 0, "held": 0, "stated": null, "refused": 0, "factor": 1,'
        ' "seen": null}',
        '{"seq": 1, "last": NaN, "held": 0, "stated": null, "refused": 0, "factor": 1,'
        ' "seen": null}',
        '{"seq": 1, "last": 0, "held": 0, "stated": null, "refused": 0, "factor": 0, "seen": null}',
        '{"seq": 1, "last": 0, "held": 0, "stated": null, "refused": 0, "factor": 1.5,'
        ' "seen": null}',
        '{"seq": 1, "last": 0, "held": 0, "stated": [1, 2], "refused": 0, "factor": 1,'
        ' "seen": null}',
        '{"seq": 1, "last": 0, "held": 0, "stated": [1, 2, Infinity, 3], "refused": 0,'
        ' "factor": 1, "seen": null}',
        *(
            f'{{"seq": 1, "last": 0, "held": 0, "stated": null, "refused": 0, "factor": 1, '
            f'"seen": {seen}}}'
            for seen in (
                "[0, 0.8]",
                "[-2.5, 0.8]",
                "[2.5, -1]",
                "[2.5]",
                '["x", 0.8]',
                "[NaN, 0.8]",
                "[2.5, Infinity]",
                "2.5",
            )
        ),
    ],
)
def test_a_state_of_another_shape_is_a_fresh_one(text):
    assert State.loads(text) == State()


def test_a_state_reads_back_as_written():
    state = State(seq=7, last=12.5, held=14.0, stated=[3, 6, 20.0, 300], refused=2, factor=0.9)
    assert State.loads(json.dumps(asdict(state))) == state
    state.seen = [4.2, 0.8]
    assert State.loads(json.dumps(asdict(state))) == state


# ------------------------------------------------------------------------ the budget file


def test_a_locked_budget_file_warns_naming_it_within_the_timeout(tmp_path, fake_clock):
    path = tmp_path / "budgets.sqlite"
    budget = Budget(5, clock=fake_clock, path=path, owner="o", timeout=0.2)
    budget.acquire("b")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.warns(RuntimeWarning, match=f"{path}.*Pacing in this process only"):
            assert budget.admit("b") is not None
        assert time.monotonic() - started < 5.0  # the 0.2 s timeout, not SQLite's default
        assert not budget.shared
        assert budget.acquire("b") == pytest.approx(SPACING)  # paced here, no second wait
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_budget_of_this_process_alone_leaves_no_file(tmp_path, monkeypatch, fake_clock):
    monkeypatch.chdir(tmp_path)  # SQLite's ":memory:" is no file name, here or anywhere
    budget = Budget(5, clock=fake_clock)
    budget.observe("b", budget.admit("b"), status=429, headers={}, hold=1.0)
    assert not budget.shared and budget.summary()["b"]["rate_limited"] == 1
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- one budget per token


def test_a_shared_budget_is_one_per_token_clock_and_file(fake_clock, tmp_path):
    a = shared_budget("tok", 5, clock=fake_clock, path=tmp_path / "b.sqlite")
    assert a.shared and shared_budget("tok", 5, clock=fake_clock, path=tmp_path / "b.sqlite") is a
    assert shared_budget("tok", 5, clock=fake_clock, path=tmp_path / "c.sqlite") is not a
    assert shared_budget("tok", 5, clock=fake_clock) is not a
    assert not shared_budget("tok", 5, clock=fake_clock).shared
    another_clock = type(fake_clock)()
    assert shared_budget("tok", 5, clock=another_clock) is not shared_budget(
        "tok", 5, clock=fake_clock
    )
    # Two tokens on one file: neither waits for the other's request.
    other = shared_budget("another", 5, clock=fake_clock, path=tmp_path / "b.sqlite")
    assert a.acquire("b") == 0.0 and other.acquire("b") == 0.0
    assert shared_budget("tok", 5, clock=fake_clock, path=tmp_path / "b.sqlite").acquire("b") > 0
    assert fake_clock.slept == [pytest.approx(SPACING)]  # on the clock it was given


def test_a_budget_whose_file_cannot_be_used_is_this_processs_own_and_says_why(fake_clock, tmp_path):
    with pytest.warns(RuntimeWarning) as caught:
        budget = Budget(5, clock=fake_clock, path=tmp_path, owner="tok")  # a folder
    assert not budget.shared and budget.acquire("b") == 0.0
    [warning] = caught
    message = str(warning.message)
    assert message.startswith(f"The rate-limit budget file {tmp_path} cannot be used (")
    assert f"delete {tmp_path.name}" in message and message.endswith("process only.")


# ----------------------------------------------------------- what is kept, and how it is shown


def test_times_beyond_the_horizon_are_forgotten_and_those_within_kept():
    far = State(seq=4, last=1061.0, held=1061.0, stated=[2, 4, 1061.0, None], refused=1)
    assert far.bound(1000.0, 60.0) == State(seq=4, refused=1)
    near = State(seq=4, last=1060.0, held=1060.0, stated=[2, 4, 1060.0, None])
    assert near.bound(1000.0, 60.0) == State(  # a last send ahead: sent now at the latest
        seq=4, last=1000.0, held=1060.0, stated=[2, 4, 1060.0, None]
    )
    past = State(seq=4, stated=[2, 4, 1000.0, None])  # its reset came: no longer a statement
    assert past.bound(1000.0, 60.0).stated is None


def test_the_file_is_private_and_lists_only_this_tokens_buckets(tmp_path, fake_clock):
    path = tmp_path / "budgets.sqlite"
    mine = Budget(5, clock=fake_clock, path=path, owner="o")
    theirs = Budget(5, clock=fake_clock, path=path, owner="p")
    for bucket in ("b:2", "a"):
        mine.acquire(bucket)
    theirs.acquire("c")
    assert list(mine.summary()) == ["a", "b:2"] and list(theirs.summary()) == ["c"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize(
    "bucket, words",
    [
        (
            {"pace": 5.0, "stated_room": 3, "stated_limit": None, "reset_in": 2.4,
             "held_for": 1.26, "rate_limited": 2},
            "5/s, stated 3 left (reset in 2 s), held 1.3 s, 2 x 429",
        ),
        (
            {"pace": 4.9, "stated_room": None, "stated_limit": None, "reset_in": None,
             "held_for": 0.0, "rate_limited": 0},
            "4.9/s",
        ),
    ],
)  # fmt: skip
def test_a_bucket_in_words(bucket, words):
    assert describe(bucket) == words


# ---- clocks between processes (issue 35, item 6): a stored time ahead is another clock's


@pytest.mark.parametrize("ahead", [30.0, 100.0, 119.0, -30.0, -100.0])
def test_a_process_whose_clock_differs_waits_at_most_one_interval(tmp_path, fake_clock, ahead):
    path = tmp_path / "budgets.sqlite"
    theirs, mine = type(fake_clock)(5000.0 + ahead), type(fake_clock)(5000.0)
    other = Budget(5, clock=theirs, path=path)  # another process on the same file
    here = Budget(5, clock=mine, path=path)
    for _ in range(3):
        other.acquire("b")
    waited = [here.acquire("b") for _ in range(4)]
    assert max(waited) <= here.interval + 1e-9  # never the other clock's lead
    assert sum(waited) <= 4 * here.interval + 1e-9


def test_a_clock_stepped_back_waits_at_most_one_interval(fake_clock):
    budget = Budget(5, clock=fake_clock)
    budget.acquire("b")
    fake_clock.now -= 90.0  # the machine's clock set back (NTP, a suspended laptop)
    assert budget.acquire("b") <= budget.interval + 1e-9
    assert budget.acquire("b") == pytest.approx(budget.interval)  # and the pace holds after
