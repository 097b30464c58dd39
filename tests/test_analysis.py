"""Stock investigations on small hand-made frames whose answers are known."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from truth import raw_lines

from invtools import ConfigError, DeletedItemsWarning, WindowWarning
from invtools.analysis import (
    movement,
    stock_at,
    stock_value,
    stock_value_by_month,
    stockout_summary,
    stockouts,
)


def _t(*days: str) -> pd.arrays.DatetimeArray:
    return pd.to_datetime(list(days), utc=True).as_unit("ms").array


def _as_of_newest(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` recording the moment it is as of, its newest time, as a fetched frame records
    its own: a frame with none is measured to its newest row only with a warning."""
    df.attrs["as_of"] = df["transaction_time"].max().isoformat()
    return df


@pytest.fixture
def history() -> pd.DataFrame:
    # Mug runs out on Jan 5, back on Jan 8, out again on Jan 20 (still out);
    # Cup at location 1 runs out on Jan 3 and is back on Jan 13; Pen never runs out.
    return _as_of_newest(
        pd.DataFrame(
            {
                "transaction_time": _t(
                    "2026-01-01",
                    "2026-01-05",
                    "2026-01-08",
                    "2026-01-20",
                    "2026-01-02",
                    "2026-01-03",
                    "2026-01-13",
                    "2026-01-02",
                ),
                "transaction_id": pd.array([1, 2, 3, 4, 5, 6, 7, 8], dtype="Int64"),
                "item_id": pd.array([9, 9, 9, 9, 8, 8, 8, 7], dtype="Int64"),
                "item_name": pd.array(["Mug"] * 4 + ["Cup"] * 3 + ["Pen"], dtype="string"),
                "location_id": pd.array([pd.NA] * 4 + [1, 1, 1, pd.NA], dtype="Int64"),
                "stock": [3.0, 0.0, 5.0, 0.0, 2.0, 0.0, 4.0, 10.0],
                "change": [3.0, -3.0, 5.0, -5.0, 2.0, -2.0, 4.0, 10.0],
            }
        )
    )


def test_stockouts_finds_each_episode_and_its_restock(history):
    eps = stockouts(history, as_of="2026-01-30")
    got = {
        (
            int(r.item_id),
            r.out_at.day,
            None if pd.isna(r.restocked_at) else r.restocked_at.day,
            r.days_out,
            bool(r.still_out),
        )
        for r in eps.itertuples()
    }
    assert got == {(9, 5, 8, 3.0, False), (9, 20, None, 10.0, True), (8, 3, 13, 10.0, False)}
    assert str(eps["out_at"].dtype) == "datetime64[ms, UTC]"
    assert eps["location_id"].dtype == "Int64"


def test_stockouts_as_of_defaults_to_the_moment_the_frame_is_as_of(history):
    eps = stockouts(history)
    still = eps[eps["still_out"].to_numpy(dtype=bool)]
    assert still["days_out"].tolist() == [0.0]  # as of Jan 20, the moment it ran out
    history.attrs.clear()  # a frame of your own: measured to its newest time, and said
    with pytest.warns(WindowWarning, match="stockouts: .*newest row, 20 Jan 2026.*as_of="):
        assert stockouts(history).equals(eps)


def test_stockout_summary_is_worst_first(history):
    s = stockout_summary(history, as_of="2026-01-30")
    assert s["item_name"].tolist() == ["Mug", "Cup"]
    mug = s.iloc[0]
    assert (mug["stockouts"], mug["days_out"], mug["median_days_to_restock"], mug["still_out"]) == (
        2,
        13.0,
        3.0,
        True,
    )
    assert s.iloc[1]["median_days_to_restock"] == 10.0


def test_stockout_summary_of_history_without_stockouts_is_empty_but_typed(history):
    s = stockout_summary(history[history["item_name"] == "Pen"])
    assert s.empty and list(s.columns) == [
        "item_id",
        "item_name",
        "stockouts",
        "days_out",
        "median_days_to_restock",
        "still_out",
    ]


@pytest.fixture
def lines() -> pd.DataFrame:
    return _as_of_newest(
        pd.DataFrame(
            {
                "transaction_time": _t(
                    "2026-01-01",
                    "2026-01-02",
                    "2026-03-01",
                    "2026-03-02",
                    "2026-03-03",
                    "2026-06-01",
                ),
                "type": pd.Categorical(
                    ["in", "out", "out", "adjust", "move", "out"],
                    categories=["in", "out", "move", "adjust"],
                ),
                "item_id": pd.array([1, 1, 1, 2, 1, 3], dtype="Int64"),
                "item_name": pd.array(["Mug", "Mug", "Mug", "Cup", "Mug", "Pen"], dtype="string"),
                "quantity": [10.0, 2.0, 3.0, -1.0, 4.0, 1.0],
            }
        )
    )


@pytest.fixture
def items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": pd.array([1, 2, 3, 4], dtype="Int64"),
            "name": pd.array(["Mug", "Cup", "Pen", "Vase"], dtype="string"),
            "quantity": [5.0, 7.0, 0.0, 2.0],
            "cost": [2.0, 1.5, 0.5, 10.0],
        }
    )


