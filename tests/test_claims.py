"""A frame's claims checked against its rows (issue 43 item 2): a window its rows no longer
fill (cut by time after the fetch) is measured on what the rows hold and said; a frame that
lost its context (a merge, a frame built by hand) is not silently measured to its newest row;
the "as of ``until``" rule and the ``until`` cut. Against the stand-in over real HTTP,
compared with the server's truth."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from invtools import DeletedItemsWarning, LevelsWarning, WindowWarning, analysis
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
    merged = lines.merge(items[["item_id", "cost"]], on="item_id", how="left")
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
    with pytest.warns(LevelsWarning):  # a window ending in the past: levels not anchored
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


# -- the context read from a frame's attrs, on frames of your own (quick: no server) ----------
URL, OTHER = "http://127.0.0.1:8765", "https://rest.boxhero-app.com"
OCT = {
    "since": "2026-10-01T00:00:00.000Z",
    "until": "2026-10-31T17:10:00.000Z",
    "first": "2026-10-02T00:00:00.000Z",
    "last": "2026-10-30T00:00:00.000Z",
}


def _stamped(times, **attrs) -> pd.DataFrame:
    df = pd.DataFrame({"transaction_time": pd.to_datetime(times, utc=True)})
    df.attrs.update(source="api", **attrs)
    return df


def _utc(text):
    return None if text is None else pd.Timestamp(text, tz="UTC")


def test_the_window_read_is_the_span_the_rows_hold_when_they_were_cut():
    held = ["2026-10-02", "2026-10-15", "2026-10-30"]
    whole = context_of(_stamped(held, window=OCT))
    assert whole.window == (_utc("2026-10-01"), _utc("2026-10-31T17:10")) and whole.claimed is None
    start = context_of(_stamped(held[1:], window=OCT))
    assert start.window == (_utc("2026-10-15"), _utc("2026-10-31T17:10"))
    assert start.claimed == whole.window
    end = context_of(_stamped(held[:2], window=OCT))
    assert end.window == (_utc("2026-10-01"), _utc("2026-10-15")) and end.claimed == whole.window
    middle = context_of(_stamped(held[1:2], window=OCT))
    assert middle.window == (_utc("2026-10-15"), _utc("2026-10-15"))
    # no rows, a record without first/last (your own attrs), rows of another kind: as claimed
    for df in (
        _stamped([], window=OCT),
        _stamped(held[1:2], window={"since": OCT["since"], "until": OCT["until"]}),
        _stamped(held[1:2], window={**OCT, "first": None}),
        _stamped(held[1:2], window={**OCT, "last": None}),
        _stamped(held[1:2], window=OCT).rename(columns={"transaction_time": "at"}),
    ):
        assert context_of(df).window == whole.window and context_of(df).claimed is None
    assert context_of(_stamped(held, window={"since": None, "until": None})).window is None
    assert context_of(_stamped(held, window="90D")).window is None
    assert context_of(_stamped(held, window={**OCT, "since": None})).window[0] is None


def test_the_team_grain_and_moments_read_from_the_record():
    one = context_of(
        _stamped(
            [],
            team_id=7,
            team_name="Shop",
            base_url=URL,
            grain="lines",
            as_of="2026-10-31T17:10:00+02:00",
            data_as_of="2026-10-31T15:00:00",
        )
    )
    assert one.teams == ((URL, 7),) and one.team == (URL, 7) and one.team_names == ("Shop",)
    assert one.grain == "lines" and one.describe() == f"'Shop' (team 7 at {URL})"
    assert one.as_of == _utc("2026-10-31T15:10") and one.data_as_of == _utc("2026-10-31T15:00")
    two = context_of(
        _stamped([], team_id=[7, 9], team_name=["Shop", None], base_url=[URL, OTHER], as_of=[1])
    )
    assert two.teams == ((URL, 7), (OTHER, 9)) and two.team is None and two.as_of is None
    assert two.describe() == f"'Shop' (team 7 at {URL}), team 9 at {OTHER}"
    unaligned = context_of(_stamped([], team_id=[7, 9], base_url=[URL, OTHER, URL]))
    assert unaligned.teams == ((None, 7), (None, 9)) and unaligned.describe() == "team 7, team 9"
    short = context_of(_stamped([], team_id=[7, None], team_name=["Shop", "x"], base_url=URL))
    assert short.teams == ((URL, 7),) and short.team_names == ("Shop",)
    for bad in ("not a time", None, "NaT"):
        assert context_of(_stamped([], as_of=bad)).as_of is None
    assert context_of(pd.DataFrame()) == context_of([1, 2]) == context_of(pd.Series([], dtype=int))


def test_a_stack_cut_to_one_team_is_read_as_that_teams():
    stack = pd.DataFrame({"team": ["york", "york"], "transaction_time": pd.NaT})
    york = {"source": "api", "team_id": 9, "team_name": "York"}
    stack.attrs.update(source="api", team_id=[7, 9], teams={"shop": {"team_id": 7}, "york": york})
    assert context_of(stack).teams == ((None, 9),)
    both = stack.assign(team=["york", "shop"])
    assert context_of(both).teams == ((None, 7), (None, 9))  # two teams: the stack's own
    assert context_of(stack.assign(team=["nowhere"] * 2)).teams == ((None, 7), (None, 9))
    assert context_of(stack.iloc[:0]).teams == ((None, 7), (None, 9))
    assert context_of(stack.drop(columns="team")).teams == ((None, 7), (None, 9))


@pytest.mark.parametrize(
    ("since", "until", "moment", "name"),
    [
        (pd.Timestamp("2026-10-01"), None, pd.Timestamp("2026-10-31", tz="UTC"), "since"),
        (None, "2026-10-01", pd.Timestamp("2026-10-31", tz="UTC"), "until"),
        (None, None, None, "moment"),
        (None, None, pd.Timestamp("2026-10-31"), "moment"),
    ],
)
def test_fit_window_refuses_a_time_without_a_zone(since, until, moment, name):
    df = pd.DataFrame({"transaction_time": pd.to_datetime([], utc=True)})
    with pytest.raises(TypeError, match=rf"^fit_window\({name}\) must be a time with a zone"):
        fit_window(df, since, until, moment=moment)
    with pytest.raises(TypeError, match="fit_window\\(df\\) takes a frame with a transaction_time"):
        fit_window(pd.DataFrame({"x": [1]}), None, None, moment=pd.Timestamp.now(tz="UTC"))
