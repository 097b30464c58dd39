"""The walk engine (:class:`invtools.api.chains.Chains`, :class:`invtools.api.walk.Walk`)
against an in-memory model of the transactions list: no HTTP, no cache, so every plan and every
way a chain ends is checked in milliseconds (the HTTP tests of the same behaviour are in
``test_client_chains.py``).

The model (:class:`FakeList`) serves the list as the specification describes it: newest first by
``(transaction_time, id)``, pages of ``limit``, the cursor is the id of a page's last row and the
next page starts after that row's place, ``type=`` filters, and a cursor it never handed out is a
400. Each test compares the walk's rows with the model's truth (ids *and* revisions) and says
what the walk turned out to be (``complete``, ``window``, ``fallback``, ``ran``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from invtools._types import TX_TYPES
from invtools.api.chains import Chains, Spec, rows_of
from invtools.api.plan import Plan, row_key, seam_starts
from invtools.api.records import MemoryStore
from invtools.api.walk import Walk
from invtools.errors import Cancelled, InvalidRequestError, ServerError
from invtools.frames.arrow import walk_frame

T0 = datetime(2026, 5, 1, tzinfo=UTC)
LIMIT = 10


def wire(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def make_rows(n: int, *, types=TX_TYPES, same_time_every: int = 7) -> list[dict]:
    """``n`` transactions of every type in turn, a minute apart, a few sharing a time (their
    order is then by id)."""
    rows = []
    for i in range(n):
        minutes = i - (i % same_time_every == 1)  # every 7th row shares its time with the last
        rows.append(
            {
                "id": 1000 + i,
                "type": types[i % len(types)],
                "transaction_time": wire(T0 + timedelta(minutes=minutes)),
                "revision": 1,
            }
        )
    return rows


class FakeList:
    """The transactions list, newest first; ``hold(j)`` makes chain ``j``'s requests wait for
    ``release(j)``; ``ignore_type`` makes it serve every type whatever ``type=`` says."""

    def __init__(self, rows: list[dict], *, ignore_type: bool = False) -> None:
        self.rows = sorted(rows, key=row_key, reverse=True)
        self.places = {r["id"]: row_key(r) for r in self.rows}  # deleted rows keep their place
        self.ignore_type = ignore_type
        self.calls: list[dict] = []
        self.gates: dict[str, threading.Event] = {}
        self.lock = threading.Lock()
        self.on_call = None

    def truth(self, *, since: datetime | None = None, types=None) -> list[tuple[int, int]]:
        """(id, revision) of the rows a walk must give, newest first."""
        since_key = (row_key({"transaction_time": wire(since)})[0], -1) if since else None
        return [
            (r["id"], r["revision"])
            for r in self.rows
            if (since_key is None or row_key(r) >= since_key)
            and (types is None or r["type"] in types)
        ]

    def keys(self) -> list:
        return [row_key(r) for r in self.rows]

    def hold(self, j: int) -> threading.Event:
        return self.gates.setdefault(f"invtools-chain-{j}", threading.Event())

    # -- changes between two walks (or during one)

    def add(self, row: dict) -> None:
        with self.lock:
            self.rows = sorted([*self.rows, row], key=row_key, reverse=True)
            self.places[row["id"]] = row_key(row)

    def delete(self, rid: int) -> None:
        with self.lock:
            self.rows = [r for r in self.rows if r["id"] != rid]

    def drop_tail(self, key, *, including: bool) -> None:
        """Delete every row older than ``key`` (and the row at ``key`` when ``including``)."""
        with self.lock:
            self.rows = [
                r for r in self.rows if row_key(r) > key or (row_key(r) == key and not including)
            ]

    def redate(self, rid: int, when: datetime) -> None:
        with self.lock:
            row = next(r for r in self.rows if r["id"] == rid)
            moved = {**row, "transaction_time": wire(when), "revision": row["revision"] + 1}
            self.rows = sorted(
                [moved if r["id"] == rid else r for r in self.rows], key=row_key, reverse=True
            )
            self.places[rid] = row_key(moved)

    # -- the endpoint

    def __call__(self, call: dict) -> bytes:
        gate = self.gates.get(threading.current_thread().name)
        if gate is not None:
            assert gate.wait(10), "a held chain was never released"
        with self.lock:
            self.calls.append(dict(call))
            if self.on_call is not None:
                self.on_call(call)
            wanted = None if self.ignore_type else call.get("type")
            rows = [r for r in self.rows if wanted is None or r["type"] == wanted]
            cursor = call.get("cursor")
            if cursor is not None:
                if cursor not in self.places:
                    raise InvalidRequestError("cursor not found", status=400)
                rows = [r for r in rows if row_key(r) < self.places[cursor]]
            page = rows[: call["limit"]]
            more = len(rows) > len(page)
            body = {"items": page, "cursor": page[-1]["id"] if more else None, "has_more": more}
            return json.dumps(body).encode()


def walked(run: Chains) -> list[tuple[int, int]]:
    """The rows of a walk's pieces as a walk hands them out (the row path)."""
    return [(r["id"], r["revision"]) for r in rows_of(run.pieces(), run.plan)]


