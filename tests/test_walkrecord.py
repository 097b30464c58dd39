"""Walk records (invtools.api.walkrecord): what a finished walk read, as JSON, kept in this
process or in the cache file. No HTTP: the replays themselves are tested in
test_walk_replay.py and test_client_chains.py against the stand-in."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from invtools.api.plan import Plan
from invtools.api.walkrecord import (
    TABLE,
    FileStore,
    MemoryStore,
    WalkRecord,
    digest,
    forget_walks,
)

T = datetime(2026, 5, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_memory():
    forget_walks()
    yield
    forget_walks()


def record(**kw):
    base = {
        "began": T,
        "ended": T + timedelta(seconds=3),
        "plan": Plan("seams", ((5, 41),)),
        "pages": {"/v1/location-txs?limit=100": digest(b"{}")},
        "seams": ((5, 41), (3, 17)),
    }
    return WalkRecord(**{**base, **kw})


def test_a_digest_tells_bodies_apart():
    assert digest(b"{}") == digest(b"{}")
    assert digest(b"{}") != digest(b"{ }")
    assert len(digest(b"")) == 24


@pytest.mark.parametrize(
    "rec",
    [
        record(),
        record(since_ms=1234, seams=None),
        record(plan=Plan("merge", types=("in", "out")), pages={}),
        record(seams=()),
    ],
)
def test_a_record_read_back_from_json_is_the_same(rec):
    back = WalkRecord.from_json(rec.to_json())
    assert back == rec
    assert back.began.utcoffset() == timedelta(0)


def test_a_window_record_serves_only_windows_inside_its_own():
    whole, window = record(), record(since_ms=1000)
    assert whole.serves(since_ms=None) and whole.serves(since_ms=5)
    assert window.serves(since_ms=1000) and window.serves(since_ms=1001)
    assert not window.serves(since_ms=999)
    assert not window.serves(since_ms=None)


def test_the_mirrors_earlier_cursors_are_seams_only():
    old = WalkRecord.from_json('{"next": [[5, 41], [3, 17]]}')
    assert old.seams == ((5, 41), (3, 17))
    assert old.plan == Plan() and old.pages == {} and old.since_ms is None
    assert old.began.year == 1970 and old.began.utcoffset() == timedelta(0)
    assert old.ended == old.began  # no walk known: as old as can be
    assert WalkRecord.from_json(old.to_json()) == old


def mangled(**change):
    data = json.loads(record().to_json())
    data.update(change)
    return json.dumps({k: v for k, v in data.items() if v != "DROP"})


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "{oops",
        "[]",
        "42",
        '"whole"',
        '{"next": 5}',
        '{"next": [[5]]}',
        mangled(began="2026-05-01T12:00:00"),  # a naive time
        mangled(ended="yesterday"),
        mangled(plan={"kind": "spiral", "starts": []}),
        mangled(pages=[1, 2]),
        mangled(seams=[[5]]),
        mangled(since_ms="soon"),
        mangled(began="DROP"),
        mangled(pages="DROP"),
        mangled(seams="DROP"),
        mangled(since_ms="DROP"),
        mangled(plan="DROP"),
        mangled(ended="DROP"),
    ],
)
def test_a_damaged_record_is_no_record(text):
    assert WalkRecord.from_json(text) is None


def test_memory_keeps_each_lists_slots_apart():
    a, b = MemoryStore("a"), MemoryStore("b")
    a.save("whole", record())
    a.save("window", record(since_ms=7))
    assert a.load("whole") == record() and a.load("window").since_ms == 7
    assert a.load("prefix") is None and b.load("whole") is None
    a.save("whole", record(seams=()))
    assert a.load("whole").seams == ()


def test_memory_is_bounded_forgetting_the_least_recently_saved():
    first, kept = MemoryStore("first"), MemoryStore("kept")
    first.save("whole", record())
    kept.save("whole", record())
    for n in range(2000):
        MemoryStore(f"list {n}").save("whole", record())
        if n % 100 == 0:
            kept.save("whole", record())
    assert first.load("whole") is None
    assert kept.load("whole") == record()
    assert MemoryStore("list 1999").load("whole") == record()


def test_the_cache_files_records_are_kept_per_key_and_slot(tmp_path):
    path = tmp_path / "cache.sqlite"
    one, two = FileStore(path, "tok1:list"), FileStore(path, "tok2:list")
    one.save("whole", record())
    one.save("window", record(since_ms=9))
    two.save("whole", record(seams=None))
    assert FileStore(path, "tok1:list").load("whole") == record()
    assert one.load("window").since_ms == 9 and one.load("prefix") is None
    assert two.load("whole").seams is None
    one.save("whole", record(seams=()))
    assert one.load("whole").seams == ()


def test_clearing_takes_a_prefixs_records_or_only_the_older_ones(tmp_path):
    path = tmp_path / "cache.sqlite"
    old, new = record(ended=T), record(ended=T + timedelta(hours=2))
    FileStore(path, "tok1:a").save("whole", old)
    FileStore(path, "tok1:b").save("whole", new)
    FileStore(path, "tok2:a").save("whole", old)
    FileStore(path, "xtok1:a").save("whole", old)
    cutoff = (T + timedelta(hours=1)).timestamp()
    assert FileStore.clear(path, "tok1:", older_than=cutoff) == 1
    assert FileStore(path, "tok1:a").load("whole") is None
    assert FileStore(path, "tok1:b").load("whole") == new
    assert FileStore.clear(path, "tok1:") == 1
    assert FileStore(path, "tok2:a").load("whole") == old
    assert FileStore.clear(path, "") == 2
    assert FileStore(path, "xtok1:a").load("whole") is None


def test_a_damaged_record_in_the_file_is_no_record(tmp_path):
    path = tmp_path / "cache.sqlite"
    store = FileStore(path, "k")
    store.save("whole", record())
    with sqlite3.connect(path) as con:
        con.execute(f"UPDATE {TABLE} SET record = '{{oops'")
    con.close()
    assert store.load("whole") is None


def test_a_file_that_cannot_be_used_means_no_record_and_never_fails(tmp_path, caplog):
    path = tmp_path / "a folder"
    path.mkdir()
    store = FileStore(path, "k")
    with caplog.at_level(logging.DEBUG, logger="invtools"):
        store.save("whole", record())
        assert store.load("whole") is None
        assert FileStore.clear(path, "") == 0
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    # each says which file and why (sqlite's own words), the lost record at INFO
    assert [level for level, _ in said] == [logging.INFO, logging.DEBUG, logging.DEBUG]
    assert [
        m.startswith(("walk record not kept", "walk record not read", "walk records not cleared"))
        for _, m in said
    ] == [True] * 3
    assert all(str(path) in m and "unable to open database file" in m for _, m in said)
