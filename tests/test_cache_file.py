"""The response cache file fails as the package's own error, naming the file and what to do
(issue 24, item 4; issue 26, items 8 and 9): locked by another process, damaged, another
program's database, a full disk. Real files, real HTTP to the stand-in server on 127.0.0.1.

Before: a store waited for a write lock held elsewhere for ever, whatever ``timeout=`` said,
and cached reads in the client's other threads with it; a damaged file failed mid-walk with a
bare ``sqlite3.DatabaseError``; another program's ``responses`` table was ALTERed before a
bare error; a full disk showed as ``SystemError`` or "cannot rollback"; ``cache_info()``
called an unreadable file "empty".
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

import invtools
from invtools.errors import CacheError

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]
#: The clients' connect timeout here: how long a write waits for the file's lock.
WAIT = 1.0
#: What "no hang" means: the timeout and a generous margin for a loaded machine.
NO_HANG = WAIT + 10.0


@contextmanager
def _write_locked(path):
    """Another program in the middle of a write: a second connection holds the file's write
    lock until the block ends."""
    holder = sqlite3.connect(path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _in_thread(call):
    """Start ``call`` in a thread; returns a function waiting at most ``NO_HANG`` seconds
    for its ``("ok", value)`` or ``("error", exception)``, or None if it is still running."""
    out: list = []

    def run():
        try:
            out.append(("ok", call()))
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result():
        thread.join(NO_HANG)
        return out[0] if out else None

    return result


def _assert_names_the_file(err, path, *words):
    msg = str(err)
    assert isinstance(err, CacheError) and isinstance(err, invtools.InvtoolsError)
    assert str(path) in msg
    for word in words:
        assert word in msg, msg


# -- locked by another process ---------------------------------------------------------------


def test_storing_an_answer_in_a_locked_file_fails_within_the_timeout(sb, make_client):
    client = make_client(sb, timeout=(WAIT, 5.0))
    client.team()  # the file exists, with its tables
    with _write_locked(client.cache_path):
        started = time.monotonic()
        # misses, whose answers are to be stored: one waits for the file, one for the other
        stores = [_in_thread(client.members), _in_thread(client.attributes)]
        outcomes = [store() for store in stores]
        took = time.monotonic() - started
    assert None not in outcomes, f"still waiting after {NO_HANG} s"
    for kind, err in outcomes:
        assert kind == "error"
        _assert_names_the_file(err, client.cache_path, "busy", "another program", "cache=False")
        assert sb.tokens["shop"] not in str(err)
    assert WAIT * 0.5 <= took <= NO_HANG
    assert client.members() == sb.data("shop").members  # the lock gone: it works again


def test_cached_answers_in_other_threads_come_while_a_store_waits_for_the_lock(sb, make_client):
    client = make_client(sb, timeout=(WAIT, 5.0))
    team = client.team()
    with _write_locked(client.cache_path):
        store = _in_thread(client.members)  # waits for the lock
        time.sleep(0.2)
        read = _in_thread(lambda: client.team(refresh=False) and client.get("/v1/teams/linked"))
        stored, cached = store(), read()
    assert stored is not None and cached is not None, "a call still waits"
    assert stored[0] == "error" and isinstance(stored[1], CacheError)
    assert cached[0] == "ok" and team.id == client.team().id


# -- damaged ---------------------------------------------------------------------------------


def _damage(path: Path, *, keep: int) -> None:
    """Overwrite the file from byte ``keep`` on with garbage (a disk or copy gone wrong)."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(keep)
        fh.write(b"\xa5" * (size - keep))


def test_a_damaged_cache_file_fails_mid_walk_with_the_package_error(sb, make_client, tmp_path):
    path = tmp_path / "damaged.sqlite"
    first = make_client(sb, cache=path)
    first.transactions_df()
    first.close()
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    _damage(path, keep=page)  # the schema intact, every table's pages garbage
    with pytest.raises(CacheError) as caught:
        make_client(sb, cache=path).transactions_df()
    _assert_names_the_file(caught.value, path, "damaged", "elete")


def test_a_file_that_is_no_database_is_refused_when_the_client_is_made(sb, make_client, tmp_path):
    path = tmp_path / "damaged.sqlite"
    first = make_client(sb, cache=path)
    first.items_df()
    first.close()
    _damage(path, keep=0)
    with pytest.raises(CacheError) as caught:
        make_client(sb, cache=path)
    _assert_names_the_file(caught.value, path, "damaged", "elete")


# -- another program's file ------------------------------------------------------------------


def _foreign(path: Path) -> list:
    """Another program's SQLite file with a ``responses`` table of its own."""
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("CREATE TABLE responses (id INTEGER PRIMARY KEY, body TEXT)")
        con.execute("INSERT INTO responses (body) VALUES ('theirs')")
    return _contents(path)


def _contents(path: Path) -> list:
    with closing(sqlite3.connect(path)) as con:
        return [
            *con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name"),
            *con.execute("SELECT * FROM responses"),
        ]


def test_another_programs_database_is_refused_and_left_as_it_was(sb, make_client, tmp_path):
    path = tmp_path / "theirs.sqlite"
    before = _foreign(path)
    with pytest.raises(CacheError) as caught:
        make_client(sb, cache=path).members()
    _assert_names_the_file(caught.value, path, "another program")
    for look in (invtools.cache_info, invtools.prune_cache):
        with pytest.raises(CacheError) as caught:
            look(path)
        _assert_names_the_file(caught.value, path, "another program")
    assert _contents(path) == before


def test_an_unreadable_file_is_said_to_be_unreadable_not_empty(tmp_path):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(os.urandom(335_000))
    for look in (invtools.cache_info, invtools.prune_cache):
        with pytest.raises(CacheError) as caught:
            look(path)
        _assert_names_the_file(caught.value, path, "damaged")


# -- a full disk -----------------------------------------------------------------------------

_FULL_DISK = """
import json, os, resource, signal, sys
import invtools

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
client = invtools.Client(
    os.environ["T"], base_url=os.environ["U"], cache=sys.argv[1], rate_limit=0, progress=False
)
try:
    client.lines_df()
except invtools.InvtoolsError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    print(json.dumps({"error": None}))
"""


def test_a_full_disk_is_the_package_error_and_leaves_the_file_whole(sb, make_client, tmp_path):
    path = tmp_path / "full.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path), str(256 * 1024)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["error"] == "CacheError", said
    assert str(path) in said["message"] and "full" in said["message"]
    with closing(sqlite3.connect(path)) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert make_client(sb, cache=path).members() == sb.data("shop").members  # still usable