def test_movement_counts_in_out_adjust_and_not_moves(lines):
    m = movement(lines).set_index("item_id")
    assert (m.loc[1, "received"], m.loc[1, "sold"], m.loc[1, "adjusted"]) == (10.0, 5.0, 0.0)
    assert m.loc[2, "adjusted"] == -1.0 and m.loc[2, "sold"] == 0.0
    assert m.loc[1, "last_sale"] == pd.Timestamp("2026-03-01", tz="UTC")
    # as_of is the newest line (Jun 1): Mug last sold Mar 1 = 92 days earlier
    assert m.loc[1, "days_since_last_sale"] == 92.0


def test_movement_with_items_lists_idle_items_and_flags_dead_stock(lines, items):
    m = movement(lines, items, look_back="90D").set_index("item_id")
    assert set(m.index) == {1, 2, 3, 4}
    assert m.loc[4, "sold"] == 0.0 and pd.isna(m.loc[4, "last_sale"])
    assert m.loc[4, "stock_value"] == 20.0
    dead = set(m.index[m["dead"].to_numpy(dtype=bool)])
    assert dead == {1, 2, 4}  # Pen sold last on Jun 1 and has no stock; the rest idle > 90 days


def test_movement_since_limits_the_window_but_not_the_last_sale(lines):
    m = movement(lines, since="2026-02-01").set_index("item_id")
    assert m.loc[1, "sold"] == 3.0 and m.loc[1, "received"] == 0.0


def test_stock_value_per_location():
    stock = pd.DataFrame(
        {
            "item_id": pd.array([1, 1, 2], dtype="Int64"),
            "location_id": pd.array([10, 11, 10], dtype="Int64"),
            "location_name": pd.array(["Shop", "Store", "Shop"], dtype="string"),
            "quantity": [2.0, 3.0, 0.0],
        }
    )
    items = pd.DataFrame(
        {"item_id": pd.array([1, 2], dtype="Int64"), "cost": [1.0, 5.0], "price": [2.0, 9.0]}
    )
    v = stock_value(stock, items).set_index("location_name")
    assert v.loc["Store", "value_at_cost"] == 3.0 and v.loc["Shop", "value_at_price"] == 4.0
    assert v.loc["Shop", "items"] == 1  # the item with zero on hand is not counted


def test_wrong_frame_says_what_to_pass(lines):
    with pytest.raises(ConfigError, match="stock_history"):
        stockouts(lines)
    with pytest.raises(ConfigError, match="lines_df"):
        movement(pd.DataFrame({"x": [1]}))


# -- issue 11, item 2: deleted items are left out by default, kept on request, and said ------
@pytest.fixture
def history_with_deleted(history) -> pd.DataFrame:
    # Vase (id 6) ran out on Jan 2 and was then deleted in the service: it is gone from
    # items_df(), only its old lines remain (flagged item_deleted). Never restocked, it would
    # otherwise rank as the worst item of all.
    vase = pd.DataFrame(
        {
            "transaction_time": _t("2026-01-01", "2026-01-02"),
            "transaction_id": pd.array([20, 21], dtype="Int64"),
            "item_id": pd.array([6, 6], dtype="Int64"),
            "item_name": pd.array(["Vase", "Vase"], dtype="string"),
            "location_id": pd.array([pd.NA, pd.NA], dtype="Int64"),
            "stock": [1.0, 0.0],
            "change": [1.0, -1.0],
        }
    )
    out = _as_of_newest(pd.concat([history, vase], ignore_index=True))
    out["item_deleted"] = pd.array([False] * len(history) + [True, True], dtype="boolean")
    return out


def test_stockout_summary_leaves_out_deleted_items_and_says_so(history_with_deleted):
    with pytest.warns(DeletedItemsWarning, match=r"1 deleted item .*6 'Vase'.*include_deleted"):
        s = stockout_summary(history_with_deleted, as_of="2026-01-30")
    assert s["item_name"].tolist() == ["Mug", "Cup"]
    assert s.attrs["deleted_items_excluded"] == [6]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = stockout_summary(history_with_deleted, as_of="2026-01-30", include_deleted=True)
    assert kept["item_name"].tolist() == ["Vase", "Mug", "Cup"]  # 28 days out, never back
    assert kept.attrs["deleted_items_excluded"] == []


def test_stockouts_leave_out_deleted_items_too(history_with_deleted):
    with pytest.warns(DeletedItemsWarning):
        eps = stockouts(history_with_deleted, as_of="2026-01-30")
    assert 6 not in set(eps["item_id"]) and eps.attrs["deleted_items_excluded"] == [6]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 6 in set(stockouts(history_with_deleted, include_deleted=True)["item_id"])


def test_no_warning_when_nothing_deleted_was_left_out(history):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = stockout_summary(history)
    assert s.attrs["deleted_items_excluded"] == []


def test_stockout_summary_keeps_an_item_without_a_name(history):
    nameless = history.assign(item_name=history["item_name"].mask(history["item_id"] == 9))
    s = stockout_summary(nameless, as_of="2026-01-30")
    assert sorted(s["item_id"].tolist()) == [8, 9]  # groupby used to drop the NA name
    assert pd.isna(s.set_index("item_id").loc[9, "item_name"])


