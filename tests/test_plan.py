"""The walk plan's pure functions (invtools.api.plan): a row's place in the list, which chains a
walk runs and where each starts. No HTTP: the walks themselves are tested in
test_client_chains.py against the stand-in."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime

import pytest

from invtools._types import TX_TYPES
from invtools.api.plan import (
    DEFAULT_CHAINS,
    NO_TIME,
    Plan,
    chain_count,
    choose_plan,
    row_key,
    seam_starts,
    time_ms,
)
from invtools.errors import ConfigError

T0 = datetime(2026, 5, 2, 1, 10, tzinfo=UTC)
T0_MS = 1777684200000


# ----------------------------------------------------------------------------- a row's place


@pytest.mark.parametrize(
    "value", ["2026-05-02T01:10:00.000Z", "2026-05-02T01:10:00", "2026-05-02T03:10:00+02:00", T0]
)
def test_a_wire_time_is_its_epoch_milliseconds_naive_times_being_utc(value):
    assert time_ms(value) == T0_MS


def test_milliseconds_are_kept():
    assert time_ms("2026-05-02T01:10:00.123Z") - T0_MS == 123


@pytest.mark.parametrize("value", [None, "", "yesterday", "2026-13-40T00:00:00Z", object()])
def test_a_missing_or_unreadable_time_sorts_last(value):
    assert time_ms(value) == NO_TIME
    assert (T0_MS, 1) > (time_ms(value), 10**9)


def test_a_rows_key_is_its_time_then_its_id():
    assert row_key({"id": 7, "transaction_time": "2026-05-02T01:10:00Z"}) == (T0_MS, 7)
    assert row_key({"id": "7", "transaction_time": None}) == (NO_TIME, -1)
    assert row_key({}) == (NO_TIME, -1)


# --------------------------------------------------------------------------------- plans


def test_how_many_chains_each_kind_of_plan_runs():
    assert Plan().chains == 1
    assert Plan("types").chains == 1 + len(TX_TYPES)
    assert Plan("seams", ((5, 41), (3, 17))).chains == 3
    assert Plan("merge", types=("in", "adjust")).chains == 2
    assert [
        Plan(k, types=("in",) if k == "merge" else ()).merged
        for k in ("one", "types", "seams", "merge")
    ] == [False, True, False, True]


def test_each_chains_filters_and_start_cursor():
    params = {"type": None, "since": "x"}
    assert Plan().chain(0, params) == (params, None)
    types = Plan("types")
    assert types.chain(0, params) == (params, None)  # the head chain: no type filter
    assert [types.chain(j, params)[0]["type"] for j in range(1, types.chains)] == list(TX_TYPES)
    assert all(types.chain(j, params)[0]["since"] == "x" for j in range(types.chains))
    seams = Plan("seams", ((5, 41), (3, 17)))
    assert [seams.chain(j, params) for j in range(3)] == [
        (params, None),
        (params, 41),
        (params, 17),
    ]
    merge = Plan("merge", types=("in", "adjust"))
    assert [merge.chain(j, {"type": ("in", "adjust")}) for j in range(2)] == [
        ({"type": "in"}, None),
        ({"type": "adjust"}, None),
    ]
    assert params == {"type": None, "since": "x"}  # the caller's filters are left alone


def test_only_a_seam_chain_before_the_last_stops_at_the_next_ones_start():
    seams = Plan("seams", ((5, 41), (3, 17)))
    assert [seams.stop_key(j) for j in range(3)] == [(5, 41), (3, 17), None]
    assert [Plan(k).stop_key(0) for k in ("one", "types")] == [None, None]


@pytest.mark.parametrize(
    "plan",
    [Plan(), Plan("types"), Plan("seams", ((5, 41), (3, 17))), Plan("merge", types=("in", "out"))],
)
def test_a_plan_read_back_from_json_is_the_same(plan):
    assert Plan.from_json(plan.to_json()) == plan


def test_a_plan_without_types_written_earlier_is_read():
    assert Plan.from_json({"kind": "seams", "starts": [[5, 41]]}) == Plan("seams", ((5, 41),))


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "seams",
        {},
        {"kind": "seams"},
        {"starts": []},
        {"kind": "spiral", "starts": []},
        {"kind": "seams", "starts": [[5]]},
        {"kind": "seams", "starts": [["x", 41]]},
        {"kind": "merge", "starts": []},  # a merge without types
        {"kind": "types", "starts": [], "types": ["in"]},  # types on a plan not merged
    ],
)
def test_anything_else_is_not_a_plan(data):
    with pytest.raises(ValueError, match="not a walk plan"):
        Plan.from_json(data)


# ----------------------------------------------------------------------------- seam starts


def keys_of(n):
    return [(10_000_000 - 3 * i, 1000 + i) for i in range(n)]


@pytest.mark.parametrize(
    "n,chains,limit",
    [
        (1000, 4, 100),
        (1000, 8, 100),
        (250, 8, 100),
        (200, 2, 100),
        (101, 8, 100),
        (1234, 3, 50),
        (5000, 8, 100),
        (999, 5, 100),
        (1000, 10, 100),
    ],
)
def test_seam_starts_give_every_chain_about_the_same_pages_and_no_extra_page(n, chains, limit):
    keys = keys_of(n)
    starts = seam_starts(keys, chains=chains, limit=limit)
    pages = math.ceil(n / limit)
    assert len(starts) == min(chains, pages) - 1
    where = [keys.index(k) for k in starts]  # each a key of the list, newest first
    assert where == sorted(set(where))
    bounds = [0, *(i + 1 for i in where), n]  # chain j reads rows bounds[j]..bounds[j+1]-1
    rows = [b - a for a, b in itertools.pairwise(bounds)]
    assert all(r > 0 for r in rows)
    chain_pages = [math.ceil(r / limit) for r in rows]
    assert max(chain_pages) - min(chain_pages) <= 1
    assert sum(chain_pages) <= pages + len(starts)
    # the cursor row sits a tenth of a page before the end of the previous chain's last page:
    # a few rows added still leave it on that page
    for r in rows[:-1]:
        assert limit - (r % limit or limit) >= limit // 10


@pytest.mark.parametrize("n,chains", [(3, 3), (4, 8), (10, 4), (2, 2)])
def test_seam_starts_with_pages_of_one_row_are_rows_of_the_list_in_its_order(n, chains):
    keys = keys_of(n)
    starts = seam_starts(keys, chains=chains, limit=1)
    assert len(starts) < chains
    where = [keys.index(k) for k in starts]
    assert where == sorted(set(where))
    assert all(i < n - 1 for i in where)  # the last chain has a row to read


def test_a_list_of_one_page_or_none_has_no_seams():
    assert seam_starts(keys_of(100), chains=8, limit=100) == ()
    assert seam_starts([], chains=8, limit=100) == ()
    assert seam_starts(keys_of(1000), chains=1, limit=100) == ()


# ------------------------------------------------------------------------------ choose_plan

SEAMS = tuple((1000 - 10 * k, 500 - k) for k in range(7))  # newest first


def test_a_first_walk_runs_type_chains_only_with_a_chain_per_type_and_no_type_filter():
    assert choose_plan(None, chains=len(TX_TYPES), typed=False) == Plan("types")
    assert choose_plan(None, chains=len(TX_TYPES) - 1, typed=False) == Plan()
    assert choose_plan(None, chains=8, typed="in") == Plan()
    assert choose_plan(None, chains=1, typed=False) == Plan()


def test_a_rewalk_runs_seam_chains_from_the_recorded_seams():
    assert choose_plan(SEAMS, chains=8, typed=False) == Plan("seams", SEAMS)
    assert choose_plan(SEAMS, chains=1, typed=False) == Plan()
    assert choose_plan((), chains=8, typed=False) == Plan()


def test_more_seams_than_chains_are_thinned_evenly():
    assert choose_plan(SEAMS, chains=4, typed=False).starts == (SEAMS[1], SEAMS[3], SEAMS[5])
    assert choose_plan(SEAMS, chains=2, typed=False).starts == (SEAMS[3],)
    six = choose_plan(SEAMS, chains=7, typed=False).starts
    assert len(set(six)) == 6 and sorted(six, reverse=True) == list(six) and set(six) < set(SEAMS)


def test_seams_older_than_the_window_are_dropped():
    since = SEAMS[2][0]
    assert choose_plan(SEAMS, chains=8, typed=False, since_ms=since).starts == SEAMS[:3]
    assert choose_plan(SEAMS, chains=8, typed=False, since_ms=SEAMS[0][0] + 1) == Plan()


def test_several_types_run_one_merged_chain_each_whatever_was_recorded():
    assert choose_plan(SEAMS, chains=1, typed=("in", "out")) == Plan("merge", types=("in", "out"))


# ------------------------------------------------------------------------------ chain_count


def test_the_chains_asked_for_then_the_clients_concurrency_then_eight():
    assert chain_count(None, None) == DEFAULT_CHAINS == 8
    assert chain_count(3, None) == 3
    assert chain_count(1, None) == 1
    assert chain_count(3, 5) == 5
    assert chain_count(None, 1) == 1
    for unusable in (0, -2, True, 2.5, "4"):
        assert chain_count(unusable, None) == DEFAULT_CHAINS


@pytest.mark.parametrize("chains", [0, -1, True, False, 2.0, "4"])
def test_chains_that_are_not_a_whole_number_from_one_are_refused(chains):
    with pytest.raises(ConfigError, match="chains must be a whole number >= 1"):
        chain_count(4, chains)
