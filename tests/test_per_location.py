"""Issue 32, item 3 ("Place, honestly"): every stock analysis and plot of a per-location
history works per (item, location), a filter never moves the moment a history is as of, a
windowed plot starts each location at its opening balance, locations are named by name, and
the stock at every period's end per location comes in one call.

Against the stand-in over HTTP, compared with plain pandas (and plain Python loops) on the
server's own JSON (``sb.data("shop")``).
"""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from invtools import ConfigError, DeletedItemsWarning, WindowWarning, plot_stock_history
from invtools.analysis import (
    month_end_stock,
    stock_at,
    stock_value_by_month,
    stockout_summary,
    stockouts,
)
from invtools.frames import context_of, lines_df, stock_history

DAY = pd.Timedelta(days=1)


@pytest.fixture(autouse=True)
def _quiet_deleted_items_and_figures():
    with warnings.catch_warnings():  # the demo has deleted items; said elsewhere
        warnings.simplefilter("ignore", DeletedItemsWarning)
        yield
    plt.close("all")


def _levels(view) -> pd.DataFrame:
    """Each line's level at each location it touched, from the server's own details: the
    destination's ``to_location_new_stock_level``, a move's source's
    ``from_location_new_stock_level``. Sorted per (item, location) in time (id) order."""
    rows = []
    for row in view.transactions:
        d = view.transaction(row["id"])
        sides = [("to", d["to_location"]), ("from", d["from_location"])]
        for line in d["items"]:
            for side, where in sides:
                level = line[f"{side}_location_new_stock_level"]
                if where is None or level is None:
                    continue
                rows.append(
                    {
                        "tx": d["id"],
                        "time": pd.Timestamp(d["transaction_time"]),
                        "item": line["id"],
                        "loc": where["id"],
                        "level": float(level),
                    }
                )
    raw = pd.DataFrame(rows)
    return raw.sort_values(["item", "loc", "time", "tx"], kind="stable", ignore_index=True)


def _episodes(levels: pd.DataFrame) -> list[tuple[int, int, pd.Timestamp, pd.Timestamp | None]]:
    """(item, location, out at, restocked at or None): a plain loop over each location's
    levels -- out when the level there is zero or below, back when it rises above."""
    found = []
    for (item, loc), rows in levels.groupby(["item", "loc"], sort=True):
        opened = None
        for when, level in zip(rows["time"], rows["level"], strict=True):
            if level <= 0 and opened is None:
                opened = when
            elif level > 0 and opened is not None:
                found.append((item, loc, opened, when))
                opened = None
        if opened is not None:
            found.append((item, loc, opened, None))
    return found


def _location_names(view) -> dict[int, str]:
    return {loc["id"]: loc["name"] for loc in view.locations}


# ------------------------------------------------------------------ 1. per (item, location)


@pytest.mark.network
def test_a_per_location_summary_counts_each_location_on_its_own(sb, make_client):
    # The issue: an item "out" 369 days of a 548-day history, still_out=True while a
    # warehouse held 11 -- the summary added the locations together.
    client = make_client(sb)
    view = sb.data("shop")
    lines = client.lines_df()
    as_of = context_of(lines).as_of
    summary = stockout_summary(stock_history(lines, by_location=True), include_deleted=True)
    assert summary.columns.tolist() == [
        "item_id",
        "item_name",
        "location_id",
        "location_name",
        "stockouts",
        "days_out",
        "median_days_to_restock",
        "still_out",
    ]
    want: dict[tuple[int, int], dict] = {}
    for item, loc, out_at, back in _episodes(_levels(view)):
        mine = want.setdefault((item, loc), {"n": 0, "days": 0.0, "still": False, "back": []})
        mine["n"] += 1
        mine["days"] += ((as_of if back is None else back) - out_at) / DAY
        mine["still"] |= back is None
        if back is not None:
            mine["back"].append((back - out_at) / DAY)
    got = summary.set_index(["item_id", "location_id"])
    assert sorted(got.index) == sorted(want)
    for key, w in want.items():
        row = got.loc[key]
        median = pd.Series(w["back"], dtype="float64").median()
        assert [row["stockouts"], row["still_out"]] == [w["n"], w["still"]], key
        assert [row["days_out"], row["median_days_to_restock"]] == pytest.approx(
            [w["days"], median], nan_ok=True
        ), key
    names = _location_names(view)
    assert got["location_name"].tolist() == [names[k[1]] for k in got.index]
    # still out at a location exactly where the server holds none there now
    held = {(i["id"], q["location_id"]): q["quantity"] for i in view.items for q in i["quantities"]}
    live = [k for k in got.index if k in held]
    assert [bool(got.loc[k, "still_out"]) for k in live] == [held[k] <= 0 for k in live]
    # the shape: out at one location while another holds stock -- not out there
    holding = [
        k
        for k in live
        if got.loc[k, "still_out"]
        and any(held.get((k[0], loc), 0) > 0 for loc in names if loc != k[1])
    ]
    assert holding  # the demo has such items; each is out only where it is out
    span = (lines["transaction_time"].max() - lines["transaction_time"].min()) / DAY
    assert (summary["days_out"] <= span + 1).all()  # never more days than the history has


