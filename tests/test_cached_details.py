"""A re-run reads its cached transaction details in bulk (issue 34): in a new process or a new
client on the same cache it sends nothing and gives the first run's rows; an edited, deleted or
backdated transaction is never served from a stale copy; one team's cached details are never
read for another. Real HTTP against the stand-in; ``sb.data()`` is the server's truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


def truth(sb, team: str = "shop") -> list[tuple[int, int, int, float]]:
    """Every line the server holds now: (transaction id, revision, item id, quantity)."""
    data = sb.data(team)
    lines = []
    for row in data.transactions:
        detail = data.transaction(row["id"])
        for line in detail["items"]:
            lines.append((row["id"], row["revision"], line["id"], float(line["quantity"])))
    return sorted(lines)


def lines_of(df: pd.DataFrame, tx: str = "transaction_id") -> list[tuple[int, int, int, float]]:
    """Its lines as :func:`truth` gives them (``tx``: the column of the transaction's id)."""
    cols = [tx, "revision", "item_id", "quantity"]
    return sorted(
        (int(t), int(r), int(i), float(q)) for t, r, i, q in df[cols].itertuples(index=False)
    )


def detail_requests(sb) -> list[str]:
    return [r.path for r in sb.requests if r.route == "/v1/location-txs/{id}"]


def test_a_rerun_on_the_same_cache_sends_nothing_and_gives_the_first_runs_rows(sb, make_client):
    first = make_client(sb).lines_df()
    assert lines_of(first) == truth(sb)
    sb.clear_log()
    again = make_client(sb).lines_df()  # a new client: nothing of the first in memory
    assert sb.requests == []
    pd.testing.assert_frame_equal(again, first)
    assert again.attrs["requests"] == 0
    assert again.attrs["from_cache"] >= first["transaction_id"].nunique()  # each detail
    with_lines = make_client(sb).transactions_df(with_lines=True)
    assert sb.requests == []
    assert lines_of(with_lines.dropna(subset=["item_id"]), "id") == truth(sb)


def test_a_rerun_in_a_new_process_sends_nothing(sb, make_client, tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = make_client(sb, cache=cache).lines_df()
    sb.clear_log()
    child = (
        "import json, os\n"
        "from invtools import Client\n"
        "c = Client(os.environ['T'], base_url=os.environ['U'], cache=os.environ['C'],\n"
        "           rate_limit=0, progress=False)\n"
        "df = c.lines_df()\n"
        "cols = ['transaction_id', 'revision', 'item_id', 'quantity']\n"
        "print(json.dumps([[int(t), int(r), int(i), float(q)]\n"
        "                  for t, r, i, q in df[cols].itertuples(index=False)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert sb.requests == []
    got = sorted(tuple(line) for line in json.loads(done.stdout))
    assert got == lines_of(first) == truth(sb)


def test_edited_deleted_and_backdated_transactions_are_never_served_stale(sb, make_client):
    make_client(sb).lines_df()  # every detail cached at its revision
    rows = sb.data().transactions
    edited, deleted, backdated = rows[3]["id"], rows[40]["id"], rows[200]["id"]
    sb.edit_transaction(edited)  # one line's quantity changes: revision + 1
    sb.delete_transaction(deleted)
    sb.edit_transaction(backdated, transaction_time="2025-01-02T03:04:05Z")
    sb.clear_log()

    lines = make_client(sb).lines_df(max_age="0s")  # the list walked again, now
    assert lines_of(lines) == truth(sb)
    assert deleted not in set(lines["transaction_id"])
    # only the two new revisions were asked for; every other detail came from the cache
    assert sorted(detail_requests(sb)) == sorted(
        f"/v1/location-txs/{tid}" for tid in (edited, backdated)
    )
    sb.clear_log()
    tx = make_client(sb).transactions_df(with_lines=True, max_age="0s")
    assert lines_of(tx.dropna(subset=["item_id"]), "id") == truth(sb)
    assert detail_requests(sb) == []


def test_one_teams_cached_details_are_never_read_for_another(make_client, tmp_path):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=2) as sb:
        shop = make_client(sb, "shop")
        shop.lines_df()  # the shop's details, in the cache file both clients use
        pairs = [(r["id"], r["revision"]) for r in sb.data("shop").transactions[:5]]
        other = make_client(sb, "harrogate")
        assert other.cache_path == shop.cache_path
        sb.clear_log()
        got = list(other.transaction_details(pairs))
        # not the shop's cached answers: the server was asked, and said another team's
        # transaction is not found
        assert [detail for _pair, detail in got] == [None] * len(pairs)
        assert len(detail_requests(sb)) == len(pairs)
        assert {r.team for r in sb.requests if r.route == "/v1/location-txs/{id}"} == {"harrogate"}
