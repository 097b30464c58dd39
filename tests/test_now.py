"""One "now" (issue 25, item 1): relative windows count back from the service's clock (its
``Date``), a frame remembers the window it was fetched with, and an analysis of it measures to
that window's end and says so when its question reaches outside it."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime, timedelta
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import pandas as pd
import pytest
import requests

import invtools
from invtools import ConfigError, DeletedItemsWarning, WindowWarning
from invtools.analysis import movement

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo():
    """The demo shop as ``connect()`` serves it (its data end on 31 October 2026)."""
    from invtools.sandbox import serve

    with serve(rate_limit=0) as sb:
        yield sb


def _client(sb, cache) -> invtools.Client:
    return invtools.Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=cache, rate_limit=0, progress=False
    )


def _newest(sb) -> datetime:
    return max(datetime.fromisoformat(t["transaction_time"]) for t in sb.data("shop").transactions)


def test_the_stand_ins_clock_is_its_datas_end_and_the_client_reads_it(demo, tmp_path):
    answer = requests.get(
        demo.base_url + "/v1/team", headers={"Authorization": f"Bearer {demo.tokens['shop']}"}
    )
    stated = parsedate_to_datetime(answer.headers["Date"])
    newest = _newest(demo)
    assert newest < stated <= newest + timedelta(minutes=5)  # its data end "now"
    assert len(answer.raw.headers.getlist("Date")) == 1
    now = _client(demo, tmp_path / "c.sqlite").now()
    assert stated <= now < stated + timedelta(seconds=30)  # and runs on from there


def test_a_relative_window_and_the_analyses_share_one_now(demo, tmp_path):
    """The issue's example: ``since="90D"`` counted back from the wall clock (26 Nov) while
    ``movement`` measured to the newest line (31 Oct): 170 dead items, 37 of them sold within
    90 days. Now both count from the service's clock."""
    client = _client(demo, tmp_path / "c.sqlite")
    items = client.items_df()
    lines = client.lines_df(since="90D")
    since, until = (pd.Timestamp(lines.attrs["window"][k]) for k in ("since", "until"))
    assert abs(until - since - pd.Timedelta(days=90)) < pd.Timedelta("1s")
    assert until.to_pydatetime() - _newest(demo) < timedelta(minutes=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        warnings.simplefilter("ignore", DeletedItemsWarning)
        dead = movement(lines, items)
        longer = movement(client.lines_df(since="2026-07-01"), items, as_of=until)
    assert set(dead.loc[dead["dead"], "item_id"]) == set(longer.loc[longer["dead"], "item_id"])
    assert dead["dead"].sum() == 133  # the count from a long enough window


def test_a_question_reaching_before_the_window_says_so_with_the_dates(demo, tmp_path):
    client = _client(demo, tmp_path / "c.sqlite")
    items, lines = client.items_df(), client.lines_df(since="30D")
    start = pd.Timestamp(lines.attrs["window"]["since"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        with pytest.warns(WindowWarning) as said:
            movement(lines, items)  # dead after 90 days: 60 days before the lines start
        message = str(said[0].message)
        assert f"the lines start {start:%d %b %Y}" in message
        assert "needs lines from" in message and "since=" in message
        with pytest.raises(ConfigError, match="the lines start"):
            movement(lines, items, strict=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", WindowWarning)
            movement(lines, items, look_back="20D")  # inside the window: nothing to say
            until = lines.attrs["window"]["until"]
            movement(lines.copy(), items, as_of=until, since="10D", look_back="5D")


def test_against_a_service_on_the_wall_clock_now_is_the_wall_clock(demo, tmp_path):
    original = demo.handle

    def wall_clock(method, target, authorization, fault=None):
        status, headers, body = original(method, target, authorization, fault=fault)
        return status, {**headers, "Date": formatdate(time.time(), usegmt=True)}, body

    demo.handle = wall_clock
    try:
        client = _client(demo, False)
        assert abs(client.now() - datetime.now(UTC)) < timedelta(seconds=5)
        tx = client.transactions_df(since="30D")
    finally:
        demo.handle = original
    since = pd.Timestamp(tx.attrs["window"]["since"])
    assert abs(since - (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=30))) < pd.Timedelta("1min")
    assert (tx["transaction_time"] >= since).all()


_AGAIN = """
import sys, invtools
client = invtools.Client(sys.argv[1], base_url=sys.argv[2], cache=sys.argv[3], rate_limit=0,
                         progress=False)
lines = client.lines_df(since="90D")
print(lines.attrs["requests"], len(lines))
"""


def test_restart_and_run_all_of_a_relative_window_sends_nothing(demo, tmp_path):
    cache = tmp_path / "c.sqlite"
    first = _client(demo, cache).lines_df(since="90D")
    assert first.attrs["requests"] > 0
    args = [demo.tokens["shop"], demo.base_url, str(cache)]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", _AGAIN, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", str(len(first))]


def test_month_ends_asked_before_the_window_say_so(demo, tmp_path):
    """The issue's "a month-end's first month": twelve month ends of a 90-day frame were
    three, without a word."""
    from invtools.analysis import month_end_stock, stock_value_by_month
    from invtools.frames import stock_history

    client = _client(demo, tmp_path / "c.sqlite")
    history = stock_history(client.lines_df(since="90D"))  # 2 August to 31 October
    items = client.items_df()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        with pytest.warns(WindowWarning, match="last 12 months .* needs lines from 30 Nov 2025"):
            month_end_stock(history)  # 12 months by default
        with pytest.raises(ConfigError, match="the lines start 02 Aug 2026"):
            month_end_stock(history, strict=True)
        later = pd.Timestamp(history.attrs["window"]["until"]) + pd.Timedelta(days=20)
        with pytest.warns(WindowWarning, match="the lines end 31 Oct 2026"):
            stock_value_by_month(history, items, as_of=later)
        with warnings.catch_warnings():
            warnings.simplefilter("error", WindowWarning)
            table = month_end_stock(history, periods=3)  # August to October: inside
            monthly = stock_value_by_month(history, items)
    assert table.index.tolist() == monthly["month"].tolist() == ["2026-08", "2026-09", "2026-10"]
    until = pd.Timestamp(history.attrs["window"]["until"])
    assert monthly["as_of"].iloc[-1] == until  # measured to the window's end: one "now"


def test_a_mirror_with_or_without_a_client_counts_durations_from_its_moment(demo, tmp_path):
    """Issue 32: without a client the same call on the same file counted from the wall clock
    and gave other rows (none, on the demo, once its data were 20 days old)."""
    from invtools import TransactionMirror

    path = tmp_path / "m.sqlite"
    with _client(demo, tmp_path / "c.sqlite") as client:
        mirror = TransactionMirror(path, client)
        mirror.sync()
        recent = mirror.transactions_df(since="20D")  # the service's clock: from 11 October
    assert len(recent) > 0
    alone = TransactionMirror(path).transactions_df(since="20D")
    pd.testing.assert_frame_equal(alone, recent)
    assert alone.attrs["window"] == recent.attrs["window"] is not None
