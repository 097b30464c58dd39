"""Every pacing wait is bounded, said and stoppable, and the budget file shared by processes
never stops an analysis (issue 24, issue 26 item 2).

- Times in ``budgets.sqlite`` cross processes, so they are wall-clock times: a process whose
  clock ran a month ahead (before a reboot, or on another machine of a shared home folder)
  does not make the next one wait.
- A stated reset beyond the client's ``max_wait`` is an error naming when the budget comes back,
  on a success as on a 429, and never a belief another process inherits.
- A wait longer than a few seconds says so on stderr.
- A locked, damaged or foreign budget file: the package's warning, naming the file, within the
  client's timeout, and the budget of this process instead.

Real HTTP against the stand-in, on the fake clock of tests/conftest.py (but for the locked
file, whose wait is SQLite's own, in real time).
"""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime

import pytest

from invtools import Client
from invtools.errors import ConfigError, RateLimitError
from invtools.sandbox import serve

pytestmark = pytest.mark.network

MONTH = 30 * 86400.0


def waited(clock) -> float:
    return sum(clock.slept)


def at(seconds: float) -> str:
    """How a message names a wall-clock time (to the minute)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


# ------------------------------------------------------------------------ the wall clock


def test_a_budget_left_by_a_clock_a_month_ahead_does_not_hold_the_next_process(
    sb, make_client, fake_clock
):
    """Before a reboot (or on another machine sharing the home folder) a process paced its
    requests a month "later" than the next one's clock reads: the next one sends at once."""
    ahead = type(fake_clock)(start=fake_clock.now + MONTH)
    first = make_client(sb, rate_limit=5, clock=ahead)
    for path in ("/v1/members", "/v1/item-attrs", "/v1/members"):
        first.get(path, refresh=True)
    now = fake_clock
    second = make_client(sb, rate_limit=5, clock=now)
    sb.clear_log()
    second.get("/v1/members", refresh=True)
    assert [r.status for r in sb.requests] == [200]
    assert waited(now) < 1.0  # not the month the first one's clock was ahead


# ---------------------------------------------------------------- a stated reset, bounded


def test_a_success_stating_a_day_long_reset_raises_naming_the_time(make_client, fake_clock):
    with serve(
        size=100, rate_limit=1, rate_window=86400, stated_budget=True, clock=fake_clock
    ) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False)
        c.get("/v1/members")  # 200: X-Ratelimit-Remaining: 0, X-Ratelimit-Reset: 86400
        start = fake_clock.now
        sb.clear_log()
        with pytest.raises(RateLimitError) as caught:
            c.get("/v1/members")
        assert waited(fake_clock) < 120.0  # never the day, silently
        assert at(start + 86400) in str(caught.value) and "max_wait" in str(caught.value)
        assert sb.requests == []  # known in advance: nothing sent


def test_a_429_whose_reset_is_beyond_max_wait_raises_at_once_naming_the_time(
    make_client, fake_clock
):
    with serve(size=100, rate_limit=1, rate_window=3600, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, max_wait=60)
        c.get("/v1/members")
        start = fake_clock.now
        with pytest.raises(RateLimitError) as caught:
            c.get("/v1/members")
        assert waited(fake_clock) < 60.0
        assert at(start + 3600) in str(caught.value) and "max_wait=60" in str(caught.value)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), True, "120"])
def test_max_wait_must_be_seconds(bad):
    with pytest.raises(ConfigError, match="max_wait"):
        Client(token="t", base_url="http://127.0.0.1:9", cache=False, max_wait=bad)


def test_a_day_long_statement_is_not_inherited_by_the_next_process(make_client, fake_clock):
    """Issue 26: the first process meets a stated day-long reset; the second starts afterwards
    against a server that no longer says it, and sends at once."""
    with serve(
        size=100, rate_limit=1, rate_window=86400, stated_budget=True, clock=fake_clock
    ) as sb:
        first = make_client(sb, rate_limit=5, clock=fake_clock)
        first.get("/v1/members", refresh=True)  # Remaining: 0, Reset: 86400
        sb.rate_limit = 0  # an honest server now: no limit, nothing stated
        later = type(fake_clock)(start=fake_clock.now + 1.0)
        second = make_client(sb, rate_limit=5, clock=later)
        sb.clear_log()
        second.get("/v1/members", refresh=True)
        assert [r.status for r in sb.requests] == [200]
        assert waited(later) < 1.0


def test_a_long_wait_says_what_how_long_and_how_to_stop(make_client, fake_clock, capfd):
    with serve(size=100, rate_limit=1, rate_window=30, stated_budget=True, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False)
        c.get("/v1/members")  # Remaining: 0, Reset: 30
        capfd.readouterr()
        c.get("/v1/members")
        err = capfd.readouterr().err
    assert 29.0 <= waited(fake_clock) <= 31.0
    assert "30 s" in err and "Ctrl-C" in err and sb.tokens["shop"] not in err


# ----------------------------------------------------------------------- the budget file


def budget_file(tmp_path):
    return tmp_path / "budgets.sqlite"


def test_a_locked_budget_file_warns_within_the_timeout_and_paces_in_this_process(
    sb, make_client, tmp_path
):
    c = make_client(sb, rate_limit=50, timeout=(1.0, 5.0))
    c.get("/v1/members")  # the file is made
    holder = sqlite3.connect(budget_file(tmp_path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writes, and never finishes
    try:
        started = time.monotonic()
        with pytest.warns(RuntimeWarning, match="budgets.sqlite"):
            c.get("/v1/item-attrs")
        c.get("/v1/members", refresh=True)  # no second wait: paced in this process now
        assert time.monotonic() - started < 10.0  # not 30 s, and no raw sqlite3 error
        assert not c.budget.shared
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_damaged_budget_file_warns_and_the_analysis_goes_on(sb, make_client, tmp_path):
    budget_file(tmp_path).write_bytes(b"not a database, whatever it was " * 200)
    with pytest.warns(RuntimeWarning, match="budgets.sqlite"):
        c = make_client(sb, rate_limit=5)
        c.get("/v1/members")
    assert c.get("/v1/item-attrs")["count"] >= 0 and not c.budget.shared


def test_budget_rows_of_another_shape_start_afresh(sb, make_client, tmp_path):
    c = make_client(sb, rate_limit=5)
    c.get("/v1/members")
    c.close()
    con = sqlite3.connect(budget_file(tmp_path), isolation_level=None)
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        columns = [row[1] for row in con.execute(f"PRAGMA table_info({table})") if not row[5]]
        for column in columns:  # every value but the keys: what another version might write
            con.execute(f"UPDATE {table} SET {column} = ?", ('"another shape"',))
    con.close()
    again = make_client(sb, rate_limit=5)
    assert again.get("/v1/members")["count"] >= 0
    assert again.budget.shared  # the file is still of use
