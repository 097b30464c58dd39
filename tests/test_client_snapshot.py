"""A walk comes from the cache only whole, as one snapshot no older than its ``max_age``; and a
frame says how old its data is. Real HTTP against the stand-in; mutations between walks."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from invtools.errors import ConfigError

pytestmark = pytest.mark.network


def plain_walk_ids(sb, make_client) -> list[int]:
    """The list as one fresh walk sees it now (no cache)."""
    return [r["id"] for r in make_client(sb, cache=False).transactions()]


def detail_requests(sb) -> int:
    return sum(r.route == "/v1/location-txs/{id}" for r in sb.requests)


def test_a_cached_head_and_a_fresh_tail_are_never_mixed(sb, make_client):
    """Issue 13, item 3: look at the newest rows (page 1 cached), re-date one row of page 1
    into the past and one deep row to today; the next whole walk has every row once."""
    c = make_client(sb)
    head = list(itertools.islice(c.transactions(), 5))
    ids = plain_walk_ids(sb, make_client)
    to_past, to_today = head[2]["id"], ids[450]
    sb.edit_transaction(to_past, transaction_time="2025-01-02T03:04:05Z")
    sb.edit_transaction(to_today, transaction_time=datetime.now(UTC))
    expected = plain_walk_ids(sb, make_client)
    assert expected[0] == to_today and to_past in expected[-200:]

    for frame in (c.transactions_df(), c.transactions_df(type=None, since="2000-01-01")):
        assert frame["transaction_id"].tolist() == expected  # each once, in the list's order
    assert [r["id"] for r in c.transactions()] == expected

    lines = c.lines_df()
    per_tx = lines.groupby("transaction_id").size()
    for tid in (to_past, to_today):
        assert per_tx[tid] == len(sb.data().transaction(tid)["items"])  # not doubled


def test_a_walk_within_max_age_sends_nothing_and_says_how_old_it_is(sb, make_client):
    c = make_client(sb)
    first = c.transactions_df()
    sb.add_transaction()  # the server moved on; the analyst's frame did not
    sb.clear_log()
    again = c.transactions_df(since="2000-01-01")
    assert sb.requests == []
    assert again["transaction_id"].tolist() == first["transaction_id"].tolist()
    assert again.attrs["requests"] == 0
    # How old: the data is as of the first walk, not of this call.
    as_of = pd.Timestamp(again.attrs["data_as_of"])  # on the service's clock, as c.now()
    assert as_of <= pd.Timestamp(c.now()) and again.attrs["as_of"] == first.attrs["as_of"]
    # (the first walk stamped page 1 on arrival, the cache on storing it: the same moment)
    assert abs(pd.Timestamp(first.attrs["data_as_of"]) - as_of) < pd.Timedelta(seconds=1)


def test_an_older_walk_than_max_age_is_fetched_again_whole(sb, make_client):
    c = make_client(sb)
    c.transactions_df()
    new = sb.add_transaction()
    sb.clear_log()
    fresh = c.transactions_df(since="2000-01-01", max_age="0s")
    pages = sum(r.route == "/v1/location-txs" for r in sb.requests)
    assert fresh["transaction_id"].iloc[0] == new["id"] and pages == -(-len(fresh) // 100)
    assert pd.Timestamp(fresh.attrs["data_as_of"]) >= pd.Timestamp(c.now()) - pd.Timedelta(
        minutes=1
    )
    # A whole walk (the raw fast path, several chains) follows the same rule: its chains
    # are replayed from the cache only as the one walk that stored them.
    assert (
        c.transactions_df(max_age="1h")["transaction_id"].tolist()
        == fresh["transaction_id"].tolist()
    )
    sb.clear_log()
    assert (
        c.transactions_df(max_age="1h")["transaction_id"].tolist()
        == fresh["transaction_id"].tolist()
    )
    assert sb.requests == []
    newer = sb.add_transaction()
    assert c.transactions_df(refresh=True)["transaction_id"].iloc[0] == newer["id"]


def test_max_age_needs_a_unit(sb, make_client):
    c = make_client(sb)
    with pytest.raises(ConfigError, match="max_age"):
        c.transactions_df(max_age=3600)
    with pytest.raises(ConfigError, match="max_age"):
        list(c.transactions(max_age="an hour"))


def test_an_interrupted_walk_is_not_topped_up_from_another_snapshot(sb, make_client):
    c = make_client(sb)
    list(itertools.islice(c.transactions(), 250))  # pages 1-3 cached, then abandoned
    ids = plain_walk_ids(sb, make_client)
    sb.edit_transaction(ids[50], transaction_time="2025-01-02T03:04:05Z")  # page 1 -> deep
    expected = plain_walk_ids(sb, make_client)
    got = [r["id"] for r in c.transactions()]
    # Served from the cached pages 1-3, then fresh from page 1: every row exactly once.
    assert sorted(got) == sorted(expected) and len(set(got)) == len(got)


def test_details_at_a_revision_are_never_refetched_even_when_the_list_is(sb, make_client):
    c = make_client(sb)
    c.lines_df(since="2026-10-01")
    sb.clear_log()
    c.lines_df(since="2026-10-01", refresh=True)
    assert detail_requests(sb) == 0 and sb.requests  # the list only


def test_the_default_age_of_a_transactions_walk_is_an_hour(sb, make_client):
    from dataclasses import replace

    from invtools.api.records import Record

    c = make_client(sb)
    c.transactions_df()
    (path,) = c.cache_path.parent.glob("*.walks/*.walk")
    record = Record.from_bytes(path.read_bytes())
    for minutes, sends in ((59, False), (61, True)):  # as if the walk began that long ago
        path.write_bytes(
            replace(record, began=record.began - timedelta(minutes=minutes)).to_bytes()
        )
        sb.clear_log()
        c.transactions_df()
        assert bool(sb.requests) == sends, minutes
