"""A mirror synced in a background thread (issue 45, item 3): while a first fill runs, its
frames hold the newest stretch whose details are all stored, their window that stretch (the
rule of ``lines_growing``, ``frames.complete_since``); once it has finished, the mirror's own.
Real HTTP against the stand-in, which holds the older details so that a partial state is
certain; ``sb.data()`` is the truth."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from test_growing import distinct_cut, hold_details, key_columns, lines_of_truth

from invtools import TransactionMirror, frames
from invtools.errors import AuthenticationError, ConfigError

pytestmark = pytest.mark.network


def test_a_first_fill_hands_out_the_newest_stretch_then_the_whole_file(sb, make_client, tmp_path):
    client = make_client(sb, timeout=(2.0, 60.0))
    rows = sb.data().transactions  # the whole list, newest first
    k = distinct_cut(rows, len(rows) // 3)
    release = hold_details(sb, [r["id"] for r in rows[k:]])
    mirror = TransactionMirror(tmp_path / "shop.sqlite", client)
    try:
        filling = mirror.sync_in_background()
        assert filling.wait(details=k)
        lines, tx = filling.lines_df(), filling.transactions_df()
        assert not filling.done and len(mirror.lines_df()) == 0  # nothing applied yet
    finally:
        release.set()
    report = filling.result()

    newest = [r["id"] for r in rows[:k]]
    pd.testing.assert_frame_equal(key_columns(lines), lines_of_truth(sb, newest))
    assert tx["transaction_id"].tolist() == newest
    assert tx["revision"].tolist() == [r["revision"] for r in rows[:k]]
    for part in (lines, tx):  # the window: exactly the stretch held
        assert frames.context_of(part).window[0] == pd.Timestamp(rows[k - 1]["transaction_time"])
        assert part.attrs["source"] == "mirror"

    assert report.new == len(rows) and filling.done
    pd.testing.assert_frame_equal(filling.lines_df(), mirror.lines_df())
    pd.testing.assert_frame_equal(filling.transactions_df(), mirror.transactions_df())


def test_an_error_in_a_background_sync_is_raised_and_what_came_is_kept(sb, make_client, tmp_path):
    client = make_client(sb, timeout=(2.0, 60.0))
    rows = sb.data().transactions
    k = distinct_cut(rows, 10)
    release = hold_details(sb, [r["id"] for r in rows[k:]])
    filling = TransactionMirror(tmp_path / "shop.sqlite", client).sync_in_background()
    assert filling.wait(details=k)
    sb.revoke_token("shop")  # the held details are answered 401
    release.set()
    with pytest.raises(AuthenticationError):
        filling.result()
    assert filling.done and "stopped" in repr(filling)
    newest = [r["id"] for r in rows[:k]]
    pd.testing.assert_frame_equal(key_columns(filling.lines_df()), lines_of_truth(sb, newest))


def test_the_file_is_checked_before_the_sync_goes_to_the_background(sb, make_client, tmp_path):
    # the file made and checked in the caller's thread, never by two threads at once (the
    # waiting caller reading a file the sync was still making took it for another program's)
    path = tmp_path / "notes.sqlite"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE notes (text TEXT)")
    other.close()
    with pytest.raises(ConfigError, match="not an invtools transaction mirror"):
        TransactionMirror(path, make_client(sb)).sync_in_background()