def test_movement_leaves_out_deleted_items_unless_asked(lines, items):
    gone = pd.DataFrame(
        {
            "transaction_time": _t("2026-02-01"),
            "type": pd.Categorical(["out"], categories=["in", "out", "move", "adjust"]),
            "item_id": pd.array([5], dtype="Int64"),
            "item_name": pd.array(["Gone"], dtype="string"),
            "quantity": [1.0],
        }
    )
    both = _as_of_newest(pd.concat([lines, gone], ignore_index=True))
    both["item_deleted"] = pd.array([False] * len(lines) + [True], dtype="boolean")
    for with_items in (None, items):
        with pytest.warns(DeletedItemsWarning, match="5 'Gone'"):
            m = movement(both, with_items)
        assert 5 not in set(m["item_id"]) and m.attrs["deleted_items_excluded"] == [5]
        kept = movement(both, with_items, include_deleted=True)
        assert kept.set_index("item_id").loc[5, "sold"] == 1.0


@pytest.mark.network
def test_the_demo_shops_worst_item_is_not_a_deleted_one(make_client):
    # The issue's case: in the demo shop's full history, an item that ran out and was then
    # deleted ranked first, "still out for 57 days". The lines come from the stand-in's own
    # details (the same JSON its detail endpoint sends; 4,000 of them over HTTP take 11 s).
    from invtools.frames import lines_df, stock_history
    from invtools.sandbox import serve

    with serve(rate_limit=0) as sb:
        view = sb.data("shop")
        lines = _as_of_newest(lines_df([view.transaction(row["id"]) for row in view.transactions]))
        items = make_client(sb).items_df()
    gone = set(lines["item_id"]) - set(items["item_id"])
    assert gone and gone == set(lines.loc[lines["item_deleted"].to_numpy(dtype=bool), "item_id"])
    history = stock_history(lines)
    with pytest.warns(DeletedItemsWarning):
        summary = stockout_summary(history)
    assert not set(summary["item_id"]) & gone
    assert set(summary.attrs["deleted_items_excluded"]) <= gone
    assert summary.attrs["deleted_items_excluded"]  # one of them did run out
    everything = stockout_summary(history, include_deleted=True)
    assert everything.iloc[0]["item_id"] in gone  # the issue's ranking, on request only


# -- stock at a date, and its value month by month --------------------------------------------
@pytest.fixture
def vase_history() -> pd.DataFrame:
    # Vase: +10 on Jan 5, -4 on Feb 10, +6 on Apr 1 (nothing in March); Bowl: +3 on Feb 2 at
    # location 1, -5 on Mar 3 (negative stock has no value).
    return _as_of_newest(
        pd.DataFrame(
            {
                "transaction_time": _t(
                    "2026-01-05", "2026-02-10", "2026-04-01", "2026-02-02", "2026-03-03"
                ),
                "transaction_id": pd.array([1, 2, 3, 4, 5], dtype="Int64"),
                "item_id": pd.array([6, 6, 6, 7, 7], dtype="Int64"),
                "item_name": pd.array(["Vase"] * 3 + ["Bowl"] * 2, dtype="string"),
                "location_id": pd.array([pd.NA] * 3 + [1, 1], dtype="Int64"),
                "stock": [10.0, 6.0, 12.0, 3.0, -2.0],
                "change": [10.0, -4.0, 6.0, 3.0, -5.0],
            }
        )
    )


def test_stock_at_is_the_level_after_the_last_line_at_or_before_then(vase_history):
    at = stock_at(vase_history, as_of="2026-02-15")
    assert at[["item_id", "location_id", "stock"]].astype(object).values.tolist() == [
        [6, pd.NA, 6.0],
        [7, 1, 3.0],
    ]
    assert at.loc[0, "last_change"] == pd.Timestamp("2026-02-10", tz="UTC")
    assert stock_at(vase_history, as_of="2026-01-01").empty  # nothing recorded yet
    assert stock_at(vase_history)["stock"].tolist() == [12.0, -2.0]  # now: the newest time


def test_stock_value_by_month_carries_levels_over_quiet_months(vase_history):
    items = pd.DataFrame(
        {"item_id": pd.array([6, 7], dtype="Int64"), "cost": [2.0, 1.0], "price": [5.0, 3.0]}
    )
    v = stock_value_by_month(vase_history, items)
    assert v["month"].tolist() == ["2026-01", "2026-02", "2026-03", "2026-04"]
    assert v["units"].tolist() == [10.0, 9.0, 6.0, 12.0]
    assert v["value_at_cost"].tolist() == [20.0, 15.0, 12.0, 24.0]
    assert v["value_at_price"].tolist() == [50.0, 39.0, 30.0, 60.0]
    assert v["items"].tolist() == [1, 2, 1, 1]
    assert v["as_of"].iloc[0] == pd.Timestamp("2026-01-31 23:59:59.999", tz="UTC")
    assert v["as_of"].iloc[-1] == pd.Timestamp("2026-04-01", tz="UTC")  # the newest time


