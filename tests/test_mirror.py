"""TransactionMirror against the stand-in server over real HTTP.

Every test starts its own sandbox (same seed and size, so identical data) and, to keep the
suite fast, most start from a copy of one mirror file synced once per module ("pristine"):
a full sync costs one detail request per transaction.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from invtools import frames
from invtools.api import Client
from invtools.errors import ConfigError, LockedError, ServerError
from invtools.mirror import TransactionMirror
from invtools.sandbox import Faults, serve

pytestmark = pytest.mark.network

SIZE = 60  # transactions of the shop; >= 50 (sandbox minimum), one list page is 100 rows
ROOT = Path(__file__).resolve().parents[1]
LIST, DETAIL = "/v1/location-txs", "/v1/location-txs/{id}"
#: The lists each sync reads for the names (a rename raises no revision).
NAMES = {"/v1/items", "/v1/partners", "/v1/locations", "/v1/members"}


def make_client(sb, tmp_path, team="shop", **kw):
    kw = {"cache": tmp_path / f"cache-{team}.sqlite", "rate_limit": 0, "progress": False, **kw}
    return Client(sb.tokens[team], base_url=sb.base_url, **kw)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A mirror file after one full sync of the seed-0 shop, synced once for the module."""
    tmp = tmp_path_factory.mktemp("pristine")
    with serve(rate_limit=0, size=SIZE) as sb, make_client(sb, tmp) as client:
        TransactionMirror(tmp / "mirror.sqlite", client).sync()
    return tmp / "mirror.sqlite"


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=SIZE) as server:
        yield server


@pytest.fixture
def client(sb, tmp_path):
    with make_client(sb, tmp_path) as c:
        yield c


