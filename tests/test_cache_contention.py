"""The cache file has more writers than the client's own connection: other clients of another
process, several teams at once (``each_team``), another program. A write the file's lock
refuses for a moment must never fail the user's fetch.

The defect (CI on requests-cache 1.2, README's ``each_team`` block): ``lines_df()`` of team
'york' raised ``sqlite3.OperationalError: database is locked`` out of the cleanup that forgets
a transaction's older revisions once the newest is stored, while the other teams' walks wrote
their walk records into the same file.

The second (CI, under full CPU load): the other writer of the test below waited over 10 s.
The cleanup's delete and the walk records held the file's write lock across Python code, and
beside requests-cache's connection (shared by every thread) the whole process froze for 5 s
at a time. The cleanup now deletes through requests-cache's own connection of the file, under
its lock, whose wait is bounded (``tests/test_cache_file.py``), and the walk records are files
of their own beside it (:mod:`invtools.api.walk`).
"""

from __future__ import annotations

import sqlite3
import threading

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


class Cached:
    """A session of the http layer on a cache file in ``folder``, holding the details at their
    revision of ``txs`` (the first transactions of the stand-in's shop), fetched with its
    token: what a client's cleanup forgets."""

    def __init__(self, sb, folder, n=1):
        from invtools.http import make_session

        self.session = make_session(cache_path=folder / "cache.sqlite")
        self.auth = f"Bearer {sb.tokens['shop']}"
        self.path = folder / "cache.sqlite"
        self.txs = sb.data("shop").transactions[:n]
        self.base = sb.base_url
        for tx in self.txs:
            got = self.session.get(self.url(tx["id"], tx["revision"]),
                                   headers={"Authorization": self.auth})  # fmt: skip
            assert got.status_code == 200 and not got.from_cache

    def url(self, tid, revision):
        return f"{self.base}/v1/location-txs/{tid}?revision={revision}"

    def held(self, urls):
        from invtools.http.cache import held

        return held(self.session, self.auth, urls)

    def forget(self, urls):
        from invtools.http.cache import forget

        forget(self.session, self.auth, urls)


def test_forget_on_a_file_another_connection_holds_raises_the_package_error(sb, tmp_path):
    from invtools.errors import CacheError, InvtoolsError

    cached = Cached(sb, tmp_path)
    tx = cached.txs[0]
    url = cached.url(tx["id"], tx["revision"])
    holder = sqlite3.connect(cached.path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held: another process mid-write
    try:
        with pytest.raises(CacheError, match="busy") as caught:
            cached.forget([url])
        assert isinstance(caught.value, InvtoolsError)
        assert sb.tokens["shop"] not in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cached.held([url]) == [True]  # nothing lost
    cached.forget([url])  # the lock gone: done
    assert cached.held([url]) == [False]


def test_forgetting_answers_that_are_not_cached_waits_for_no_lock(sb, tmp_path):
    """A transaction fetched at its revision forgets its older revisions; when none is cached
    (the usual case: a first fetch, or a transaction never edited) nothing is written, so
    another process mid-write neither delays the fetch nor fails the cleanup. Before, every
    detail fetched deleted on a connection of its own: with eight in flight those deletes,
    the client's own writes and a second writer starved each other (the second writer waited
    over 10 s in CI)."""
    from invtools.errors import CacheError

    cached = Cached(sb, tmp_path)
    tx = cached.txs[0]
    now, newer = cached.url(tx["id"], tx["revision"]), cached.url(tx["id"], tx["revision"] + 1)
    holder = sqlite3.connect(cached.path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held: another process mid-write
    try:
        cached.forget([newer, f"{cached.base}/v1/items"])
        with pytest.raises(CacheError, match="busy"):  # one that is cached still needs it
            cached.forget([newer, now])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cached.held([now]) == [True]
