"""The client follows the service's budget, whichever model it turns out to be (issue 18): a
server that says nothing, one that states its budget on every answer, a minute's budget, one
that answers 429 although the pace holds, and one budget for several processes of a token.

Real HTTP against the stand-in; the server's rate window and the client's waits run on one
fake clock (tests/conftest.py), so no test sleeps -- but for the one that runs two processes.
The fake clock moves only when someone waits, not while a request is on its way, so these
clients keep one request in flight (``concurrency=1``): then a request reaches the server's
counter at the time the client sent it. (Several in flight at the real service's pace:
``benchmarks/bench_budgets.py``.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from invtools.http.pacing import PACING_MARGIN
from invtools.sandbox import serve

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]
#: The configured pace of 5 requests a second, evenly spaced.
SPACING = (1 + PACING_MARGIN) / 5


def details(sb, n: int) -> list[tuple[int, int]]:
    return [(t["id"], t["revision"]) for t in sb.data().transactions[:n]]


def fetch(client, pairs) -> list[dict]:
    got = [detail for _row, detail in client.transaction_details(pairs)]
    assert [d["id"] for d in got] == [p[0] for p in pairs]
    return got


def statuses(sb) -> list[int]:
    return [r.status for r in sb.requests if r.route == "/v1/location-txs/{id}"]


def test_a_server_that_says_nothing_gets_the_configured_pace_evenly(make_client, fake_clock):
    with serve(size=100, rate_limit=5, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, concurrency=1)
        c.team()
        start = fake_clock.now
        fetch(c, details(sb, 21))
        assert 429 not in statuses(sb)
        assert fake_clock.now - start == pytest.approx(20 * SPACING)  # evenly spaced


def test_a_stated_minutes_budget_is_spent_at_once_and_never_more(make_client, fake_clock):
    """300 a minute, stated on every answer: 60 details need not wait for 5 a second."""
    with serve(
        size=100,
        rate_limit=300,
        rate_window=60,
        stated_budget=True,
        rate_limit_scope="token",
        clock=fake_clock,
    ) as sb:
        c = make_client(
            sb, rate_limit=5, rate_limit_scope="token", clock=fake_clock, cache=False, concurrency=1
        )
        c.team()
        start = fake_clock.now
        fetch(c, details(sb, 60))
        assert fake_clock.now - start < 1.0  # at 5/s it would take 12 s
        assert 429 not in statuses(sb)
        room = c.budget.buckets["all-endpoints"]["stated_room"]
        assert room == 300 - 61 and "stated 239 of 300 left" in repr(c)


def test_with_no_stated_room_left_it_waits_for_the_stated_reset(make_client, fake_clock):
    with serve(
        size=100,
        rate_limit=20,
        rate_window=60,
        stated_budget=True,
        rate_limit_scope="token",
        clock=fake_clock,
    ) as sb:
        c = make_client(
            sb, rate_limit=5, rate_limit_scope="token", clock=fake_clock, cache=False, concurrency=1
        )
        c.team()
        start = fake_clock.now
        fetch(c, details(sb, 30))
        assert 429 not in statuses(sb)  # never more than it states
        assert 60.0 <= fake_clock.now - start <= 62.0  # 19 at once, the rest after the reset


def test_a_server_refusing_the_configured_pace_slows_it_and_says_so(make_client, fake_clock):
    """The service allows 2 a second though the client was told 5: a few 429s, then the client
    keeps to a pace that holds, and shows what it learned."""
    with serve(size=100, rate_limit=2, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, retries=8, concurrency=1)
        c.team()
        fetch(c, details(sb, 60))
        refused = statuses(sb).count(429)
        assert 0 < refused <= 15  # not one in four, as at a fixed pace
        bucket = c.budget.buckets["/v1/location-txs/{id}"]
        assert bucket["rate_limited"] == refused and bucket["pace"] < 4.0
        assert f"{refused} x 429" in repr(c) and sb.tokens["shop"] not in repr(c)


def test_the_next_cost_line_uses_the_pace_the_last_fetch_saw(make_client, fake_clock, capfd):
    """The service allows 2 a second though the client was told 5. A first fetch knows only the
    5/s; after it, the next fetch's cost line -- in a new client on the same cache folder, as
    after Restart & Run All -- says the pace that fetch saw, and so the time it will take."""
    with serve(size=300, rate_limit=2, clock=fake_clock) as sb:
        paced = dict(rate_limit=5, clock=fake_clock, retries=8, concurrency=1, progress=True)
        first = make_client(sb, **paced)
        first.team()
        start = fake_clock.now
        fetch(first, details(sb, 100))
        seen = 100 / (fake_clock.now - start)  # the server answers at once: no wait for it
        first.close()
        capfd.readouterr()
        kernel = make_client(sb, **paced)
        kernel.team()
        with closing(kernel.transaction_details(details(sb, 300)[100:])) as batch:
            next(batch)
        err = capfd.readouterr().err
    said = [line for line in err.splitlines() if "to fetch" in line]
    assert len(said) == 1 and said[0].startswith("200 transaction details to fetch, about ")
    per_second = float(re.search(r" at ([\d.]+) requests/s", said[0])[1])
    assert 1.5 < seen < 2.5 and per_second == pytest.approx(seen, rel=0.03)


def test_the_cost_line_uses_a_stated_room(make_client, fake_clock, capfd):
    with serve(
        size=400,
        rate_limit=300,
        rate_window=60,
        stated_budget=True,
        rate_limit_scope="token",
        clock=fake_clock,
    ) as sb:
        c = make_client(
            sb, rate_limit=1, rate_limit_scope="token", clock=fake_clock, cache=False, progress=True
        )
        c.team()  # the answer states 299 left
        capfd.readouterr()
        with closing(c.transaction_details(details(sb, 290))) as batch:
            next(batch)  # it says so before the first is sent
        err = capfd.readouterr().err
    # At the configured 1/s it would say "about 5 min"; a stated room goes 8 at a time, at the
    # service's 0.8 s an answer: 290 in about 29 s, under the 30 s worth a line (the bar shows).
    assert "to fetch" not in err and "/290" in err


# ------------------------------------------------------------------ several processes

_CHILD = """
import json, os, time
from invtools import Client
c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], rate_limit=50,
           rate_limit_scope="token", progress=False)
