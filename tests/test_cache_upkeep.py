"""Caches that do not only grow (issue 11, item 7).

The demo server takes a random port, so its answers in the user's response cache never match
again, and a transaction detail at a revision never expires: 30 minutes of demo use made a
96 MB cache. Now the demo's cache lives in a temporary folder of its own, removed with the
server; expired, superseded and orphaned entries are pruned (on client creation, at most once
a day, or ``invtools.prune_cache()``); ``invtools.cache_info()`` shows what is in a cache, per
team, without a token. Real HTTP to the stand-in server on 127.0.0.1.

Issue 17: pruning goes through requests-cache's public API and removes only entries invtools
wrote (another program's, or an unreadable one, stays); a transaction detail leaves the cache
as soon as a newer revision of it is fetched; a client's creation never compacts the file.
"""

from __future__ import annotations

import contextlib
import logging
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


def _held(path: Path, tid: int, revision: int) -> bool:
    """Whether the cache file holds the detail of ``tid`` at ``revision`` (read on its own)."""
    urls = {r.url for r in requests_cache.SQLiteCache(path).responses.values()}
    return any(u.endswith(f"/v1/location-txs/{tid}?revision={revision}") for u in urls)


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
    assert not _user_cache().exists()  # nothing of the demo in the user's cache
    again = invtools.connect(quiet=True, progress=False)
    with again.measure() as m:
        again.lines_df(since="2026-10-25")
    # Reused while the server runs: every detail (a windowed list walk of several chains
    # reads its head page again; only whole walks are replayed from the cache).
    assert m.sent <= 1 and m.from_cache > 30
    notebook.stop_demo_server()
    assert not folder.exists()  # and gone with it


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
    script = (
        "import invtools\n"
        "c = invtools.connect(quiet=True, progress=False)\n"
        "c.items_df(); c.transactions_df(); c.lines_df(since='2026-10-01')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(
        XDG_CACHE_HOME=str(tmp_path / "xdg"), TMPDIR=str(tmp_path / "tmp"), PYTHONPATH=str(ROOT)
    )
    (tmp_path / "tmp").mkdir()
    for _ in range(3):
        subprocess.run(
            [sys.executable, "-c", script], env=env, check=True, timeout=120, capture_output=True
        )
    assert not (tmp_path / "xdg" / "invtools" / "responses.sqlite").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


# -- pruning -------------------------------------------------------------------------------------


def _later(days: float) -> float:
    return time.time() + days * 86_400


def _expire_everything(path: Path) -> None:
    """Every entry of the file expires now: through requests-cache itself, as if time passed."""
    cache = requests_cache.SQLiteCache(path)
    cache.reset_expiration(0)
    cache.close()


def _write_foreign(path: Path, sb) -> None:
    """Another program's answer in the same file, under requests-cache's own keys."""
    other = requests_cache.CachedSession(str(path), backend="sqlite")
    other.get(f"{sb.base_url}/v1/members", headers={"Authorization": f"Bearer {sb.tokens['shop']}"})
    other.close()


def _foreign_held(path: Path, sb) -> bool:
    """Whether the other program's answer is still in the file, as that program finds it."""
    cache = requests_cache.SQLiteCache(path)
    try:
        return cache.contains(url=f"{sb.base_url}/v1/members")
    finally:
        cache.close()


def test_a_superseded_detail_leaves_the_cache_as_soon_as_the_newer_revision_is_fetched(
    sb, make_client, tmp_path
):
    path = tmp_path / "c.sqlite"
    c = make_client(sb, cache=path)
    tx = sb.data("shop").transactions[0]
    tid, rev = tx["id"], tx["revision"]
    c.transaction(tid, revision=rev)  # cached for good
    assert _held(path, tid, rev)
    sb.edit_transaction(tid)
    c.transaction(tid, revision=rev + 1)  # fresh from the server
    assert (_held(path, tid, rev), _held(path, tid, rev + 1)) == (False, True)
    # the same through the batch path the mirror and lines_df() use (worker threads)
    sb.edit_transaction(tid)
    [(_row, detail)] = list(c.transaction_details([(tid, rev + 2)]))
    assert detail["revision"] == rev + 2
    assert (_held(path, tid, rev + 1), _held(path, tid, rev + 2)) == (False, True)
    with c.measure() as m:  # still answered from the cache
        c.transaction(tid, revision=rev + 2)
    assert (m.sent, m.from_cache) == (0, 1)


