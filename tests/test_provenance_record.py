"""The provenance record on its own (issue 32, its mutation run): what ``with_provenance`` writes
into ``df.attrs`` for the values a user gives it, what ``merge_provenance`` makes of frames
whose records are unusual (no team, no endpoint, lists that do not align, times in other
zones), and the messages of its refusals. Pure functions: frames of your own, no server.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from invtools import ArgumentTypeError, Provenance
from invtools.frames import PROVENANCE_KEYS, merge_provenance, with_provenance
from invtools.frames.provenance import utc_stamp

SEOUL = ZoneInfo("Asia/Seoul")
URL = "http://127.0.0.1:8765"
AUG = {"since": "2026-08-01T00:00:00.000Z", "until": "2026-08-31T23:59:59.999Z"}
SEP = {"since": "2026-09-01T00:00:00.000Z", "until": "2026-09-30T23:59:59.999Z"}
OCT = {"since": "2026-10-01T00:00:00.000Z", "until": "2026-10-31T23:59:59.999Z"}


def made(**fields):
    return with_provenance(pd.DataFrame({"x": [1]}), **fields)


def merged_attrs(record):
    """A frame whose record is ``record`` (a merged one, or one a user wrote)."""
    return made(**{k: record[k] for k in PROVENANCE_KEYS if k in record})


@pytest.fixture
def seoul_clock(monkeypatch):
    """This machine's local zone is Seoul's (UTC+9), for the length of one test."""
    monkeypatch.setenv("TZ", "Asia/Seoul")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# ---------------------------------------------------------------------------- times


def test_times_without_a_zone_are_utc_whatever_this_machines_zone(seoul_clock):
    """A naive time is UTC, as ``context_of`` and the filters read it -- not this machine's
    local time (which moved ``as_of`` 9 hours back here), and a naive Timestamp is taken."""
    df = made(
        as_of=datetime(2026, 10, 31, 17, 10),
        fetched_at=pd.Timestamp("2026-10-31 17:11"),
        data_as_of=datetime(2026, 10, 31, 17, 9),
        filters={"since": datetime(2026, 8, 2), "until": pd.Timestamp("2026-10-31 17:10")},
    )
    assert df.attrs["as_of"] == "2026-10-31T17:10:00.000Z"
    assert df.attrs["fetched_at"] == "2026-10-31T17:11:00.000Z"
    assert df.attrs["data_as_of"] == "2026-10-31T17:09:00.000Z"
    assert df.attrs["filters"] == {
        "since": "2026-08-02T00:00:00.000Z",
        "until": "2026-10-31T17:10:00.000Z",
    }
    assert utc_stamp(datetime(2026, 5, 2, 1, 10)) == "2026-05-02T01:10:00.000Z"
    # now, in UTC, whatever the local zone
    before = datetime.now(UTC)
    now = utc_stamp()
    after = datetime.now(UTC)
    assert now.endswith("Z")
    assert before - timedelta(milliseconds=1) <= datetime.fromisoformat(now) <= after


def test_aware_times_in_another_zone_are_written_in_utc():
    ten_in_seoul = datetime(2026, 5, 2, 10, 0, tzinfo=SEOUL)
    df = made(as_of=ten_in_seoul, filters={"since": ten_in_seoul})
    assert df.attrs["as_of"] == df.attrs["filters"]["since"] == "2026-05-02T01:00:00.000Z"
    tokyo = pd.Timestamp("2026-05-02 10:00", tz="Asia/Tokyo")
    assert made(fetched_at=tokyo).attrs["fetched_at"] == "2026-05-02T01:00:00.000Z"


def test_merged_times_are_compared_as_instants_not_as_text():
    """Times kept as given (text with an offset, or without a zone: UTC) are merged by the
    instant they name: the oldest ``as_of`` and ``data_as_of``."""
    sixteen_z = "2026-10-31T18:00:00+02:00"  # 16:00Z: older than 17:00Z, though later as text
    both = merge_provenance(
        [made(team_id=1, as_of="2026-10-31T17:00:00.000Z"), made(team_id=1, as_of=sixteen_z)]
    )
    assert both["as_of"] == sixteen_z
    # no zone: UTC, beside aware text (this was a TypeError)
    naive = merge_provenance(
        [made(team_id=1, data_as_of="2026-10-31T17:00:00"), made(team_id=1, data_as_of=sixteen_z)]
    )
    assert naive["data_as_of"] == sixteen_z


# ---------------------------------------------------------------------- JSON values


class Basket:
    """A value of the user's own whose ``item`` needs an argument (not a numpy scalar)."""

    def item(self, i):
        return i

    def __str__(self):
        return "basket"


