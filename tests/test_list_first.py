"""What the list knows, first (issue 45, item 1): before a long fetch of details, the line
that says its cost is preceded by what the window holds, from the list rows alone --
transactions and units per type -- and the answers the rows suffice for (by partner,
location, member, day) come from ``transactions_df`` at once, with no detail. Checked against
the stand-in's truth (``sb.data("shop")``), paced on the ``fake_clock``.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from invtools import analysis

pytestmark = pytest.mark.network

DETAIL = "/v1/location-txs/{id}"
PART = re.compile(r"([\d,]+) (in|out|move|adjust) \(([\d,.]+) units\)")


@pytest.fixture(scope="module")
def silent():
    """A stand-in that says nothing of its budget: a client paces as configured."""
    from invtools.sandbox import serve

    with serve(rate_limit=0, seed=0, size=600, quirks="ratelimit_headers:none") as server:
        yield server


@pytest.fixture
def paced(silent, make_client, fake_clock):
    """Paced at 1 request a second, one at a time, on a fake clock: 80 details "take" over a
    minute (the cost line is due) while no test waits for them."""
    return make_client(silent, rate_limit=1, concurrency=1, clock=fake_clock, progress=True)


def _shown(err: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", err).splitlines()


def _truth(sb, since=None) -> dict[str, tuple[int, float]]:
    """Per type: the stand-in's transactions from ``since`` on and their units (absolute)."""
    out: dict[str, tuple[int, float]] = {}
    for row in sb.data("shop").transactions:
        if since is None or pd.Timestamp(row["transaction_time"]) >= since:
            n, units = out.get(row["type"], (0, 0.0))
            out[row["type"]] = (n + 1, units + abs(row["total_quantity"]))
    return out


def _said(line: str) -> dict[str, tuple[int, float]]:
    return {
        kind: (int(n.replace(",", "")), float(units.replace(",", "")))
        for n, kind, units in PART.findall(line)
    }


def test_a_long_fetch_says_what_the_window_holds_before_its_cost(silent, paced, capfd):
    paced.team()
    capfd.readouterr()
    lines = paced.lines_df(since="90D")
    shown = _shown(capfd.readouterr().err)
    at = next(k for k, line in enumerate(shown) if "transaction details to fetch" in line)
    holds = shown[at - 1]  # the line just before the cost line
    truth = _truth(silent, pd.Timestamp(lines.attrs["window"]["since"]))
    n = sum(count for count, _units in truth.values())
    assert holds.startswith(f"the window holds {n} transactions: ")
    said = _said(holds)
    assert {k: v[0] for k, v in said.items()} == {k: v[0] for k, v in truth.items()}
    for kind, (_n, units) in truth.items():
        assert said[kind][1] == pytest.approx(units, abs=0.01), kind
    counts = [count for count, _units in said.values()]
    assert counts == sorted(counts, reverse=True)  # most transactions first
    assert "crosstab(client.transactions_df(" in holds  # where the rows' answers come from
    assert shown[at].startswith(f"{n} transaction details to fetch, about ")
    assert lines["transaction_id"].nunique() == n  # the lines are of those transactions


def test_the_whole_list_says_what_the_list_holds(silent, paced, capfd):
    paced.team()
    capfd.readouterr()
    paced.transactions_df(type="in", with_lines=True)  # the whole list of one type: 72
    holds = [line for line in _shown(capfd.readouterr().err) if " holds " in line]
    n, units = _truth(silent)["in"]
    assert len(holds) == 1 and holds[0].startswith(f"the list holds {n} transactions: ")
    assert _said(holds[0]) == {"in": (n, pytest.approx(units, abs=0.01))}


def test_a_fetch_too_short_to_announce_says_nothing_of_it(paced, capfd):
    paced.lines_df(since="90D", progress=False)  # the details cached
    paced.team()
    capfd.readouterr()
    paced.lines_df(since="90D")
    err = "\n".join(_shown(capfd.readouterr().err))
    assert " holds " not in err and "to fetch" not in err


def test_the_answers_the_list_suffices_for_need_no_detail(sb, make_client):
    # units out per partner and day: from the list rows, the same as from the lines
    client = make_client(sb)
    tx = client.transactions_df(since="30D")
    assert not any(r.route == DETAIL for r in sb.requests)
    out = tx[tx["type"] == "out"]
    by_list = analysis.crosstab(out, rows="partner", columns="day", metric="quantity")
    lines = client.lines_df(since="30D")
    by_lines = analysis.crosstab(
        lines[lines["type"] == "out"], rows="partner", columns="day", metric="quantity"
    )
    assert by_list.shape[0] > 1 and by_list.to_numpy().sum() > 0
    pd.testing.assert_frame_equal(by_list, by_lines, check_names=False)