@pytest.mark.network
def test_the_last_month_agrees_with_stock_value_today(make_client):
    # The demo shop's whole history: the value at the last month's end (the newest line) must
    # be today's stock_value() of stock_df() and items_df(); per item and location, stock_at()
    # of a by-location history must be stock_df().
    from invtools.frames import lines_df, stock_history
    from invtools.sandbox import serve

    with serve(rate_limit=0) as sb:
        view = sb.data("shop")
        lines = _as_of_newest(lines_df([view.transaction(row["id"]) for row in view.transactions]))
        client = make_client(sb)
        items, stock = client.items_df(), client.stock_df()
    with pytest.warns(DeletedItemsWarning):
        monthly = stock_value_by_month(stock_history(lines), items)
    today = stock_value(stock, items)
    last = monthly.iloc[-1]
    assert len(monthly) == 18 and last["month"] == "2026-10"
    assert last["units"] == pytest.approx(today["units"].sum())
    assert last["value_at_cost"] == pytest.approx(today["value_at_cost"].sum())
    assert last["value_at_price"] == pytest.approx(today["value_at_price"].sum())
    with pytest.warns(DeletedItemsWarning):
        at = stock_at(stock_history(lines, by_location=True))
    held = stock[stock["quantity"] != 0].set_index(["item_id", "location_id"])["quantity"]
    got = at[at["stock"] != 0].set_index(["item_id", "location_id"])["stock"]
    pd.testing.assert_series_equal(got.sort_index(), held.sort_index(), check_names=False)


# -- issue 19: stock at dates with opening balances, month-end stock, suppliers, shrinkage ------
def test_stock_at_lists_an_item_without_a_line_yet_at_its_opening_balance(vase_history):
    # Jan 10: the Vase has its line of Jan 5; the Bowl's first line (Feb 2, +3) is later, so
    # it had 3 - 3 = 0 then. Before the history's first time nothing is known.
    at = stock_at(vase_history, as_of="2026-01-10")
    assert at[["item_id", "stock"]].astype(object).values.tolist() == [[6, 10.0], [7, 0.0]]
    assert pd.isna(at.loc[1, "last_change"]) and at.loc[0, "last_change"].day == 5
    assert stock_at(vase_history, as_of="2026-01-04").empty
    # a window that starts after the Vase was stocked: it held 10 until its -4 of Feb 10
    window = vase_history[vase_history["transaction_time"] >= pd.Timestamp("2026-02-01", tz="UTC")]
    window = window.assign(change=window["change"])  # the first line's change is its own effect
    at = stock_at(window, as_of="2026-02-05").set_index("item_id")
    assert at.loc[6, "stock"] == 10.0 and pd.isna(at.loc[6, "last_change"])
    assert at.loc[7, "stock"] == 3.0


def test_month_end_stock_wide_and_long(vase_history):
    from invtools.analysis import month_end_stock

    wide = month_end_stock(vase_history)
    assert wide.index.tolist() == ["2026-01", "2026-02", "2026-03", "2026-04"]
    assert wide.columns.tolist() == ["Vase", "Bowl"]  # item id order: 6, 7
    assert wide.to_dict("list") == {"Vase": [10.0, 6.0, 6.0, 12.0], "Bowl": [0.0, 3.0, -2.0, -2.0]}
    assert month_end_stock(vase_history, periods=2).index.tolist() == ["2026-03", "2026-04"]
    long = month_end_stock(vase_history, item_ids=[7], wide=False)
    assert long.columns.tolist() == ["month", "as_of", "item_id", "item_name", "stock"]
    assert long["stock"].tolist() == [0.0, 3.0, -2.0, -2.0]
    assert long["as_of"].iloc[0] == pd.Timestamp("2026-01-31 23:59:59.999", tz="UTC")
    assert long["as_of"].iloc[-1] == pd.Timestamp("2026-04-01", tz="UTC")  # the newest time
    same_name = vase_history.assign(item_name=pd.array(["Pot"] * 5, dtype="string"))
    assert month_end_stock(same_name).columns.tolist() == ["Pot (#6)", "Pot (#7)"]
    with pytest.raises(ConfigError, match="periods=0"):
        month_end_stock(vase_history, periods=0)


def _places() -> pd.DataFrame:
    """A Mug at two locations, a history of the window from 1 January (as of 31 March): the
    warehouse (1) held 11 before it and sells 1 on Feb 20; the shop floor (2) sells out on
    Jan 10 and is never restocked."""
    h = pd.DataFrame(
        {
            "transaction_time": _t("2026-01-10", "2026-02-20"),
            "transaction_id": pd.array([1, 2], dtype="Int64"),
            "item_id": pd.array([9, 9], dtype="Int64"),
            "item_name": pd.array(["Mug", "Mug"], dtype="string"),
            "location_id": pd.array([2, 1], dtype="Int64"),
            "location_name": pd.array(["Shop floor", "Warehouse"], dtype="string"),
            "stock": [0.0, 10.0],
            "change": [-3.0, -1.0],
        }
    )
    h.attrs.update(
        source="api",
        window={"since": "2026-01-01T00:00:00.000Z", "until": "2026-03-31T00:00:00.000Z"},
        as_of="2026-03-31T00:00:00.000Z",
    )
    return h


def test_a_per_location_summary_never_adds_locations_together():
    s = stockout_summary(_places())
    assert s[["location_id", "location_name", "stockouts", "days_out", "still_out"]].astype(
        object
    ).values.tolist() == [[2, "Shop floor", 1, 80.0, True]]  # Jan 10 to Mar 31
    eps = stockouts(_places().drop(columns="location_name"))  # a history without names
    assert eps["location_name"].isna().all() and eps["days_out"].tolist() == [80.0]