def test_filters_are_written_as_json_values():
    df = made(
        filters={
            "ids": {100, 9, 10},  # a set: in the order of its text, the same in every process
            "mixed": {"a", 1},
            "limit": np.int64(5),
            "share": np.float64(0.5),
            "flag": np.bool_(True),
            "back": timedelta(days=90),
            "path": Path("exports/lines.parquet"),
            "array": np.array([1, 2]),  # not one scalar: its text
            "basket": Basket(),
        }
    )
    got = df.attrs["filters"]
    assert got == {
        "ids": [10, 100, 9],
        "mixed": [1, "a"],
        "limit": 5,
        "share": 0.5,
        "flag": True,
        "back": "90 days, 0:00:00",
        "path": "exports/lines.parquet",
        "array": "[1 2]",
        "basket": "basket",
    }
    assert type(got["limit"]) is int and type(got["flag"]) is bool
    assert json.loads(json.dumps(df.attrs)) == df.attrs


# ----------------------------------------------------------------------- refusals


def test_refusals_name_what_was_given():
    df = pd.DataFrame()
    with pytest.raises(ArgumentTypeError) as raised:
        with_provenance("lines")
    assert str(raised.value) == "with_provenance() takes a DataFrame, not str"
    with pytest.raises(ArgumentTypeError) as raised:
        with_provenance(df, 6)
    assert str(raised.value) == (
        "with_provenance() takes a Provenance or a mapping of its fields, not int"
    )
    with pytest.raises(ArgumentTypeError) as raised:
        with_provenance(df, {"teamname": "Shop", 2: "x"})  # keys of any kind, in text order
    assert str(raised.value).startswith("with_provenance() got unknown key(s) [2, 'teamname'];")
    with pytest.raises(ArgumentTypeError) as raised:
        Provenance(source="api", filters=5)
    assert str(raised.value) == (
        "Provenance(filters) is a mapping of filter name -> value (merged: a list of them), not int"
    )
    with pytest.raises(ArgumentTypeError) as raised:
        merge_provenance("lines")
    assert str(raised.value) == (
        "merge_provenance(frames) takes a list of the DataFrames a result was computed from, "
        "not str"
    )
    with pytest.raises(ArgumentTypeError) as raised:
        merge_provenance([made(team_id=1), "items"])
    assert str(raised.value) == (
        "merge_provenance(frames) takes DataFrames (or Series), not a str among them"
    )


def test_a_merge_keeps_the_window_of_the_frame_measured_first():
    start = {"since": None, "until": "2026-08-31T23:59:59.999Z"}
    merged = merge_provenance(
        [made(team_id=1), made(team_id=1, window=start), made(team_id=1, window=OCT)]
    )
    assert merged["window"] == start  # the first frame that has a window: what was measured


# -------------------------------------------------------------------------- merging


def test_frames_naming_no_team_endpoint_or_grain_merge_to_none():
    got = merge_provenance([made(rows=1), made(rows=2)])
    assert {k: got[k] for k in ("team_id", "team_name", "base_url", "endpoint", "grain")} == {
        "team_id": None,
        "team_name": None,
        "base_url": None,
        "endpoint": None,
        "grain": None,
    }
    assert (got["filters"], got["window"], got["rows"]) == ({}, None, 3)


def test_sources_and_grains_are_the_distinct_ones_flat():
    lines = made(team_id=1, grain="lines")
    items = made(team_id=1, source="mirror", grain="items")
    assert merge_provenance([lines, made(team_id=1)])["grain"] == "lines"  # None adds nothing
    both = merge_provenance([lines, items])
    assert (both["source"], both["grain"]) == (["api", "mirror"], ["lines", "items"])
    again = merge_provenance([merged_attrs(both), made(team_id=1, grain="stock")])
    assert (again["source"], again["grain"]) == (["api", "mirror"], ["lines", "items", "stock"])


