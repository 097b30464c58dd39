"""Caches that do not only grow (issue 11, item 7).

The demo server takes a random port, so its answers in the user's response cache never match
again, and a transaction detail at a revision never expires: 30 minutes of demo use made a
96 MB cache. Now the demo's cache lives in a temporary folder of its own, removed with the
server; expired, superseded and orphaned entries are pruned (on client creation, at most once
a day, or ``invtools.prune_cache()``); ``invtools.cache_info()`` shows what is in a cache, per
team, without a token. Real HTTP to the stand-in server on 127.0.0.1.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import requests_cache

import invtools
from invtools import notebook

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_demo():
    yield
    notebook.stop_demo_server()


def _user_cache() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("invtools")) / "responses.sqlite"


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT count(*) FROM responses").fetchone()[0]


# -- the demo's cache is its own ---------------------------------------------------------------

def test_demo_clients_cache_in_a_folder_of_their_own_removed_with_the_server(fresh_demo):
    shop = invtools.connect(quiet=True, progress=False)
    cafe = invtools.connect("basic", quiet=True, progress=False)
    shop.lines_df(since="2026-10-25")
    cafe.members_df()
    folder = shop.cache_path.parent
    assert shop.cache_path == cafe.cache_path == notebook.demo_cache_path()
    assert folder != _user_cache().parent and shop.cache_path.exists()
    assert not _user_cache().exists()                 # nothing of the demo in the user's cache
    again = invtools.connect(quiet=True, progress=False)
    with again.measure() as m:
        again.lines_df(since="2026-10-25")
    # Reused while the server runs: every detail (a windowed list walk of several chains
    # reads its head page again; only whole walks are replayed from the cache).
    assert m.sent <= 1 and m.from_cache > 30
    notebook.stop_demo_server()
    assert not folder.exists()                          # and gone with it


def test_the_picker_on_the_demo_server_uses_the_demo_cache(fresh_demo):
    from invtools.notebook.picker import token_picker

    server = invtools.demo_server()
    picker = token_picker(base_url=server.base_url)
    picker.dropdown.value = "shop"
    assert picker.client.cache_path == notebook.demo_cache_path()
    picker.client.close()
    assert not _user_cache().exists()


def test_an_explicit_cache_still_wins_for_a_demo_client(fresh_demo, tmp_path):
    client = invtools.connect(quiet=True, cache=tmp_path / "mine.sqlite", progress=False)
    assert client.cache_path == tmp_path / "mine.sqlite"


@pytest.mark.slow
def test_demo_runs_leave_nothing_behind(tmp_path):
    # Three processes use the demo as a notebook would; the user's cache stays empty and no
    # temporary folder is left. (Before: about 9.7 MB more in the user's cache per run.)
    script = ("import invtools\n"
              "c = invtools.connect(quiet=True, progress=False)\n"
              "c.items_df(); c.transactions_df(); c.lines_df(since='2026-10-01')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), TMPDIR=str(tmp_path / "tmp"),
               PYTHONPATH=str(ROOT))
    (tmp_path / "tmp").mkdir()
    for _ in range(3):
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120,
                       capture_output=True)
    assert not (tmp_path / "xdg" / "invtools" / "responses.sqlite").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


# -- pruning -------------------------------------------------------------------------------------

def test_prune_removes_expired_and_superseded_entries_and_shrinks_the_file(sb, make_client,
                                                                          tmp_path):
    path = tmp_path / "c.sqlite"
    c = make_client(sb, cache=path)
    c.items_df()                                        # fresh for 10 minutes
    tx = next(c.transactions())
    c.transaction(tx["id"], revision=tx["revision"])    # cached for good
    sb.edit_transaction(tx["id"])
    c.transaction(tx["id"], revision=tx["revision"] + 1)  # the old revision is never asked again
    c.close()
    before = _rows(path)
    report = invtools.prune_cache(path)                 # now: nothing expired yet
    assert report["superseded"] == 1 and report["expired"] == 0
    assert _rows(path) == before - 1
    later = invtools.prune_cache(path, now=time.time() + 86_400 * 2)  # two days on
    assert later["expired"] > 0
    # what is left: the detail at its current revision (a local server's entries older than
    # a day are orphans too: its port and data change at every start)
    assert later["local"] == 1 and _rows(path) == 0
    assert later["bytes_after"] <= later["bytes_before"]


def test_prune_removes_entries_no_client_reads_and_older_than_asked(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    old = requests_cache.CachedSession(str(path), backend="sqlite")  # an older invtools' keys
    old.get(f"{sb.base_url}/v1/members", headers={"Authorization": f"Bearer {sb.tokens['shop']}"})
    old.close()
    c = make_client(sb, cache=path)                     # client creation prunes (first time)
    assert _rows(path) == 0
    c.members()
    c.close()
    assert invtools.prune_cache(path, older_than="1h")["older"] == 0
    assert invtools.prune_cache(path, older_than=timedelta(0))["older"] == 1


def test_client_creation_prunes_at_most_once_a_day(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    make_client(sb, cache=path).members()
    with sqlite3.connect(path) as con:                  # make every entry expired
        con.execute("UPDATE responses SET expires = 1")
    make_client(sb, cache=path)                         # pruned less than a day ago: kept
    assert _rows(path) == 1
    marker = path.with_name(path.name + ".pruned")
    day_ago = time.time() - 86_400 - 60
    os.utime(marker, (day_ago, day_ago))
    make_client(sb, cache=path)
    assert _rows(path) == 0


def test_client_prune_cache_prunes_its_own_file(sb, make_client, tmp_path):
    c = make_client(sb, cache=tmp_path / "c.sqlite")
    c.members()
    assert c.prune_cache(older_than=timedelta(0))["older"] == 1
    assert make_client(sb, cache=False).prune_cache() is None


# -- what is in it ---------------------------------------------------------------------------

def test_cache_info_per_team_with_names_and_no_token(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    shop, cafe = make_client(sb, cache=path), make_client(sb, "basic", cache=path)
    shop.items_df()
    cafe.team(), cafe.members()
    info = invtools.cache_info(path)
    assert set(info["team"]) == {sb.data("shop").team["name"], sb.data("basic").team["name"]}
    host = sb.base_url.split("://")[1]
    assert set(info["service"]) == {host}
    assert (info["entries"] > 0).all() and (info["bytes"] > 0).all()
    assert (info["oldest"] <= info["newest"]).all() and str(info["oldest"].dtype).endswith("UTC]")
    assert info["entries"].sum() == _rows(path)
    assert info.attrs["path"] == str(path) and info.attrs["file_bytes"] > 0
    shown = info.to_string() + repr(info.attrs)
    assert not any(token in shown for token in sb.tokens.values())


def test_cache_info_of_no_cache_is_empty_with_its_columns(tmp_path):
    info = invtools.cache_info(tmp_path / "none.sqlite")
    assert info.empty and info.columns.tolist() == [
        "team", "service", "prefix", "entries", "expired", "bytes", "oldest", "newest"]
    assert not (tmp_path / "none.sqlite").exists()  # looking does not make one
