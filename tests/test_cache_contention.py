"""The cache file has more writers than the client's own connection: the walk records, other
clients of another process, several teams at once (``each_team``). A write the file's lock
refuses for a moment must never fail the user's fetch.

The defect (CI on requests-cache 1.2, README's ``each_team`` block): ``lines_df()`` of team
'york' raised ``sqlite3.OperationalError: database is locked`` out of the cleanup that forgets
a transaction's older revisions once the newest is stored, while the other teams' walks wrote
their walk records into the same file.

The second (CI, under full CPU load): the other writer of the test below waited over 10 s.
The cleanup's delete and the walk records held the file's write lock across Python code, and
beside requests-cache's connection (shared by every thread) the whole process froze for 5 s
at a time. The cleanup now deletes through requests-cache's own connection of the file, under
its lock, whose wait is bounded (``tests/test_cache_file.py``); the walk records, on a
connection of their own, still write one autocommit statement at a time
(``_lock_held_between_calls``).
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from contextlib import contextmanager

import pytest


def _hammer(path, stop: threading.Event, errors: list) -> None:
    """Another writer of the cache file: a short committed write every 10 ms, as
    walk records and a second process's client make, until ``stop``."""
    con = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS other_writer (n INTEGER)")
        n = 0
        while not stop.is_set():
            con.execute("INSERT INTO other_writer VALUES (?)", (n,))
            n += 1
            stop.wait(0.01)
    except sqlite3.Error as exc:  # pragma: no cover - the test reports it
        errors.append(exc)
    finally:
        con.close()


@pytest.mark.timeout(120)
def test_details_fetched_while_another_writer_uses_the_file_are_right_and_raise_nothing(
    sb, make_client, tmp_path
):
    before = {tx["id"]: tx["revision"] for tx in sb.data("shop").transactions[:60]}
    edited = list(before)
    for tx_id in edited:
        for _ in range(3):
            sb.edit_transaction(tx_id)
    client = make_client(sb, concurrency=8)
    client.items_df()  # the cache file exists, with its tables
    stop, errors = threading.Event(), []
    writer = threading.Thread(target=_hammer, args=(client.cache_path, stop, errors))
    writer.start()
    try:
        for _ in range(3):  # each round stores every detail again, and forgets older revisions
            client.clear_cache()
            for tx_id in edited:  # what an earlier run stored: now an older revision
                client.transaction(tx_id, revision=before[tx_id])
            lines = client.lines_df()
    finally:
        stop.set()
        writer.join()
    assert not errors
    truth = sb.data("shop")
    revisions = lines.groupby("transaction_id")["revision"].first()
    for tx_id in edited:
        assert revisions[tx_id] == truth.transaction(tx_id)["revision"] == before[tx_id] + 3
    assert set(revisions.index) == {tx["id"] for tx in truth.transactions}


def test_forget_on_a_file_another_connection_holds_raises_the_package_error(sb, make_client):
    from invtools.errors import CacheError, InvtoolsError

    client = make_client(sb)
    tx = sb.data("shop").transactions[0]
    path = f"/v1/location-txs/{tx['id']}"
    client.transaction(tx["id"], revision=tx["revision"])
    holder = sqlite3.connect(client.cache_path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held: another process mid-write
    try:
        with pytest.raises(CacheError, match="busy") as caught:
            client.forget([(path, {"revision": tx["revision"]})])
        assert isinstance(caught.value, InvtoolsError)
        assert sb.tokens["shop"] not in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert client.in_cache([(path, {"revision": tx["revision"]})]) == [True]  # nothing lost
    client.forget([(path, {"revision": tx["revision"]})])  # the lock gone: done
    assert client.in_cache([(path, {"revision": tx["revision"]})]) == [False]


def test_forgetting_answers_that_are_not_cached_waits_for_no_lock(sb, make_client):
    """A transaction fetched at its revision forgets its older revisions; when none is cached
    (the usual case: a first fetch, or a transaction never edited) nothing is written, so
    another process mid-write neither delays the fetch nor fails the cleanup. Before, every
    detail fetched deleted on a connection of its own: with eight in flight those deletes,
    the client's own writes and a second writer starved each other (the second writer waited
    over 10 s in CI)."""
    from invtools.errors import CacheError

    client = make_client(sb)
    tx = sb.data("shop").transactions[0]
    path = f"/v1/location-txs/{tx['id']}"
    client.transaction(tx["id"], revision=tx["revision"])  # a cached answer: not asked about
    holder = sqlite3.connect(client.cache_path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held: another process mid-write
    try:
        client.forget([(path, {"revision": tx["revision"] + 1}), ("/v1/items", None)])
        with pytest.raises(CacheError, match="busy"):  # one that is cached still needs it
            client.forget(
                [(path, {"revision": tx["revision"] + 1}), (path, {"revision": tx["revision"]})]
            )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert client.in_cache([(path, {"revision": tx["revision"]})]) == [True]


@contextmanager
def _lock_held_between_calls(path):
    """Yields a list that names each SQLite call of this thread after which the file's write
    lock was still held (another connection could not take it): a write left open while the
    thread goes on in Python. Such a thread needs the GIL to let the lock go, and beside
    requests-cache's connection (shared by every thread, waiting for the lock inside SQLite
    while another thread holding the GIL waits for that connection) the process froze until
    a 5 s busy timeout ran out."""
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    held: list[str] = []

    def watch(frame, event, arg):
        owner = getattr(arg, "__self__", None)
        if event != "c_return" or not isinstance(owner, (sqlite3.Connection, sqlite3.Cursor)):
            return
        if owner is probe:
            return
        sys.setprofile(None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
        except sqlite3.OperationalError:
            held.append(arg.__name__)
        finally:
            sys.setprofile(watch)

    sys.setprofile(watch)
    try:
        yield held
    finally:
        sys.setprofile(None)
        probe.close()


def test_a_walk_record_is_written_without_holding_the_lock_between_two_calls(tmp_path):
    from datetime import UTC, datetime

    from invtools.api.plan import Plan
    from invtools.api.walkrecord import FileStore, WalkRecord

    path = tmp_path / "cache.sqlite"
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").close()  # as requests-cache
    when = datetime(2026, 5, 1, tzinfo=UTC)
    record = WalkRecord(began=when, ended=when, plan=Plan("seams", ((5, 41),)), pages={})
    with _lock_held_between_calls(path) as held:
        FileStore(path, "tok:list").save("whole", record)
        assert FileStore.clear(path, "tok:") == 1
    assert held == []