def copy_for(pristine, sb, path):
    """A copy of the pristine file, re-pointed at this test's server: same seed and data,
    but another port, and the mirror refuses a client of another base URL."""
    shutil.copy(pristine, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'base_url'", (sb.base_url,))
    conn.close()
    return path


@pytest.fixture
def mirror(pristine, sb, client, tmp_path):
    m = TransactionMirror(copy_for(pristine, sb, tmp_path / "mirror.sqlite"), client)
    m.info()  # in use: its first use asked for the team and checked the file against it
    return m


def routes(sb):
    return [r.route for r in sb.requests]


def named(sb) -> int:
    """The requests for the team's lists, which name the rows (each list read once)."""
    assert {r for r in routes(sb) if r in NAMES} == NAMES
    return sum(r in NAMES for r in routes(sb))


def rows_by_time(sb):
    """Live rows of the shop, newest first (the list order)."""
    return sb.data("shop").transactions


def fresh_lines(sb):
    """Lines as the server shows them now (current revisions, current stock levels)."""
    view = sb.data("shop")
    return frames.lines_df([view.transaction(r["id"]) for r in view.transactions])


def assert_same_frame(a, b):
    pd.testing.assert_frame_equal(
        a.reset_index(drop=True), b.reset_index(drop=True), check_like=False, check_flags=False
    )


# ------------------------------------------------------------------------------- first sync


def test_first_sync_is_full_and_mirrors_rows_and_lines_exactly(sb, client, tmp_path):
    sb.clear_log()
    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    # A constructor sends nothing and makes no file: the first use asks for the team first.
    assert sb.requests == [] and not (tmp_path / "m.sqlite").exists()
    report = mirror.sync()
    assert (report.kind, report.new, report.changed, report.removed) == ("full", SIZE, 0, 0)
    assert abs(report.anchor - pd.Timestamp(client.now())) < pd.Timedelta("1min")
    assert report.changes["change"].astype(str).tolist() == ["new"] * SIZE
    # The team once, then one list page + one detail per transaction (what the report counts).
    assert routes(sb)[0] == "/v1/teams/linked" and routes(sb).count("/v1/teams/linked") == 1
    assert routes(sb).count(DETAIL) == SIZE and routes(sb).count(LIST) == 1
    assert report.requests == len(sb.requests) - 1 == SIZE + 1 + named(sb)
    live = client.transactions_df(refresh=True)
    assert_same_frame(mirror.transactions_df(), live.drop(columns=[]))
    assert_same_frame(mirror.lines_df(), fresh_lines(sb))
    info = mirror.info()
    assert (info["transactions"], info["removed"], info["syncs"]) == (SIZE, 0, 1)
    assert info["lines"] == len(mirror.lines_df())


def test_second_sync_without_changes_sends_only_the_lists(sb, mirror):
    sb.clear_log()
    report = mirror.sync()
    assert (report.new, report.changed, report.removed, report.unchanged) == (0, 0, 0, SIZE)
    assert set(routes(sb)) == {LIST} | NAMES
    assert report.requests == len(sb.requests) == report.list_pages + named(sb)
    assert report.list_pages == 1
    assert report.details_fetched == 0 and len(report.changes) == 0


# ------------------------------------------------------------------ changes between syncs


def test_edits_deletes_new_and_backdated_are_reported_exactly(sb, mirror, client):
    rows = rows_by_time(sb)
    before = {r["id"]: r for r in rows}
    edited = [rows[3]["id"], rows[40]["id"]]
    deleted = rows[7]["id"]
    for tx in edited:
        sb.edit_transaction(tx)
    sb.delete_transaction(deleted)
    new = sb.add_transaction(type="in")
    backdated = sb.add_transaction(type="in", transaction_time=rows[30]["transaction_time"])
    after = {r["id"]: r for r in rows_by_time(sb)}

    sb.clear_log()
    report = mirror.sync()
    assert (report.new, report.changed, report.removed, report.unchanged) == (2, 2, 1, SIZE - 3)
    assert report.backdated_new == 1
    # Requests: the list pages, plus exactly the details of the 2 new and 2 edited rows.
    details = sorted(int(r.path.rsplit("/", 1)[1]) for r in sb.requests if r.route == DETAIL)
    assert details == sorted([*edited, new["id"], backdated["id"]])
    assert report.requests == len(sb.requests) == report.list_pages + 4 + named(sb)

    t = lambda s: pd.Timestamp(s)  # noqa: E731
    expected = {
        new["id"]: (
            "new",
            None,
            0,
            None,
            after[new["id"]]["total_quantity"],
            None,
            t(new["transaction_time"]),
        ),
        backdated["id"]: (
            "backdated-new",
            None,
            0,
            None,
            after[backdated["id"]]["total_quantity"],
            None,
            t(backdated["transaction_time"]),
        ),
        deleted: (
            "removed",
            before[deleted]["revision"],
            None,
            before[deleted]["total_quantity"],
            None,
            t(before[deleted]["transaction_time"]),
            None,
        ),
    }
    for tx in edited:
        expected[tx] = (
            "edited",
            before[tx]["revision"],
            before[tx]["revision"] + 1,
            before[tx]["total_quantity"],
            after[tx]["total_quantity"],
            t(before[tx]["transaction_time"]),
            t(after[tx]["transaction_time"]),
        )
    got = {}
    for row in report.changes.itertuples():
        got[row.transaction_id] = tuple(
            None if pd.isna(v) else v
            for v in (
                row.change,
                row.old_revision,
                row.new_revision,
                row.old_total_quantity,
                row.new_total_quantity,
                row.old_transaction_time,
                row.new_transaction_time,
            )
        )
    assert got == expected
    assert report.changes.set_index("transaction_id").loc[backdated["id"], "backdated"]

    # The mirror now equals the server: rows, lines (stock levels included) and history.
    assert_same_frame(mirror.transactions_df(), client.transactions_df(refresh=True))
    assert_same_frame(mirror.lines_df(), fresh_lines(sb))
    removed = mirror.transactions_df(include_removed=True).set_index("transaction_id")
    assert pd.notna(removed.loc[deleted, "removed_at"])
    assert removed["removed_at"].notna().sum() == 1
    log = mirror.changes_df()
    assert (log["sync_id"] == log["sync_id"].max()).sum() == 5  # this sync's five rows
    assert "Full sync" in str(report) and "2 new (1 backdated), 2 changed, 1 removed" in str(report)
    html = report._repr_html_()
    assert "Full sync" in html and "<table" in html and str(deleted) in html


def test_stock_history_ends_at_the_servers_current_stock(sb, mirror):
    rows = rows_by_time(sb)
    sb.edit_transaction(rows[50]["id"])  # an old edit shifts every later level of its items
    sb.add_transaction(type="in", transaction_time=rows[45]["transaction_time"])
    sb.delete_transaction(rows[20]["id"])
    mirror.sync()
    items = sb.data("shop").items
    last = mirror.stock_history().groupby("item_id")["stock"].last()
    touched = [it for it in items if it["id"] in last.index]
    assert len(touched) > 10
    assert {it["id"]: last[it["id"]] for it in touched} == {
        it["id"]: float(it["quantity"]) for it in touched
    }
    for loc in sb.data("shop").locations:
        here = mirror.stock_history(location_id=loc["id"]).groupby("item_id")["stock"].last()
        want = {
            it["id"]: float(q["quantity"])
            for it in items
            for q in it["quantities"]
            if q["location_id"] == loc["id"] and it["id"] in here.index
        }
        assert want and {i: here[i] for i in want} == want
    one = mirror.stock_history(touched[0]["id"])
    assert set(one["item_id"]) == {touched[0]["id"]}


def test_stock_history_takes_one_item_id_in_any_spelling(mirror):
    mirror.sync()
    item = int(mirror.lines_df()["item_id"].iloc[0])
    want = mirror.stock_history(item)
    for spelled in (np.int64(item), str(item), [str(item)]):
        got = mirror.stock_history(spelled)
        pd.testing.assert_frame_equal(got, want)
        assert got.attrs["filters"]["item_ids"] == [item]


# -------------------------------------------------------------------------- window syncs


def test_window_sync_sees_recent_changes_only_and_says_so(sb, mirror):
    rows = rows_by_time(sb)
    newest = pd.Timestamp(rows[0]["transaction_time"])
    recent = [
        r for r in rows if pd.Timestamp(r["transaction_time"]) >= newest - pd.Timedelta("90D")
    ]
    assert 4 <= len(recent) < SIZE - 10
    old = rows[-5]["id"]
    sb.edit_transaction(recent[1]["id"])
    sb.delete_transaction(recent[2]["id"])
    moved = recent[3]["id"]  # edited to a time before the window: an edit, not a removal
    sb.edit_transaction(moved, transaction_time=rows[-3]["transaction_time"])
    sb.edit_transaction(old, memo="recounted")  # a memo edit never oversells

    sb.clear_log()
    report = mirror.sync(look_back="90D")
    assert report.kind == "window" and report.look_back == pd.Timedelta("90D")
    # back from the service's clock when the walk began (issue 32: not the newest row's time)
    assert abs(report.anchor - pd.Timestamp(mirror.client.now())) < pd.Timedelta("1min")
    assert report.cutoff == report.anchor - pd.Timedelta("90D")
    assert (report.new, report.changed, report.removed) == (0, 2, 1)
    changes = dict(
        zip(report.changes["transaction_id"], report.changes["change"].astype(str), strict=True)
    )
    assert changes == {recent[1]["id"]: "edited", recent[2]["id"]: "removed", moved: "edited"}
    assert report.list_pages == 1 and report.requests - named(sb) < 10
    # the edited one's new revision, then the two the walk did not see (one 404)
    assert report.details_fetched == routes(sb).count(DETAIL) == 3
    text = str(report)
    assert "Window sync" in text and "90 days" in text
    assert "not seen until the next full sync" in text
    assert "removals were only inferred from the cutoff on" in text
    assert "look_back='90 days'" in repr(report)
    assert mirror.syncs_df()["look_back_seconds"].tolist()[-1] == 90 * 86400

    full = mirror.sync()
    assert full.kind == "full" and (full.new, full.changed, full.removed) == (0, 1, 0)
    assert full.changes["transaction_id"].tolist() == [old]


def test_a_window_sync_reads_an_unseen_row_fresh_not_as_the_client_cached_it(sb, mirror, client):
    # the analyst looked at a transaction (its detail is in the client's cache); it is then
    # re-dated to before the window: the window sync must see where it went, and store the row
    # as the list shows it (no lines in it)
    rows = rows_by_time(sb)
    moved = rows[1]["id"]
    client.transaction(moved)  # cached, at its old time inside the window
    sb.edit_transaction(moved, transaction_time=rows[-3]["transaction_time"])
    report = mirror.sync(look_back="30D")
    assert report.kind == "window"
    assert report.changes["change"].astype(str).tolist() == ["edited"]
    now = {r["id"]: r for r in rows_by_time(sb)}
    got = mirror.transactions_df().set_index("transaction_id")
    assert got.loc[moved, "transaction_time"] == pd.Timestamp(now[moved]["transaction_time"])
    assert got.loc[moved, "revision"] == now[moved]["revision"]
    assert_same_frame(mirror.transactions_df(), frames.transactions_df(rows_by_time(sb)))


def test_a_look_back_reaching_the_end_of_the_list_is_a_full_sync(sb, mirror):
    report = mirror.sync(look_back="3650D")
    assert report.kind == "full" and report.unchanged == SIZE
    assert "the look-back reached the end of the list" in str(report).lower()


@pytest.mark.parametrize("bad", ["soon", "-3D", 0])
def test_a_bad_look_back_is_a_config_error(mirror, bad):
    with pytest.raises(ConfigError, match="sync: look_back"):
        mirror.sync(look_back=bad)


@pytest.mark.parametrize("bare", [90, "90", 90.0])
def test_a_look_back_without_a_unit_is_refused_before_anything_is_sent_or_written(sb, mirror, bare):
    # pandas reads a bare 90 as 90 nanoseconds: a "window sync" that would compare nothing.
    sb.edit_transaction(rows_by_time(sb)[0]["id"])  # something a sync would write
    before = dump(mirror.path)
    sb.clear_log()
    with pytest.raises(
        ConfigError, match=r'look_back=.*has no unit: write look_back="90D" for days'
    ):
        mirror.sync(look_back=bare)
    assert sb.requests == [] and dump(mirror.path) == before
    assert not Path(str(mirror.path) + ".lock").exists()
    assert mirror.sync(look_back="90D").changed == 1  # with its unit, the same look-back works


# ------------------------------------------------------------------------- interruptions


def test_failure_mid_sync_keeps_the_file_consistent_and_next_sync_completes(sb, tmp_path, pristine):
    # One detail in flight, so "the 25th request" is the 24th detail (with several in flight
    # the count kept depends on arrival order: tests/test_client_concurrency.py).
    with make_client(sb, tmp_path, retries=0, concurrency=1) as client:
        mirror = TransactionMirror(tmp_path / "m.sqlite", client)
        mirror.info()  # first use: the team is asked for and the file made
        sb.faults = Faults(on_requests={25}, kinds=("500",))  # 1 list page, then 23 details
        with pytest.raises(ServerError):
            mirror.sync()
        info = mirror.info()
        assert (info["transactions"], info["syncs"], info["interrupted_sync_pending"]) == (
            0,
            0,
            True,
        )
        with sqlite3.connect(tmp_path / "m.sqlite") as conn:
            assert conn.execute("SELECT count(*) FROM details").fetchone()[0] == 23
        sb.faults = None
        report = mirror.sync()
    assert (report.new, report.details_reused, report.details_fetched) == (SIZE, 23, SIZE - 23)
    assert "23 details reused from an interrupted sync" in str(report)
    done = TransactionMirror(pristine)
    assert_same_frame(mirror.transactions_df(), done.transactions_df())
    assert_same_frame(mirror.lines_df(), done.lines_df())


_CHILD = """
import os, sys
from invtools.api import Client
from invtools.mirror import TransactionMirror
client = Client(os.environ["SBX_TOKEN"], base_url=sys.argv[1], cache=False, rate_limit=0,
                progress=False)
TransactionMirror(sys.argv[2], client).sync()
print("finished")
"""


def test_killed_sync_resumes_to_the_state_of_an_uninterrupted_one(sb, tmp_path, pristine):
    path = tmp_path / "killed.sqlite"
    # The details of the 55 newest transactions are answered, the others' not until the test
    # ends: the child can never finish, so it is mid-sync when it is killed, however loaded
    # the machine. The sync hands details back newest first and commits them 50 at a time, so
    # it commits some, in whatever order its requests arrive (a hold by arrival order once
    # fell inside the first batch: nothing was ever committed). The test kills it once it sees
    # one committed, and each it saw must be reused.
    answered = {t["id"] for t in sb.data("shop").transactions[:55]}
    release, original = threading.Event(), sb.handle

    def hold_the_rest(method, target, headers, fault=None):
        tid = target.split("?")[0].rsplit("/", 1)[-1]
        if target.startswith(f"{LIST}/") and tid.isdigit() and int(tid) not in answered:
            release.wait(120)
        return original(method, target, headers, fault=fault)

    sb.handle = hold_the_rest
    env = {**os.environ, "SBX_TOKEN": sb.tokens["shop"], "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, sb.base_url, str(path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stored = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if path.exists():
                try:
                    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                        stored = conn.execute("SELECT count(*) FROM details").fetchone()[0]
                except sqlite3.OperationalError:
                    stored = 0  # schema not created yet
            if stored >= 1:
                break
            time.sleep(0.05)
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGKILL)
        assert stored >= 1, "no detail committed in 60 s"
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
        release.set()
    assert child.returncode == -signal.SIGKILL

    sb.handle = original
    with make_client(sb, tmp_path) as client:
        mirror = TransactionMirror(path, client)
        assert mirror.info()["transactions"] == 0  # nothing applied, nothing half-applied
        report = mirror.sync()
    assert report.new == SIZE and report.details_reused >= stored  # every one committed
    assert report.details_fetched == SIZE - report.details_reused < SIZE
    done = TransactionMirror(pristine)
    assert_same_frame(mirror.transactions_df(), done.transactions_df())
    assert_same_frame(mirror.lines_df(), done.lines_df())


_FULL_DISK = """
import json, os, resource, signal, sys
from invtools.api import Client
from invtools.errors import InvtoolsError
from invtools.mirror import TransactionMirror

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
client = Client(os.environ["SBX_TOKEN"], base_url=sys.argv[1], cache=False, rate_limit=0,
                progress=False)
try:
    TransactionMirror(sys.argv[2], client).sync()
except InvtoolsError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    print(json.dumps({"error": None}))
"""


@pytest.mark.parametrize("share", [0.05, 0.33, 0.66])
def test_a_full_disk_is_the_packages_error_naming_the_file_and_loses_nothing(
    sb, tmp_path, pristine, share
):
    """Issue 26, item 8: a full disk (``ulimit -f``, a small tmpfs) ended a sync in a bare
    ``SystemError`` or ``sqlite3.OperationalError: cannot rollback``."""
    path = tmp_path / "full.sqlite"
    env = {**os.environ, "SBX_TOKEN": sb.tokens["shop"], "PYTHONPATH": str(ROOT)}
    limit = int(pristine.stat().st_size * share)  # full while made, fetching, or applying
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, sb.base_url, str(path), str(limit)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["error"] is not None and str(path) in said["message"], said
    assert "full" in said["message"], said
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with make_client(sb, tmp_path) as client:  # space again: the sync completes
        mirror = TransactionMirror(path, client)
        mirror.sync()
    done = TransactionMirror(pristine)
    assert_same_frame(mirror.transactions_df(), done.transactions_df())
    assert_same_frame(mirror.lines_df(), done.lines_df())


# ------------------------------------------------------------------ the file and its team


def test_refuses_to_sync_another_teams_client_into_the_file(sb, mirror, tmp_path):
    with make_client(sb, tmp_path, team="basic") as other:
        opened = TransactionMirror(mirror.path, other)  # sends nothing, checks nothing yet
        with pytest.raises(ConfigError) as err:
            opened.sync()
    msg = str(err.value)
    assert sb.data("shop").team["name"] in msg and sb.data("basic").team["name"] in msg
    assert "another file" in msg


def test_file_is_private_and_holds_no_token(sb, mirror):
    mirror.sync()
    for f in mirror.path.parent.glob(mirror.path.name + "*"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        assert sb.tokens["shop"].encode() not in f.read_bytes()
    assert sb.tokens["shop"] not in repr(mirror) + mirror._repr_html_()


def test_a_mirror_in_new_folders_is_private_all_the_way_down(sb, client, tmp_path):
    path = tmp_path / "a" / "b" / "c" / "shop.sqlite"
    outside = stat.S_IMODE(tmp_path.stat().st_mode)
    umask = os.umask(0o022)  # the common default, which mkdir(mode=0o700) alone does not beat
    try:
        TransactionMirror(path, client).info()  # its first use makes the file
    finally:
        os.umask(umask)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == outside  # an existing folder: untouched


def test_a_default_mirror_folder_is_private(client, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    umask = os.umask(0o022)
    try:
        mirror = TransactionMirror(None, client)
    finally:
        os.umask(umask)
    for folder in (tmp_path / "data" / "invtools", mirror.path.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def folder_state(folder: Path) -> dict:
    return {
        p.name: (stat.S_IMODE(p.stat().st_mode), p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.iterdir())
    }


def test_repr_reads_the_file_and_changes_nothing(mirror):
    before = folder_state(mirror.path.parent)
    text, page = repr(mirror), mirror._repr_html_()
    assert f"{SIZE} transactions" in text and "last sync" in text
    assert "Greenfield" in page and str(SIZE) in page
    assert folder_state(mirror.path.parent) == before
    # With another connection holding the file open (its journal files exist), the same.
    with sqlite3.connect(mirror.path) as other:
        other.execute("SELECT count(*) FROM transactions").fetchone()
        before = folder_state(mirror.path.parent)
        assert f"{SIZE} transactions" in repr(mirror)
        assert folder_state(mirror.path.parent) == before
    other.close()


def test_repr_of_a_mirror_not_used_yet_sends_nothing(sb, mirror, tmp_path):
    # Its repr read the file and then asked for the team (its first use) to show the path.
    (tmp_path / "fresh").mkdir()
    with make_client(sb, tmp_path / "fresh") as fresh_client:
        fresh = TransactionMirror(mirror.path, fresh_client)
        sb.clear_log()
        assert f"{SIZE} transactions" in repr(fresh) and sb.requests == []


def test_repr_of_a_removed_file_says_so_and_makes_no_file(mirror):
    folder = mirror.path.parent
    for f in folder.glob(mirror.path.name + "*"):
        f.unlink()
    before = sorted(folder.iterdir())
    text, page = repr(mirror), mirror._repr_html_()
    assert str(mirror.path) in text and "file missing" in text and "file missing" in page
    assert sorted(folder.iterdir()) == before  # nothing re-created
    # Reading it is an error that says what happened, and makes no file either.
    with pytest.raises(ConfigError, match="no longer exists"):
        mirror.transactions_df()
    with pytest.raises(ConfigError, match="no longer exists"):
        mirror.sync()
    assert sorted(p for p in folder.iterdir() if not p.name.endswith(".lock")) == before


def test_repr_of_an_unreadable_file_never_raises(mirror):
    mirror.path.write_bytes(b"not a database at all, just text")
    before = folder_state(mirror.path.parent)
    assert "cannot read" in repr(mirror) and "cannot read" in mirror._repr_html_()
    assert folder_state(mirror.path.parent) == before


def test_frames_say_they_come_from_the_mirror_of_which_team_and_service(sb, client, mirror):
    mirror.sync()
    team = client.team()
    last_sync = mirror.syncs_df()["finished_at"].iloc[-1]
    item = int(mirror.lines_df()["item_id"].iloc[0])
    got = {
        "transactions": mirror.transactions_df(),
        "removed": mirror.transactions_df(include_removed=True),
        "lines": mirror.lines_df(),
        "history": mirror.stock_history(),
        "one item": mirror.stock_history(item, location_id=None),
    }
    for name, df in got.items():
        text = json.dumps(df.attrs)  # plain JSON: survives parquet, pickle and a JSON dump
        assert sb.tokens["shop"] not in text, name
        attrs = json.loads(text)
        assert attrs["source"] == "mirror", name
        assert (attrs["team_id"], attrs["team_name"], attrs["base_url"]) == (
            team.id,
            team.name,
            sb.base_url,
        ), name
        assert attrs["endpoint"] == LIST and attrs["rows"] == len(df) > 0, name
        assert pd.Timestamp(attrs["fetched_at"]) == last_sync, name  # how fresh the rows are
    assert got["transactions"].attrs["filters"] == got["lines"].attrs["filters"] == {}
    assert got["removed"].attrs["filters"] == {"include_removed": True}
    assert got["one item"].attrs["filters"] == {"item_ids": [item]}
    # The file is the source: opened offline, the frames say the same.
    offline = TransactionMirror(mirror.path)
    assert offline.transactions_df().attrs == got["transactions"].attrs


def test_default_path_is_per_team_in_the_user_data_dir(client, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    mirror = TransactionMirror(None, client)
    team = client.team()
    assert mirror.path.is_relative_to(tmp_path / "data" / "invtools")
    assert str(team.id) in mirror.path.name
    assert mirror.info()["team_name"] == team.name


def test_offline_reading_needs_no_client_and_sync_says_what_to_do(pristine, tmp_path):
    path = shutil.copy(pristine, tmp_path / "copy.sqlite")
    mirror = TransactionMirror(path)
    assert len(mirror.transactions_df()) == SIZE and len(mirror.changes_df()) == SIZE
    assert list(mirror.transactions_df().columns) == list(frames.SCHEMAS["transactions"])
    assert list(mirror.lines_df().columns) == list(frames.SCHEMAS["lines"])
    assert mirror.syncs_df()["kind"].tolist() == ["full"]
    with pytest.raises(ConfigError, match="without a client"):
        mirror.sync()


def test_a_file_that_is_not_a_mirror_is_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE responses (key TEXT)")
    with pytest.raises(ConfigError, match="not an invtools transaction mirror"):
        TransactionMirror(other)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"hello, not sqlite" * 100)
    with pytest.raises(ConfigError, match="not a readable SQLite file"):
        TransactionMirror(junk)


def test_docstring_examples_run(client, tmp_path):
    import doctest
    import importlib
    import pkgutil

    import invtools.mirror as package

    # The names the examples assume, as the repository's conftest.py gives them to
    # `pytest --doctest-modules`: a client of the demo shop and a mirror of it, synced once.
    mirror = TransactionMirror(tmp_path / "doctest.sqlite", client)
    mirror.sync()
    names = [package.__name__] + [
        f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
    ]
    assert len(names) >= 5  # the package and its modules
    attempted = 0
    for name in names:
        result = doctest.testmod(
            importlib.import_module(name),
            extraglobs={"client": client, "mirror": mirror},
            optionflags=doctest.NORMALIZE_WHITESPACE,
        )
        assert result.failed == 0, name
        attempted += result.attempted
    assert attempted >= 10


def test_a_basic_mode_team_is_told_why_before_any_file_is_written(sb, tmp_path, monkeypatch):
    from invtools.errors import TeamModeError

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = tmp_path / "basic.sqlite"
    with make_client(sb, tmp_path, team="basic") as basic:
        sb.clear_log()
        for where in (path, None):  # a given path and the default one
            opened = TransactionMirror(where, basic)  # sends nothing yet
            with pytest.raises(TeamModeError, match="Location mode") as err:
                opened.info()  # first use: told before anything is written
            assert sb.data("basic").team["name"] in str(err.value)
        assert not path.exists() and not (tmp_path / "data").exists()
        # An existing (offline-opened, unclaimed) file: sync refuses and writes nothing.
        mirror = TransactionMirror(path)
        mirror.client = basic
        with pytest.raises(TeamModeError, match="Location mode"):
            mirror.sync()
        assert not any(r.route == LIST for r in sb.requests)  # the server was never asked
    info = mirror.info()
    assert (info["team_id"], info["base_url"], info["syncs"]) == (None, None, 0)
    assert not Path(str(path) + ".lock").exists()


# --------------------------------------------------------------- one service per file


def test_refuses_a_client_of_another_service_with_the_same_team(pristine, sb, client, tmp_path):
    """The pristine file came from another server with the same seed: same team id and name,
    another base URL -- exactly a demo team and a real one that happen to share an id."""
    path = shutil.copy(pristine, tmp_path / "other-service.sqlite")
    stored = TransactionMirror(path).info()
    assert stored["team_id"] == client.team().id and stored["base_url"] != sb.base_url
    with pytest.raises(ConfigError) as err:
        TransactionMirror(path, client).lines_df()  # refused at first use, before reading
    assert stored["base_url"] in str(err.value) and sb.base_url in str(err.value)
    assert sb.tokens["shop"] not in str(err.value)
    assert TransactionMirror(path).info()["base_url"] == stored["base_url"]  # not overwritten


def test_default_path_differs_per_service(sb, client, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    here = TransactionMirror(None, client)
    assert here.info()["base_url"] == sb.base_url
    with serve(rate_limit=0, size=SIZE) as other_sb, make_client(other_sb, tmp_path) as other:
        assert other.team().id == client.team().id
        there = TransactionMirror(None, other)
    assert there.path != here.path and there.path.parent == here.path.parent
    assert there.info()["base_url"] == other_sb.base_url


# ------------------------------------------------------------------- one sync at a time


def dump(path):
    with sqlite3.connect(path) as conn:
        lines = list(conn.iterdump())
    conn.close()
    return lines


def test_a_second_sync_while_the_lock_is_held_is_refused_and_changes_nothing(sb, mirror):
    import fcntl

    sb.edit_transaction(rows_by_time(sb)[0]["id"])  # something a sync would write
    before = dump(mirror.path)
    # Take the lock the way sync() does: another process or notebook holding it.
    fd = os.open(str(mirror.path) + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        sb.clear_log()
        with pytest.raises(LockedError, match="another sync of this mirror is running") as e:
            mirror.sync()
        assert isinstance(e.value, ConfigError)  # what it was before: an except still holds
        assert sb.requests == [] and dump(mirror.path) == before
    finally:
        os.close(fd)  # releases the lock, as a dying holder would
    report = mirror.sync()
    assert (report.changed, report.unchanged) == (1, SIZE - 1)


def test_concurrent_syncs_cannot_corrupt_each_other(sb, mirror, tmp_path):
    """A sync paused in step 2 (details) holds the lock; a second mirror object on the same
    file (another notebook of the team) is refused instead of emptying the first one's
    staging table, so the first one finishes with the right counts."""
    import threading

    new = sb.add_transaction(type="in")
    paused, resume = threading.Event(), threading.Event()
    original = sb.handle

    def slow_detail(method, target, headers, fault=None):  # the new row's detail waits
        if f"/v1/location-txs/{new['id']}" in target:
            paused.set()
            assert resume.wait(60)
        return original(method, target, headers, fault=fault)

    sb.handle = slow_detail
    result = {}

    def run():
        try:
            result["report"] = mirror.sync()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert paused.wait(60)
        with make_client(sb, tmp_path / "second") as second_client:
            second = TransactionMirror(mirror.path, second_client)
            with pytest.raises(ConfigError, match="wait for it to finish"):
                second.sync()
    finally:
        resume.set()
        thread.join(60)
    assert "error" not in result, result.get("error")
    report = result["report"]
    assert (report.new, report.removed, report.unchanged) == (1, 0, SIZE)
    assert report.changes["transaction_id"].tolist() == [new["id"]]
    with make_client(sb, tmp_path / "second") as second_client:
        again = TransactionMirror(mirror.path, second_client).sync()
    assert (again.new, again.changed, again.removed, again.unchanged) == (0, 0, 0, SIZE + 1)


def test_a_window_sync_then_a_full_one_reports_old_rows_as_new_not_backdated(sb, client, tmp_path):
    """Issue 13, item 4: 966 of 1,000 rows were logged as backdated-new."""
    m = TransactionMirror(tmp_path / "w.sqlite", client)
    first = m.sync(look_back="30D")
    assert first.kind == "window" and 0 < first.new < SIZE
    backdated = sb.add_transaction(
        type="in", transaction_time=rows_by_time(sb)[-5]["transaction_time"]
    )
    report = m.sync()
    assert report.kind == "full" and report.new == SIZE - first.new + 1
    assert report.backdated_new == 1  # only the one recorded since, with an old date
    log = report.changes.set_index("transaction_id")
    assert log.loc[backdated["id"], "change"] == "backdated-new"
    # The change log agrees with the frames' own backdated flag on every row it calls new.
    plain_new = log[log["change"] == "new"]
    assert len(plain_new) == SIZE - first.new
    assert (
        not plain_new["backdated"].fillna(False).any()
        or plain_new["backdated"].sum()
        == m.transactions_df().set_index("transaction_id").loc[plain_new.index, "backdated"].sum()
    )


def test_a_token_where_the_client_belongs_is_refused_in_words(tmp_path):
    with pytest.raises(TypeError, match=r"client must be an invtools\.Client"):
        TransactionMirror(tmp_path / "m.sqlite", "a-token")
    assert not (tmp_path / "m.sqlite").exists()


# -- issue 13, item 5: mirror files that are read-only, newer, damaged or in the wrong place --
def _snapshot_of(folder):
    return {
        p.name: (p.stat().st_mode, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes read-only files anyway")
def test_a_read_only_mirror_reads_offline_and_refuses_to_sync_in_words(
    pristine, tmp_path, sb, client
):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "m.sqlite"
    shutil.copy(pristine, path)
    expected = TransactionMirror(pristine).transactions_df()
    path.chmod(0o400)
    folder.chmod(0o500)
    try:
        before = _snapshot_of(folder)
        m = TransactionMirror(path)
        assert_same_frame(m.transactions_df(), expected)
        assert len(m.lines_df()) and m.info()["syncs"] == 1
        with pytest.raises(ConfigError, match="can only be read"):
            TransactionMirror(path, client).sync()
        assert _snapshot_of(folder) == before  # nothing written, nothing created
    finally:
        folder.chmod(0o700)
        path.chmod(0o600)


def test_a_read_only_file_is_read_without_writing_even_for_root(pristine, tmp_path, monkeypatch):
    """The same path as above, for a machine where the tests run as root: the mirror is told
    the file may only be read (as os.access says for a user), and writes nothing."""
    path = tmp_path / "m.sqlite"
    shutil.copy(pristine, path)
    monkeypatch.setattr("invtools.mirror.mirror.os.access", lambda *a, **k: False)
    before = _snapshot_of(tmp_path)
    m = TransactionMirror(path)
    assert m.read_only and len(m.transactions_df()) == SIZE
    assert _snapshot_of(tmp_path) == before


def test_a_newer_schema_is_refused_before_anything_is_changed(pristine, tmp_path):
    path = tmp_path / "m.sqlite"
    shutil.copy(pristine, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    before = _snapshot_of(tmp_path)
    with pytest.raises(ConfigError, match=r"newer invtools.*schema 99.*not changed") as info:
        TransactionMirror(path)
    assert str(path) in str(info.value)
    assert _snapshot_of(tmp_path) == before


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_file_is_a_config_error_naming_it(pristine, tmp_path, damage):
    path = tmp_path / "m.sqlite"
    if damage == "garbage":
        path.write_bytes(b"this is not a database, it is a shopping list\n" * 100)
    else:
        data = pristine.read_bytes()
        path.write_bytes(data[:100] + b"\0" * 4096 + data[5000:20000])
    with pytest.raises(ConfigError) as info:
        TransactionMirror(path).transactions_df()
    assert str(path) in str(info.value) and "new file" in str(info.value)


def test_a_path_under_a_file_or_a_folder_is_a_config_error_naming_it(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    with pytest.raises(ConfigError, match="cannot make the mirror file") as info:
        TransactionMirror(plain / "m.sqlite")
    assert str(plain / "m.sqlite") in str(info.value)
    with pytest.raises(ConfigError, match="is a folder"):
        TransactionMirror(tmp_path)


# ------------------------------------------------- what a sync meets between list and detail
# (issue 20: paths of invtools.mirror.sync that no test took, found by mutation testing)


def test_a_window_sync_reads_the_list_fresh_even_when_the_cache_holds_it(sb, mirror, client):
    """The client caches the list for a while; a sync must not take it from there, or it
    reports "nothing changed" for edits made a moment ago."""
    client.transactions_df()  # the analyst's own look: the list is now in the cache
    client.transactions_df()
    rows = rows_by_time(sb)
    edited = sb.edit_transaction(rows[1]["id"])
    report = mirror.sync(look_back="90D")
    assert report.kind == "window" and report.changed == 1
    assert report.changes["transaction_id"].tolist() == [edited["id"]]
    mine = mirror.transactions_df().set_index("transaction_id")["revision"].to_dict()
    assert mine == {r["id"]: r["revision"] for r in rows_by_time(sb)}


def test_a_window_sync_checks_every_unseen_row_not_only_the_first(sb, mirror):
    """Rows inside the window that the list no longer shows: each is asked for; the deleted
    ones are removed, the ones edited to a time before the window stay, as edits."""
    rows = rows_by_time(sb)
    newest = pd.Timestamp(rows[0]["transaction_time"])
    recent = [
        r for r in rows if pd.Timestamp(r["transaction_time"]) >= newest - pd.Timedelta("90D")
    ]
    assert len(recent) >= 7
    before = {r["id"]: r for r in rows}
    deleted = [recent[1]["id"], recent[3]["id"], recent[5]["id"]]
    moved = [recent[2]["id"], recent[4]["id"], recent[6]["id"]]  # between the deleted ones,
    for tx in deleted:  # whichever order they're read
        sb.delete_transaction(tx)
    for tx in moved:
        sb.edit_transaction(tx, transaction_time=rows[-2]["transaction_time"])

    sb.clear_log()
    report = mirror.sync(look_back="90D")
    assert (report.kind, report.new, report.changed, report.removed) == ("window", 0, 3, 3)
    changes = dict(
        zip(report.changes["transaction_id"], report.changes["change"].astype(str), strict=True)
    )
    assert changes == {**{tx: "removed" for tx in deleted}, **{tx: "edited" for tx in moved}}
    asked = {int(r.path.rsplit("/", 1)[1]) for r in sb.requests if r.route == DETAIL}
    assert set(deleted) | set(moved) <= asked
    truth = {r["id"]: r["revision"] for r in rows_by_time(sb)}
    mine = mirror.transactions_df().set_index("transaction_id")
    assert mine["revision"].to_dict() == truth
    for tx in moved:
        assert mine.loc[tx, "revision"] == before[tx]["revision"] + 1
        assert mine.loc[tx, "transaction_time"] == pd.Timestamp(rows[-2]["transaction_time"])
    removed = mirror.transactions_df(include_removed=True).set_index("transaction_id")
    assert set(removed.index[removed["removed_at"].notna()]) == set(deleted)


class DeletesBeforeDetails(Client):
    """A client whose server deletes some transactions after the list was read and before
    their details are asked for (what a colleague's delete in the web app does mid-sync)."""

    def __init__(self, *args, server, doomed, **kw):
        super().__init__(*args, **kw)
        self.server, self.doomed = server, list(doomed)

    def transaction_details(self, rows, **kw):
        while self.doomed:
            self.server.delete_transaction(self.doomed.pop())
        return super().transaction_details(rows, **kw)


@pytest.mark.parametrize("look_back", [None, "3650D"])
def test_a_transaction_deleted_between_the_list_and_its_detail_is_not_mirrored(
    sb, pristine, tmp_path, look_back
):
    rows = rows_by_time(sb)
    added = sb.add_transaction(type="in")  # new to the mirror
    edited = sb.edit_transaction(rows[10]["id"])  # a new revision of a mirrored row
    kept = sb.edit_transaction(rows[20]["id"])  # a new revision nobody deletes
    path = copy_for(pristine, sb, tmp_path / "m.sqlite")
    with DeletesBeforeDetails(
        sb.tokens["shop"],
        base_url=sb.base_url,
        cache=tmp_path / "c.sqlite",
        rate_limit=0,
        progress=False,
        server=sb,
        doomed=[added["id"], edited["id"]],
    ) as client:
        mirror = TransactionMirror(path, client)
        report = mirror.sync(look_back=look_back)
    assert (report.new, report.changed, report.removed) == (0, 1, 1)
    changes = dict(
        zip(report.changes["transaction_id"], report.changes["change"].astype(str), strict=True)
    )
    assert changes == {kept["id"]: "edited", edited["id"]: "removed"}
    truth = {r["id"]: r["revision"] for r in rows_by_time(sb)}
    assert mirror.transactions_df().set_index("transaction_id")["revision"].to_dict() == truth
    assert added["id"] not in set(mirror.transactions_df(include_removed=True)["transaction_id"])
    assert set(mirror.lines_df()["transaction_id"]) == set(truth)


def test_a_row_seen_again_after_its_removal_is_restored(sb, mirror, tmp_path):
    """A removal is inferred from the list; should the list show the row again (a removal
    inferred from a list that changed during the walk), the next sync restores it. The list
    "showing it again" is a second server with the same seed, where it was never deleted."""
    rows = rows_by_time(sb)
    gone = rows[5]
    sb.delete_transaction(gone["id"])
    assert mirror.sync().removed == 1
    with serve(rate_limit=0, size=SIZE) as again, make_client(again, tmp_path / "again") as other:
        with sqlite3.connect(mirror.path) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'base_url'", (again.base_url,))
        conn.close()
        report = TransactionMirror(mirror.path, other).sync()
        truth = {r["id"]: r["revision"] for r in again.data("shop").transactions}
    assert (report.new, report.changed, report.removed) == (0, 1, 0)
    change = report.changes.iloc[0]
    assert (change["transaction_id"], str(change["change"])) == (gone["id"], "restored")
    assert change["old_revision"] == change["new_revision"] == gone["revision"]
    assert "1 changed" in str(report)
    restored = TransactionMirror(mirror.path)
    assert restored.transactions_df().set_index("transaction_id")["revision"].to_dict() == truth
    assert restored.transactions_df(include_removed=True)["removed_at"].isna().all()
    assert restored.changes_df()["change"].astype(str).tolist()[-2:] == ["removed", "restored"]


def test_the_change_report_names_each_field_that_changed_old_and_new(sb, mirror):
    # issue 35, item 2: a memo-only edit was a row "edited" whose shown columns were unchanged
    rows = rows_by_time(sb)
    memo_only, partnered, recounted, moved = (rows[i]["id"] for i in (2, 5, 8, 11))
    partners = sb.data("shop").partners
    before = {r["id"]: r for r in rows}
    detail = sb.data("shop").transaction(recounted)
    first_item, first_qty = detail["items"][0]["id"], detail["items"][0]["quantity"]
    sb.edit_transaction(memo_only, memo="counted twice")
    was = (before[partnered]["partner"] or {}).get("id")
    new_partner = next(p for p in partners if p["id"] != was)
    sb.edit_transaction(partnered, partner=new_partner["id"])
    sb.edit_transaction(recounted)  # one line's quantity nudged, as a typo fixed
    sb.edit_transaction(moved, transaction_time="2026-06-01T09:00:00Z")
    changes = mirror.sync().changes.set_index("transaction_id")
    assert changes.loc[memo_only, "fields"] == "memo"
    assert "memo: None → 'counted twice'" in changes.loc[memo_only, "what_changed"]
    assert changes.loc[partnered, "fields"] == "partner"
    assert repr(new_partner["name"]) in changes.loc[partnered, "what_changed"]
    assert changes.loc[recounted, "fields"] == "total_quantity, lines"
    after = sb.data("shop").transaction(recounted)["items"]
    new_qty = next(line["quantity"] for line in after if line["id"] == first_item)
    assert f"{first_qty:g} → {new_qty:g}" in changes.loc[recounted, "what_changed"]
    assert changes.loc[moved, "fields"] == "transaction_time"
    assert "2026-06-01 09:00" in changes.loc[moved, "what_changed"]
    log = mirror.changes_df()  # the log keeps them
    edits = log[(log["change"] == "edited").to_numpy()].set_index("transaction_id")
    assert "counted twice" in edits.loc[memo_only, "what_changed"]


def test_a_first_syncs_change_log_is_the_servers_rows_whatever_the_chunks(sb, client, tmp_path):
    """The rows of a sync are decoded a chunk at a time (a first sync of 100,000 held them all
    as dicts: +256 MiB): every row's log entry is its own, across the chunks' seams."""
    import invtools.mirror.sync as sync

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sync, "_VERSIONS_CHUNK", 7)  # many seams in a small shop
        report = TransactionMirror(tmp_path / "chunked.sqlite", client).sync()
    truth = frames.transactions_df(rows_by_time(sb)).set_index("transaction_id")
    log = report.changes.set_index("transaction_id").loc[truth.index]
    assert (log["change"] == "new").all() and len(log) == len(truth) > 7
    assert log["new_revision"].tolist() == truth["revision"].tolist()
    assert log["new_total_quantity"].tolist() == truth["total_quantity"].tolist()
    assert log["backdated"].tolist() == truth["backdated"].tolist()
    assert truth["backdated"].any() and not truth["backdated"].all()
