"""Several cursor chains at once (invtools.api.chains): type chains on a first walk, seam
chains from recorded cursors on a re-walk, the fallback to one chain, since/until, frames, the
mirror, and no thread left behind. Real HTTP against a stand-in that takes 10 ms an answer,
so chains really overlap; every result is compared with one plain chain (``chains=1``).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import replace
from datetime import datetime

import pandas as pd
import pytest

from invtools.api.records import MemoryStore, Record
from invtools.errors import Cancelled

pytestmark = pytest.mark.network

TXS = "/v1/location-txs"
SIZE = 1200  # 12 pages of 100


@pytest.fixture(autouse=True)
def _fresh_memory():
    MemoryStore.forget()
    yield
    MemoryStore.forget()


@pytest.fixture
def sb():
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=SIZE, latency=0.01) as server:
        yield server


@pytest.fixture
def client(sb, make_client):
    return make_client(sb, cache=False)  # every walk fetched afresh


# ------------------------------------------------------------------------------ helpers


def ids(rows):
    return [r["id"] for r in rows]


def plain(client, **kw):
    """One plain chain's rows (the reference)."""
    return list(client.transactions(chains=1, **kw))


def list_requests(sb):
    return [r for r in sb.requests if r.route == TXS]


def chain_threads():
    return [t for t in threading.enumerate() if t.name.startswith("invtools-chain")]


def stored_cursors(client):
    """The cursors the last whole walk recorded for the next one (row ids)."""
    walk = client.transactions()  # replayed: its record's seams
    list(walk)
    return [i for _ms, i in walk.seams]


def rewalk(client):
    """A re-walk from stored cursors: the rows and the walk."""
    walk = client.transactions()
    rows = list(walk)
    assert walk.plan.kind == "seams"
    return rows, walk


def first_rows(sb):
    """The live rows now, newest first, as the server holds them."""
    return sb.data("shop").transactions


def on_request(sb, when, action):
    """Run ``action()`` once, when the server first receives a request ``when(target)``
    accepts -- before it answers that request."""
    original, fired = sb.handle, []

    def handle(method, target, headers, fault=None):
        if not fired and when(target):
            fired.append(target)
            action()
        return original(method, target, headers, fault=fault)

    sb.handle = handle
    return fired


def meet(sb, n=3, within=5.0):
    """From now on the server holds each list request with a cursor or a type until ``n`` of
    them are waiting at once (or ``within`` seconds passed); the event it returns is set once
    they were. Chains that run at once meet there for certain, however loaded the machine;
    chains that run one after another never do."""
    original, lock, waiting, met = sb.handle, threading.Lock(), [0], threading.Event()

    def handle(method, target, headers, fault=None):
        chained = TXS + "?" in target and ("cursor=" in target or "type=" in target)
        if chained and not met.is_set():
            with lock:
                waiting[0] += 1
                if waiting[0] >= n:
                    met.set()
            met.wait(within)
            with lock:
                waiting[0] -= 1
        return original(method, target, headers, fault=fault)

    sb.handle = handle
    return met


def assert_walk_invariants(got, before, after, changed):
    """Every row at most once; every row that did not change during the walk there."""
    got_ids = ids(got)
    assert len(got_ids) == len(set(got_ids))
    unchanged = (set(ids(before)) & set(ids(after))) - set(changed)
    assert unchanged <= set(got_ids)
    assert set(got_ids) <= set(ids(before)) | set(ids(after))


# ------------------------------------------------------------------------------ type chains


def test_type_chains_overlap_and_give_exactly_the_plain_walks_rows(sb, client):
    expected = plain(client)
    MemoryStore.forget()
    sb.clear_log()
    chains_met = meet(sb)
    with client.measure() as m:
        walk = client.transactions()
        got = list(walk)
    assert walk.plan.kind == "types" and walk.fallback is None
    assert chains_met.is_set()  # three requests at once
    assert got == expected  # the same rows, in the same order, each once
    sent = list_requests(sb)
    assert {r.params.get("type", [None])[0] for r in sent} == {None, "in", "out", "move", "adjust"}
    # the chains' threads ran in the caller's measurement
    assert m.sent == len(sent) == walk.pages and m.pages == walk.pages


