"""``client.fetch_costs(windows=...)``: for each window, the list's transactions in it, their
details the cache holds and those still to fetch, the requests and the time at the pace seen,
before anything is fetched -- against the stand-in's truth (``sb.data("shop")``), counted at
the stand-in (its request log), paced on the ``fake_clock``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from invtools.errors import ArgumentTypeError, ConfigError

pytestmark = pytest.mark.network

LIST = "/v1/location-txs"
DETAIL = "/v1/location-txs/{id}"
WINDOWS = ("30D", "90D", None)


def truth_in(sb, since) -> list[dict]:
    """The stand-in's live transaction rows from ``since`` on (NaT: all)."""
    rows = sb.data("shop").transactions
    if pd.isna(since):
        return rows
    return [r for r in rows if pd.Timestamp(r["transaction_time"]) >= since]


def sent(sb, route: str) -> int:
    return sum(r.route == route for r in sb.requests)


def test_each_window_counts_the_stand_ins_transactions_and_a_fresh_cache_holds_none(
    sb, make_client
):
    client = make_client(sb)
    costs = client.fetch_costs(windows=WINDOWS)
    assert costs.index.tolist() == ["30D", "90D", "everything"]
    assert sent(sb, DETAIL) == 0  # nothing but the list was asked
    for label, row in costs.iterrows():
        truth = truth_in(sb, row["since"])
        assert row["transactions"] == len(truth), label
        assert (row["cached"], row["to_fetch"], row["requests"]) == (0, len(truth), len(truth))
        assert row["list_pages"] == -(-(len(truth) + (label != "everything")) // 100)
    assert costs.loc["everything", "transactions"] == len(sb.data("shop").transactions)
    assert costs.loc["30D", "since"] > costs.loc["90D", "since"]
    assert pd.isna(costs.loc["everything", "since"])
    # the walk it took is said: what this call sent
    assert costs.attrs["requests"] == len(sb.requests) - sent(sb, "/v1/teams/linked")


def test_after_one_windows_details_the_split_is_what_the_cache_holds(sb, make_client):
    client = make_client(sb)
    client.fetch_costs(windows=WINDOWS)
    lines = client.lines_df(since="30D")
    fetched = set(lines["transaction_id"].tolist())
    costs = client.fetch_costs(windows=WINDOWS)
    in30 = {r["id"] for r in truth_in(sb, costs.loc["30D", "since"])}
    assert fetched == in30  # the lines of the window are the stand-in's transactions in it
    for label, row in costs.iterrows():
        truth = {r["id"] for r in truth_in(sb, row["since"])}
        assert row["cached"] == len(truth & fetched), label
        assert row["to_fetch"] == len(truth - fetched) == row["requests"], label
    assert costs.loc["30D", "to_fetch"] == 0 and costs.loc["30D", "time"] == "nothing to send"


def test_lines_df_after_it_walks_no_list_again(sb, make_client):
    client = make_client(sb)
    client.fetch_costs(windows=("30D", "90D"))
    assert sent(sb, LIST) > 0
    sb.clear_log()
    client.lines_df(since="90D")
    client.lines_df(since="30D")
    assert sent(sb, LIST) == 0 and sent(sb, DETAIL) > 0
    assert sent(sb, "/v1/items") == 0  # nor the items list its levels are anchored at

    client.fetch_costs(windows=(None,))  # the whole list: walked once more, then kept
    sb.clear_log()
    whole = client.lines_df()
    assert sent(sb, LIST) == sent(sb, "/v1/items") == 0
    assert whole["transaction_id"].nunique() == len(sb.data("shop").transactions)


_CHILD = """
import json, os
from invtools import Client
c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], rate_limit=0,
           progress=False)
costs = c.fetch_costs(windows=("30D", "90D", None))
print(json.dumps({"cached": costs["cached"].tolist(), "to_fetch": costs["to_fetch"].tolist(),
                  "requests": costs.attrs["requests"], "from_cache": costs.attrs["from_cache"]}))
"""


def test_run_again_in_a_new_process_it_sends_nothing(sb, make_client, tmp_path):
    client = make_client(sb)
    first = client.fetch_costs(windows=WINDOWS)
    client.lines_df(since="30D")
    n30 = int(first.loc["30D", "transactions"])
    sb.clear_log()
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(tmp_path / "cache.sqlite"))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    again = json.loads(done.stdout.strip().splitlines()[-1])
    assert sb.requests == []  # not the team, not a page of the list, not a detail
    assert again["requests"] == 0 and again["from_cache"] > 0
    assert again["cached"] == [n30, n30, n30]
    assert again["to_fetch"] == (first["transactions"] - n30).tolist()


@pytest.fixture(scope="module")
def silent():
    """A stand-in that says nothing of its budget: a client paces as configured."""
    from invtools.sandbox import serve

    with serve(rate_limit=0, seed=0, size=600, quirks="ratelimit_headers:none") as server:
        yield server


def _shown(err: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", err).splitlines()


def test_the_time_is_the_one_the_cost_line_then_says(silent, make_client, fake_clock, capfd):
    # paced at 1 request a second, one at a time: 82 details "take" over a minute, on a fake
    # clock no test waits for
    client = make_client(silent, rate_limit=1, concurrency=1, clock=fake_clock, progress=True)
    costs = client.fetch_costs(windows=("90D", "30D"))
    row = costs.loc["90D"]
    # no pace seen yet: the configured one (1/s, its 2 % margin) after the first answer's 0.8 s
    assert row["seconds"] == pytest.approx(0.8 + row["to_fetch"] * 1.02, rel=0.02)
    assert row["at_most"] == pytest.approx(row["seconds"] * 1.3)
    capfd.readouterr()
    client.lines_df(since="90D")
    said = [line for line in _shown(capfd.readouterr().err) if "details to fetch" in line]
    assert len(said) == 1
    assert said[0].startswith(f"{row['to_fetch']} transaction details to fetch, {row['time']} ")

    # a fetch has shown the pace: the next estimate is that pace's, said without "up to"
    after = client.fetch_costs(windows=("90D", None))
    assert after.loc["90D", "to_fetch"] == 0 and after.loc["90D", "seconds"] == 0
    assert pd.isna(after.loc["everything", "at_most"])
    assert after.loc["everything", "seconds"] > 0


def test_without_a_cache_file_the_list_is_counted_again(sb, make_client):
    client = make_client(sb, cache=False)
    costs = client.fetch_costs(windows=("30D", None))
    assert (costs["requests"] == costs["to_fetch"] + costs["list_pages"]).all()


@pytest.mark.parametrize(
    ("windows", "error"),
    [
        ("30D", ArgumentTypeError),
        (None, ArgumentTypeError),
        (42, ArgumentTypeError),
        ((), ConfigError),
        (("30D", "30D"), ConfigError),
        (("30D", "yesterday"), ConfigError),
    ],
)
def test_bad_windows_are_refused_before_anything_is_sent(sb, make_client, windows, error):
    client = make_client(sb)
    with pytest.raises(error, match=r"windows|since"):
        client.fetch_costs(windows=windows)
    assert sent(sb, LIST) == 0