@pytest.mark.network
def test_each_episode_names_its_location_and_the_all_locations_summary_stays(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    lines = client.lines_df()
    eps = stockouts(stock_history(lines, by_location=True), include_deleted=True)
    assert eps.columns.tolist()[:4] == ["item_id", "item_name", "location_id", "location_name"]
    names = _location_names(view)
    assert eps["location_name"].tolist() == [names[i] for i in eps["location_id"]]
    truth = _episodes(_levels(view))
    got = [
        (r.item_id, r.location_id, r.out_at, None if pd.isna(r.restocked_at) else r.restocked_at)
        for r in eps.itertuples()
    ]
    assert sorted(got, key=str) == sorted(truth, key=str)
    # the all-locations history: per item, as before (no location columns in the summary)
    every = stockout_summary(stock_history(lines), include_deleted=True)
    assert "location_id" not in every.columns and every["item_id"].is_unique
    eps_all = stockouts(stock_history(lines), include_deleted=True)
    assert eps_all["location_id"].isna().all() and eps_all["location_name"].isna().all()


# ---------------------------------------------------------- 2. a filter never moves the moment


@pytest.mark.network
def test_filtering_a_history_by_item_never_moves_its_moment(sb, make_client):
    # The issue: stock_history(lines, item_ids=[...]) measured to the item's own last line,
    # so an open stock-out of 47 days read 0.0 and the plot stopped seven weeks early.
    client = make_client(sb)
    view = sb.data("shop")
    lines = client.lines_df()
    as_of = context_of(lines).as_of
    levels = _levels(view)
    quiet = levels.groupby("item")["time"].max() < as_of - 60 * DAY
    open_ = [(i, loc, t) for i, loc, t, back in _episodes(levels) if back is None]
    item, loc, out_at = next(e for e in open_ if quiet.get(e[0], False))
    full = stock_history(lines, by_location=True)
    one = stock_history(lines, item_ids=[item], by_location=True)
    assert context_of(one).as_of == as_of
    still = stockouts(one, include_deleted=True)
    still = still[still["still_out"].to_numpy(dtype=bool)].set_index("location_id")
    assert still.loc[loc, "days_out"] == pytest.approx((as_of - out_at) / DAY)
    assert still.loc[loc, "days_out"] > 60
    summary = stockout_summary(one, include_deleted=True).set_index("location_id")
    assert summary.loc[loc, "days_out"] >= still.loc[loc, "days_out"]
    # a duration counts back from the same moment, filtered or not
    at = stock_at(one, as_of="30D", include_deleted=True)
    whole = stock_at(full, as_of="30D", include_deleted=True)
    whole = whole[(whole["item_id"] == item).to_numpy(dtype=bool)]
    pd.testing.assert_frame_equal(at.reset_index(drop=True), whole.reset_index(drop=True))
    # the plot goes on to the moment the lines are as of
    ax = plot_stock_history(one, include_deleted=True)
    for line in ax.get_lines():
        assert pd.Timestamp(line.get_xdata()[-1]) == as_of.tz_localize(None)
    # lines with no recorded context: the history makes up no moment (issue 43), and its
    # analyses say they measure to its newest time and what to pass
    own = lines_df([view.transaction(r["id"]) for r in view.transactions])
    mine = stock_history(own, item_ids=[item], by_location=True)
    assert context_of(mine).as_of is None
    with pytest.warns(WindowWarning, match="stockouts: the frame records no moment.*as_of="):
        stockouts(mine, include_deleted=True)


# ------------------------------------------------------- 3. a window starts at its openings


@pytest.mark.network
def test_a_windowed_plot_starts_each_location_at_its_opening_balance(sb, make_client):
    # The issue: a warehouse holding 6 all winter was drawn empty from November to March.
    client = make_client(sb)
    view = sb.data("shop")
    since = pd.Timestamp("2025-11-01", tz="UTC")
    window = client.lines_df(since="2025-11-01")
    history = stock_history(window, by_location=True)
    levels = _levels(view)
    # an item one of whose locations held stock at the window's start and had no line there
    # for months after it
    first = history.groupby(["item_id", "location_id"])["transaction_time"].min()
    before = levels[levels["time"] < since].groupby(["item", "loc"])["level"].last()
    held = [k for k, t in first.items() if t > since + 90 * DAY and before.get(k, 0) > 0]
    item = held[0][0]
    ax = plot_stock_history(history, item_ids=[item])
    names = _location_names(view)
    drawn = {ln.get_label(): ln for ln in ax.get_lines()}
    locs = sorted(history.loc[history["item_id"] == item, "location_id"].unique())
    assert len(drawn) == len(locs)
    for loc in locs:
        label = next(k for k in drawn if k.endswith(f"({names[loc]})"))
        line = drawn[label]
        opening = before.get((item, loc), 0.0)  # plain pandas: the level before the window
        assert pd.Timestamp(line.get_xdata()[0]) == since.tz_localize(None), label
        assert line.get_ydata()[0] == opening, label
        rows = history[(history["item_id"] == item) & (history["location_id"] == loc)]
        assert line.get_ydata().tolist()[1 : len(rows) + 1] == rows["stock"].tolist()
    # a history of the whole list has no window: each line starts at its first line, as before
    whole = stock_history(client.lines_df(), item_ids=[item], by_location=True)
    ax = plot_stock_history(whole)
    starts = whole.groupby("location_id")["transaction_time"].min().dt.tz_localize(None)
    assert sorted(pd.Timestamp(ln.get_xdata()[0]) for ln in ax.get_lines()) == sorted(starts)


# ------------------------------------------------------------------------ 4. names, not ids


@pytest.mark.network
def test_locations_are_named_by_name_in_histories_legends_and_tables(sb, make_client):
    client = make_client(sb)
    lines = client.lines_df(since="2026-06-01")
    names = client.locations_df().set_index("location_id")["name"]
    history = stock_history(lines, by_location=True)
    assert history["location_name"].tolist() == names.reindex(history["location_id"]).tolist()
    assert stock_history(lines)["location_name"].isna().all()  # all locations: no one place
    one = stock_history(lines, location_id=3102)
    assert set(one["location_name"]) == {names[3102]}
    item = history.groupby("item_id")["location_id"].nunique().idxmax()
    ax = plot_stock_history(history, item_ids=[item])
    label = history.loc[history["item_id"] == item, "item_name"].iloc[0]
    locs = sorted(history.loc[history["item_id"] == item, "location_id"].unique())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [f"{label} ({names[loc]})" for loc in locs]
    assert not any("location 3" in text for text in legend)
    at = stock_at(history)
    assert at.columns.tolist() == [
        "item_id",
        "item_name",
        "location_id",
        "location_name",
        "stock",
        "last_change",
    ]
    assert at["location_name"].tolist() == names.reindex(at["location_id"]).tolist()


# ------------------------------------------------------- 5. every period's end, per location


def _period_ends_by_loop(history, period: str, periods: int):
    """Plain pandas: stock_at each period's last instant (UTC; the last one cut at the
    moment the history is as of), looped and stacked."""
    as_of = context_of(history).as_of
    naive = history["transaction_time"].min().tz_localize(None), as_of.tz_localize(None)
    span = pd.period_range(naive[0].to_period(period), naive[1].to_period(period), freq=period)
    instants = [
        (p + 1).to_timestamp().tz_localize("UTC") - pd.Timedelta(milliseconds=1) for p in span
    ]
    instants = [min(t, as_of) for t in instants][-periods:]
    stacked = pd.concat([stock_at(history, as_of=t).assign(as_of=t) for t in instants])
    return stacked.astype({"as_of": "datetime64[ms, UTC]"})


@pytest.mark.network
def test_quarter_and_month_ends_per_location_in_one_call_equal_a_loop_of_stock_at(sb, make_client):
    from invtools.analysis import period_end_stock  # new in issue 32

    client = make_client(sb)
    history = stock_history(client.lines_df(), by_location=True)
    for freq, period, noun, periods in (("QE", "Q", "quarter", 4), ("ME", "M", "month", 5)):
        got = period_end_stock(history, freq=freq, periods=periods, by_location=True, wide=False)
        assert got.columns.tolist() == [
            noun,
            "as_of",
            "item_id",
            "item_name",
            "location_id",
            "location_name",
            "stock",
        ]
        loop = _period_ends_by_loop(history, period, periods)
        key = ["as_of", "item_id", "location_id"]
        want = loop.set_index(key)["stock"].sort_index()
        mine = got.set_index(key)["stock"].sort_index()
        pd.testing.assert_series_equal(mine, want, check_names=False)
        assert got["as_of"].nunique() == periods
    quarters = period_end_stock(history, freq="QE", periods=4, by_location=True)
    assert quarters.index.name == "quarter" and quarters.index[-1] == "2026Q4"
    assert quarters.columns.names == ["item", "location"]
    assert set(quarters.columns.get_level_values("location")) == set(history["location_name"])
    # month_end_stock is the month case of the same call
    pd.testing.assert_frame_equal(
        month_end_stock(history, periods=3, by_location=True),
        period_end_stock(history, freq="ME", periods=3, by_location=True),
    )
    # an all-locations history has no location to split by: said, with what to pass
    with pytest.raises(ConfigError, match=r"by_location=True.*stock_history\(lines, by_loc"):
        period_end_stock(stock_history(client.lines_df(since="90D")), by_location=True)
    # adding the locations up (the default) is the all-locations history's figures
    total = month_end_stock(history, periods=3)
    every = month_end_stock(stock_history(client.lines_df()), periods=3)
    pd.testing.assert_frame_equal(total, every)
    value = stock_value_by_month(history, client.items_df())
    assert value["month"].iloc[-1] == "2026-10"
