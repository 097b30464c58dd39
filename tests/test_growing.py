"""Answers that grow (issue 45, item 2): ``client.lines_growing()`` returns once the lists are
walked and fetches the details in a background thread; ``frame()`` is, at any moment, the
lines of the newest transactions whose details are all in, its window that stretch. Real HTTP
against the stand-in; the server holds the details of the older transactions so that a partial
state is certain, and ``sb.data()`` is the truth the frames are compared with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pandas as pd
import pytest
from truth import raw_lines

from invtools import analysis, frames
from invtools.errors import AuthenticationError, Cancelled, WindowWarning

pytestmark = pytest.mark.network

TXS = "/v1/location-txs/"
ROOT = Path(__file__).resolve().parents[1]


def hold_details(sb, ids) -> threading.Event:
    """From now on the server holds each detail request of a transaction in ``ids`` until the
    event it returns is set (the others are answered at once)."""
    original, release, held = sb.handle, threading.Event(), {int(i) for i in ids}

    def handle(method, target, headers, fault=None):
        path = target.split("?")[0]
        if path.startswith(TXS) and int(path[len(TXS) :]) in held:
            release.wait(60)
        return original(method, target, headers, fault=fault)

    sb.handle = handle
    return release


def window_rows(client, sb, since="90D") -> list[dict]:
    """The truth's list rows in ``client``'s window ``since``, newest first."""
    floor = pd.Timestamp(client.now()) - pd.Timedelta(since)
    return [r for r in sb.data().transactions if pd.Timestamp(r["transaction_time"]) >= floor]


def distinct_cut(rows, near: int) -> int:
    """A count ``k`` >= ``near`` of newest rows whose oldest is not tied with the next one."""
    times = [r["transaction_time"] for r in rows]
    return next(k for k in range(near, len(rows)) if times[k - 1] != times[k])


def lines_of_truth(sb, ids) -> pd.DataFrame:
    """(transaction_id, item_id, quantity) of the server's lines of transactions ``ids``."""
    raw = raw_lines(sb.data())
    got = raw[raw["tx"].isin(list(ids))][["tx", "item", "qty"]]
    got = got.set_axis(["transaction_id", "item_id", "quantity"], axis=1)
    return key_columns(got)


def key_columns(lines: pd.DataFrame) -> pd.DataFrame:
    cols = ["transaction_id", "item_id", "quantity"]
    got = lines[cols].astype({"transaction_id": int, "item_id": int, "quantity": float})
    return got.sort_values(cols).reset_index(drop=True)