def test_counts_are_summed_with_zero_and_none_as_nothing():
    got = merge_provenance(
        [made(team_id=1, requests=5, pages=0, rows=None), made(team_id=1, pages=2, rows=3)]
    )
    assert (got["requests"], got["pages"], got["rows"], got["retries"]) == (5, 2, 3, 0)


def test_a_merged_record_merged_again_keeps_every_way_asked():
    lines = made(team_id=1, endpoint="/v1/location-txs", filters={"since": "90D"})
    items = made(team_id=1, endpoint="/v1/items")
    stock = made(team_id=1, endpoint="/v1/stock")
    got = merge_provenance([merged_attrs(merge_provenance([lines, items])), stock])
    assert got["endpoint"] == ["/v1/location-txs", "/v1/items", "/v1/stock"]
    assert got["filters"] == [{"since": "90D"}, {}, {}]


def test_lists_that_do_not_align_drop_no_endpoint_and_no_team():
    """A record of the user's own whose lists are of different lengths: nothing in them is
    dropped, and nothing nested. (Its endpoints beside one mapping of filters were a list in
    the list; a second endpoint with one filters entry, or a second team with one window,
    vanished.)"""
    txs = made(team_id=1, endpoint="/v1/location-txs")
    one_filter = made(team_id=1, endpoint=["/v1/items", "/v1/stock"], filters={"kind": "a"})
    got = merge_provenance([one_filter, txs])
    assert got["endpoint"] == ["/v1/items", "/v1/stock", "/v1/location-txs"]
    assert got["filters"] == [{"kind": "a"}, {"kind": "a"}, {}]  # the one mapping is each's
    short = made(team_id=1, endpoint=["/v1/items", "/v1/stock"], filters=[{"kind": "a"}])
    got = merge_provenance([short, txs])
    assert got["endpoint"] == ["/v1/items", "/v1/stock", "/v1/location-txs"]
    assert got["filters"] == [{"kind": "a"}, {}, {}]
    one_endpoint = made(team_id=1, endpoint="/v1/items", filters=[{"kind": "a"}])
    got = merge_provenance([one_endpoint, txs])
    assert got["endpoint"] == ["/v1/items", "/v1/location-txs"]
    assert got["filters"] == [{"kind": "a"}, {}]
    two_teams_one_window = made(team_id=[1, 2], team_name=["Shop", "York"], window=[AUG])
    leeds = made(team_id=3, team_name="Leeds", window=SEP)
    got = merge_provenance([two_teams_one_window, leeds])
    assert (got["team_id"], got["team_name"]) == ([1, 2, 3], ["Shop", "York", "Leeds"])
    assert got["window"] == [None, None, SEP]  # whose window it was is not known
    # names that do not align with the ids: not known either
    got = merge_provenance([made(team_id=1, team_name=["Shop", "York"]), leeds])
    assert (got["team_id"], got["team_name"]) == ([1, 3], [None, "Leeds"])


def test_one_frames_record_is_kept_as_it_is():
    odd = made(team_id=[1, 2], team_name="Shop", endpoint="/v1/items")  # one name, two ids
    assert merge_provenance([odd, None]) == odd.attrs
    assert merge_provenance([odd, odd])["team_name"] == "Shop"


def test_a_team_is_joined_by_its_id_and_named_by_any_of_its_frames():
    unnamed = made(team_id=1, endpoint="/v1/items")
    named = made(team_id=1, team_name="Shop", base_url=URL, endpoint="/v1/stock")
    got = merge_provenance([unnamed, named])
    assert (got["team_id"], got["team_name"], got["base_url"]) == (1, "Shop", URL)
    assert merge_provenance([named, unnamed])["team_id"] == 1
    # a record's unknown team (None) beside a known one: the known one is kept
    york = made(team_id=[None, 5], team_name=[None, "York"], base_url=[None, URL])
    got = merge_provenance([made(team_id=1, team_name="Shop", base_url=URL), york])
    assert (got["team_id"], got["team_name"]) == ([1, 5], ["Shop", "York"])
