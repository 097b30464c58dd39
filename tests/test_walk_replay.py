"""A walk comes from the cache whole or not at all, in any process (issue 17).

Every walk (one chain or several, whole or windowed, transactions, items, partners) either
replays one recorded walk from the cache -- every page it read, unchanged -- or is fetched
fresh from its first page; never a cached head with a fresh tail. Rows are checked against the
server's truth (``sb.data()``): ids, revisions, deletions and quantities, not ids alone. Real
HTTP against the stand-in on 127.0.0.1; "another process" is a real second Python process on
the same cache file.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


def truth(sb) -> list[tuple[int, int]]:
    """The list as the server holds it now: (id, revision), newest first."""
    return [(t["id"], t["revision"]) for t in sb.data().transactions]


def pairs(rows) -> list[tuple[int, int]]:
    if isinstance(rows, pd.DataFrame):
        return list(zip(rows["transaction_id"].tolist(), rows["revision"].tolist(), strict=True))
    return [(r["id"], r["revision"]) for r in rows]


def change_the_head(sb) -> None:
    """What a colleague does meanwhile: a transaction on page 1 deleted, one edited."""
    rows = sb.data().transactions
    sb.delete_transaction(rows[3]["id"])
    sb.edit_transaction(rows[10]["id"])


WHOLE_WALKS = {
    "transactions_df(chains=1)": lambda c: pairs(c.transactions_df(chains=1)),
    "transactions_df()": lambda c: pairs(c.transactions_df()),
    "transactions(chains=1)": lambda c: pairs(c.transactions(chains=1)),
    "transactions()": lambda c: pairs(c.transactions()),
    "transactions(max_rows=...)": lambda c: pairs(c.transactions(max_rows=10**6)),
    "transactions(max_pages=...)": lambda c: pairs(c.transactions(max_pages=10**6)),
    "pages(keep=...)": lambda c: pairs(
        r for p in c.pages("/v1/location-txs", keep=lambda row: True) for r in p.rows
    ),
    "pages(stop_at=...)": lambda c: pairs(
        r for p in c.pages("/v1/location-txs", stop_at=lambda row: False) for r in p.rows
    ),
}


@pytest.mark.parametrize("walk", WHOLE_WALKS)
def test_a_walk_after_a_cached_window_gives_todays_rows(sb, make_client, walk):
    """The defect: a window walk cached the head page; a transaction on it was deleted and
    another edited; a whole walk handed out the cached head (the deleted row, the old
    revision), then walked fresh and skipped the ids it had given."""
    c = make_client(sb)
    since = sb.data().transactions[150]["transaction_time"]
    c.transactions_df(since=since)
    change_the_head(sb)
    assert WHOLE_WALKS[walk](c) == truth(sb)


def test_ctrl_c_during_a_walk_then_running_the_cell_again_gives_todays_rows(sb, make_client):
    c = make_client(sb)
    with pytest.raises(KeyboardInterrupt):
        for i, _row in enumerate(c.transactions(chains=1)):
            if i == 250:  # three pages in the cache
                raise KeyboardInterrupt
    change_the_head(sb)
    assert pairs(c.transactions(chains=1)) == truth(sb)
    assert pairs(c.transactions_df()) == truth(sb)


def test_items_after_a_cached_first_page_have_todays_stock(sb, make_client):
    c = make_client(sb)
    next(c.items())  # page 1 of 4 in the cache
    items = sb.data().items
    sb.add_transaction(type="in", lines=[(items[0]["id"], 5), (items[250]["id"], 7)])
    expected = {i["id"]: i["quantity"] for i in sb.data().items}
    df = c.items_df()
    assert dict(zip(df["item_id"].tolist(), df["quantity"].tolist(), strict=True)) == expected
    stock = c.stock_df()
    assert stock.groupby("item_id")["quantity"].sum().to_dict() == pytest.approx(expected)


def test_partners_after_a_cached_first_page_are_todays(sb, make_client):
    c = make_client(sb)
    next(c.partners(limit=10))  # page 1 of 5 in the cache
    first = sb.data().partners[:10]
    sb.edit_partner(first[2]["id"], name="Renamed Supplies Ltd")
    sb.edit_partner(first[5]["id"], deleted=True)
    df = c.partners_df()
    assert list(zip(df["partner_id"], df["name"], strict=True)) == [
        (p["id"], p["name"]) for p in sb.data().partners
    ]


def test_a_whole_walk_within_max_age_replays_what_it_read_even_after_changes(sb, make_client):
    """Within max_age the replay is the earlier walk, whole: its rows, its revisions, its
    data_as_of -- never today's head over yesterday's tail."""
    c = make_client(sb)
    before = truth(sb)
    first = c.transactions_df()
    change_the_head(sb)
    sb.clear_log()
    again = c.transactions_df()
    assert sb.requests == [] and pairs(again) == before
    assert again.attrs["data_as_of"] == first.attrs["data_as_of"]
    assert pairs(c.transactions(chains=1)) == before
    window = c.transactions_df(since=sb.data().transactions[150]["transaction_time"])
    assert sb.requests == [] and pairs(window) == before[: len(window)]
    assert pairs(c.transactions_df(refresh=True)) == truth(sb)


# ------------------------------------------------------------------------------ a fifth type


def test_a_fifth_transaction_type_at_the_head_is_walked_not_lost(sb, make_client):
    """The documented types are four; a row of another type must not vanish from a first whole
    walk (type chains cannot see it) nor become a missing value in the frame."""
    deep = sb.data().transactions[420]
    sb.add_transaction(type="count", transaction_time=deep["transaction_time"])
    sb.add_transaction(type="count")
    c = make_client(sb)
    df = c.transactions_df()
    assert pairs(df) == truth(sb)
    assert (df["type"] == "count").sum() == 2 and df["type"].notna().all()
    assert "['count'] besides the four" in df.attrs["walk"]["fallback"]  # one chain walked on
    rows = list(make_client(sb, cache=False).transactions())
    assert pairs(rows) == truth(sb)


def test_a_server_that_ignores_the_type_filter_is_walked_as_one_chain(sb, make_client):
    original = sb.handle

    def no_type_filter(method, target, headers, fault=None):
        target = target.replace("type=in&", "").replace("type=out&", "")
        return original(method, target, headers, fault=fault)

    sb.handle = no_type_filter
    c = make_client(sb, cache=False)
    walk = c.transactions()
    assert pairs(walk) == truth(sb) and walk.fallback
    assert pairs(c.transactions_df()) == truth(sb)


# ------------------------------------------------------------------------------ another process

SCRIPT = textwrap.dedent("""
    import json, os, sys
    from invtools import Client

    c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], rate_limit=0,
               progress=False)
    since = os.environ["S"]
    out = {}
    for name, df in (("items", c.items_df()),  # first: lines_df() reads it for the names
                     ("whole", c.transactions_df()),
                     ("window", c.transactions_df(since=since)),
                     ("lines", c.lines_df(since=since))):
        key = {"lines": ["transaction_id", "item_id"], "items": ["item_id"]}.get(
            name, ["transaction_id"])
        out[name] = {"rows": df[key + (["revision"] if "revision" in df else [])]
                     .astype(str).values.tolist(),
                     "data_as_of": df.attrs["data_as_of"], "requests": df.attrs["requests"]}
    print(json.dumps(out))