def test_type_chains_frame_equals_the_plain_frame(sb, client):
    expected = client.transactions_df(chains=1)
    MemoryStore.forget()
    sb.clear_log()
    chains_met = meet(sb)
    got = client.transactions_df()
    assert got.attrs["walk"]["plan"] == "types" and chains_met.is_set()
    pd.testing.assert_frame_equal(got, expected)
    assert got["backdated"].any()  # computed per row, after the merge
    MemoryStore.forget()
    rows = client.transactions_df(type=None, until="2100-01-01")  # the dict path
    assert rows.attrs["walk"]["plan"] == "types"
    pd.testing.assert_frame_equal(rows, expected)


def test_a_list_of_one_page_costs_one_request(make_client):
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, size=80, latency=0.02) as small:
        c = make_client(small, cache=False)
        small.clear_log()
        assert len(list(c.transactions())) == 80 and len(list_requests(small)) == 1


# ------------------------------------------------------------------------------ re-walks


def test_a_rewalk_runs_chains_from_the_stored_cursors(sb, client):
    expected = plain(client)
    MemoryStore.forget()
    list(client.transactions())  # a first walk keeps the cursors
    cursors = stored_cursors(client)
    assert len(cursors) == 7  # 8 chains
    sb.clear_log()
    chains_met = meet(sb)
    got, walk = rewalk(client)
    assert got == expected and walk.fallback is None and walk.plan.chains == 8
    sent = list_requests(sb)
    assert {str(c) for c in cursors} <= {r.params.get("cursor", [None])[0] for r in sent}
    assert chains_met.is_set()  # three requests at once
    # each chain meets the next one's first row inside its own last page: no page more
    assert len(sent) <= -(-SIZE // 100) + 1


def test_a_rewalk_frame_equals_the_plain_frame_and_a_warm_one_sends_nothing(sb, make_client):
    c = make_client(sb)  # with a cache
    expected = make_client(sb, cache=False).transactions_df(chains=1)
    c.transactions_df()  # types, fills the cache
    sb.clear_log()
    warm = c.transactions_df()  # that walk, from the cache
    assert warm.attrs["requests"] == 0 and warm.attrs["walk"]["plan"] == "types"
    assert warm.attrs["walk"]["replayed"]
    rows = list(c.transactions(refresh=True))  # refreshed: the stored cursors
    assert ids(rows) == expected["transaction_id"].tolist()
    assert any("cursor" in r.params and "type" not in r.params for r in list_requests(sb))
    got = c.transactions_df()  # warm again: the seams just walked
    assert got.attrs["walk"]["plan"] == "seams" and got.attrs["requests"] == 0
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(warm, expected)
    assert rows == plain(c, refresh=True)


def _seam(sb, client, k=3):
    """Positions around seam k in the current list: (cursor index, first row index)."""
    live = ids(first_rows(sb))
    cursor = stored_cursors(client)[k - 1]
    return live.index(cursor), live.index(cursor) + 1


def _redate(sb, row, like):
    sb.edit_transaction(row["id"], transaction_time=like["transaction_time"])


MUTATIONS = {
    # a row of chain k moved up into chain k-1 (its time: a row 20 above the seam)
    "redate-across-up": lambda sb, rows, c, f: _redate(sb, rows[f + 5], rows[f - 20]),
    # a row of chain k-1 moved down into chain k
    "redate-across-down": lambda sb, rows, c, f: _redate(sb, rows[f - 5], rows[f + 30]),
    # the cursor row deleted: the server keeps its key, the chain starts where it did
    "delete-cursor-row": lambda sb, rows, c, f: sb.delete_transaction(rows[c]["id"]),
    # chain k's first row deleted: chain k-1 meets the next one
    "delete-first-row": lambda sb, rows, c, f: sb.delete_transaction(rows[f]["id"]),
    "add-at-head": lambda sb, rows, c, f: [sb.add_transaction() for _ in range(5)],
    # the cursor row itself re-dated: the cursor moves with it
    "redate-cursor-row": lambda sb, rows, c, f: _redate(sb, rows[c], rows[f + 250]),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_rewalk_after_changes_equals_a_fresh_plain_walk(sb, client, mutation):
    list(client.transactions())  # the first walk keeps cursors
    rows = first_rows(sb)
    c, f = _seam(sb, client)
    MUTATIONS[mutation](sb, rows, c, f)
    got, walk = rewalk(client)
    assert got == plain(client)
    if mutation == "redate-cursor-row":  # chain 2 passes where the row was: it cannot know
        assert "did not meet" in walk.fallback  # what moved there, so it walks on alone
    else:
        assert walk.fallback is None
    assert client.transactions_df().equals(client.transactions_df(chains=1))


# ------------------------------------------------------------------------------ during a walk


def _cursor_param(target, value):
    return f"cursor={value}&" in target + "&" and "type=" not in target


def test_the_seam_rows_deleted_during_the_walk_fall_back_to_one_chain(sb, client, caplog):
    """Chain 0 stops at the row chain 1 starts after, or -- that row deleted -- at chain 1's
    first row. Both deleted once chain 1 read its first page: chain 0 cannot prove the seam
    and walks on alone."""
    list(client.transactions())
    rows = first_rows(sb)
    c, f = _seam(sb, client, k=1)  # chain 0 meets chain 1's first row on its 2nd page
    assert 100 <= f < 200

    def chain_1_read_its_first_page():
        cursor = [str(rows[c]["id"])]
        return any(r.params.get("cursor") == cursor and r.status == 200 for r in sb.requests)

    def delete_both():  # once chain 1 read its first page, however loaded the machine
        _until(chain_1_read_its_first_page, "chain 1 never read its first page")
        sb.delete_transaction(rows[c]["id"])
        sb.delete_transaction(rows[f]["id"])

    on_request(sb, lambda t: _cursor_param(t, rows[99]["id"]), delete_both)
    with caplog.at_level(logging.INFO, logger="invtools"):
        got, walk = rewalk(client)
    assert "did not meet" in walk.fallback and "fell back to one chain" in caplog.text
    assert got == plain(client)  # chain 0 walked on to the end, after the deletion


@pytest.mark.parametrize(
    "what", ["redate-to-head", "redate-deeper", "redate-seen-row", "add-and-delete"]
)
@pytest.mark.parametrize("plan", ["types", "seams"])
def test_changes_during_a_walk_never_repeat_or_lose_an_unchanged_row(sb, client, plan, what):
    if plan == "seams":
        list(client.transactions())
    before = first_rows(sb)
    changed = []

    def change():
        if what == "redate-to-head":
            changed.append(before[700]["id"])
            _redate(sb, before[700], before[0])
        elif what == "redate-deeper":
            changed.append(before[150]["id"])
            _redate(sb, before[150], before[1100])
        elif what == "redate-seen-row":  # the head page had it; a later chain meets it again
            changed.append(before[50]["id"])
            _redate(sb, before[50], before[1150])
        else:
            changed.append(sb.add_transaction()["id"])
            changed.append(before[400]["id"])
            sb.delete_transaction(before[400]["id"])

    # when the head page is in: chain 0's second page, or the type chains' first ones
    fired = on_request(sb, lambda t: f"cursor={before[99]['id']}" in t, change)
    walk = client.transactions()
    got = list(walk)
    assert fired and walk.plan.kind == plan
    assert_walk_invariants(got, before, first_rows(sb), changed)


# ------------------------------------------------------------------------------ fallback


def test_a_refused_cursor_falls_back_to_one_chain_and_says_so(sb, make_client, tmp_path, caplog):
    client = make_client(sb, cache=tmp_path / "c.sqlite")
    expected = plain(client, refresh=True)
    list(client.transactions(refresh=True))  # a whole walk: its record names the seams

    def tamper():  # a seam whose id the list never handed out
        (path,) = (tmp_path / "c.sqlite.walks").glob("*.walk")
        record = Record.from_bytes(path.read_bytes())
        seams = list(record.seams)
        seams[3] = (seams[3][0], 17)
        path.write_bytes(replace(record, seams=tuple(seams)).to_bytes())

    tamper()
    sb.clear_log()
    with caplog.at_level(logging.INFO, logger="invtools"):
        walk = client.transactions(refresh=True)
        got = list(walk)
    assert got == expected and walk.plan.kind == "seams"
    assert "chain 4 could not start: its cursor was refused" in walk.fallback
    assert "fell back to one chain from chain 3" in caplog.text
    assert [r.status for r in list_requests(sb) if r.params.get("cursor") == ["17"]] == [400]
    assert walk.complete  # the fallback chain walked on to the list's end: a whole walk
    tamper()  # the frame path, the same way
    df = client.transactions_df(refresh=True)
    assert "refused" in df.attrs["walk"]["fallback"]
    pd.testing.assert_frame_equal(df, client.transactions_df(chains=1, refresh=True))


def test_type_chains_whose_cursor_is_refused_fall_back_to_the_head_chain(sb, client, caplog):
    expected = plain(client)
    MemoryStore.forget()
    head = first_rows(sb)[99]["id"]  # the head page's cursor, where the type chains start
    original = sb.handle

    def refusing(method, target, headers, fault=None):  # a service that takes no cursor
        if "type=out" in target:  # from another filter for type=out
            target = target.replace(f"cursor={head}", "cursor=17")
        return original(method, target, headers, fault=fault)

    sb.handle = refusing
    with caplog.at_level(logging.INFO, logger="invtools"):
        walk = client.transactions()
        got = list(walk)
    assert walk.plan.kind == "types" and "type chain 2 (out) could not start" in walk.fallback
    assert got == expected and "fell back to one chain from chain 0" in caplog.text
    MemoryStore.forget()
    df = client.transactions_df()
    assert "refused" in df.attrs["walk"]["fallback"]
    pd.testing.assert_frame_equal(df, client.transactions_df(chains=1))


# ------------------------------------------------------------------------------ since / until


@pytest.mark.parametrize("plan", ["types", "seams"])
@pytest.mark.parametrize("window", [(150, None), (1100, 300), (None, 900), (5, 2)])
def test_since_and_until_with_chains_equal_the_plain_walk(sb, client, plan, window):
    if plan == "seams":
        list(client.transactions())
    rows = first_rows(sb)
    since = None if window[0] is None else rows[window[0]]["transaction_time"]
    until = None if window[1] is None else rows[window[1]]["transaction_time"]
    if plan == "seams" and since is not None:  # chains that start past `since` are dropped
        by_id = {r["id"]: r["transaction_time"] for r in rows}
        if all(by_id[i] < since for i in stored_cursors(client)):
            plan = "one"
    sb.clear_log()
    walk = client.transactions(since=since, until=until)
    assert list(walk) == plain(client, since=since, until=until) and walk.plan.kind == plan
    if since is not None:  # no chain asks for a page after its first row older than since
        times = {r["id"]: datetime.fromisoformat(r["transaction_time"]) for r in rows}
        lo = datetime.fromisoformat(since)
        for r in list_requests(sb):
            if "cursor" in r.params:
                assert times[int(r.params["cursor"][0])] >= lo
    frame = client.transactions_df(since=since, until=until)
    assert (frame.attrs["walk"]["plan"] == "one") == (plan == "one")
    pd.testing.assert_frame_equal(frame, client.transactions_df(since=since, until=until, chains=1))


@pytest.mark.parametrize("chains", [1, None])
def test_since_between_the_last_two_rows_of_a_page_gives_exactly_the_rows_since(sb, client, chains):
    rows = first_rows(sb)
    at = lambda i: datetime.fromisoformat(rows[i]["transaction_time"])  # noqa: E731
    # the page's second-to-last row is the oldest kept; its last row is older: left out
    i = next(i for i in range(198, len(rows) - 1, 100) if at(i) > at(i + 1))
    since = rows[i]["transaction_time"]
    want = [r["id"] for r in rows if datetime.fromisoformat(r["transaction_time"]) >= at(i)]
    assert rows[i]["id"] in want and rows[i + 1]["id"] not in want
    assert ids(client.transactions(since=since, chains=chains)) == want


# ------------------------------------------------------------------------------ threads

# A chain that was not stopped would still be running below: the list is 12 pages of 50 ms.


@pytest.fixture
def slow(make_client):
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=SIZE, latency=0.05) as server:
        yield server, make_client(server, cache=False)


def _quiet(sb, *, settle=0.3):
    """Requests the server receives from now on, after ``settle`` seconds: none if nothing is
    sent any more (a request already on the wire is let finish)."""
    time.sleep(settle)
    seen = len(sb.requests)
    time.sleep(settle)
    return len(sb.requests) - seen


def test_rows_come_while_the_walk_runs_and_closing_it_stops_every_chain(slow):
    sb, client = slow
    list(client.transactions())
    sb.clear_log()
    walk = client.transactions(chains=2)
    first = next(walk)
    assert first["id"] == first_rows(sb)[0]["id"] and walk.plan.kind == "seams"
    assert chain_threads() and len(list_requests(sb)) < -(-SIZE // 100)
    walk.close()
    sent = len(list_requests(sb))
    assert _quiet(sb) == 0 and len(list_requests(sb)) <= sent + 2  # one on the wire a chain
    assert next(walk, None) is None  # a closed walk gives nothing more
    _until(lambda: chain_threads() == [], "a chain went on")


def test_a_walk_dropped_half_way_stops_its_chains(slow):
    sb, client = slow
    list(client.transactions())
    walk = client.transactions(chains=2)
    for _ in range(150):
        next(walk)
    assert chain_threads()
    del walk  # no close(): freeing the walk closes it
    assert _quiet(sb) == 0
    _until(lambda: chain_threads() == [], "a chain went on")


@pytest.fixture
def ctrl_c():
    """``press(after)``: a real SIGINT to this (the main) thread ``after`` seconds from now,
    with Python's own handler (a shell may have started the tests with SIGINT ignored); the
    list it returns gets the moment it was sent."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timers = []

    def press(after):
        main, sent = threading.main_thread().ident, []

        def send():
            sent.append(time.monotonic())
            signal.pthread_kill(main, signal.SIGINT)

        timer = threading.Timer(after, send)
        timers.append(timer)
        timer.start()
        return sent

    yield press
    for timer in timers:
        timer.cancel()
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("chains", [1, 2, None])
def test_ctrl_c_while_waiting_for_a_page_stops_every_chain_at_once(slow, ctrl_c, chains):
    sb, client = slow
    list(client.transactions())
    walk = client.transactions(chains=chains)
    sent = ctrl_c(0.12)  # in the middle of the walk: 12 pages of 50 ms
    with pytest.raises(KeyboardInterrupt):
        list(walk)
    back = time.monotonic()
    # back at once, not after the chains' requests (it took 5 s before issue 24); the bound
    # is the 0.5 s with room for a loaded machine
    assert sent and back - sent[0] < 1.0
    assert _quiet(sb) == 0  # and nothing is sent after it
    _until(lambda: chain_threads() == [], "a chain went on")
    assert list(client.transactions()) == plain(client)


def test_closing_a_walk_from_another_thread_stops_it_and_its_reader_at_once(slow):
    # a widget's Stop button: the reader gets Cancelled at once, nothing more is sent, and the
    # walk leaves no record (the next one is fresh and whole). The server holds every page
    # after the first few until the walk is closed, so it cannot end first, however fast.
    sb, client = slow
    list(client.transactions())
    original, release, answered = sb.handle, threading.Event(), []

    def hold_late_pages(method, target, headers, fault=None):
        if TXS + "?" in target and len(answered) >= 3:
            release.wait(10)
        answered.append(target)
        return original(method, target, headers, fault=fault)

    sb.handle = hold_late_pages
    walk = client.transactions(chains=1)
    got, outcome = [], []

    def read():
        try:
            for row in walk:
                got.append(row)
        except Cancelled as exc:
            outcome.append((time.monotonic(), exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    _until(lambda: len(got) >= 100, "the reader never got a page")
    closed = time.monotonic()
    walk.close()
    reader.join(5)
    release.set()
    sb.handle = original
    # told at once (the 0.5 s, with room for a loaded machine), not at the walk's end
    assert outcome and outcome[0][0] - closed < 1.0 and "stopped" in str(outcome[0][1])
    assert _quiet(sb) <= 1  # the request the server held, answered now: nothing new
    assert list(client.transactions()) == plain(client)


def _until(condition, why: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, why
        time.sleep(0.01)