def said(fn, *args, **kwargs):
    """``fn(...)`` and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fn(*args, **kwargs)
    return got, sorted(str(w.message) for w in caught)


def test_a_partial_frame_holds_the_newest_stretch_and_its_analyses_are_exact_for_it(
    sb, make_client
):
    client = make_client(sb, timeout=(2.0, 60.0))
    rows = window_rows(client, sb)
    k = distinct_cut(rows, len(rows) // 3)
    release = hold_details(sb, [r["id"] for r in rows[k:]])
    try:
        growing = client.lines_growing(since="90D")
        assert growing.total == len(rows) and growing.wait(k)
        part = growing.frame()
        assert growing.arrived == k and not growing.done
        assert f"{k} of {len(rows)} details" in repr(growing)
    finally:
        release.set()
    whole = growing.result()

    # the newest k transactions, each line as the server has it, and nothing older
    newest = [r["id"] for r in rows[:k]]
    pd.testing.assert_frame_equal(key_columns(part), lines_of_truth(sb, newest))
    oldest_held = pd.Timestamp(rows[k - 1]["transaction_time"])
    since, until = frames.context_of(part).window
    assert since == oldest_held and until == frames.context_of(whole).window[1]
    assert pd.Timestamp(part.attrs["window"]["since"]) == since  # claimed, not only read

    # the whole frame is lines_df's, and the partial one is it cut to the stretch
    again = client.lines_df(since="90D")
    pd.testing.assert_frame_equal(whole, again)
    assert whole.attrs["window"] == again.attrs["window"]
    pd.testing.assert_frame_equal(key_columns(whole), lines_of_truth(sb, [r["id"] for r in rows]))
    moment = frames.context_of(whole).as_of
    cut, window, _ = frames.fit_window(whole, since, None, moment=moment)
    cut.attrs["window"] = window  # the whole frame as if fetched for the stretch alone
    pd.testing.assert_frame_equal(part, cut)  # the levels too: anchored at the current stock

    items = client.items_df()
    for fn, kwargs in (
        (analysis.top, {"by": "item_id", "value": "quantity", "n": 10}),
        (analysis.movement, {"items": items}),
        (analysis.activity_profile, {}),
    ):
        got, got_said = said(fn, part, **kwargs)
        want, want_said = said(fn, cut, **kwargs)
        pd.testing.assert_frame_equal(got, want)
        assert got_said == want_said, fn.__name__  # check_reach names the stretch's dates
    _, reach = said(analysis.movement, part, items)
    assert any(f"{since:%d %b %Y}" in m for m in reach)  # the stretch, not the 90 days


def test_a_transaction_tied_with_one_still_missing_is_left_out_of_the_stretch(sb, make_client):
    client = make_client(sb, timeout=(2.0, 60.0))
    tied = sb.data().transactions[10]["transaction_time"]  # two more at a time within
    first, second = (sb.add_transaction(transaction_time=tied) for _ in range(2))
    rows = window_rows(client, sb)
    order = [r["id"] for r in rows]
    k = max(order.index(first["id"]), order.index(second["id"]))  # the later one held
    release = hold_details(sb, order[k:])
    try:
        growing = client.lines_growing(since="90D")
        assert growing.wait(k)
        part = growing.frame()
    finally:
        release.set()
    growing.result()
    assert rows[k - 1]["transaction_time"] == rows[k]["transaction_time"]  # a tie at the cut
    # every one at the tied time left out, the one that arrived too: its time is not claimed
    newer = [r["id"] for r in rows[:k] if r["transaction_time"] != rows[k]["transaction_time"]]
    pd.testing.assert_frame_equal(key_columns(part), lines_of_truth(sb, newer))
    assert frames.context_of(part).window[0] > pd.Timestamp(rows[k]["transaction_time"])


def test_an_error_in_the_background_is_raised_by_result_and_said_by_the_frame(sb, make_client):
    client = make_client(sb, timeout=(2.0, 60.0))
    rows = window_rows(client, sb)
    k = distinct_cut(rows, 5)
    release = hold_details(sb, [r["id"] for r in rows[k:]])
    growing = client.lines_growing(since="90D")
    assert growing.wait(k)
    sb.revoke_token("shop")  # the held details are answered 401
    release.set()
    with pytest.raises(AuthenticationError):
        growing.result()
    assert growing.done and "stopped: AuthenticationError" in repr(growing)
    with pytest.warns(WindowWarning, match="the fetch stopped"):
        part = growing.frame()
    pd.testing.assert_frame_equal(
        key_columns(part), lines_of_truth(sb, [r["id"] for r in rows[:k]])
    )


def test_cancel_stops_the_fetch_and_keeps_what_arrived(sb, make_client):
    client = make_client(sb, timeout=(2.0, 60.0))
    rows = window_rows(client, sb)
    k = distinct_cut(rows, 5)
    release = hold_details(sb, [r["id"] for r in rows[k:]])
    try:
        growing = client.lines_growing(since="90D")
        assert growing.wait(k)
        growing.cancel()
        assert not growing.wait() and growing.done  # ended with the older details still held
    finally:
        release.set()
    with pytest.raises(Cancelled):
        growing.result()
    assert growing.arrived == k and "stopped: Cancelled" in repr(growing)
    with pytest.warns(WindowWarning):
        part = growing.frame()
    newest = [r["id"] for r in rows[:k]]
    pd.testing.assert_frame_equal(key_columns(part), lines_of_truth(sb, newest))
    assert frames.context_of(part).window[0] == pd.Timestamp(rows[k - 1]["transaction_time"])


_CHILD = """
import sys
from invtools.api import Client
client = Client(sys.argv[1], base_url=sys.argv[2], cache=sys.argv[3], rate_limit=0,
                progress=False, timeout=(5.0, 120.0))
growing = client.lines_growing(since="90D")
growing.wait(int(sys.argv[4]))
print(growing.arrived, flush=True)
growing.wait()  # the rest held by the server: killed here
"""


def test_a_killed_process_keeps_every_detail_it_fetched(sb, make_client, tmp_path):
    cache = tmp_path / "cache.sqlite"
    rows = window_rows(make_client(sb, cache=tmp_path / "other.sqlite"), sb)
    k = distinct_cut(rows, len(rows) // 2)
    rest = [r["id"] for r in rows[k:]]
    release = hold_details(sb, rest)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, sb.tokens["shop"], sb.base_url, str(cache), str(k)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None and int(child.stdout.readline()) == k
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            release.set()
    sb.clear_log()
    lines = make_client(sb, cache=cache).lines_df(since="90D")
    sent = {int(r.path.split("?")[0][len(TXS) :]) for r in sb.requests if r.path.startswith(TXS)}
    assert sent == set(rest)  # only the details the killed process never received
    pd.testing.assert_frame_equal(key_columns(lines), lines_of_truth(sb, [r["id"] for r in rows]))