""")


def run_in_a_new_process(sb, cache: Path, since: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), S=since, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_on_the_same_cache_sends_nothing_and_gets_the_same_rows(sb, tmp_path):
    """Restart & Run All: a new process every time, on the same cache."""
    since = sb.data().transactions[200]["transaction_time"]
    first = run_in_a_new_process(sb, tmp_path / "cache.sqlite", since)
    assert all(first[k]["requests"] > 0 for k in ("whole", "items"))
    sb.clear_log()
    second = run_in_a_new_process(sb, tmp_path / "cache.sqlite", since)
    assert sb.requests == []
    for name in first:
        assert second[name]["requests"] == 0, name
        assert second[name]["rows"] == first[name]["rows"], name
        # on the service's clock: each process reads its offset from the team answer's Date
        # against when the answer arrived (fresh) or was stored (cached), a few ms apart
        apart = pd.Timestamp(second[name]["data_as_of"]) - pd.Timestamp(first[name]["data_as_of"])
        assert abs(apart) < pd.Timedelta(seconds=1), name
    # lines_df's data is as old as its lists (the items list, read first, anchors its levels;
    # issue 43): details at a revision never go stale
    lines, window = (pd.Timestamp(first[k]["data_as_of"]) for k in ("lines", "window"))
    assert lines <= window < lines + pd.Timedelta(minutes=1)


def test_a_walk_from_another_process_is_replayed_only_whole(sb, make_client, tmp_path):
    """Process 1 walks the list; one of its pages is then rewritten in the cache by a newer
    walk of a window; process 2 may not mix the two: it walks fresh."""
    cache = tmp_path / "cache.sqlite"
    since = sb.data().transactions[200]["transaction_time"]
    run_in_a_new_process(sb, cache, since)
    change_the_head(sb)
    make_client(sb, cache=cache).transactions_df(since=since, refresh=True)  # page 1 anew
    c = make_client(sb, cache=cache)
    assert pairs(c.transactions_df()) == truth(sb)
    assert pairs(c.transactions(chains=1)) == truth(sb)
    assert pairs(itertools.islice(c.transactions(), 150)) == truth(sb)[:150]


# ------------------------------------------------------------------------------ Restart & Run All


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_example_notebook_run_again_in_a_new_kernel_sends_nothing(tmp_path):
    """An analyst's loop: Restart & Run All, a new kernel every time, on the same cache. The
    second run of notebook 02 (items, stock, every transaction's lines, locations) is answered
    by the cache alone, and tells the same story."""
    from invtools.notebook.demo import execute_notebook, kernel_env
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=600) as sb:
        env = kernel_env(
            {
                "INVTOOLS_TOKEN": sb.tokens["shop"],
                "INVTOOLS_BASE_URL": sb.base_url,
                "INVTOOLS_CACHE_DIR": str(tmp_path / "cache"),
                "XDG_DATA_HOME": str(tmp_path / "data"),
            }
        )
        notebook = ROOT / "notebooks" / "02-stock-investigation.ipynb"
        first, summary = execute_notebook(notebook, env=env)
        assert summary["sent"] > 600  # the list and every detail
        sb.clear_log()
        second, summary = execute_notebook(notebook, env=env)
        assert [(r.path, r.params) for r in sb.requests] == []
        assert summary["sent"] == 0 and summary["from_cache"] > 600

    def text(nb):  # what each cell printed and returned, but for how many requests it took
        out = []
        for c in (c for c in nb.cells if c.cell_type == "code"):
            # A print may reach the notebook in two stream messages (the kernel flushes its
            # stdout on a timer): a cell's stdout is what it printed, however it was split.
            printed = "".join(o.get("text", "") for o in c.outputs if o.get("name") == "stdout")
            returned = [
                json.dumps(o.get("data", {}).get("text/plain", ""))
                for o in c.outputs
                if o.output_type == "execute_result"
            ]
            lines = printed.splitlines() + returned
            out.append([x for x in lines if "requests" not in x and "from cache" not in x])
        return out

    assert text(second)[:-1] == text(first)[:-1]  # (the last cell is the run's summary)