def test_stock_at_and_period_ends_know_every_location_from_the_windows_start():
    from invtools.analysis import month_end_stock, period_end_stock

    at = stock_at(_places(), as_of="2026-01-05")  # before either line: both at their openings
    assert at[["location_name", "stock"]].values.tolist() == [
        ["Warehouse", 11.0],
        ["Shop floor", 3.0],
    ]
    mug = _places()[lambda h: h["item_id"] == 9].iloc[1:]  # a slice keeps the window
    assert stock_at(mug, as_of="2026-01-05")["stock"].tolist() == [11.0]
    ends = period_end_stock(_places(), freq="ME", periods=None, by_location=True, wide=False)
    assert ends["month"].tolist() == ["2026-01"] * 2 + ["2026-02"] * 2 + ["2026-03"] * 2
    assert ends["stock"].tolist() == [11.0, 0.0, 10.0, 0.0, 10.0, 0.0]
    assert ends["location_name"].tolist() == ["Warehouse", "Shop floor"] * 3
    wide = month_end_stock(_places(), periods=3, by_location=True)
    assert wide.columns.tolist() == [("Mug", "Warehouse"), ("Mug", "Shop floor")]
    assert month_end_stock(_places(), periods=3)["Mug"].tolist() == [11.0, 10.0, 10.0]  # added up
    year = period_end_stock(_places(), freq="YE", periods=1, wide=False)
    assert year[["year", "stock"]].values.tolist() == [["2026", 10.0]]
    weeks = period_end_stock(_places(), freq="W", periods=2)
    assert weeks.index.name == "week" and weeks.index.tolist() == ["2026-03-29", "2026-04-05"]
    with pytest.raises(ConfigError, match=r"freq='QS'.*'QE' \(quarter ends\)"):
        period_end_stock(_places(), freq="QS")
    with pytest.raises(ConfigError, match="periods=0 must be a positive whole number of quarters"):
        period_end_stock(_places(), freq="QE", periods=0)


def _analysis_lines() -> pd.DataFrame:
    """Two suppliers' deliveries, a sale, and adjustments at two locations by two members."""
    rows = [  # tx, day, type, partner, item, qty, location, member
        (1, "2026-01-01", "in", 50, 1, 10.0, 1, 70),
        (1, "2026-01-01", "in", 50, 2, 5.0, 1, 70),
        (2, "2026-01-11", "in", 50, 1, 4.0, 1, 70),
        (3, "2026-01-31", "in", 50, 3, 2.0, 1, 71),
        (4, "2026-01-05", "in", 51, 2, 8.0, 2, 71),
        (5, "2026-01-06", "out", 60, 1, 3.0, 2, 70),
        (6, "2026-02-01", "adjust", None, 1, -4.0, 1, 70),
        (7, "2026-02-02", "adjust", None, 2, 1.0, 2, 71),
        (8, "2026-02-03", "adjust", None, 3, -1.0, 2, 71),
    ]
    tx, day, kind, partner, item, qty, loc, member = map(list, zip(*rows, strict=True))
    return _as_of_newest(
        pd.DataFrame(
            {
                "transaction_id": pd.array(tx, dtype="Int64"),
                "transaction_time": _t(*day),
                "type": pd.Categorical(kind, categories=["in", "out", "move", "adjust"]),
                "partner_id": pd.array(partner, dtype="Int64"),
                "partner_name": pd.array(
                    [None if p is None else f"P{p}" for p in partner], dtype="string"
                ),
                "location_id": pd.array(loc, dtype="Int64"),
                "location_name": pd.array([f"L{x}" for x in loc], dtype="string"),
                "created_by_id": pd.array(member, dtype="Int64"),
                "created_by_name": pd.array([f"M{m}" for m in member], dtype="string"),
                "item_id": pd.array(item, dtype="Int64"),
                "item_name": pd.array([f"I{i}" for i in item], dtype="string"),
                "quantity": qty,
                "item_deleted": pd.array([False] * len(rows), dtype="boolean"),
            }
        )
    )


def test_supplier_summary_counts_deliveries_quantity_value_and_rhythm():
    from invtools.analysis import supplier_summary

    items = pd.DataFrame({"item_id": pd.array([1, 2, 3], dtype="Int64"), "cost": [2.0, 1.0, 10.0]})
    s = supplier_summary(_analysis_lines(), items=items).set_index("partner_id")
    assert s.index.tolist() == [50, 51]  # by value: 50 delivered 10*2+5+4*2+2*10 = 53
    assert s.loc[50, ["deliveries", "quantity", "value_at_cost", "items"]].tolist() == [
        3,
        21.0,
        53.0,
        3,
    ]
    assert s.loc[50, "median_days_between"] == 15.0  # 10 and 20 days
    assert pd.isna(s.loc[51, "median_days_between"])  # one delivery
    assert s.loc[51, "partner_name"] == "P51" and 60 not in s.index  # a customer: not a supplier
    assert "value_at_cost" not in supplier_summary(_analysis_lines()).columns
    partners = pd.DataFrame(
        {
            "partner_id": pd.array([50, 51, 52, 60], dtype="Int64"),
            "name": pd.array(["P50", "P51", "Idle", "C"], dtype="string"),
            "type": pd.Categorical(["supplier", "customer", "supplier", "customer"]),
        }
    )
    s = supplier_summary(_analysis_lines(), items=items, partners=partners).set_index("partner_id")
    assert s.index.tolist() == [50, 52]  # 51 is a customer (a return); 52 delivered nothing
    assert s.loc[52, ["partner_name", "deliveries", "quantity", "value_at_cost"]].tolist() == [
        "Idle",
        0,
        0.0,
        0.0,
    ]
    s = supplier_summary(_analysis_lines(), since="2026-01-10", until="2026-01-31")
    assert s.set_index("partner_id").loc[50, "deliveries"] == 2