def pieced(run: Chains) -> list[tuple[int, int]]:
    """The rows of the frame of a walk's pieces (the frame path, parsed by pyarrow)."""
    plan = run.plan
    df = walk_frame(
        [(p.page.body, p.page.n_rows, p.keep) for p in run.pieces()],
        merged=plan.merged,
        types=plan.types if plan.kind == "merge" else None,
    )
    return list(zip(df["transaction_id"].tolist(), df["revision"].tolist(), strict=True))


def seams_of(fake: FakeList, chains: int) -> tuple:
    return seam_starts(fake.keys(), chains=chains, limit=LIMIT)


SPEC = Spec(params={"type": None}, limit=LIMIT)


# ------------------------------------------------------------------------------ whole walks


@pytest.mark.parametrize("how", [walked, pieced])
def test_one_chain_gives_the_whole_list_newest_first(how):
    fake = FakeList(make_rows(95))
    run = Chains(Plan(), SPEC, fake)
    assert how(run) == fake.truth()
    assert run.complete and not run.window and not run.short and run.fallback is None
    assert run.ran == Plan() and len(fake.calls) == 10


@pytest.mark.parametrize("how", [walked, pieced])
def test_type_chains_give_the_whole_list_merged_newest_first(how):
    fake = FakeList(make_rows(95))
    run = Chains(Plan("types"), SPEC, fake)
    assert how(run) == fake.truth()
    assert run.complete and run.fallback is None and run.ran == Plan("types")
    assert {c.get("type") for c in fake.calls} == {None, *TX_TYPES}
    assert sum(c.get("type") is None for c in fake.calls) == 1  # the head page only


def test_a_whole_type_walk_records_the_seams_of_the_lists_order_for_the_next_walk():
    fake = FakeList(make_rows(195))
    store = MemoryStore("types")
    walk = Walk(fake, SPEC, store=store, chains=8, split=True)
    assert [(r["id"], r["revision"]) for r in walk] == fake.truth()
    assert walk.plan == Plan("types") and walk.complete
    assert store.load().seams == seam_starts(fake.keys(), chains=8, limit=LIMIT)


@pytest.mark.parametrize("chains", [2, 4, 8])
@pytest.mark.parametrize("how", [walked, pieced])
def test_seam_chains_give_the_whole_list_and_each_stops_at_the_next_ones_start(how, chains):
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, chains)
    run = Chains(Plan("seams", starts), SPEC, fake)
    assert how(run) == fake.truth()
    assert run.complete and run.fallback is None and run.ran == Plan("seams", starts)
    # each chain stopped at its seam: no page more than a plain walk's, one per chain at most
    assert len(fake.calls) <= 20 + chains - 1