def test_prune_removes_expired_local_and_superseded_entries_and_compacts(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    c = make_client(sb, cache=path)
    c.members(), c.locations()  # fresh for 10 minutes
    tx = sb.data("shop").transactions[0]
    sb.edit_transaction(tx["id"])
    c.transaction(tx["id"], revision=tx["revision"] + 1)  # cached for good
    # An older revision asked for afterwards (or stored by an older invtools, or another
    # process) is superseded by the newer one already there: pruning catches it.
    c.transaction(tx["id"], revision=tx["revision"])
    c.close()
    before = _rows(path)
    report = invtools.prune_cache(path)  # now: nothing expired yet
    assert (report["superseded"], report["expired"], report["removed"]) == (1, 0, 1)
    assert _rows(path) == before - 1
    later = invtools.prune_cache(path, now=_later(2))  # two days on
    assert later["expired"] > 0
    # what was left: the detail at its current revision (a local server's entries older than
    # a day are orphans too: its port and data change at every start)
    assert later["local"] == 1 and _rows(path) == 0
    assert later["bytes_after"] < later["bytes_before"]  # an explicit prune compacts


def test_another_programs_entries_survive_pruning(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    _write_foreign(path, sb)
    _expire_everything(path)  # even expired, it is not ours
    c = make_client(sb, cache=path)  # client creation prunes (first time)
    assert _foreign_held(path, sb)
    c.members()
    c.close()
    assert invtools.prune_cache(path, older_than="1h")["older"] == 0
    report = invtools.prune_cache(path, older_than=timedelta(0))  # all of ours
    assert (report["older"], report["left_alone"]) == (1, 1)
    later = invtools.prune_cache(path, now=_later(2))  # expired, and a local server's
    assert later["removed"] == 0 and later["left_alone"] == 1
    assert _foreign_held(path, sb)
    info = invtools.cache_info(path)
    assert info["prefix"].tolist() == ["(other)"] and info["entries"].tolist() == [1]


def test_an_entry_that_cannot_be_read_survives_pruning(sb, make_client, tmp_path, caplog):
    # As if a requests-cache release with another serializer wrote it under one of our keys:
    # nothing tells it from another program's entry, so it stays.
    path = tmp_path / "c.sqlite"
    ours = "0123456789abcdef:" + "0" * 32
    writer = requests_cache.CachedSession(
        str(path),
        backend="sqlite",
        serializer="json",
        key_fn=lambda request, **_: ours,
        expire_after=1,
    )
    writer.get(
        f"{sb.base_url}/v1/members", headers={"Authorization": f"Bearer {sb.tokens['shop']}"}
    )
    writer.close()
    time.sleep(1.1)  # expired, too
    make_client(sb, cache=path).members()  # creation prunes
    report = invtools.prune_cache(path, older_than=timedelta(0))
    assert report["left_alone"] == 1 and report["older"] == 1
    assert invtools.prune_cache(path, now=_later(2))["left_alone"] == 1
    reader = requests_cache.SQLiteCache(path, serializer="json")
    assert reader.get_response(ours).status_code == 200  # still there, and whole
    reader.close()
    assert invtools.cache_info(path)["prefix"].tolist() == ["(other)"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # counted, not shouted


def test_client_creation_prunes_at_most_once_a_day(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    make_client(sb, cache=path).members()
    _expire_everything(path)
    make_client(sb, cache=path)  # pruned less than a day ago: kept
    assert _rows(path) == 1
    marker = path.with_name(path.name + ".pruned")
    day_ago = time.time() - 86_400 - 60
    os.utime(marker, (day_ago, day_ago))
    make_client(sb, cache=path)
    assert _rows(path) == 0


def _free_pages(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as con:
        return con.execute("PRAGMA freelist_count").fetchone()[0]


def test_client_creation_prunes_without_compacting_the_file(sb, make_client, tmp_path):
    # Compacting (VACUUM) rewrites the whole file and waits for every other process using it:
    # not something to do inside Client(). An explicit prune_cache() does it.
    path = tmp_path / "c.sqlite"
    c = make_client(sb, cache=path)
    c.team(), c.attributes(), c.members(), c.locations()
    list(c.transaction_details([(t["id"], None) for t in sb.data("shop").transactions[:60]]))
    c.close()
    _expire_everything(path)
    path.with_name(path.name + ".pruned").unlink()  # the daily prune is due
    stored = _rows(path)
    make_client(sb, cache=path)
    assert _rows(path) == 0 < stored  # pruned...
    assert _free_pages(path) > 0  # ...and the space left free in the file
    make_client(sb, cache=path).members()
    invtools.prune_cache(path, older_than=timedelta(0))
    assert _free_pages(path) == 0  # compacted when asked


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
        "team",
        "service",
        "prefix",
        "entries",
        "expired",
        "bytes",
        "oldest",
        "newest",
    ]
    assert not (tmp_path / "none.sqlite").exists()  # looking does not make one


def test_walk_records_go_with_their_team_and_with_age(sb, make_client, tmp_path):
    path = tmp_path / "c.sqlite"
    shop, other = make_client(sb, cache=path), make_client(sb, cache=path)
    cafe = make_client(sb, "basic", cache=path)
    shop.transactions_df(), cafe.partners_df()
    records = tmp_path / "c.sqlite.walks"
    assert len(list(records.glob("*.walk"))) == 2
    invtools.prune_cache(path)  # records younger than a day stay
    assert len(list(records.glob("*.walk"))) == 2
    other.clear_cache()  # the same token as shop: its records go too, the cafe's stay
    assert len(list(records.glob("*.walk"))) == 1
    with shop.measure() as m:
        shop.transactions_df()
    assert m.sent > 0  # walked again
    invtools.prune_cache(path, older_than=timedelta(0))
    assert list(records.glob("*.walk")) == []