def test_shrinkage_nets_adjustments_by_item_location_and_member():
    from invtools.analysis import shrinkage

    items = pd.DataFrame({"item_id": pd.array([1, 2, 3], dtype="Int64"), "cost": [2.0, 1.0, 10.0]})
    lines = _analysis_lines()
    by_item = shrinkage(lines, items)
    assert by_item["item_id"].tolist() == [3, 1, 2]  # -10, -8, +1: the biggest loss first
    assert by_item["value_at_cost"].tolist() == [-10.0, -8.0, 1.0]
    assert by_item["cumulative_share"].tolist() == pytest.approx([10 / 18, 1.0, 1.0])
    assert by_item["in_cut"].tolist() == [True, True, False]  # the second crosses 80 %
    by_location = shrinkage(lines, items, by="location")
    assert by_location[["location_name", "net_quantity", "value_at_cost"]].values.tolist() == [
        ["L2", 0.0, -9.0],
        ["L1", -4.0, -8.0],
    ]
    by_member = shrinkage(lines, items, by="member")
    assert by_member[["created_by_name", "adjustments"]].values.tolist() == [["M71", 2], ["M70", 1]]
    assert shrinkage(lines, items, since="2026-02-02")["item_id"].tolist() == [3, 2]
    with pytest.raises(ConfigError, match="by='team'"):
        shrinkage(lines, items, by="team")


def test_the_new_helpers_follow_the_vocabulary(vase_history):
    # a wrong kind of object is a TypeError, a bad value a ConfigError; options are keyword-only;
    # every message names the function the user called
    from invtools.analysis import month_end_stock, shrinkage, supplier_summary

    lines = _analysis_lines()
    items = pd.DataFrame({"item_id": pd.array([1, 2, 3], dtype="Int64"), "cost": [2.0, 1.0, 10.0]})
    wrong_kind = [
        (lambda: stock_at(lines.to_dict("records")), "stock_at: history must be a DataFrame"),
        (lambda: stock_at(vase_history, as_of=3.5), "stock_at: as_of must be a time"),
        (lambda: month_end_stock(vase_history, periods="12"), "month_end_stock: periods"),
        (lambda: month_end_stock(vase_history, item_ids=items), "month_end_stock: item_ids"),
        (lambda: month_end_stock(vase_history, tz=1), "month_end_stock: tz"),
        (lambda: supplier_summary(lines, items=[1, 2]), "supplier_summary: items must be a"),
        (lambda: shrinkage(lines, items, by=1), "shrinkage: by must be text"),
        (lambda: shrinkage(lines, items, cut="80%"), "shrinkage: cut must be a number"),
        (lambda: shrinkage(lines, None), "shrinkage: items must be a DataFrame"),
    ]
    for call, message in wrong_kind:
        with pytest.raises(TypeError, match=message):
            call()
    bad_value = [
        (lambda: stock_at(vase_history, as_of="soon"), "stock_at: as_of"),
        (lambda: month_end_stock(vase_history, periods=-1), "month_end_stock: periods=-1"),
        (lambda: month_end_stock(vase_history, item_ids=[1.5]), "month_end_stock: item_ids"),
        (lambda: month_end_stock(vase_history, tz="Mars/Olympus"), "month_end_stock: tz="),
        (lambda: supplier_summary(lines, since="last week"), "supplier_summary: since"),
        (lambda: shrinkage(lines, items, by="team"), "shrinkage: by='team'"),
        (lambda: shrinkage(lines, items, cut=1.5), "shrinkage: cut=1.5"),
        (lambda: shrinkage(lines, items.drop(columns="cost")), "shrinkage: items lacks"),
    ]
    for call, message in bad_value:
        with pytest.raises(ConfigError, match=message):
            call()
    with pytest.raises(TypeError):  # options are keyword-only (frames go by position)
        supplier_summary(lines, items, None, "2026-02-01")  # type: ignore[misc]
    with pytest.raises(TypeError):
        shrinkage(lines, items, "2026-02-01")  # type: ignore[misc]
    with pytest.raises(TypeError):
        month_end_stock(vase_history, 12)  # type: ignore[misc]
    with pytest.raises(TypeError):
        stock_at(vase_history, "2026-03-10")  # type: ignore[misc]


