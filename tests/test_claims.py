"""A frame's claims checked against its rows (issue 43 item 2): a window its rows no longer
fill (cut by time after the fetch) is measured on what the rows hold and said; a frame that
lost its context (a merge, a frame built by hand) is not silently measured to its newest row;
the "as of ``until``" rule and the ``until`` cut. Against the stand-in over real HTTP,
compared with the server's truth."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from invtools import DeletedItemsWarning, WindowWarning, analysis
from invtools.frames import context_of, fit_window, stock_history

pytestmark = pytest.mark.network

DAYS = pd.Timedelta("90D")


def _quietly(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        return call()


def _year(sb, make_client):
    client = make_client(sb)
    return client, client.lines_df(since="365D")


def test_a_frame_cut_by_time_is_profiled_on_the_days_its_rows_hold(sb, make_client):
    _, lines = _year(sb, make_client)
    newest = lines["transaction_time"].max()
    recent = lines[lines["transaction_time"] >= newest - DAYS]  # a boolean filter keeps attrs
    with pytest.warns(WindowWarning, match="activity_profile: the rows hold"):
        got = analysis.activity_profile(recent, by="weekday")
    assert set(got["days"]) <= {13, 14}  # 91 days: 13 of each weekday, not 52
    # each mean is the truth's count of that weekday's transactions over the days it holds
    start = recent["transaction_time"].min()
    truth = pd.Series(
        [
            pd.Timestamp(t["transaction_time"]).day_of_week
            for t in sb.data("shop").transactions
            if start <= pd.Timestamp(t["transaction_time"]) <= newest and t["type"] == "out"
        ]
    ).value_counts()
    outs = got[got["type"] == "out"].set_index("weekday")
    for day, count in truth.items():
        assert outs.loc[day, "transactions"] == pytest.approx(count / outs.loc[day, "days"])


def test_an_untouched_frame_is_profiled_over_its_whole_window_unwarned(sb, make_client):
    _, lines = _year(sb, make_client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        got = analysis.activity_profile(lines, by="weekday")
    assert set(got["days"]) <= {52, 53}


def test_a_frame_cut_at_its_start_says_the_look_back_it_does_not_hold(sb, make_client):
    client, lines = _year(sb, make_client)
    items = client.items_df()
    newest = lines["transaction_time"].max()
    month = lines[lines["transaction_time"] >= newest - pd.Timedelta("30D")]
    for name, call in {
        "movement": lambda: analysis.movement(month, items),
        "dead_stock": lambda: analysis.dead_stock(month, items, client.stock_df()),
        "reorder": lambda: analysis.reorder(month, items, look_back="8W"),
    }.items():
        with pytest.warns(WindowWarning, match=f"{name}: the lines start"):
            _quietly(call)


def test_a_frame_cut_at_its_end_is_not_taken_for_one_up_to_its_moment(sb, make_client):
    client, lines = _year(sb, make_client)
    items = client.items_df()
    newest = lines["transaction_time"].max()
    old = lines[lines["transaction_time"] < newest - pd.Timedelta("200D")]
    with pytest.warns(WindowWarning, match="movement: the lines end"):
        _quietly(lambda: analysis.movement(old, items))
    assert context_of(old).window[1] == old["transaction_time"].max()
    assert context_of(old).as_of == context_of(lines).as_of  # the moment is kept


def test_a_filter_of_items_keeps_the_moment_and_a_history_of_them_its_window(sb, make_client):
    _, lines = _year(sb, make_client)
    some = lines["item_id"].dropna().unique()[:3].tolist()
    history = stock_history(lines, item_ids=some)
    assert context_of(history).window == context_of(lines).window
    assert context_of(history).as_of == context_of(lines).as_of


def test_a_merged_frame_is_not_silently_measured_to_its_newest_row(sb, make_client):
    client, lines = _year(sb, make_client)
    items = client.items_df()
    merged = lines.merge(items[["id", "cost"]], left_on="item_id", right_on="id", how="left")
    assert not merged.attrs  # pandas 3 drops attrs on a merge of frames whose attrs differ
    with pytest.warns(WindowWarning, match=r"as_of="):
        _quietly(lambda: analysis.movement(merged, items))
    # given the moment, the merged frame gives the answer of the frame it came from
    as_of = context_of(lines).as_of
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        got = _quietly(lambda: analysis.movement(merged, items, as_of=as_of))
    want = _quietly(lambda: analysis.movement(lines, items))
    pd.testing.assert_frame_equal(
        got.drop(columns="item_name"), want.drop(columns="item_name"), check_like=True
    )


def test_a_frame_built_by_hand_is_not_silently_measured_to_its_newest_row():
    lines = pd.DataFrame(
        {
            "transaction_time": pd.to_datetime(["2026-10-01", "2026-10-20"], utc=True),
            "type": ["out", "out"],
            "item_id": [1, 2],
            "item_name": ["a", "b"],
            "quantity": [-1.0, -2.0],
        }
    )
    with pytest.warns(WindowWarning, match=r"as_of="):
        analysis.movement(lines)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        got = analysis.movement(lines, as_of="2026-10-31")
    assert got.set_index("item_id")["days_since_last_sale"].to_dict() == {1: 30.0, 2: 11.0}


def test_a_frame_until_a_day_is_as_of_that_day_and_holds_nothing_after(sb, make_client):
    client = make_client(sb)
    lines = client.lines_df(since="2026-09-01", until="2026-09-30")
    end = pd.Timestamp("2026-09-30T23:59:59.999", tz="UTC")
    ctx = context_of(lines)
    assert ctx.as_of == end and ctx.window == (pd.Timestamp("2026-09-01", tz="UTC"), end)
    truth = {
        t["id"]
        for t in sb.data("shop").transactions
        if pd.Timestamp("2026-09-01", tz="UTC") <= pd.Timestamp(t["transaction_time"]) <= end
    }
    assert set(lines["transaction_id"]) == truth
    assert lines["transaction_time"].max() <= end


def test_fit_window_cuts_at_until_and_is_as_of_the_earlier_of_until_and_the_moment():
    times = pd.to_datetime(["2026-11-05", "2026-10-20", "2026-09-01", None], utc=True)
    df = pd.DataFrame({"transaction_time": times})
    moment = pd.Timestamp("2026-10-31", tz="UTC")
    until = pd.Timestamp("2026-10-20", tz="UTC")
    rows, window, as_of = fit_window(df, None, until, moment=moment)
    assert rows["transaction_time"].tolist() == list(times[1:3])
    assert window["since"] is None and window["until"] == until and as_of == until
    later = pd.Timestamp("2026-12-01", tz="UTC")
    rows, window, as_of = fit_window(df, None, later, moment=moment)
    assert len(rows) == 3 and window["until"] == later and as_of == moment
    rows, window, as_of = fit_window(df, None, None, moment=moment)
    assert rows is df and window is None and as_of == moment
    rows, window, as_of = fit_window(df, until, None, moment=moment)
    assert rows["transaction_time"].tolist() == list(times[:2])
    assert window["until"] == times[0] and as_of == moment  # a future-dated row ends it
    rows, window, _ = fit_window(df.iloc[2:3], until, None, moment=moment)
    assert len(rows) == 0 and window["until"] == moment
