"""A walk's record and where it is kept (:mod:`invtools.api.records`): what a later walk, in any
process, replays whole or not at all. No HTTP: records made here, files in a temporary folder.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from invtools.api.plan import Plan
from invtools.api.records import (
    FileStore,
    MemoryStore,
    Record,
    clear_walks,
    walks_folder,
)

T0 = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)
BODIES = (b'{"items":[{"id":3},{"id":2}],"cursor":2,"has_more":true}', b'{"items":[]}')


def record(**kw) -> Record:
    base = dict(
        began=T0,
        plan=Plan("seams", ((5, 41),)),
        pieces=((0, None, BODIES[0]), (1, 1, BODIES[1])),
        complete=True,
        seams=((1000, 7), (900, 3)),
    )
    return Record(**{**base, **kw})


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"complete": False, "since_ms": 1777600000000, "seams": None},
        {"plan": Plan("merge", types=("in", "out")), "pieces": ()},
        {"pieces": ((2, 0, b""), (3, 7, BODIES[0]))},  # an empty body and a keep of 0
    ],
)
def test_a_record_read_back_is_the_same(kw):
    rec = record(**kw)
    assert Record.from_bytes(rec.to_bytes()) == rec


def test_a_record_is_compressed_page_bodies_and_all():
    big = record(pieces=tuple((0, None, BODIES[0] * 50) for _ in range(40)))
    assert len(big.to_bytes()) < sum(len(b) for *_, b in big.pieces) / 10


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-5],  # cut short
        lambda data: b"x" + data,  # not the format
        lambda data: data.replace(b"invtools-walk", b"invtools-wolk"),
        lambda data: b"",
    ],
)
def test_a_damaged_record_is_no_record(damage):
    assert Record.from_bytes(damage(record().to_bytes())) is None


def test_a_record_whose_sizes_or_time_do_not_hold_is_no_record():
    too_long = replace(record(), pieces=((0, None, BODIES[0]),)).to_bytes()
    # the same header read with one body more than it names: not what was written
    import zlib

    magic = b"invtools-walk 2\n"
    raw = zlib.decompress(too_long[len(magic) :]) + b"extra"
    assert Record.from_bytes(magic + zlib.compress(raw)) is None
    naive = replace(record(), began=T0.replace(tzinfo=None))
    assert Record.from_bytes(naive.to_bytes()) is None


@pytest.mark.parametrize(
    ("kw", "since_ms", "serves"),
    [
        ({"complete": True}, None, True),
        ({"complete": True}, 5, True),
        ({"complete": False, "since_ms": 100}, 100, True),  # the same window
        ({"complete": False, "since_ms": 100}, 101, True),  # a shorter one
        ({"complete": False, "since_ms": 100}, 99, False),  # reaches further back
        ({"complete": False, "since_ms": 100}, None, False),  # the whole list
        ({"complete": False, "since_ms": None}, 100, False),  # a prefix: only by trying
    ],
)
def test_a_record_serves_what_it_holds_every_row_of(kw, since_ms, serves):
    assert record(**kw).serves(since_ms=since_ms) is serves


def test_memory_keeps_plan_and_seams_but_no_page():
    MemoryStore.forget()
    store = MemoryStore("a list")
    assert store.load() is None
    store.save(record())
    kept = store.load()
    assert kept.pieces == () and kept.seams == record().seams and kept.plan == record().plan
    assert MemoryStore("another list").load() is None
    MemoryStore.forget()
    assert store.load() is None


def test_a_file_store_keeps_one_record_private_written_whole(tmp_path):
    folder = walks_folder(tmp_path / "c.sqlite")
    assert folder == tmp_path / "c.sqlite.walks"
    store = FileStore(folder, "prefix-list")
    assert store.load() is None  # nothing yet
    store.save(record())
    store.save(record(complete=False, since_ms=5))  # the newer one replaces it
    assert store.load() == record(complete=False, since_ms=5)
    assert [p.name for p in folder.iterdir()] == ["prefix-list.walk"]  # no temporary left
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "prefix-list.walk").stat().st_mode) == 0o600


def test_a_record_that_cannot_be_read_is_no_record_and_says_so(tmp_path, caplog):
    folder = tmp_path / "walks"
    store = FileStore(folder, "k")
    folder.mkdir()
    (folder / "k.walk").write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING, logger="invtools"):
        assert store.load() is None
    assert "damaged" in caplog.text and str(folder / "k.walk") in caplog.text
    caplog.clear()
    (folder / "k.walk").unlink()
    (folder / "k.walk").mkdir()  # not a file: reading it fails
    with caplog.at_level(logging.WARNING, logger="invtools"):
        assert store.load() is None
    assert "not read" in caplog.text and "walked again" in caplog.text


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders anyway")
def test_a_record_that_cannot_be_written_is_said_and_the_walk_goes_on(tmp_path, caplog):
    folder = tmp_path / "walks"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with caplog.at_level(logging.WARNING, logger="invtools"):
            FileStore(folder, "k").save(record())  # no exception
    finally:
        folder.chmod(0o700)
    assert "not kept" in caplog.text and list(folder.iterdir()) == []


def test_a_record_whose_folder_is_a_file_is_not_written_and_leaves_nothing(tmp_path, caplog):
    blocker = tmp_path / "walks"
    blocker.write_text("a file where the folder would be")
    with caplog.at_level(logging.WARNING, logger="invtools"):
        FileStore(blocker, "k").save(record())  # no exception
    assert "not kept" in caplog.text and blocker.read_text().startswith("a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walks"]


def test_clearing_takes_a_prefixs_records_or_only_the_older_ones(tmp_path):
    folder = tmp_path / "walks"
    for key in ("aaa-1", "aaa-2", "bbb-1"):
        FileStore(folder, key).save(record())
    (folder / "aaa-3.walk.123.456").write_bytes(b"a temporary a killed writer left")
    old = time.time() - 3600
    os.utime(folder / "aaa-1.walk", (old, old))
    assert clear_walks(folder, "aaa", older_than=time.time() - 60) == 1  # only aaa-1
    assert sorted(p.name for p in folder.iterdir()) == [
        "aaa-2.walk",
        "aaa-3.walk.123.456",
        "bbb-1.walk",
    ]
    assert clear_walks(folder, "aaa") == 1  # aaa-2; the temporary goes too, uncounted
    assert sorted(p.name for p in folder.iterdir()) == ["bbb-1.walk"]
    assert clear_walks(folder) == 1 and list(folder.iterdir()) == []
    assert clear_walks(tmp_path / "none") == 0  # no folder: nothing to do


def test_a_walk_record_is_as_old_as_the_walk_that_began_it():
    later = record(began=T0 + timedelta(hours=1))
    assert Record.from_bytes(later.to_bytes()).began == T0 + timedelta(hours=1)


def test_a_record_is_read_and_written_without_a_copy_of_all_its_pages():
    # a warm 200,000-row frame held three copies of the page bodies while its record was read
    # (the whole decompressed record, a copy of its tail, the pages): 353 MiB at the peak
    # against 235 before the records were files (benchmarks/bench_end_to_end.py)
    import tracemalloc

    body = (
        b'{"items":['
        + b",".join(b'{"id":%d,"memo":"%s"}' % (i, b"x" * (i % 97)) for i in range(100))
        + b'],"cursor":1,"has_more":true}'
    )
    big = record(pieces=tuple((0, None, body + b" " * (i % 7)) for i in range(300)))
    size = sum(len(b) for *_, b in big.pieces)
    tracemalloc.start()
    try:
        data = big.to_bytes()
        _, wrote = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        back = Record.from_bytes(data)
        _, read = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert back == big
    assert wrote < 0.5 * size and read < 1.5 * size


def test_a_read_record_holds_one_page_at_a_time_however_often_its_pages_are_read():
    # issue 34: a re-run of 100,000 rows held its 41 MiB of pages at once, and the holes they
    # left raised the peak of the lines_df() that followed
    import random
    import tracemalloc

    rng = random.Random(34)  # pages as unlike each other as a list's: no long repeats

    def page(n: int) -> bytes:
        rows = (b'{"id":%d,"memo":"%x"}' % (i, rng.getrandbits(64)) for i in range(n, n + 500))
        return b'{"items":[' + b",".join(rows) + b"]}"

    big = record(pieces=tuple((i % 3, None if i % 2 else i, page(i * 500)) for i in range(200)))
    size = sum(len(b) for *_, b in big.pieces)
    data = big.to_bytes()
    tracemalloc.start()
    try:
        back = Record.from_bytes(data)
        _, read = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        seen = [(j, keep, len(body)) for j, keep, body in back.pieces]
        _, replayed = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read < 0.1 * size and replayed < 0.1 * size  # a page is 0.5 % of them all
    assert seen == [(j, keep, len(body)) for j, keep, body in big.pieces]
    assert len(back.pieces) == 200 and back.pieces[7] == big.pieces[7]
    assert list(back.pieces) == list(back.pieces) and back == big  # read again: the same