def test_windows_back_from_the_frames_moment_equal_the_explicit_date(vase_history):
    # since="400D" / as_of=a Timedelta count back from the moment the frame is as of -- a
    # frame of your own (no recorded context): its newest time -- as its default as_of does
    # (issue 32: one moment; they counted from the wall clock before)
    from invtools.analysis import month_end_stock, shrinkage, supplier_summary

    lines = _analysis_lines()
    items = pd.DataFrame({"item_id": pd.array([1, 2, 3], dtype="Int64"), "cost": [2.0, 1.0, 10.0]})
    now = lines["transaction_time"].max()
    back = now - pd.Timestamp("2026-01-10", tz="UTC")  # a window that starts on Jan 10
    days = f"{back.total_seconds() / 86400:.6f}D"
    for helper in (
        lambda **kw: supplier_summary(lines, items=items, **kw),
        lambda **kw: shrinkage(lines, items, **kw),
    ):
        pd.testing.assert_frame_equal(helper(since=days), helper(since="2026-01-10"))
        pd.testing.assert_frame_equal(helper(since=back), helper(since="2026-01-10"))
    march = vase_history["transaction_time"].max() - pd.Timestamp("2026-03-10", tz="UTC")
    pd.testing.assert_frame_equal(
        stock_at(vase_history, as_of=march), stock_at(vase_history, as_of="2026-03-10")
    )
    pd.testing.assert_frame_equal(
        month_end_stock(vase_history, as_of=march),
        month_end_stock(vase_history, as_of="2026-03-10"),
    )


def test_the_audits_leave_out_deleted_items_and_carry_provenance():
    from invtools.analysis import shrinkage, supplier_summary
    from invtools.frames import with_provenance

    items = pd.DataFrame({"item_id": pd.array([1, 2], dtype="Int64"), "cost": [2.0, 1.0]})
    lines = _analysis_lines()
    lines["item_deleted"] = pd.array((lines["item_id"] == 3).tolist(), dtype="boolean")
    lines = with_provenance(lines, team_name="Shop", endpoint="/v1/location-txs/{id}")
    for audit in (lambda: supplier_summary(lines, items=items), lambda: shrinkage(lines, items)):
        with pytest.warns(DeletedItemsWarning, match="3 'I3'"):
            result = audit()
        assert result.attrs["deleted_items_excluded"] == [3]
        assert result.attrs["team_name"] == "Shop" and result.attrs["source"] == "api"
    kept = shrinkage(lines, items, include_deleted=True)
    assert 3 in set(kept["item_id"]) and kept.attrs["deleted_items_excluded"] == []
    assert pd.isna(kept.set_index("item_id").loc[3, "value_at_cost"])  # no cost known


# -- the same, on the stand-in server's data over HTTP, against plain pandas on its JSON -------
@pytest.mark.network
def test_supplier_summary_equals_plain_pandas_on_the_servers_json(sb, make_client):
    from invtools.analysis import supplier_summary

    client = make_client(sb)
    view = sb.data("shop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        got = supplier_summary(
            client.lines_df(), items=client.items_df(), partners=client.partners_df()
        ).set_index("partner_id")
    raw = raw_lines(view)
    cost = {it["id"]: float(it["cost"]) for it in view.items}  # decimal strings on the wire
    suppliers = {p["id"] for p in view.partners if p["type"] == 0}
    inbound = raw[(raw["type"] == "in") & raw["partner_id"].isin(suppliers) & ~raw["deleted"]]
    inbound = inbound.assign(value=inbound["qty"] * inbound["item"].map(cost))
    for partner, rows in inbound.groupby("partner_id"):
        times = rows.drop_duplicates("tx")["time"].sort_values()
        want = [
            rows["tx"].nunique(),
            rows["qty"].sum(),
            rows["value"].sum(),
            rows["item"].nunique(),
            times.diff().dt.total_seconds().median() / 86400,
        ]
        mine = got.loc[
            partner, ["deliveries", "quantity", "value_at_cost", "items", "median_days_between"]
        ].tolist()
        assert mine == pytest.approx(want, nan_ok=True), partner
    assert set(got.index) == suppliers  # the ones that delivered nothing too, with zeros
    assert got["value_at_cost"].is_monotonic_decreasing
    assert got.attrs["team_name"] == view.team["name"]
    gone = raw[(raw["type"] == "in") & raw["partner_id"].isin(suppliers) & raw["deleted"]]
    assert got.attrs["deleted_items_excluded"] == sorted(set(gone["item"]))


