"""What a budget reports and estimates (invtools.http.pacing), to the digit: ``client.budget``
shows ``summary()``/``view()``, the cost line of a long fetch uses ``expected_seconds``; and the
edges of its rules -- a long window, a statement's room, a hold shorter than the spacing, a send
count that survives an idle hour, what a 429's statement may not teach.

Pure functions and :class:`Budget` on the fake clock of tests/conftest.py: nothing sleeps.
(tests/test_http.py has the pacing itself; tests/test_budgets.py the client against servers.)
"""

from __future__ import annotations

import logging
import threading

import pytest

from invtools.http import Budget, shared_budget
from invtools.http.pacing import (
    PACING_MARGIN,
    Admission,
    BucketState,
    BudgetView,
    Stated,
    learn_window,
    wait_for,
)

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


def test_the_estimate_spends_a_stated_room_at_the_speed_of_the_requests_in_flight(fake_clock):
    budget = Budget(5, clock=fake_clock, margin=0.0)
    stated = budget.admit("b")
    budget.observe("b", stated, status=200, headers=STATED)  # 10 left
    budget.acquire("b")  # 9 left
    assert budget.expected_seconds("b", 15, in_flight=3.0) == pytest.approx(9 / 3 + 6 / 3)
    assert budget.expected_seconds("b", 4, in_flight=8.0) == pytest.approx(4 / 8)
    fake_clock.sleep(30.0)  # the statement ran out
    assert budget.expected_seconds("b", 10, in_flight=100.0) == pytest.approx(2.0)


# ------------------------------------------------------------------------ the rules' edges


def test_a_statements_room_is_spent_at_once_however_recent_the_last_send():
    state = BucketState(stated=Stated(remaining=5, reset_at=60.0, seq=1))
    assert wait_for(state, [(1, 1.0), (2, 1.0)], now=1.0, interval=0.2) == 0.0


@pytest.mark.parametrize(
    "window, expected", [(2.0, 2.0 * (1 + PACING_MARGIN) + 0.5 - 0.5), (1.9, 0.0)]
)
def test_a_window_of_two_seconds_or_more_is_kept_by_counting_sends(window, expected):
    """Three a window, three sent at 0: the fourth waits for the window (with margin and
    slack) to pass the first -- a window under 2 s is paced by spacing instead."""
    state = BucketState(window=window, window_limit=3)
    sends = [(1, 0.0), (2, 0.0), (3, 0.0)]
    assert wait_for(state, sends, now=0.5, interval=0.01) == pytest.approx(expected)


def test_a_full_long_window_waits_only_until_its_oldest_send_leaves():
    state = BucketState(window=4.0, window_limit=1)
    span = 4.0 * (1 + PACING_MARGIN) + 0.5
    assert wait_for(state, [(1, 0.0)], now=span - 0.5, interval=0.01) == pytest.approx(0.5)
    assert wait_for(state, [(1, 0.0)], now=span + 1, interval=0.01) == 0.0


def test_a_window_is_learned_from_a_successs_statement():
    state = BucketState()
    sends = [(1, 0.0), (2, 2.0), (3, 5.0)]
    learn_window(state, sends, Admission(3, 5.0), remaining=297, reset=55.0, limit=300)
    assert (state.window, state.window_limit) == (60.0, 300)


@pytest.mark.parametrize(
    "remaining, limit",
    [
        (290, 300),  # its oldest send is not ours
        (300, 300),  # nothing counted yet
        (5, None),
    ],
)  # no limit stated
def test_no_window_is_learned_when_the_statement_cannot_tell(remaining, limit):
    state = BucketState()
    learn_window(
        state, [(1, 0.0), (2, 1.0)], Admission(2, 1.0), remaining=remaining, reset=50.0, limit=limit
    )
    assert (state.window, state.window_limit) == (None, None)


def test_a_budget_learns_a_minutes_window_from_successes_but_not_from_a_429(fake_clock):
    budget = Budget(5, clock=fake_clock)
    sent = []
    for pause in (0.0, 2.0, 3.0):
        fake_clock.sleep(pause)
        sent.append(budget.admit("b"))
    refused = {"X-Ratelimit-Limit": "3", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "7"}
    budget.observe("b", sent[2], status=429, headers=refused, hold=7.0)
    assert budget.state("b").window is None  # a 429's count may include others'
    sent.append(budget.admit("b"))  # after the hold: 12 s after the first
    budget.observe(
        "b",
        sent[3],
        status=200,
        headers={
            "X-Ratelimit-Limit": "300",
            "X-Ratelimit-Remaining": "296",
            "X-Ratelimit-Reset": "55",
        },
    )
    learned = budget.state("b")
    assert (learned.window, learned.window_limit) == (pytest.approx(67.0), 300)


def test_the_seconds_waited_add_up_over_a_hold_and_then_the_spacing(fake_clock):
    budget = Budget(1, clock=fake_clock)  # one a second: spacing 1.02 s
    refused = budget.admit("b")
    budget.observe("b", refused, status=429, headers={}, hold=0.1)
    waited = budget.acquire("b")  # 0.1 s held, then the rest of the spacing
    assert waited == pytest.approx((1 + PACING_MARGIN) / 0.9)
    assert waited == pytest.approx(fake_clock.monotonic() - refused.at)


def test_a_stopped_wait_reports_no_time_waited(fake_clock):
    budget = Budget(1, clock=fake_clock)
    budget.acquire("b")
    stop = threading.Event()
    stop.set()
    assert budget.acquire("b", cancel=stop) == 0.0 and budget.admit("b", cancel=stop) is None


def test_send_numbers_keep_counting_after_an_idle_hour(fake_clock):
    budget = Budget(5, clock=fake_clock)
    assert budget.try_send("b", now=0.0) == (0.0, 1)
    assert budget.try_send("b", now=1.0) == (0.0, 2)
    assert budget.try_send("b", now=3600.0) == (0.0, 3)  # its earlier sends forgotten
    assert budget.try_send("b", now=3601.0) == (0.0, 4)


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


def test_a_budget_whose_file_cannot_be_used_is_this_processs_own_and_says_why(
    fake_clock, tmp_path, caplog
):
    with caplog.at_level(logging.INFO, logger="invtools"):
        budget = Budget(5, clock=fake_clock, path=tmp_path, owner="tok")  # a folder
    assert not budget.shared and budget.acquire("b") == 0.0
    [record] = [r for r in caplog.records if "not shared" in r.getMessage()]
    message = record.getMessage()
    head = f"budget not shared with other processes ({tmp_path}): "
    assert message.startswith(head) and len(message) > len(head)
    assert not message.endswith("None")