pairs = [tuple(p) for p in json.loads(os.environ["P"])]
n = sum(1 for _ in c.transaction_details(pairs))
print(json.dumps({"n": n, "429": c.stats.rate_limited, "shared": c.budget.shared}))
"""


def test_two_processes_of_one_token_keep_one_budget(tmp_path):
    """Two notebooks (here two processes) on one cache folder, one token: each paced at 50/s
    alone would send 100 a second together, and meet 429s; one budget keeps both under it."""
    with serve(size=200, rate_limit=50, rate_limit_scope="token") as sb:
        rows = details(sb, 160)
        env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
        env.update(
            T=sb.tokens["shop"], U=sb.base_url, C=str(tmp_path / "c.sqlite"), PYTHONPATH=str(ROOT)
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**env, "P": json.dumps(half)},
            )
            for half in (rows[:80], rows[80:])
        ]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            outs.append(json.loads(out.strip().splitlines()[-1]))
    assert [o["n"] for o in outs] == [80, 80] and all(o["shared"] for o in outs)
    assert sum(o["429"] for o in outs) <= 2
    budgets = tmp_path / "budgets.sqlite"
    assert budgets.exists() and sb.tokens["shop"].encode() not in budgets.read_bytes()


def test_a_first_cost_line_says_how_much_longer_it_may_take_and_a_later_one_not(
    make_client, fake_clock, capfd
):
    # issue 35, item 5: "about 3 min" took 3:45 at the real pace on a busy machine (429s)
    with serve(size=300, rate_limit=2, clock=fake_clock) as sb:
        paced = dict(rate_limit=5, clock=fake_clock, retries=8, concurrency=1, progress=True)
        first = make_client(sb, **paced)
        first.team()
        capfd.readouterr()
        fetch(first, details(sb, 200))
        said_first = [x for x in capfd.readouterr().err.splitlines() if "to fetch" in x]
        first.close()
        kernel = make_client(sb, **paced)
        kernel.team()
        with closing(kernel.transaction_details(details(sb, 300)[200:])) as batch:
            next(batch)
        said_next = [x for x in capfd.readouterr().err.splitlines() if "to fetch" in x]
    assert len(said_first) == 1 and "(up to " in said_first[0]
    assert "if the service slows the pace" in said_first[0]
    assert len(said_next) == 1 and "up to" not in said_next[0]  # it has seen the pace


# ---------------------------------------------- a stand-in's own pace (issue 44, item 6)


def test_a_stand_in_stating_no_limit_is_not_paced_and_says_no_cost(make_client, fake_clock, capfd):
    """``python -m invtools sandbox --rate-limit 0`` states that it has no limit; a client at
    the real service's default of 5/s follows it: no wait, no cost line (at 5/s, 300 details
    would take a minute and say so)."""
    with serve(size=400, rate_limit=0, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, progress=True)
        c.team()
        capfd.readouterr()
        start = fake_clock.now
        fetch(c, details(sb, 300))
        assert fake_clock.now == start and fake_clock.slept == []
        assert "to fetch" not in capfd.readouterr().err
        assert c.budget.unlimited and "the service states no limit" in repr(c)
        assert "no limit stated" in repr(c.budget)


def test_the_cost_of_a_window_at_a_stand_in_stating_no_limit_is_its_latency_not_5_a_second(
    make_client, fake_clock, tmp_path
):
    """The demo's stand-in states no limit: ``fetch_costs`` says what its latency costs (8
    in flight at 0.8 s each), not the minutes 5 a second would take."""
    with serve(size=400, rate_limit=0, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=tmp_path / "c.sqlite")
        costs = c.fetch_costs(windows=[None])
        n = len(sb.data("shop").transactions)
        assert c.budget.unlimited and costs.loc["everything", "to_fetch"] == n
        assert costs.loc["everything", "seconds"] == pytest.approx(n * 0.8 / c.concurrency)
        assert costs.loc["everything", "seconds"] < n / 5  # what 5 a second would take


@pytest.mark.parametrize(
    "model", [{}, {"stated_budget": True}, {"coarse_budget": True}, {"rate_limit_scope": "token"}]
)
def test_a_stand_in_stating_5_a_second_is_paced_at_5_a_second(make_client, fake_clock, model):
    with serve(size=100, rate_limit=5, clock=fake_clock, **model) as sb:
        scope = model.get("rate_limit_scope", "endpoint")
        c = make_client(
            sb, rate_limit=5, rate_limit_scope=scope, clock=fake_clock, cache=False, concurrency=1
        )
        c.team()
        start = fake_clock.now
        fetch(c, details(sb, 21))
        assert 429 not in statuses(sb)
        assert 3.9 <= fake_clock.now - start <= 21 * SPACING + 0.01  # 21 (22) at 5 a second
        assert not c.budget.unlimited


@pytest.mark.parametrize("rate_limit", [0, 5])
def test_a_stand_in_stating_nothing_keeps_the_default_pace(make_client, fake_clock, rate_limit):
    """No statement (the real service's successes state none): the configured 5 a second."""
    quiet = "ratelimit_headers:none"
    with serve(size=100, rate_limit=rate_limit, quirks=quiet, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, concurrency=1)
        c.team()
        start = fake_clock.now
        fetch(c, details(sb, 21))
        assert fake_clock.now - start == pytest.approx(20 * SPACING)
        assert not c.budget.unlimited and "no limit" not in repr(c)


def test_a_stand_in_given_a_limit_while_running_is_paced_again(make_client, fake_clock):
    with serve(size=100, rate_limit=0, clock=fake_clock) as sb:
        c = make_client(sb, rate_limit=5, clock=fake_clock, cache=False, concurrency=1)
        fetch(c, details(sb, 5))
        assert c.budget.unlimited
        sb.rate_limit = 5
        start = fake_clock.now
        fetch(c, details(sb, 21)[5:])
        assert 429 not in statuses(sb) and not c.budget.unlimited
        assert fake_clock.now - start >= 14 * SPACING