@pytest.mark.network
def test_shrinkage_by_each_key_equals_plain_pandas_on_the_servers_json(sb, make_client):
    from invtools.analysis import shrinkage

    client = make_client(sb)
    view = sb.data("shop")
    lines, items = client.lines_df(), client.items_df()
    raw = raw_lines(view)
    cost = {it["id"]: float(it["cost"]) for it in view.items}
    since = pd.Timestamp("2025-06-01", tz="UTC")  # after the opening stocktake
    adjusted = raw[(raw["type"] == "adjust") & ~raw["deleted"] & (raw["time"] >= since)]
    adjusted = adjusted.assign(value=adjusted["qty"] * adjusted["item"].map(cost))
    for by, key, column in [
        ("item", "item", "item_id"),
        ("location", "location", "location_id"),
        ("member", "member", "created_by_id"),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeletedItemsWarning)
            got = shrinkage(lines, items, since="2025-06-01", by=by)
        want = adjusted.groupby(key).agg(
            adjustments=("tx", "nunique"),
            net_quantity=("qty", "sum"),
            value_at_cost=("value", "sum"),
        )
        want = (
            want.rename_axis("key")
            .reset_index()
            .sort_values(["value_at_cost", "net_quantity", "key"], kind="stable")
            .set_index("key")
        )
        loss = (-want["value_at_cost"]).clip(lower=0)
        want["cumulative_share"] = loss.cumsum() / loss.sum()
        # the 80 % cut: the losses, biggest first, until their running total reaches 80 %
        # (the one that reaches it included)
        cut, total = [], 0.0
        for value in loss:
            cut.append(value > 0 and total < 0.8 * loss.sum())
            total += value
        want["in_cut"] = cut
        mine = got.set_index(column)
        assert sorted(mine.index) == sorted(want.index), by
        for col in ("adjustments", "net_quantity", "value_at_cost", "cumulative_share"):
            assert mine.loc[want.index, col].tolist() == pytest.approx(want[col].tolist()), (
                by,
                col,
            )
        assert mine.loc[want.index, "in_cut"].tolist() == want["in_cut"].tolist(), by
        assert 0 < sum(cut) < len(cut), by  # a cut that leaves some rows out
        assert got["value_at_cost"].is_monotonic_increasing  # the biggest loss first
        assert got.attrs["team_name"] == view.team["name"]


@pytest.mark.network
def test_month_end_stock_of_a_window_equals_the_full_history_for_its_items(sb, make_client):
    from invtools.analysis import month_end_stock
    from invtools.frames import stock_history

    client = make_client(sb)
    view = sb.data("shop")
    full = stock_history(client.lines_df())
    window = stock_history(client.lines_df(since="2026-03-01"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        got = month_end_stock(window, periods=None, wide=False)
        # measured to the same moment: the window's end (docs/explanation/now.md)
        now = window.attrs["window"]["until"]
        whole = month_end_stock(full, periods=None, wide=False, as_of=now)
        wide = month_end_stock(window, periods=6)
    assert got["month"].unique().tolist() == [f"2026-{m:02d}" for m in range(3, 11)]
    for result in (window, got, wide):  # the lines' provenance, carried on
        assert result.attrs["team_name"] == view.team["name"]
        assert result.attrs["filters"] == {"since": "2026-03-01"}, result.attrs["filters"]
    assert wide.index.tolist() == [f"2026-{m:02d}" for m in range(5, 11)]
    assert set(got["item_id"]) == set(window["item_id"]) - set(
        window.loc[window["item_deleted"].fillna(False).to_numpy(dtype=bool), "item_id"]
    )
    # the full history's figures, for every item present in the window
    key = ["month", "item_id"]
    pd.testing.assert_frame_equal(
        got.set_index(key), whole.set_index(key).loc[got.set_index(key).index]
    )
    # and plain pandas on the server's JSON: each item's level after its last line by then
    raw = raw_lines(view).sort_values(["time", "tx"], kind="stable")
    for month_end, rows in got.groupby("as_of"):
        seen = raw[raw["time"] <= month_end].groupby("item")["level"].last()
        want = seen.reindex(rows["item_id"].astype(int)).fillna(0.0)  # no line yet: none held
        assert rows["stock"].tolist() == want.tolist(), month_end
    # the issue's Hose 50m: items held in stock at the first month's end, with no line in
    # the window until later, are there at their opening balance (they used to be NaN)
    first_end = got["as_of"].min()
    quiet = window.groupby("item_id")["transaction_time"].min() > first_end
    opening = got[(got["as_of"] == first_end) & got["item_id"].isin(quiet.index[quiet])]
    assert len(opening) and (opening["stock"] > 0).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        at = stock_at(window, as_of="2026-03-10").set_index("item_id")["stock"]
        truth = stock_at(full, as_of="2026-03-10").set_index("item_id")["stock"]
    assert len(at) == len(got["item_id"].unique())  # every item of the window is known then
    pd.testing.assert_series_equal(at, truth.reindex(at.index).fillna(0.0))


@pytest.mark.network
def test_the_issues_hose_is_known_at_the_end_of_november_from_a_window(make_client):
    # Issue 19: in the demo shop the GreenThumb Garden Hose 50m held 11 from 1 September
    # 2025 until 30 January 2026; a month-end table of the window since 1 November showed NaN.
    from invtools.analysis import month_end_stock
    from invtools.frames import stock_history
    from invtools.sandbox import serve

    with serve(rate_limit=0) as sb:
        lines = make_client(sb).lines_df(since="2025-11-01")
        hose = next(i for i in sb.data("shop").items if i["name"] == "GreenThumb Garden Hose 50m")
    history = stock_history(lines, item_ids=[hose["id"]])
    assert history["transaction_time"].min() > pd.Timestamp("2026-01-30", tz="UTC")
    november = pd.Timestamp("2025-12-01", tz="UTC")  # the end of 30 November
    window = stock_history(lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        at = stock_at(window, as_of=november).set_index("item_id")
        ends = month_end_stock(window)
    assert at.loc[hose["id"], "stock"] == 11.0 and pd.isna(at.loc[hose["id"], "last_change"])
    assert ends.index[0] == "2025-11" and len(ends) == 12
    assert ends.loc["2025-11", "GreenThumb Garden Hose 50m"] == 11.0
    assert ends.loc["2025-12", "GreenThumb Garden Hose 50m"] == 11.0
