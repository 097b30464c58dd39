"""invtools.viz: the numbers drawn are the frame's numbers; labels, legends, styles, errors.

Assertions are on artists (bar heights and positions, line data, legend texts, colours) checked
against totals computed here independently from the frame, never on pixels. The frames are
built by hand to the schema of the brief (nullable Int64 ids, categorical ``type``,
``datetime64[ms, UTC]`` times, ``string`` text), since that is what ``invtools.frames`` gives.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
from datetime import date, datetime

import matplotlib

matplotlib.use("Agg")  # headless and deterministic, before pyplot is imported

import matplotlib.colors as mcolors
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import invtools
import invtools.viz as viz
from invtools.errors import ConfigError
from invtools.viz import (
    TYPE_COLORS,
    activity_table,
    plot_activity,
    plot_calendar,
    plot_stock_history,
)

TYPES = pd.CategoricalDtype(["in", "out", "move", "adjust"])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------------------- frame builders


def _times(values) -> pd.Series:
    return pd.Series(pd.to_datetime(values, utc=True)).astype("datetime64[ms, UTC]")


def tx_frame(rows: list[dict]) -> pd.DataFrame:
    """A transactions frame (transactions_df schema) from short dicts: time, type, qty, ..."""
    n = len(rows)

    def col(key, default=None):
        return [r.get(key, default) for r in rows]

    return pd.DataFrame(
        {
            "transaction_id": pd.array(range(1, n + 1), dtype="Int64"),
            "type": pd.Series(col("type", "out"), dtype=TYPES),
            "transaction_time": _times(col("time")),
            "created_at": _times(col("time")),
            "revision": pd.array([0] * n, dtype="Int64"),
            "count_of_items": pd.array([1] * n, dtype="Int64"),
            "total_quantity": pd.Series(col("qty", 1.0), dtype="float64"),
            "partner_id": pd.array([None] * n, dtype="Int64"),
            "partner_name": pd.array(col("partner"), dtype="string"),
            "partner_deleted": pd.array([False] * n, dtype="boolean"),
            "from_location_id": pd.array([None] * n, dtype="Int64"),
            "from_location_name": pd.array(col("from"), dtype="string"),
            "to_location_id": pd.array([None] * n, dtype="Int64"),
            "to_location_name": pd.array(col("to", "Main"), dtype="string"),
            "memo": pd.array([None] * n, dtype="string"),
        }
    )


def lines_frame(rows: list[dict]) -> pd.DataFrame:
    """A lines frame (lines_df schema): one row per transaction line."""
    n = len(rows)

    def col(key, default=None):
        return [r.get(key, default) for r in rows]

    return pd.DataFrame(
        {
            "transaction_id": pd.array(col("tx", 1), dtype="Int64"),
            "transaction_time": _times(col("time")),
            "type": pd.Series(col("type", "out"), dtype=TYPES),
            "revision": pd.array([0] * n, dtype="Int64"),
            "partner_name": pd.array(col("partner"), dtype="string"),
            "from_location_name": pd.array(col("from"), dtype="string"),
            "to_location_name": pd.array(col("to", "Main"), dtype="string"),
            "item_id": pd.array(col("item_id", 1), dtype="Int64"),
            "item_name": pd.array(col("item", "bolt"), dtype="string"),
            "quantity": pd.Series(col("qty", 1.0), dtype="float64"),
            "new_stock_level": pd.Series(col("level", 0.0), dtype="float64"),
        }
    )


def history_frame(rows: list[tuple]) -> pd.DataFrame:
    """A stock_history frame from (time, item_id, item_name, stock) tuples."""
    h = pd.DataFrame(rows, columns=["transaction_time", "item_id", "item_name", "stock"])
    h["transaction_time"] = _times(h["transaction_time"])
    h.insert(1, "transaction_id", pd.array(range(1, len(h) + 1), dtype="Int64"))
    h["item_id"] = h["item_id"].astype("Int64")
    h["item_name"] = h["item_name"].astype("string")
    h["location_id"] = pd.array([None] * len(h), dtype="Int64")
    h["stock"] = h["stock"].astype("float64")
    h["change"] = h.groupby("item_id")["stock"].diff().fillna(h["stock"])
    return h[
        [
            "transaction_time",
            "transaction_id",
            "item_id",
            "item_name",
            "location_id",
            "stock",
            "change",
        ]
    ]


@pytest.fixture
def tx() -> pd.DataFrame:
    """Weeks of 2026-03-02 and 03-23 busy, 03-09 and 03-16 empty; all four types."""
    return tx_frame(
        [
            {"time": "2026-03-02T08:00Z", "type": "in", "qty": 10, "partner": "Acme"},
            {"time": "2026-03-03T09:00Z", "type": "out", "qty": 4, "partner": "Globex"},
            {"time": "2026-03-08T23:59Z", "type": "out", "qty": 2, "partner": "Globex"},
            {"time": "2026-03-04T10:00Z", "type": "adjust", "qty": -3},
            {"time": "2026-03-23T00:00Z", "type": "move", "qty": 5, "from": "Main", "to": "Shop"},
            {"time": "2026-03-24T12:00Z", "type": "out", "qty": 1, "partner": "Initech"},
            {"time": "2026-03-25T12:00Z", "type": "in", "qty": 7, "partner": "Acme"},
        ]
    )


def _week_start(times: pd.Series) -> pd.Series:
    """Monday 00:00 UTC of each time, computed without Periods (an independent check)."""
    day = times.dt.tz_convert("UTC").dt.floor("D")
    return day - pd.to_timedelta(day.dt.day_of_week, unit="D")


def _bars(ax) -> dict[str, list]:
    """label -> list of (x start as date number, height) of the stacked bar containers."""
    return {c.get_label(): [(p.get_x(), p.get_height()) for p in c.patches] for c in ax.containers}


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


# ---------------------------------------------------------------------------- activity_table


def test_weekly_counts_match_the_frame_and_empty_weeks_are_zero(tx):
    table = activity_table(tx, "W", by="type")
    expected = (
        pd.DataFrame({"week": _week_start(tx["transaction_time"]), "type": tx["type"].astype(str)})
        .value_counts()
        .unstack(fill_value=0)
    )
    weeks = pd.date_range("2026-03-02", "2026-03-23", freq="7D", tz="UTC")
    assert list(table.index) == list(weeks)  # the two empty weeks are rows, not skipped
    assert list(table.columns) == ["in", "out", "move", "adjust"]  # type order, not size
    for week in weeks:
        for t in table.columns:
            want = expected.loc[week, t] if week in expected.index else 0
            assert table.loc[week, t] == want, (week, t)
    assert table.loc[weeks[1]].sum() == 0 and table.loc[weeks[2]].sum() == 0
    assert table.to_numpy().sum() == len(tx)
    assert table.index.name == "period" and table.columns.name == "type"


def test_monthly_and_daily_frequencies_and_pandas_spellings(tx):
    monthly = activity_table(tx, "M", by=None)
    assert list(monthly.index) == [pd.Timestamp("2026-03-01", tz="UTC")]
    assert list(monthly.columns) == ["all"] and monthly.iloc[0, 0] == len(tx)
    pd.testing.assert_frame_equal(activity_table(tx, "ME", by=None), monthly)
    pd.testing.assert_frame_equal(activity_table(tx, "MS", by=None), monthly)
    daily = activity_table(tx, "D", by=None)
    assert len(daily) == 24  # 2 March .. 25 March, every day
    assert daily.loc[pd.Timestamp("2026-03-08", tz="UTC"), "all"] == 1  # 23:59 stays that day
    assert daily["all"].sum() == len(tx)


def test_start_and_end_reindex_the_whole_range_and_end_date_includes_its_day(tx):
    table = activity_table(tx, "W", by=None, since="2026-02-16", until="2026-03-23")
    assert table.index[0] == pd.Timestamp("2026-02-16", tz="UTC")
    assert table.index[-1] == pd.Timestamp("2026-03-23", tz="UTC")
    assert table["all"].tolist() == [0, 0, 4, 0, 0, 1]  # only 03-23 of the last week counted
    daily = activity_table(tx, "D", by=None, since="2026-03-03", until="2026-03-04")
    assert daily["all"].tolist() == [1, 1]


def test_tz_cuts_days_at_local_midnight():
    df = tx_frame([{"time": "2026-03-01T20:00Z", "type": "in"}])  # 05:00 on 2 March in Seoul
    utc = activity_table(df, "D", by=None)
    seoul = activity_table(df, "D", by=None, tz="Asia/Seoul")
    assert utc.index[0] == pd.Timestamp("2026-03-01", tz="UTC")
    assert seoul.index[0] == pd.Timestamp("2026-03-02", tz="Asia/Seoul")


def test_range_bounds_are_read_in_tz_whatever_their_type():
    # 23:30 UTC on 1 March is 08:30 on 2 March in Seoul; 15:30 UTC on 2 March is 00:30 on 3 March.
    df = tx_frame(
        [{"time": "2026-03-01T23:30Z", "type": "in"}, {"time": "2026-03-02T15:30Z", "type": "out"}]
    )
    for day in (
        "2026-03-02",
        date(2026, 3, 2),
        pd.Timestamp("2026-03-02"),
        datetime(2026, 3, 2),
        np.datetime64("2026-03-02"),
    ):
        seoul = activity_table(df, "D", by=None, since=day, until=day, tz="Asia/Seoul")
        assert seoul["all"].tolist() == [1], day  # the whole Seoul day, and only it
    utc = activity_table(df, "D", by=None, since=date(2026, 3, 2), until=date(2026, 3, 2))
    assert utc["all"].tolist() == [1]
    aware = pd.Timestamp("2026-03-02T15:00", tz="UTC")  # a time with a zone keeps its zone
    assert activity_table(df, "D", by=None, until=aware)["all"].sum() == 1
    assert activity_table(df, "D", by=None, since=pd.NaT, until=None)["all"].sum() == 2


def test_a_range_error_names_the_bounds_in_words(tx):
    with pytest.raises(ConfigError) as info:
        activity_table(tx, since=date(2026, 3, 10), until=date(2026, 3, 1))
    assert "until (2026-03-01) is before since (2026-03-10)" in str(info.value)
    with pytest.raises(ConfigError) as info:
        activity_table(tx, since=datetime(2026, 3, 10, 8, 30), until="2026-03-01")
    assert "until (2026-03-01) is before since (2026-03-10 08:30:00)" in str(info.value)
    assert "datetime." not in str(info.value)


def test_top_n_keeps_totals_and_puts_missing_values_in_none():
    rows = (
        [{"time": "2026-03-02T10:00Z", "partner": "A"}] * 5
        + [{"time": "2026-03-03T10:00Z", "partner": "B"}] * 3
        + [{"time": "2026-03-10T10:00Z", "partner": "C"}] * 2
        + [{"time": "2026-03-10T10:00Z", "partner": "D"}]
        + [{"time": "2026-03-11T10:00Z", "partner": None}] * 4
    )
    df = tx_frame(rows)
    table = activity_table(df, "W", by="partner", top=2)
    assert list(table.columns) == ["A", "(none)", "other"]  # largest first, "other" last
    assert table["other"].sum() == 3 + 2 + 1  # B, C and D
    assert table.to_numpy().sum() == len(df)  # nothing lost in the lumping
    assert table.sum(axis=1).tolist() == [8, 7]
    full = activity_table(df, "W", by="partner", top=None)
    assert set(full.columns) == {"A", "B", "C", "D", "(none)"}


def test_quantity_metric_sums_absolute_quantities(tx):
    table = activity_table(tx, "W", by="type", metric="quantity")
    assert table.dtypes.eq("float64").all()
    assert table.loc[pd.Timestamp("2026-03-02", tz="UTC"), "adjust"] == 3.0  # |-3|
    assert table.to_numpy().sum() == tx["total_quantity"].abs().sum()
    lines = lines_frame(
        [
            {"time": "2026-03-02T10:00Z", "item": "bolt", "qty": 4, "type": "in"},
            {"time": "2026-03-02T10:00Z", "item": "nut", "qty": -6, "type": "adjust"},
            {"time": "2026-03-10T10:00Z", "item": "bolt", "qty": 1},
        ]
    )
    by_item = activity_table(lines, "W", by="item", metric="quantity")
    assert by_item.to_dict("list") == {"nut": [6.0, 0.0], "bolt": [4.0, 1.0]}
    counts = activity_table(lines, "W", by="item")
    assert counts.to_numpy().sum() == 3  # one per line


def test_location_is_the_destination_or_the_source(tx):
    df = tx_frame(
        [
            {"time": "2026-03-02T10:00Z", "type": "move", "from": "Main", "to": "Shop"},
            {"time": "2026-03-02T11:00Z", "type": "out", "to": "Main"},
            {"time": "2026-03-02T12:00Z", "type": "move", "from": "Shop", "to": None},
            {"time": "2026-03-02T13:00Z", "type": "in", "to": None},
        ]
    )
    table = activity_table(df, "W", by="location")
    assert table.iloc[0].to_dict() == {"Main": 1, "Shop": 2, "(none)": 1}


def test_by_member_counts_what_each_member_recorded(tx):
    # issue 19: transactions and lines carry created_by_name; by="member" splits by it
    who = ["Ana", "Ben", "Ana", None, "Ana", "Ben", "Ana"]
    df = tx.assign(created_by_name=pd.array(who, dtype="string"))
    table = activity_table(df, "M", by="member")
    assert table.columns.name == "member"
    assert table.iloc[0].to_dict() == {"Ana": 4, "Ben": 2, "(none)": 1}
    ax = plot_activity(df, "M", by="member", metric="quantity")
    assert _legend(ax) == ["Ana", "Ben", "(none)"]
    with pytest.raises(ConfigError, match="'created_by_name'"):
        activity_table(tx, by="member")


def test_location_name_of_the_frames_is_the_location_split(tx):
    df = tx.assign(location_name=pd.array(["Yard"] * len(tx), dtype="string"))
    assert activity_table(df, "M", by="location").columns.tolist() == ["Yard"]


def test_rows_without_a_time_are_left_out():
    df = tx_frame([{"time": "2026-03-02T10:00Z"}, {"time": None}, {"time": "2026-03-03T10:00Z"}])
    assert activity_table(df, "W", by=None)["all"].tolist() == [2]
    assert activity_table(df.iloc[[1]], "W").empty


def test_empty_frame_gives_an_empty_table_or_a_zero_range():
    empty = tx_frame([])
    table = activity_table(empty, "W")
    assert table.empty and table.columns.name == "type"
    ranged = activity_table(empty, "W", since="2026-03-02", until="2026-03-15")
    assert len(ranged) == 2 and ranged.shape[1] == 0


# ---------------------------------------------------------------------------- plot_activity


def test_bars_stack_the_table_and_sum_to_the_frames_counts(tx):
    fig = Figure()
    ax = fig.subplots()
    out = plot_activity(tx, "W", by="type", ax=ax)
    assert out is ax
    assert plt.get_fignums() == []  # drew on the given figure, made no pyplot figure
    bars = _bars(ax)
    assert list(bars) == ["in", "out", "move", "adjust"]
    assert _legend(ax) == ["in", "out", "move", "adjust"]
    assert ax.get_legend().get_title().get_text() == "type"
    # per period: the heights of the stack add up to the transactions in that week
    per_week = _week_start(tx["transaction_time"]).value_counts()
    weeks = pd.date_range("2026-03-02", periods=4, freq="7D")
    totals = np.sum([[h for _x, h in bars[t]] for t in bars], axis=0)
    for week, total in zip(weeks, totals, strict=True):
        assert total == per_week.get(week.tz_localize("UTC"), 0)
    assert totals.tolist() == [4, 0, 0, 3]
    # each bar sits inside its week, and stacks sit on the previous layer
    starts = mdates.date2num(weeks.to_pydatetime())
    for label in bars:
        for (x, _h), week_start in zip(bars[label], starts, strict=True):
            assert week_start < x < week_start + 7
    move = ax.containers[2].patches[3]
    assert move.get_y() == 1 + 1  # on top of in (1) and out (1) in the week of 23 March
    assert ax.get_ylabel() == "transactions per week"
    # the data end on Wednesday 25 March: that week is partial, and said
    assert (
        ax.get_title()
        == "Transactions per week by type: 2 Mar 2026 to 23 Mar 2026 (last week partial, hatched)"
    )


def _hatched_spans(ax) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """The hatched spans over partial periods, as naive (start, end) times."""
    return [
        tuple(pd.Timestamp(mdates.num2date(v)).tz_localize(None) for v in _x_extent(p))
        for p in ax.patches
        if p.get_hatch()
    ]


def test_partial_first_and_last_periods_are_hatched_and_said(tx):
    # issue 25 item 5: the data start on a Thursday and end on a Wednesday: those weeks'
    # bars looked like real dips
    df = tx_frame([{"time": "2026-03-05T10:00Z"}, {"time": "2026-03-10T10:00Z"},
                   {"time": "2026-03-18T10:00Z"}])  # fmt: skip
    table = activity_table(df, "W")  # the numbers are the table's, unchanged
    assert table["out"].tolist() == [1, 1, 1]
    ax = plot_activity(df, "W")
    assert (
        ax.get_title() == "Transactions per week by type: 2 Mar 2026 to 16 Mar 2026 "
        "(first and last weeks partial, hatched)"
    )
    assert _hatched_spans(ax) == [
        (pd.Timestamp("2026-03-02"), pd.Timestamp("2026-03-09")),
        (pd.Timestamp("2026-03-16"), pd.Timestamp("2026-03-23")),
    ]
    assert [p.get_height() for p in ax.containers[0].patches] == [1, 1, 1]
    # a range given: weeks are whole when the range covers them
    ax = plot_activity(df, "W", since="2026-03-02", until="2026-03-22")
    assert ax.get_title() == "Transactions per week by type: 2 Mar 2026 to 16 Mar 2026"
    assert not _hatched_spans(ax)
    ax = plot_activity(df, "W", since="2026-03-02", until="2026-03-21")  # Saturday
    assert ax.get_title().endswith("(last week partial, hatched)")
    # months: 5 March to 18 March is one partial month; days are never partial
    ax = plot_activity(df, "M")
    assert ax.get_title() == "Transactions per month by type: Mar 2026 (the month partial, hatched)"
    ax = plot_activity(df, "D")
    assert ax.get_title().startswith("Transactions per day by type: 5 Mar 2026 to 1")
    assert not _hatched_spans(ax)
    # lines too
    ax = plot_activity(df, "W", kind="line")
    assert len(_hatched_spans(ax)) == 2


def test_partial_periods_follow_the_window_a_frame_was_fetched_with():
    df = tx_frame([{"time": "2026-08-03T10:00Z"}, {"time": "2026-10-30T10:00Z"}])
    df.attrs["window"] = {"since": "2026-08-02T17:10:00.000Z", "until": "2026-10-31T17:10:00.000Z"}
    ax = plot_activity(df, "M")  # August from the 2nd: partial; October to the 31st: whole
    assert (
        ax.get_title()
        == "Transactions per month by type: Aug 2026 to Oct 2026 (first month partial, hatched)"
    )
    assert _hatched_spans(ax) == [(pd.Timestamp("2026-08-01"), pd.Timestamp("2026-09-01"))]
    # by week from Monday 3 August (the window's Sunday 2nd is in a week not drawn) to the
    # week of Friday 30 October, which the window ends on Saturday 31: partial
    ax = plot_activity(df, "W")
    assert ax.get_title().endswith("(last week partial, hatched)")
    assert _hatched_spans(ax) == [(pd.Timestamp("2026-10-26"), pd.Timestamp("2026-11-02"))]


def test_type_colours_are_fixed_whatever_types_are_present():
    df = tx_frame(
        [
            {"time": "2026-03-02T10:00Z", "type": "out"},
            {"time": "2026-03-03T10:00Z", "type": "adjust"},
        ]
    )
    ax = plot_activity(df, "W")
    for container in ax.containers:
        face = container.patches[0].get_facecolor()
        assert mcolors.same_color(face, TYPE_COLORS[container.get_label()])


def test_quantity_bars_and_monthly_labels(tx):
    ax = plot_activity(tx, "M", metric="quantity", by=None)
    assert ax.get_ylabel() == "quantity (units, absolute) per month"
    assert ax.get_legend() is None  # a single series needs none
    (container,) = ax.containers
    assert [p.get_height() for p in container.patches] == [tx["total_quantity"].abs().sum()]
    assert len(plt.get_fignums()) == 1  # ax=None: one new pyplot figure


def test_lines_frame_counts_lines_and_splits_by_item():
    lines = lines_frame(
        [
            {"time": "2026-03-02T10:00Z", "item": "bolt"},
            {"time": "2026-03-02T10:00Z", "item": "nut"},
            {"time": "2026-03-03T10:00Z", "item": "bolt"},
        ]
    )
    ax = plot_activity(lines, "D", by="item")
    assert ax.get_ylabel() == "lines per day"
    assert _legend(ax) == ["bolt", "nut"]
    assert [h for _x, h in _bars(ax)["bolt"]] == [1, 1]


def test_line_kind_draws_the_table(tx):
    ax = plot_activity(tx, "W", by="type", kind="line")
    table = activity_table(tx, "W", by="type")
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines) == list(table.columns)
    for label, line in lines.items():
        assert line.get_ydata().tolist() == table[label].astype(float).tolist()
        assert mcolors.same_color(line.get_color(), TYPE_COLORS[label])
    first_x = mdates.date2num(lines["in"].get_xdata()[0])
    assert first_x == mdates.date2num(pd.Timestamp("2026-03-02").to_pydatetime())


def _long_daily_frame(days: int) -> pd.DataFrame:
    """``days`` days from 2026-01-01, with types cycling; every 7th day is empty."""
    rows = []
    for d in range(days):
        if d % 7 == 3:
            continue
        day = pd.Timestamp("2026-01-01T08:00Z") + pd.Timedelta(days=d)
        for k in range(d % 4 + 1):
            rows.append(
                {
                    "time": (day + pd.Timedelta(hours=k)).isoformat(),
                    "type": ["in", "out", "move", "adjust"][(d + k) % 4],
                }
            )
    # the last day must hold a transaction, so the table spans exactly ``days`` days
    assert (days - 1) % 7 != 3
    return tx_frame(rows)


def test_many_periods_draw_one_step_area_per_category_holding_the_stacks():
    from matplotlib.patches import StepPatch

    days = viz.MAX_BAR_PERIODS + 60
    df = _long_daily_frame(days)
    table = activity_table(df, "D", by="type")
    assert len(table) == days
    ax = plot_activity(df, "D", by="type")
    assert ax.containers == []  # no patch per period
    steps = [p for p in ax.patches if isinstance(p, StepPatch)]
    assert len(steps) == len(ax.patches) == 4
    assert [p.get_label() for p in steps] == list(table.columns) == ["in", "out", "move", "adjust"]
    assert _legend(ax) == ["in", "out", "move", "adjust"]
    edges = mdates.date2num(pd.date_range("2026-01-01", periods=days + 1, freq="D").to_pydatetime())
    stacked = table.cumsum(axis=1).to_numpy(dtype=float)
    for i, patch in enumerate(steps):
        data = patch.get_data()
        np.testing.assert_array_equal(data.edges, edges)
        np.testing.assert_array_equal(data.values, stacked[:, i])  # top of this layer
        np.testing.assert_array_equal(data.baseline, stacked[:, i - 1] if i else 0.0)
        assert mcolors.same_color(patch.get_facecolor(), TYPE_COLORS[patch.get_label()])
        assert patch.get_fill()
    # the top layer is each day's total, and an empty day is drawn as zero
    per_day = df["transaction_time"].dt.floor("D").value_counts()
    top = steps[-1].get_data().values
    for day, total in zip(table.index, top, strict=True):
        assert total == per_day.get(day, 0)
    assert top[3] == 0 and top[4] > 0
    assert ax.get_xlim() == (edges[0], edges[-1])
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    assert ax.get_ylabel() == "transactions per day"


def test_up_to_the_threshold_periods_stay_separate_bars():
    days = viz.MAX_BAR_PERIODS
    df = _long_daily_frame(days)
    ax = plot_activity(df, "D", by="type")
    bars = _bars(ax)
    assert list(bars) == ["in", "out", "move", "adjust"]
    assert len(ax.patches) == 4 * days  # one bar per period and type
    table = activity_table(df, "D", by="type")
    for label, drawn in bars.items():
        assert [h for _x, h in drawn] == table[label].astype(float).tolist()


@pytest.mark.parametrize("case", ["empty frame", "nothing in range"])
def test_empty_input_says_so_instead_of_crashing(tx, case):
    if case == "empty frame":
        ax = plot_activity(tx_frame([]), "W")
    else:
        ax = plot_activity(tx, "W", since="2030-01-01", until="2030-02-01")
    assert [t.get_text() for t in ax.texts] == ["no transactions in range"]
    assert ax.containers == [] and ax.get_ylabel() == "transactions per week"


def test_dark_style_takes_text_colours_from_the_style(tx):
    with plt.style.context("dark_background"):
        ax = plot_activity(tx, "W")
        empty = plot_activity(tx_frame([]), "W")
        fg = matplotlib.rcParams["text.color"]
        face = matplotlib.rcParams["axes.facecolor"]
    assert mcolors.same_color(fg, "white")
    assert mcolors.same_color(ax.title.get_color(), fg)
    assert mcolors.same_color(ax.yaxis.label.get_color(), fg)
    assert all(mcolors.same_color(t.get_color(), fg) for t in ax.get_legend().get_texts())
    assert mcolors.same_color(empty.texts[0].get_color(), fg)
    assert mcolors.same_color(ax.get_facecolor(), face)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"by": "colour"}, ["'colour'", "'type'", "'partner'", "column"]),
        ({"metric": "value"}, ["'value'", "'count'", "'quantity'"]),
        ({"by": "item"}, ["lines frame", "lines_df"]),
        ({"freq": "fortnight"}, ["'fortnight'", "'W'", "'M'"]),
        ({"kind": "pie"}, ["'pie'", "'bar'", "'line'"]),
        ({"top": 0}, ["top=0", "positive"]),
        ({"since": "2026-03-10", "until": "2026-03-01"}, ["before since", "plot_activity"]),
        ({"since": "not a date"}, ["since='not a date'"]),
        ({"tz": "Mars/Base"}, ["Mars/Base", "time zone"]),
    ],
)
def test_bad_arguments_raise_config_error_saying_what_to_do(tx, kwargs, words):
    with pytest.raises(ConfigError) as info:
        plot_activity(tx, **kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_missing_columns_are_named():
    with pytest.raises(ConfigError, match="'transaction_time' column"):
        activity_table(pd.DataFrame({"type": ["in"]}))
    no_qty = tx_frame([{"time": "2026-03-02T10:00Z"}]).drop(columns="total_quantity")
    with pytest.raises(ConfigError, match="metric='count'"):
        activity_table(no_qty, metric="quantity")
    with pytest.raises(ConfigError, match="'partner_name'"):
        activity_table(no_qty.drop(columns="partner_name"), by="partner")


# ---------------------------------------------------------------------------- stock history


@pytest.fixture
def history() -> pd.DataFrame:
    return history_frame(
        [
            ("2026-03-01T10:00Z", 7, "bolt", 10),
            ("2026-03-03T10:00Z", 7, "bolt", 0),
            ("2026-03-04T10:00Z", 7, "bolt", -2),
            ("2026-03-06T10:00Z", 7, "bolt", 5),
            ("2026-03-09T10:00Z", 7, "bolt", 0),
            ("2026-03-02T10:00Z", 8, "nut", 50),
            ("2026-03-10T10:00Z", 8, "nut", 30),
        ]
    )


def test_stock_lines_are_the_stock_column_as_steps_to_the_end_of_the_data(history):
    ax = plt.figure().subplots()
    assert plot_stock_history(history, ax=ax) is ax
    lines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_linestyle() != "None"}
    end = history["transaction_time"].max().tz_localize(None)  # nut's last row, 10 March
    for item_id, name in [(7, "bolt"), (8, "nut")]:
        rows = history[history["item_id"] == item_id]
        line = lines[name]
        assert line.get_drawstyle() == "steps-post"
        times = rows["transaction_time"].dt.tz_localize(None).tolist()
        stock = rows["stock"].tolist()
        if times[-1] < end:  # bolt's last row is on 9 March: its level holds to the end
            times, stock = [*times, end], [*stock, stock[-1]]
        assert line.get_ydata().tolist() == stock
        assert [pd.Timestamp(x) for x in line.get_xdata()] == times
    assert ax.get_ylabel() == "stock (units)"
    assert ax.get_title() == "Stock of 2 items"
    assert _legend(ax) == ["bolt", "nut"]  # the markers' meaning is the legend's title
    assert ax.get_legend().get_title().get_text() == "markers: out of stock"


def _x_extent(patch) -> tuple[float, float]:
    """A span's left and right x in data units: axvspan draws a Rectangle from matplotlib
    3.9 on, a Polygon before."""
    xs = patch.get_patch_transform().transform(patch.get_path().vertices)[:, 0]
    return float(xs.min()), float(xs.max())


def test_out_of_stock_points_are_marked_and_spans_shaded(history):
    ax = plot_stock_history(history, item_ids=["bolt"])
    (line,) = ax.get_lines()
    assert line.get_marker() == "X"  # on the line itself, at its rows out of stock only
    bolt = history[history["item_id"] == 7].reset_index(drop=True)
    out = bolt[bolt["stock"] <= 0]
    assert line.get_markevery() == out.index.tolist() == [1, 2, 4]
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert (xs[out.index] == out["transaction_time"].dt.tz_localize(None).to_numpy()).all()
    assert ys[out.index].tolist() == [0.0, -2.0, 0.0]
    # shaded: 3 March until stock came back on 6 March; and from 9 March, still out at the end
    spans = sorted((round(lo, 6), round(hi, 6)) for lo, hi in map(_x_extent, ax.patches))
    day = mdates.date2num
    assert spans == [
        (
            round(day(pd.Timestamp("2026-03-03T10:00")), 6),
            round(day(pd.Timestamp("2026-03-06T10:00")), 6),
        ),
        # still out on 9 March, until the end of the data (nut's row of 10 March), though
        # nut is not drawn: the data goes on, so bolt's zero does too
        (
            round(day(pd.Timestamp("2026-03-09T10:00")), 6),
            round(day(pd.Timestamp("2026-03-10T10:00")), 6),
        ),
    ]
    assert all(mcolors.same_color(p.get_facecolor()[:3], line.get_color()) for p in ax.patches)
    assert ax.get_title() == "Stock of bolt"


def test_two_items_out_of_stock_each_in_its_own_marker_and_colour():
    # issue 25 item 5: two items out at once, one shared red "out of stock" marker over both
    # lines said neither which item ran out nor that both did
    h = history_frame(
        [
            ("2026-03-01T10:00Z", 7, "bolt", 10),
            ("2026-03-03T10:00Z", 7, "bolt", 0),
            ("2026-03-05T10:00Z", 7, "bolt", 6),
            ("2026-03-01T10:00Z", 8, "nut", 4),
            ("2026-03-03T10:00Z", 8, "nut", 0),
            ("2026-03-05T10:00Z", 8, "nut", 0),
            ("2026-03-02T10:00Z", 9, "washer", 3),
        ]
    )
    ax = plot_stock_history(h)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"bolt", "nut", "washer"}  # no shared "out of stock" artist
    bolt, nut, washer = lines["bolt"], lines["nut"], lines["washer"]
    assert bolt.get_marker() != nut.get_marker()  # both out on 3 March: told apart
    assert bolt.get_markevery() == [1] and nut.get_markevery() == [1, 2]
    assert washer.get_marker() in ("None", "", None)  # never out: no marker
    assert not mcolors.same_color(bolt.get_color(), nut.get_color())
    # each item's shaded stock-out in its own colour
    shades = [p.get_facecolor()[:3] for p in ax.patches]
    assert len(shades) == 2
    assert {mcolors.to_hex(c) for c in shades} == {
        mcolors.to_hex(bolt.get_color()),
        mcolors.to_hex(nut.get_color()),
    }
    # the legend shows each line with its marker; its title says what markers mean
    handles = {
        t.get_text(): h
        for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)
    }
    assert handles["bolt"].get_marker() == bolt.get_marker()
    assert ax.get_legend().get_title().get_text() == "markers: out of stock"


def test_short_window_names_the_month_of_its_first_ticks():
    # issue 25 item 5: a month's data by week showed "05 09 13 ... Nov": October was never said
    days = pd.date_range("2026-10-04T10:00Z", "2026-10-31T10:00Z", freq="2D")
    h = history_frame([(t, 7, "bolt", float(i % 9)) for i, t in enumerate(days)])
    ax = plot_stock_history(h)
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    ticks = [mdates.num2date(v) for v in ax.get_xticks()]
    inside = [(lab, d) for lab, d in zip(labels, ticks, strict=True) if lab]
    assert inside[0][0].startswith(inside[0][1].strftime("%b"))  # "Oct 05"
    seen = set()
    for label, when in inside:  # every first tick of a month names it
        if (when.year, when.month) not in seen:
            assert when.strftime("%b") in label, labels
            seen.add((when.year, when.month))
        else:
            assert label.isdigit(), labels  # the others: the day only
    # the year under the first tick (issue 35, item 3), no lone year in the offset
    assert "Oct" in labels[0] + labels[1] and "2026" in inside[0][0]
    assert ax.xaxis.get_offset_text().get_text() == ""


def test_span_reaches_the_end_of_the_data_when_still_out(history):
    ax = plot_stock_history(history)  # nut's data goes on to 10 March
    widths = sorted(round(hi - lo, 6) for lo, hi in map(_x_extent, ax.patches))
    assert widths == [1.0, 3.0]  # 9->10 March (still out at the end) and 3->6 March


def test_min_stock_line_number_and_per_item(history):
    ax = plot_stock_history(history, min_stock=4)
    (hline,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert list(hline.get_ydata()) == [4, 4] and hline.get_label() == "minimum stock (4)"
    ax = plot_stock_history(history, item_ids=[8, "bolt"], min_stock={7: 3, "nut": 20, 99: 1})
    hlines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_linestyle() == "--"}
    assert set(hlines) == {"minimum bolt (3)", "minimum nut (20)"}  # 99 is not drawn: ignored
    colour = {ln.get_label(): ln.get_color() for ln in ax.get_lines()}
    assert mcolors.same_color(hlines["minimum nut (20)"].get_color(), colour["nut"])
    assert _legend(ax)[0] == "nut"  # items drawn in the order asked


def test_stock_history_bad_arguments(history):
    many = history_frame([("2026-03-01T10:00Z", i, f"item {i}", 1) for i in range(10)])
    with pytest.raises(ConfigError, match=r"10 items are too many.*item_ids=\["):
        plot_stock_history(many)
    plot_stock_history(many, item_ids=range(3))  # a few is fine
    with pytest.raises(ConfigError, match=r"'washer' is not in this stock history.*'bolt'"):
        plot_stock_history(history, item_ids="washer")
    with pytest.raises(ConfigError, match="stock_history"):
        plot_stock_history(history.drop(columns="stock"))
    with pytest.raises(ConfigError, match="min_stock"):
        plot_stock_history(history, min_stock="lots")


def test_deleted_items_are_left_out_unless_asked_for(history):
    # issue 11 item 2: a deleted item is not drawn by default, and the plot says so.
    h = history.assign(
        item_deleted=pd.array([False] * 5 + [True] * 2, dtype="boolean")
    )  # nut (8) is deleted in the service
    with pytest.warns(invtools.DeletedItemsWarning, match=r"1 deleted item .*8 'nut'"):
        ax = plot_stock_history(h)
    assert _legend(ax) == ["bolt"] and ax.get_title() == "Stock of bolt"
    ax = plot_stock_history(h, include_deleted=True)
    assert _legend(ax) == ["bolt", "nut (deleted)"]
    ax = plot_stock_history(h, item_ids=["nut"])  # asked for by name: drawn, and labelled
    assert _legend(ax) == ["nut (deleted)"]


def test_activity_by_item_counts_a_deleted_item_and_labels_it():
    lines = lines_frame(
        [
            {"time": "2026-03-02T09:00Z", "item": "bolt"},
            {"time": "2026-03-03T09:00Z", "item": "nut", "item_id": 2},
        ]
    )
    lines["item_deleted"] = pd.array([False, True], dtype="boolean")
    table = activity_table(lines, "W", by="item")
    assert table.columns.tolist() == ["bolt", "nut (deleted)"] and table.sum().sum() == 2


def _two_places() -> pd.DataFrame:
    """bolt at two locations: the warehouse (3103) held 6 before the window and sold 2 on
    10 March; the shop floor (3102) got 4 on 2 March. The history of a window from 1 March."""
    h = history_frame(
        [
            ("2026-03-10T10:00Z", 7, "bolt", 4),
            ("2026-03-02T10:00Z", 7, "bolt", 4),
        ]
    )
    h["location_id"] = pd.array([3103, 3102], dtype="Int64")
    h.insert(5, "location_name", pd.array(["Warehouse", "Shop floor"], dtype="string"))
    h["change"] = [-2.0, 4.0]
    h.attrs.update(
        source="api",
        window={"since": "2026-03-01T00:00:00.000Z", "until": "2026-03-20T00:00:00.000Z"},
        as_of="2026-03-20T00:00:00.000Z",
    )
    return h


def test_a_windowed_history_per_location_starts_at_its_openings_named_by_place():
    # issue 32 item 3: a warehouse holding 6 all winter was drawn empty until its first line,
    # and its line was labelled "location 3103"
    ax = plot_stock_history(_two_places())
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"bolt (Shop floor)", "bolt (Warehouse)"}
    start, end = pd.Timestamp("2026-03-01"), pd.Timestamp("2026-03-20")
    warehouse, shop = lines["bolt (Warehouse)"], lines["bolt (Shop floor)"]
    assert [pd.Timestamp(x) for x in warehouse.get_xdata()] == [
        start,
        pd.Timestamp("2026-03-10T10:00"),
        end,  # the moment the history is as of, after its last line
    ]
    assert warehouse.get_ydata().tolist() == [6.0, 4.0, 4.0]
    assert shop.get_ydata().tolist() == [0.0, 4.0, 4.0]  # nothing there before its delivery
    assert shop.get_marker() in ("None", "", None) and not ax.patches  # opening 0: no stock-out


def test_a_history_without_a_window_or_names_draws_as_before():
    h = _two_places()
    h.attrs.clear()
    ax = plot_stock_history(h.drop(columns="location_name"))
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"bolt (location 3102)", "bolt (location 3103)"}
    warehouse = lines["bolt (location 3103)"]
    # each line from its first row to the history's last time: nothing said before it
    assert [pd.Timestamp(x) for x in warehouse.get_xdata()] == [pd.Timestamp("2026-03-10T10:00")]
    ax = plot_stock_history(h, as_of="2026-03-15")  # an explicit end still cuts it
    assert pd.Timestamp(ax.get_lines()[0].get_xdata()[-1]) == pd.Timestamp(
        "2026-03-15T23:59:59.999"
    )


def test_empty_stock_history(history):
    ax = plot_stock_history(history.iloc[:0])
    assert [t.get_text() for t in ax.texts] == ["no stock history"]


# ---------------------------------------------------------------------------- calendar


def test_calendar_cells_hold_daily_counts(tx):
    fig = Figure(layout="constrained")
    ax = fig.subplots()
    assert plot_calendar(tx, ax=ax) is ax
    grid = ax.images[0].get_array()
    assert grid.shape[0] == 7
    assert grid.sum() == len(tx)

    # the data's months only (March 2026): 1 March is a Sunday, column 0 holds Mon 23 Feb
    def cell(date):
        d = pd.Timestamp(date)
        return grid[d.day_of_week, (d - pd.Timestamp("2026-02-23")).days // 7]

    assert grid.shape[1] == 6  # 23 Feb .. 5 April: no empty months, no white space
    assert cell("2026-03-02") == 1 and cell("2026-03-08") == 1 and cell("2026-03-05") == 0
    assert cell("2026-03-23") == 1
    assert cell("2026-03-01") is np.ma.masked  # before the frame's first day: unknown, blank
    assert cell("2026-03-31") is np.ma.masked  # after its last day
    assert ax.get_title() == "Transactions per day, Mar 2026"
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["Mon", "Tue"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Mar\n2026"]
    colorbar_ax = fig.axes[1]
    assert colorbar_ax.get_ylabel() == "transactions per day"


def test_calendar_spans_the_data_across_years():
    # issue 25 item 5: the heatmap showed the latest year only, with its empty months
    tx = tx_frame(
        [{"time": t} for t in ("2025-11-12T10:00Z", "2026-01-05T10:00Z", "2026-02-20T10:00Z")]
    )
    ax = plot_calendar(tx)
    grid = ax.images[0].get_array()
    assert grid.sum() == 3  # both years' days
    first_monday = pd.Timestamp("2025-10-27")  # the week of 1 November 2025
    assert grid.shape[1] == (pd.Timestamp("2026-02-23") - first_monday).days // 7 + 1
    assert ax.get_title() == "Transactions per day, Nov 2025 to Feb 2026"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["Nov\n2025", "Dec", "Jan\n2026", "Feb"]
    ax = plot_calendar(tx, year=2026)  # that year's months of the data
    assert ax.images[0].get_array().sum() == 2
    assert ax.get_title() == "Transactions per day, Jan 2026 to Feb 2026"


def test_calendar_quantity_year_and_empty_year(tx):
    ax = plot_calendar(tx, "quantity", year=2026)
    assert ax.images[0].get_array().sum() == tx["total_quantity"].abs().sum()
    ax = plot_calendar(tx, year=2025)
    assert "no transactions in 2025" in [t.get_text() for t in ax.texts]
    with pytest.raises(ConfigError, match="year"):
        plot_calendar(tx, year="2026")
    with plt.style.context("dark_background"):
        ax = plot_calendar(tx)
        assert mcolors.same_color(ax.title.get_color(), "white")


# ---------------------------------------------------------------------------- module


def test_docstring_examples_run():
    attempted = 0
    for module in (viz, viz.tables, viz.style, viz.activity, viz.stock, viz.calendar):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted > 10


def test_import_picks_no_backend_and_needs_no_display():
    code = (
        "import sys, invtools.viz; "
        "print('matplotlib.pyplot' in sys.modules, 'matplotlib' in sys.modules)"
    )
    env = {"PATH": "/usr/bin:/bin", "DISPLAY": "", "MPLBACKEND": ""}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**env, "PYTHONPATH": ":".join(sys.path)},
    )
    assert out.stdout.split() == ["False", "False"]


def test_errors_name_the_function_the_user_called():
    for call, name in (
        (lambda: plot_activity(42), "plot_activity"),
        (lambda: activity_table(42), "activity_table"),
        (lambda: plot_activity(tx_frame([]), metric="value"), "plot_activity"),
    ):
        with pytest.raises(ConfigError, match=name):
            call()


# ------------------------------------------------- figures at report width (issue 35, item 3)


def _eighteen_months(types=("out",)):
    months = pd.date_range("2025-05-01T10:00Z", periods=18, freq="MS") + pd.Timedelta(days=9)
    return tx_frame(
        [
            {"time": t.isoformat(), "type": kind, "partner": f"P{i % 12}", "qty": 2.0}
            for i, t in enumerate(months)
            for kind in types
        ]
    )


def test_an_activity_title_says_the_types_held_and_the_periods_drawn():
    ax = plot_activity(_eighteen_months(), freq="M", by="partner", metric="quantity")
    assert ax.get_title().startswith(
        "Quantity per month by partner: out only, May 2025 to Oct 2026 ("  # then the partials
    )
    both = plot_activity(_eighteen_months(("in", "out")), freq="M", by="partner")
    assert ": in and out, May 2025 to Oct 2026" in both.get_title()


def test_the_date_axis_says_the_year_under_the_first_tick_and_each_january():
    ax = plot_activity(_eighteen_months(), freq="M")
    ax.figure.canvas.draw()
    ticks = [mdates.num2date(v) for v in ax.get_xticks()]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    shown = [(lab, d) for lab, d in zip(labels, ticks, strict=True) if lab]
    assert shown[0][0].endswith(f"\n{shown[0][1]:%Y}")  # "May\n2025"
    januaries = [lab for lab, d in shown if d.month == 1]
    assert januaries and all(lab == f"Jan\n{d:%Y}" for lab, d in shown if d.month == 1)
    assert not any(lab.strip().isdigit() and len(lab.strip()) == 4 for lab, _ in shown)
    assert ax.xaxis.get_offset_text().get_text() == ""


def test_every_named_series_has_its_own_colour_none_grey_like_other():
    ax = plot_activity(_eighteen_months(), freq="M", by="partner", top=10)
    legend = ax.get_legend()
    colours = {
        text.get_text(): mcolors.to_hex(handle.get_facecolor())
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    named = {k: v for k, v in colours.items() if k != "other"}
    assert len(named) == 10 and len(set(named.values())) == 10
    assert colours["other"] == mcolors.to_hex("0.6")
    for colour in named.values():
        r, g, b = mcolors.to_rgb(colour)
        assert max(r, g, b) - min(r, g, b) >= 0.08, colour  # no grey beside "other"


def test_an_eighteen_month_calendar_reads_at_report_width():
    tx = _eighteen_months()
    ax = plot_calendar(tx)
    width, height = ax.figure.get_size_inches()
    assert width <= 10 and height <= 6  # was 16.6 x 2.8 in: a strip
    assert ax.images[0].get_array().sum() == len(tx)
    months = {t.get_text().split()[0] for t in ax.texts}
    assert {"May", "Jun", "Dec", "Jan", "Oct"} <= months  # each month named above its block
    assert ax.get_title() == "Transactions per day, May 2025 to Oct 2026"
