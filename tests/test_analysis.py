"""Stock investigations on small hand-made frames whose answers are known."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from invtools import ConfigError, DeletedItemsWarning
from invtools.analysis import (movement, stock_at, stock_value, stock_value_by_month,
                               stockout_summary, stockouts)


def _t(*days: str) -> pd.arrays.DatetimeArray:
    return pd.to_datetime(list(days), utc=True).as_unit("ms").array


@pytest.fixture
def history() -> pd.DataFrame:
    # Mug runs out on Jan 5, back on Jan 8, out again on Jan 20 (still out);
    # Cup at location 1 runs out on Jan 3 and is back on Jan 13; Pen never runs out.
    return pd.DataFrame({
        "transaction_time": _t("2026-01-01", "2026-01-05", "2026-01-08", "2026-01-20",
                               "2026-01-02", "2026-01-03", "2026-01-13", "2026-01-02"),
        "transaction_id": pd.array([1, 2, 3, 4, 5, 6, 7, 8], dtype="Int64"),
        "item_id": pd.array([9, 9, 9, 9, 8, 8, 8, 7], dtype="Int64"),
        "item_name": pd.array(["Mug"] * 4 + ["Cup"] * 3 + ["Pen"], dtype="string"),
        "location_id": pd.array([pd.NA] * 4 + [1, 1, 1, pd.NA], dtype="Int64"),
        "stock": [3.0, 0.0, 5.0, 0.0, 2.0, 0.0, 4.0, 10.0],
        "change": [3.0, -3.0, 5.0, -5.0, 2.0, -2.0, 4.0, 10.0],
    })


def test_stockouts_finds_each_episode_and_its_restock(history):
    eps = stockouts(history, as_of="2026-01-30")
    got = {(int(r.item_id), r.out_at.day, None if pd.isna(r.restocked_at) else r.restocked_at.day,
            r.days_out, bool(r.still_out)) for r in eps.itertuples()}
    assert got == {(9, 5, 8, 3.0, False), (9, 20, None, 10.0, True), (8, 3, 13, 10.0, False)}
    assert str(eps["out_at"].dtype) == "datetime64[ms, UTC]"
    assert eps["location_id"].dtype == "Int64"


def test_stockouts_as_of_defaults_to_the_newest_time_in_the_data(history):
    eps = stockouts(history)
    still = eps[eps["still_out"].to_numpy(dtype=bool)]
    assert still["days_out"].tolist() == [0.0]  # newest time is Jan 20, the moment it ran out


def test_stockout_summary_is_worst_first(history):
    s = stockout_summary(history, as_of="2026-01-30")
    assert s["item_name"].tolist() == ["Mug", "Cup"]
    mug = s.iloc[0]
    assert (mug["stockouts"], mug["days_out"], mug["median_days_to_restock"], mug["still_out"]) == (
        2, 13.0, 3.0, True)
    assert s.iloc[1]["median_days_to_restock"] == 10.0


def test_stockout_summary_of_history_without_stockouts_is_empty_but_typed(history):
    s = stockout_summary(history[history["item_name"] == "Pen"])
    assert s.empty and list(s.columns) == ["item_id", "item_name", "stockouts", "days_out",
                                           "median_days_to_restock", "still_out"]


@pytest.fixture
def lines() -> pd.DataFrame:
    return pd.DataFrame({
        "transaction_time": _t("2026-01-01", "2026-01-02", "2026-03-01", "2026-03-02",
                               "2026-03-03", "2026-06-01"),
        "type": pd.Categorical(["in", "out", "out", "adjust", "move", "out"],
                               categories=["in", "out", "move", "adjust"]),
        "item_id": pd.array([1, 1, 1, 2, 1, 3], dtype="Int64"),
        "item_name": pd.array(["Mug", "Mug", "Mug", "Cup", "Mug", "Pen"], dtype="string"),
        "quantity": [10.0, 2.0, 3.0, -1.0, 4.0, 1.0],
    })


@pytest.fixture
def items() -> pd.DataFrame:
    return pd.DataFrame({
        "id": pd.array([1, 2, 3, 4], dtype="Int64"),
        "name": pd.array(["Mug", "Cup", "Pen", "Vase"], dtype="string"),
        "quantity": [5.0, 7.0, 0.0, 2.0], "cost": [2.0, 1.5, 0.5, 10.0],
    })


def test_movement_counts_in_out_adjust_and_not_moves(lines):
    m = movement(lines).set_index("item_id")
    assert (m.loc[1, "received"], m.loc[1, "sold"], m.loc[1, "adjusted"]) == (10.0, 5.0, 0.0)
    assert m.loc[2, "adjusted"] == -1.0 and m.loc[2, "sold"] == 0.0
    assert m.loc[1, "last_sale"] == pd.Timestamp("2026-03-01", tz="UTC")
    # as_of is the newest line (Jun 1): Mug last sold Mar 1 = 92 days earlier
    assert m.loc[1, "days_since_last_sale"] == 92.0


def test_movement_with_items_lists_idle_items_and_flags_dead_stock(lines, items):
    m = movement(lines, items, dead_after_days=90).set_index("item_id")
    assert set(m.index) == {1, 2, 3, 4}
    assert m.loc[4, "sold"] == 0.0 and pd.isna(m.loc[4, "last_sale"])
    assert m.loc[4, "stock_value"] == 20.0
    dead = set(m.index[m["dead"].to_numpy(dtype=bool)])
    assert dead == {1, 2, 4}  # Pen sold last on Jun 1 and has no stock; the rest idle > 90 days


def test_movement_since_limits_the_window_but_not_the_last_sale(lines):
    m = movement(lines, since="2026-02-01").set_index("item_id")
    assert m.loc[1, "sold"] == 3.0 and m.loc[1, "received"] == 0.0


def test_stock_value_per_location():
    stock = pd.DataFrame({"item_id": pd.array([1, 1, 2], dtype="Int64"),
                          "location_id": pd.array([10, 11, 10], dtype="Int64"),
                          "location_name": pd.array(["Shop", "Store", "Shop"], dtype="string"),
                          "quantity": [2.0, 3.0, 0.0]})
    items = pd.DataFrame({"id": pd.array([1, 2], dtype="Int64"), "cost": [1.0, 5.0],
                          "price": [2.0, 9.0]})
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
    vase = pd.DataFrame({
        "transaction_time": _t("2026-01-01", "2026-01-02"),
        "transaction_id": pd.array([20, 21], dtype="Int64"),
        "item_id": pd.array([6, 6], dtype="Int64"),
        "item_name": pd.array(["Vase", "Vase"], dtype="string"),
        "location_id": pd.array([pd.NA, pd.NA], dtype="Int64"),
        "stock": [1.0, 0.0], "change": [1.0, -1.0]})
    out = pd.concat([history, vase], ignore_index=True)
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
    gone = pd.DataFrame({
        "transaction_time": _t("2026-02-01"), "type": pd.Categorical(
            ["out"], categories=["in", "out", "move", "adjust"]),
        "item_id": pd.array([5], dtype="Int64"), "item_name": pd.array(["Gone"], dtype="string"),
        "quantity": [1.0]})
    both = pd.concat([lines, gone], ignore_index=True)
    both["item_deleted"] = pd.array([False] * len(lines) + [True], dtype="boolean")
    for with_items in (None, items):
        with pytest.warns(DeletedItemsWarning, match="5 'Gone'"):
            m = movement(both, with_items)
        assert 5 not in set(m["item_id"]) and m.attrs["deleted_items_excluded"] == [5]
        kept = movement(both, with_items, include_deleted=True)
        assert kept.set_index("item_id").loc[5, "sold"] == 1.0


@pytest.mark.network
def test_the_demo_shops_worst_item_is_not_a_deleted_one(make_client):
    # The case: in the demo shop's full history, an item that ran out and was then
    # deleted ranked first, "still out for 57 days". The lines come from the stand-in's own
    # details (the same JSON its detail endpoint sends; 4,000 of them over HTTP take 11 s).
    from invtools.frames import lines_df, stock_history
    from invtools.sandbox import serve

    with serve(rate_limit=0) as sb:
        view = sb.data("shop")
        lines = lines_df([view.transaction(row["id"]) for row in view.transactions])
        items = make_client(sb).items_df()
    gone = set(lines["item_id"]) - set(items["id"])
    assert gone and gone == set(lines.loc[lines["item_deleted"].to_numpy(dtype=bool), "item_id"])
    history = stock_history(lines)
    with pytest.warns(DeletedItemsWarning):
        summary = stockout_summary(history)
    assert not set(summary["item_id"]) & gone
    assert set(summary.attrs["deleted_items_excluded"]) <= gone
    assert summary.attrs["deleted_items_excluded"]  # one of them did run out
    everything = stockout_summary(history, include_deleted=True)
    assert everything.iloc[0]["item_id"] in gone  # the ranking, on request only


# -- stock at a date, and its value month by month --------------------------------------------
@pytest.fixture
def vase_history() -> pd.DataFrame:
    # Vase: +10 on Jan 5, -4 on Feb 10, +6 on Apr 1 (nothing in March); Bowl: +3 on Feb 2 at
    # location 1, -5 on Mar 3 (negative stock has no value).
    return pd.DataFrame({
        "transaction_time": _t("2026-01-05", "2026-02-10", "2026-04-01", "2026-02-02",
                               "2026-03-03"),
        "transaction_id": pd.array([1, 2, 3, 4, 5], dtype="Int64"),
        "item_id": pd.array([6, 6, 6, 7, 7], dtype="Int64"),
        "item_name": pd.array(["Vase"] * 3 + ["Bowl"] * 2, dtype="string"),
        "location_id": pd.array([pd.NA] * 3 + [1, 1], dtype="Int64"),
        "stock": [10.0, 6.0, 12.0, 3.0, -2.0], "change": [10.0, -4.0, 6.0, 3.0, -5.0],
    })


def test_stock_at_is_the_level_after_the_last_line_at_or_before_then(vase_history):
    at = stock_at(vase_history, "2026-02-15")
    assert at[["item_id", "location_id", "stock"]].astype(object).values.tolist() == [
        [6, pd.NA, 6.0], [7, 1, 3.0]]
    assert at.loc[0, "last_change"] == pd.Timestamp("2026-02-10", tz="UTC")
    assert stock_at(vase_history, "2026-01-01").empty  # nothing recorded yet
    assert stock_at(vase_history)["stock"].tolist() == [12.0, -2.0]  # now: the newest time


def test_stock_value_by_month_carries_levels_over_quiet_months(vase_history):
    items = pd.DataFrame({"id": pd.array([6, 7], dtype="Int64"), "cost": [2.0, 1.0],
                          "price": [5.0, 3.0]})
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
        lines = lines_df([view.transaction(row["id"]) for row in view.transactions])
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