def test_a_list_of_one_page_walked_by_type_chains_ends_with_the_head():
    fake = FakeList(make_rows(7))
    run = Chains(Plan("types"), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.complete and len(fake.calls) == 1
    assert run.ran == Plan()  # nothing but the head: a replay walks one chain


def test_a_type_with_no_rows_is_a_chain_that_ends_at_once():
    fake = FakeList(make_rows(60, types=("in", "out", "adjust")))  # no "move"
    run = Chains(Plan("types"), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.complete and run.fallback is None and run.ran == Plan("types")


@pytest.mark.parametrize("how", [walked, pieced])
def test_several_types_are_merged_newest_first_and_each_chain_keeps_its_own(how):
    fake = FakeList(make_rows(95), ignore_type=True)  # even from a server that ignores type=
    run = Chains(Plan("merge", types=("in", "adjust")), SPEC, fake)
    assert how(run) == fake.truth(types=("in", "adjust"))
    assert run.complete


def test_every_page_is_seen_as_it_arrives():
    fake = FakeList(make_rows(95))
    seen = []
    run = Chains(Plan("types"), SPEC, fake, on_page=lambda piece: seen.append(piece.page.body))
    walked(run)
    assert len(seen) == len(fake.calls)
    assert sorted(r["id"] for b in seen for r in json.loads(b)["items"]) == sorted(
        i for i, _ in fake.truth()
    )


# ------------------------------------------------------------------------------ changes


def test_rows_added_at_the_head_since_the_seams_were_recorded_are_walked():
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    for i in range(25):
        fake.add({**make_rows(1)[0], "id": 5000 + i, "transaction_time": wire(T0 + timedelta(1))})
    run = Chains(Plan("seams", starts), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.complete and run.fallback is None


def test_a_seam_row_deleted_since_is_met_by_the_next_chains_first_row():
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    fake.delete(starts[1][1])
    run = Chains(Plan("seams", starts), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.complete and run.fallback is None


@pytest.mark.parametrize("k", [0, 1, 2])
def test_a_seam_row_moved_since_falls_back_to_one_chain_from_there(caplog, k):
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    fake.redate(starts[k][1], T0 + timedelta(days=1))  # now the newest row
    if k + 1 < 3:  # chain 3, beyond the one chain k waits for, sees itself cut off
        fetch = LateChain(fake, fallback=k, late=3)
        run = fetch.run = Chains(Plan("seams", starts), SPEC, fetch)
    else:
        run = Chains(Plan("seams", starts), SPEC, fake)
    with caplog.at_level(logging.INFO, logger="invtools"):
        assert walked(run) == fake.truth()
    assert run.fallback == (
        f"chain {k} did not meet row {starts[k][1]}, where chain {k + 1} began "
        "(the list changed there during the walk)"
    )
    said = [r.getMessage() for r in caplog.records if "fell back" in r.getMessage()]
    assert said == [f"walk fell back to one chain from chain {k} of 4: {run.fallback}"]
    # a replay runs the chains that counted: from chain 0 alone, one plain chain
    assert run.complete and run.ran == (Plan("seams", starts[:k]) if k else Plan())


def test_a_row_moved_across_a_seam_during_the_walk_is_given_once_at_its_new_place():
    # the last chain gives a row, then the row is re-dated into chain 0's part of the list,
    # which chain 0 walks only then: the server hands it out twice, the walk gives it once
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    victim = fake.truth()[-25][0]  # on the last chain's second-to-last page
    release = fake.hold(0)

    def move_once(call):  # the last chain asks for the page after the victim's
        if (
            threading.current_thread().name == "invtools-chain-3"
            and call.get("cursor") is not None
            and fake.places[call["cursor"]] < fake.places[victim]
            and not release.is_set()
        ):
            row = next(r for r in fake.rows if r["id"] == victim)
            row.update(transaction_time=wire(T0 + timedelta(minutes=190)), revision=2)
            fake.rows.sort(key=row_key, reverse=True)
            fake.places[victim] = row_key(row)
            release.set()

    fake.on_call = move_once
    run = Chains(Plan("seams", starts), SPEC, fake)
    got = walked(run)
    assert release.is_set()
    assert [i for i, _ in got].count(victim) == 1
    assert got == fake.truth()  # at its new place, at its new revision


class LateChain:
    """``fake``, with chain ``late`` answering only after the walk fell back, and the
    fallback chain ``fallback`` then waiting for chain ``late`` to end: chain ``late`` sees for
    sure that its rows no longer count."""

    def __init__(self, fake: FakeList, *, fallback: int, late: int) -> None:
        self.fake, self.fallback, self.late = fake, fallback, late
        self.run: Chains | None = None

    def __call__(self, call: dict) -> bytes:
        name = threading.current_thread().name
        if name == f"invtools-chain-{self.late}":
            _until(lambda: self.run.fallback is not None, "the walk never fell back")
        elif name == f"invtools-chain-{self.fallback}" and self.run.fallback is not None:
            late = f"invtools-chain-{self.late}"
            _until(lambda: all(t.name != late for t in threading.enumerate()), "chain went on")
        return self.fake(call)


def _until(condition, why: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, why  # the test's own set-up is wrong
        time.sleep(0.002)


def test_a_refused_cursor_falls_back_and_the_walk_is_still_whole():
    # chain 2's cursor was never handed out, so chain 1 walks on from its seam to the end; chain
    # 3 answers only after that fallback and so finds itself cut off -- the walk is whole all
    # the same (a race once left it "not complete", and then it was never recorded as whole)
    fake = FakeList(make_rows(195))
    starts = list(seams_of(fake, 4))
    starts[1] = (starts[1][0], 17)
    fetch = LateChain(fake, fallback=1, late=3)
    run = fetch.run = Chains(Plan("seams", tuple(starts)), SPEC, fetch)
    assert walked(run) == fake.truth()
    assert "chain 2 could not start: its cursor was refused" in run.fallback
    assert run.complete and not run.short
    assert run.ran == Plan("seams", tuple(starts[:1]))


@pytest.mark.parametrize("refused", TX_TYPES)
def test_a_type_chain_whose_cursor_is_refused_falls_back_to_the_head_chain(refused):
    fake = FakeList(make_rows(95))
    real = fake.__call__

    def refusing(call):
        if call.get("type") == refused:
            raise InvalidRequestError("cursor not found", status=400)
        return real(call)

    run = Chains(Plan("types"), SPEC, refusing)
    assert walked(run) == fake.truth()
    j = TX_TYPES.index(refused) + 1
    assert f"type chain {j} ({refused}) could not start: its cursor was refused" in run.fallback
    assert run.complete and run.ran == Plan()


@pytest.mark.parametrize("how", [walked, pieced])
def test_a_server_that_ignores_type_makes_a_type_walk_fall_back_to_one_chain(how):
    fake = FakeList(make_rows(95), ignore_type=True)
    run = Chains(Plan("types"), SPEC, fake)
    assert how(run) == fake.truth()
    assert run.fallback == "type chain 1 (in) holds rows of other types (the server ignores type=?)"
    assert run.complete and run.ran == Plan()
    # the head chain walked on from the head's cursor: no page of the list asked for twice
    plain = [c for c in fake.calls if c.get("type") is None]
    assert len(plain) == 10 and len({c.get("cursor") for c in plain}) == 10


def test_a_row_with_a_nested_type_field_is_judged_by_its_own_type():
    rows = make_rows(95)
    for r in rows[::3]:
        r["partner"] = {"type": "supplier", "name": "A"}  # "type" twice in the row's bytes
    fake = FakeList(rows)
    run = Chains(Plan("types"), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.fallback is None and run.complete
    ignoring = FakeList(rows, ignore_type=True)
    run = Chains(Plan("types"), SPEC, ignoring)
    assert walked(run) == ignoring.truth()
    assert "holds rows of other types" in run.fallback


@pytest.mark.parametrize("how", [walked, pieced])
def test_a_fifth_type_on_the_head_page_walks_one_chain(how):
    rows = make_rows(95)
    rows[-1]["type"] = "transfer"  # the newest row
    fake = FakeList(rows)
    run = Chains(Plan("types"), SPEC, fake)
    assert how(run) == fake.truth()
    assert len(fake.calls) == 10  # each page once
    assert "the head page shows type(s) ['transfer'] besides the four" in run.fallback
    assert run.complete and {c.get("type") for c in fake.calls} == {None}


@pytest.mark.parametrize(
    ("drop_from", "including"),
    [
        # every row after the last seam row was deleted since the seams were recorded: the
        # last chain has nothing left, and the chain before it walks to the end
        pytest.param(-1, False, id="a-last-chain-with-nothing-left"),
        # the seam row of chain 2 and everything older were deleted since: chain 2 reaches
        # the list's end, and chain 3 (from the deleted row) finds nothing
        pytest.param(2, True, id="a-list-that-now-ends-before-a-chains-seam"),
    ],
)
def test_a_list_whose_tail_went_since_the_seams_were_recorded_is_walked_whole_without_fallback(
    drop_from, including
):
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    fake.drop_tail(starts[drop_from], including=including)
    run = Chains(Plan("seams", starts), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.complete and run.fallback is None and run.ran == Plan("seams", starts[:2])


def test_a_list_cut_short_during_the_walk_falls_back_and_gives_what_is_left():
    # chain 3 read its first page; then the seam row of chain 2 and everything older were
    # deleted, before chain 2 got there: chain 2 reaches the end before its seam
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    read = threading.Event()

    def fetch(call):
        name = threading.current_thread().name
        if name == "invtools-chain-2":
            _until(read.is_set, "chain 3 never asked")
        body = fake(call)
        if name == "invtools-chain-3" and not read.is_set():
            fake.drop_tail(starts[2], including=True)
            read.set()
        return body

    run = Chains(Plan("seams", starts), SPEC, fetch)
    assert walked(run) == fake.truth()
    assert run.fallback == (
        f"chain 2 reached the end of the list before row {starts[2][1]}, where chain 3 began"
    )
    assert run.complete and run.ran == Plan("seams", starts[:2])


def test_a_seam_row_at_the_end_of_a_page_ends_its_chain_with_that_page():
    fake = FakeList(make_rows(40))
    seam = row_key(fake.rows[19])  # page 2's last row: chain 1 starts on page 3
    run = Chains(Plan("seams", (seam,)), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.fallback is None and len(fake.calls) == 4  # each page once, none more


# ------------------------------------------------------------------------------ partial walks


@pytest.mark.parametrize("plan", [Plan(), Plan("types"), "seams"])
def test_a_window_ends_every_chain_at_since_and_is_not_whole(plan):
    fake = FakeList(make_rows(195))
    plan = Plan("seams", seams_of(fake, 4)) if plan == "seams" else plan
    since = T0 + timedelta(minutes=80, seconds=30)  # in the third of four seam chains
    since_ms = row_key({"transaction_time": wire(since)})[0]
    run = Chains(plan, Spec(params={"type": None}, limit=LIMIT, since_ms=since_ms), fake)
    assert walked(run) == fake.truth(since=since)
    assert run.window and not run.complete
    assert len(fake.calls) < 20  # it stopped: the older pages were never asked for
    if plan.kind == "one":  # down to the page of the first row older than since, no further
        older = [row_key(r)[0] < since_ms for r in fake.rows].index(True)
        assert len(fake.calls) == older // LIMIT + 1
    if plan.kind == "seams":  # a replay runs the chains that counted, those newer than since
        assert run.ran == Plan("seams", tuple(k for k in plan.starts if k[0] >= since_ms))
        assert len(run.ran.starts) == 2


def test_max_pages_ends_a_walk_short_and_not_whole():
    fake = FakeList(make_rows(95))
    run = Chains(Plan(), Spec(params={}, limit=LIMIT, max_pages=3), fake)
    assert walked(run) == fake.truth()[:30]
    assert run.short and not run.complete


def test_a_walk_closed_half_way_sends_nothing_more_and_is_not_whole():
    fake = FakeList(make_rows(995))
    run = Chains(Plan("seams", seams_of(fake, 4)), SPEC, fake)
    rows = rows_of(run.pieces(), run.plan)
    first = [next(rows) for _ in range(15)]
    assert [(r["id"], r["revision"]) for r in first] == fake.truth()[:15]
    run.close()
    sent = len(fake.calls)
    time.sleep(0.3)
    assert len(fake.calls) <= sent + 4  # at most a request in flight per chain
    assert not run.complete


def test_a_chain_that_fails_raises_in_the_caller():
    fake = FakeList(make_rows(195))
    real = fake.__call__

    def failing(call):
        if call.get("type") == "adjust":
            raise ServerError("boom", status=503)
        return real(call)

    run = Chains(Plan("types"), SPEC, failing)
    with pytest.raises(ServerError, match="boom"):
        walked(run)


# ------------------------------------------------------------------------------ threads and time


def test_a_one_chain_walk_fetches_a_page_only_when_it_is_asked_for():
    fake = FakeList(make_rows(45))
    run = Chains(Plan(), SPEC, fake)
    pieces = run.pieces()
    time.sleep(0.1)
    assert fake.calls == []  # nothing before the first page is asked for
    next(pieces), next(pieces)
    time.sleep(0.1)
    assert len(fake.calls) == 2  # nothing ahead of what was asked for
    run.close()


class Slow:
    """``fake``, each page of the chains in ``chains`` taking ``seconds`` (the real service
    takes about 0.8 s, longer than the walk's 0.1 s poll)."""

    def __init__(self, fake: FakeList, chains: set[int], seconds: float) -> None:
        self.fake, self.names, self.seconds = fake, {f"invtools-chain-{j}" for j in chains}, seconds

    def __call__(self, call: dict) -> bytes:
        if threading.current_thread().name in self.names:
            time.sleep(self.seconds)
        return self.fake(call)


@pytest.mark.parametrize("kind", ["types", "seams"])
def test_chains_slower_than_the_walks_poll_lose_no_rows_and_do_not_fall_back(kind):
    fake = FakeList(make_rows(95))
    plan = Plan("types") if kind == "types" else Plan("seams", seams_of(fake, 4))
    # types: the "move" chain is slow; seams: chain 2, whose first row chain 1 waits for
    run = Chains(plan, SPEC, Slow(fake, {3} if kind == "types" else {2}, 0.25))
    assert walked(run) == fake.truth()
    assert run.fallback is None and run.complete


def test_closing_a_walk_while_a_chain_waits_for_the_next_ones_first_row_ends_it_at_once():
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    gate = fake.hold(2)  # chain 2's first page never comes while the test holds it
    run = Chains(Plan("seams", starts), SPEC, fake)
    got: list = []
    stopped = threading.Event()

    def consume():
        try:
            for row in rows_of(run.pieces(), run.plan):
                got.append((row["id"], row["revision"]))
        except Cancelled:
            stopped.set()

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    time.sleep(0.3)  # chain 1 reached its seam and waits for chain 2's first row
    closer = threading.Thread(target=run.close, daemon=True)
    closer.start()
    consumer.join(1.5)
    ended = not consumer.is_alive()
    gate.set()
    closer.join(10)
    assert ended and stopped.is_set()  # told, without waiting for chain 2's request to end
    assert got == fake.truth()[: len(got)] and 0 < len(got) < len(fake.truth())
    assert not run.complete and run.fallback is None  # closed, not fallen back


def test_a_time_nested_in_a_row_is_not_taken_for_the_rows_own():
    # each row carries another "transaction_time" after its own: the page's last one is not
    # its last row's time, so every page is read row by row to find where since falls
    rows = make_rows(95)
    for r in rows:
        r["source"] = {"transaction_time": "2030-01-01T00:00:00.000Z"}
    fake = FakeList(rows)
    since = T0 + timedelta(minutes=40, seconds=30)
    since_ms = row_key({"transaction_time": wire(since)})[0]
    for plan in (Plan(), Plan("seams", seams_of(fake, 3))):
        run = Chains(plan, Spec(params={"type": None}, limit=LIMIT, since_ms=since_ms), fake)
        assert walked(run) == fake.truth(since=since), plan
        assert run.window
    run = Chains(Plan("seams", seams_of(fake, 3)), SPEC, fake)
    assert walked(run) == fake.truth() and run.fallback is None and run.complete


@pytest.mark.parametrize("plan", [Plan(), Plan("types"), Plan("merge", types=("in", "out"))])
def test_a_walk_closed_before_it_starts_sends_nothing_and_gives_nothing(plan):
    fake = FakeList(make_rows(45))
    run = Chains(plan, SPEC, fake)
    run.close()
    assert walked(run) == [] and fake.calls == [] and not run.complete


def test_closing_from_another_thread_while_a_chain_is_in_a_request_returns_at_once():
    fake = FakeList(make_rows(195))
    gate = fake.hold(3)  # the last chain's first request does not come back
    run = Chains(Plan("seams", seams_of(fake, 4)), SPEC, fake)
    rows = rows_of(run.pieces(), run.plan)
    next(rows)
    began = time.monotonic()
    closer = threading.Thread(target=run.close, daemon=True)
    closer.start()
    closer.join(5)
    took = time.monotonic() - began
    gate.set()
    assert not closer.is_alive() and took < 0.5  # not the request's end


def test_a_process_that_ends_mid_walk_is_not_held_by_the_walks_threads(tmp_path):
    # a script or kernel that stops half way through a walk exits at once; its chains are
    # daemon threads, not waited for at exit
    import subprocess
    import sys

    script = tmp_path / "half_way.py"
    script.write_text(
        "import json, threading, time\n"
        "from invtools.api.plan import Plan\n"
        "from invtools.api.chains import Chains, Spec, rows_of\n"
        "def row(i):\n"
        "    return {'id': i, 'type': 'in', 'transaction_time': f'2026-05-01T00:00:{i:02d}Z'}\n"
        "def fetch(call):\n"
        "    if call.get('cursor') == 5:  # chain 1: its request hangs\n"
        "        time.sleep(60)\n"
        "    ids = (10, 9, 8) if call.get('cursor') is None else (7, 6, 5)\n"
        "    rows = [row(i) for i in ids]\n"
        "    return json.dumps({'items': rows, 'cursor': ids[-1], 'has_more': True}).encode()\n"
        "run = Chains(Plan('seams', ((1777593605000, 5),)), Spec(), fetch)\n"
        "print(next(rows_of(run.pieces(), run.plan))['id'], flush=True)  # ends mid-walk\n"
    )
    import os
    from pathlib import Path

    import invtools

    # the invtools this test imported (a copy under test, say), not whichever is installed
    env = {**os.environ, "PYTHONPATH": str(Path(invtools.__file__).parents[1])}
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=20, env=env
    )
    assert done.stdout.strip() == "10", done.stderr
    assert time.monotonic() - began < 15


def test_a_seam_row_sharing_its_time_with_its_pages_last_row_is_met():
    # rows 18 and 19 (the end of page 2) share a time; chain 1 starts after row 18: chain 0
    # must look into that page, though its last row is no newer than the seam
    rows = make_rows(40, same_time_every=1000)
    fake = FakeList(rows)
    seam_row, last_row = fake.rows[18], fake.rows[19]
    last_row["transaction_time"] = seam_row["transaction_time"]
    fake.rows.sort(key=row_key, reverse=True)
    fake.places[last_row["id"]] = row_key(last_row)
    assert fake.rows[18] is seam_row and fake.rows[19] is last_row
    run = Chains(Plan("seams", (row_key(seam_row),)), SPEC, fake)
    assert walked(run) == fake.truth()
    assert run.fallback is None and run.complete


def test_a_row_whose_time_cannot_be_read_does_not_end_a_window():
    # the server lists it among rows newer than since; its own time says nothing: kept,
    # and the walk goes on to the first row that is really older
    fake = FakeList(make_rows(95))
    odd = fake.rows[15]  # not at a page's end: its place serves no cursor
    odd["transaction_time"] = "last Tuesday"
    since = T0 + timedelta(minutes=40, seconds=30)
    since_ms = row_key({"transaction_time": wire(since)})[0]
    expected = []
    for r in fake.rows:
        if r is not odd and row_key(r)[0] < since_ms:
            break
        expected.append((r["id"], r["revision"]))
    assert (odd["id"], odd["revision"]) in expected
    for plan in (Plan(), Plan("types")):
        run = Chains(plan, Spec(params={"type": None}, limit=LIMIT, since_ms=since_ms), fake)
        assert sorted(walked(run)) == sorted(expected), plan


@pytest.mark.parametrize("plan", [Plan(), Plan("types")])
def test_a_walk_whose_first_request_is_refused_raises_the_servers_error(plan):
    # a filter the server refuses: the caller gets its 400, not an empty walk
    def refusing(call):
        raise InvalidRequestError("unknown filter", status=400)

    run = Chains(plan, SPEC, refusing)
    with pytest.raises(InvalidRequestError, match="unknown filter"):
        walked(run)


def test_a_seam_chain_refused_after_its_first_page_raises():
    # only a chain's start cursor may be refused (then the walk falls back); a refusal later on
    # is the server's error, and the caller gets it
    fake = FakeList(make_rows(195))
    starts = seams_of(fake, 4)
    real, seen = fake.__call__, []

    def failing(call):
        if threading.current_thread().name == "invtools-chain-1":
            seen.append(call)
            if len(seen) == 2:
                raise InvalidRequestError("cursor expired", status=400)
        return real(call)

    run = Chains(Plan("seams", starts), SPEC, failing)
    with pytest.raises(InvalidRequestError, match="cursor expired"):
        walked(run)


# ------------------------------------------------------------------------------ a walk: replay


class Kept:
    """A store of one list's record, in memory, pages and all (as a file keeps it)."""

    def __init__(self) -> None:
        self.record = None
        self.saved = 0

    def load(self):
        return self.record

    def save(self, record) -> None:
        self.record, self.saved = record, self.saved + 1


class Tally:
    """Counters a walk reports to (what a client's stats get)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.as_of: list = []

    def add(self, **counts: int) -> None:
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v

    def saw_data_from(self, when) -> None:
        self.as_of.append(when)


def rows_of_walk(walk) -> list[tuple[int, int]]:
    return [(r["id"], r["revision"]) for r in walk]


def test_a_whole_walk_is_replayed_whole_sending_nothing_and_as_old_as_it_was():
    fake, kept = FakeList(make_rows(95)), Kept()
    first, tally = Walk(fake, SPEC, store=kept, chains=8, split=True), Tally()
    assert rows_of_walk(first) == fake.truth() and first.complete and not first.replayed
    sent = len(fake.calls)
    fake.add({**make_rows(1)[0], "id": 9999, "transaction_time": wire(T0 + timedelta(9))})
    again = Walk(fake, SPEC, store=kept, chains=8, split=True, counters=tally)
    assert rows_of_walk(again) == [r for r in fake.truth() if r[0] != 9999]  # what it read
    assert len(fake.calls) == sent and again.replayed and again.complete
    assert again.data_as_of == first.data_as_of == tally.as_of[0]
    n = first.pages  # the head page and every type chain's
    assert n > 10 and tally.counts == {"from_cache": n, "pages": n, "rows": 95}
    assert again.summary() == {
        "plan": "types",
        "pages": n,
        "chains": 5,
        "fallback": None,
        "replayed": True,
    }
    fresh = Walk(fake, SPEC, store=kept, refresh=True)
    assert rows_of_walk(fresh) == fake.truth() and not fresh.replayed  # refresh: fresh


def test_a_record_older_than_max_age_is_not_replayed():
    fake, kept = FakeList(make_rows(45)), Kept()
    list(Walk(fake, SPEC, store=kept))
    sent = len(fake.calls)
    young = Walk(fake, SPEC, store=kept, max_age=timedelta(hours=1))
    assert rows_of_walk(young) == fake.truth() and len(fake.calls) == sent
    old = Walk(fake, SPEC, store=kept, max_age=timedelta(0))
    assert rows_of_walk(old) == fake.truth() and len(fake.calls) == 2 * sent


def since_spec(minutes: float, **kw) -> Spec:
    since = T0 + timedelta(minutes=minutes)
    return Spec(
        params={"type": None},
        limit=LIMIT,
        since_ms=row_key({"transaction_time": wire(since)})[0],
        **kw,
    )


def test_a_window_serves_a_shorter_window_but_not_a_longer_one_nor_the_whole_list():
    fake, kept = FakeList(make_rows(95)), Kept()
    list(Walk(fake, since_spec(40.5), store=kept))
    assert kept.record.since_ms is not None and not kept.record.complete
    sent = len(fake.calls)
    shorter = Walk(fake, since_spec(60.5), store=kept)
    assert rows_of_walk(shorter) == fake.truth(since=T0 + timedelta(minutes=60.5))
    assert len(fake.calls) == sent and shorter.replayed  # it ends inside the record
    longer = Walk(fake, since_spec(20.5), store=kept)
    assert rows_of_walk(longer) == fake.truth(since=T0 + timedelta(minutes=20.5))
    assert len(fake.calls) > sent and not longer.replayed
    sent = len(fake.calls)
    whole = Walk(fake, SPEC, store=kept)
    assert rows_of_walk(whole) == fake.truth() and len(fake.calls) > sent


def test_a_prefix_serves_a_walk_that_ends_inside_it_and_no_other():
    fake, kept = FakeList(make_rows(95)), Kept()
    assert len(list(Walk(fake, Spec(params={}, limit=LIMIT, max_rows=25), store=kept))) == 25
    assert not kept.record.complete and kept.record.since_ms is None  # a prefix: 3 pages
    sent = len(fake.calls)
    inside = Walk(fake, Spec(params={}, limit=LIMIT, max_rows=12), store=kept)
    assert rows_of_walk(inside) == fake.truth()[:12] and inside.replayed
    stopped = Walk(
        fake, Spec(params={}, limit=LIMIT, stop_at=lambda r: r["id"] == 1080), store=kept
    )
    assert [r["id"] for r in stopped] == [i for i, _ in fake.truth()][
        : fake.truth().index((1080, 1))
    ]
    assert len(fake.calls) == sent and stopped.replayed
    beyond = Walk(fake, Spec(params={}, limit=LIMIT, max_rows=50), store=kept)
    assert rows_of_walk(beyond) == fake.truth()[:50] and not beyond.replayed
    assert len(fake.calls) > sent


def test_pages_are_the_lists_own_fresh_or_replayed_and_max_pages_counts_them():
    fake, kept = FakeList(make_rows(45)), Kept()
    spec = Spec(params={}, limit=LIMIT)
    fresh = list(Walk(fake, spec, store=kept, pages=True))
    assert [(p.number, p.has_more, p.from_cache, len(p.rows)) for p in fresh] == [
        (1, True, False, 10),
        (2, True, False, 10),
        (3, True, False, 10),
        (4, True, False, 10),
        (5, False, False, 5),
    ]
    assert [p.cursor for p in fresh[:-1]] == [fake.truth()[9 + 10 * k][0] for k in range(4)]
    two = Walk(fake, Spec(params={}, limit=LIMIT, max_pages=2), store=kept, pages=True)
    got = list(two)
    assert [(p.number, p.from_cache) for p in got] == [(1, True), (2, True)] and two.pages == 2
    assert [r["id"] for p in got for r in p.rows] == [i for i, _ in fake.truth()[:20]]


def test_until_keep_and_max_rows_apply_to_replayed_rows_as_to_fresh_ones():
    fake, kept = FakeList(make_rows(95)), Kept()
    list(Walk(fake, SPEC, store=kept))
    until = T0 + timedelta(minutes=50)
    until_ms = row_key({"transaction_time": wire(until)})[0]
    outs = lambda r: r["type"] == "out"  # noqa: E731
    spec = Spec(params={"type": None}, limit=LIMIT, until_ms=until_ms, keep=outs, max_rows=4)
    for store in (kept, Kept()):  # replayed, then fresh
        walk = Walk(fake, spec, store=store, counters=(tally := Tally()))
        want = [r for r in fake.rows if row_key(r)[0] <= until_ms and outs(r)][:4]
        assert rows_of_walk(walk) == [(r["id"], r["revision"]) for r in want]
        assert tally.counts["rows"] == 4 and walk.rows == 4
    assert not walk.replayed


def test_a_frame_of_a_walk_is_its_rows_fresh_or_replayed_and_records_the_seams():
    fake, kept = FakeList(make_rows(195)), Kept()
    walk = Walk(fake, SPEC, store=kept, chains=8, split=True, counters=(tally := Tally()))
    df = walk.frame()
    assert list(zip(df["transaction_id"], df["revision"], strict=True)) == fake.truth()
    assert df.attrs["walk"]["plan"] == "types" and not df.attrs["walk"]["replayed"]
    assert tally.counts["rows"] == 195 and walk.rows == 195
    assert kept.record.complete and walk.seams == seam_starts(fake.keys(), chains=8, limit=LIMIT)
    sent = len(fake.calls)
    again = Walk(fake, SPEC, store=kept, chains=8, split=True).frame()
    assert again.equals(df) and again.attrs["walk"]["replayed"] and len(fake.calls) == sent
    seams = Walk(fake, SPEC, store=kept, chains=8, split=True, refresh=True)
    assert seams.frame().equals(df) and seams.plan.kind == "seams"


def test_a_walk_that_was_closed_or_failed_leaves_no_record():
    fake, kept = FakeList(make_rows(95)), Kept()
    walk = Walk(fake, SPEC, store=kept)
    next(walk), walk.close()
    assert next(walk, None) is None and kept.saved == 0
    real = fake.__call__

    def failing(call):
        if call.get("cursor") is not None:
            raise ServerError("boom", status=503)
        return real(call)

    with pytest.raises(ServerError):
        list(Walk(failing, SPEC, store=kept))
    assert kept.saved == 0


@pytest.mark.parametrize("at", [3, LIMIT - 1, LIMIT])
def test_one_row_out_of_order_does_not_end_a_window_walk(at):
    """Issue 26, item 9: one row out of order in the list (a hostile or broken server) ended a
    ``since`` walk early: 2 of 7 rows of the window, and no word of it. Also when it is the
    last row of its page (the next page's first row tells) or the first of the next."""
    rows = sorted(make_rows(40), key=row_key, reverse=True)  # newest first, minute 39 down to 0
    stray = rows.pop(35)  # minute 4: outside a window from minute 20.5 ...
    rows.insert(at, stray)  # ... sent among the newest rows
    pages = [rows[i : i + LIMIT] for i in range(0, len(rows), LIMIT)]

    def fetch(call: dict) -> bytes:  # the cursor is the next page's number
        n = int(call.get("cursor") or 0)
        more = n + 1 < len(pages)
        body = {"items": pages[n], "cursor": n + 1 if more else None, "has_more": more}
        return json.dumps(body).encode()

    spec = since_spec(20.5)
    want = [(r["id"], r["revision"]) for r in rows if row_key(r)[0] >= spec.since_ms]
    assert len(want) == 19
    store = Kept()
    assert rows_of_walk(Walk(fetch, spec, store=store)) == want
    assert rows_of_walk(replay := Walk(fetch, spec, store=store)) == want and replay.replayed
    got = [page.rows for page in Walk(fetch, spec, store=MemoryStore("pages"), pages=True)]
    assert [(r["id"], r["revision"]) for rows in got for r in rows] == want


class _Bar:
    """What a progress bar was told: made with ``kw``, at ``n`` pages, closed or not."""

    made: ClassVar[list[_Bar]] = []

    def __init__(self, **kw) -> None:
        self.kw, self.n, self.closed = kw, kw.get("initial", 0), False
        _Bar.made.append(self)

    def update(self, k: int) -> None:
        self.n += k

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("chains", [1, 8])
def test_a_long_walk_shows_a_bar_of_its_pages_after_the_first_few_and_closes_it(
    monkeypatch, chains
):
    """What mutation testing found no test checked: the bar's name, unit and count."""
    monkeypatch.setattr("invtools.api.walk.progress_bar", _Bar)
    _Bar.made.clear()
    fake = FakeList(make_rows(95))
    walk = Walk(fake, SPEC, store=Kept(), chains=chains, split=True, progress=True, desc="txs")
    assert rows_of_walk(walk) == fake.truth()
    (bar,) = _Bar.made
    assert bar.kw["desc"] == "txs" and bar.kw["unit"] == " pages"
    assert bar.n == walk.pages == len(fake.calls) and bar.closed
    quiet = Walk(FakeList(make_rows(95)), SPEC, store=Kept(), chains=chains, split=True)
    short = Walk(FakeList(make_rows(25)), SPEC, store=Kept(), progress=True)  # 3 pages
    assert rows_of_walk(quiet) and rows_of_walk(short) and len(_Bar.made) == 1


def test_a_walk_made_with_the_engines_defaults():
    """One chain, rows (not pages), no bar, a record replayed when young enough."""
    fake, kept = FakeList(make_rows(45)), Kept()
    first = Walk(fake, SPEC, store=kept)
    rows = list(first)
    assert [(r["id"], r["revision"]) for r in rows] == fake.truth()
    assert first.plan == Plan() and isinstance(rows[0], dict) and len(fake.calls) == 5
    again = Walk(fake, SPEC, store=kept)
    assert rows_of_walk(again) == fake.truth() and again.replayed and len(fake.calls) == 5
