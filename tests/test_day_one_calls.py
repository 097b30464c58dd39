"""Issue 44, items 1, 2 and 4: the analyst's day-one questions in one call each --
``analysis.reorder(..., by="location")`` (cover per item and location: order or transfer) and
no cut by default, ``analysis.abc_classes`` and ``analysis.crosstab`` -- each equal to plain
pandas on the stand-in's raw JSON (``sb.data("shop")``), and worked by hand where a rule
decides."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from truth import raw_lines

from invtools import (
    ArgumentTypeError,
    ConfigError,
    CutWarning,
    DeletedItemsWarning,
    WindowWarning,
)
from invtools.analysis import abc_classes, crosstab, reorder

DAY = pd.Timedelta(days=1)
T = pd.Timestamp("2026-10-31", tz="UTC")


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        warnings.simplefilter("error", WindowWarning)
        warnings.simplefilter("error", CutWarning)
        return fn(*args, **kwargs)


def _place(d) -> dict:
    return d["to_location"] or d["from_location"] or {}


def _raw_stock(view) -> pd.DataFrame:
    return pd.DataFrame(
        {"item": it["id"], "location": q["location_id"], "qty": float(q["quantity"])}
        for it in view.items
        for q in it["quantities"]
    )


# -- reorder per location ----------------------------------------------------------------------
@pytest.mark.network
def test_reorder_per_location_equals_plain_pandas_on_the_servers_json(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    lines, items, stock = client.lines_df(since="8W"), client.items_df(), client.stock_df()
    as_of = pd.Timestamp(lines.attrs["window"]["until"])
    raw, held = raw_lines(view), _raw_stock(view)
    live = {it["id"] for it in view.items}
    sold = raw[
        (raw["type"] == "out")
        & (raw["time"] >= as_of - 56 * DAY)
        & (raw["time"] <= as_of)
        & raw["item"].isin(live)
    ]
    units = sold.groupby(["item", "location"])["units"].sum()
    lead = 14
    pace = units / 56
    on_hand = held.set_index(["item", "location"])["qty"]
    need = pace.reindex(on_hand.index, fill_value=0.0) * lead
    spare = (on_hand.clip(lower=0) - need).clip(lower=0)
    want = pd.DataFrame({"units_out": units, "daily_out": pace})
    want["on_hand"] = on_hand.reindex(want.index).fillna(0.0)
    want["days_of_cover"] = want["on_hand"].clip(lower=0) / want["daily_out"]
    want["flag"] = want["days_of_cover"] <= lead
    want["shortfall"] = (want["daily_out"] * lead - want["on_hand"].clip(lower=0)).clip(lower=0)
    per_item = spare.groupby(level="item").sum()
    want["spare_elsewhere"] = [
        per_item.get(i, 0.0) - spare.get((i, loc), 0.0) for i, loc in want.index
    ]
    want = want.reset_index().sort_values(
        ["units_out", "item", "location"], ascending=[False, True, True], ignore_index=True
    )
    got = _quietly(reorder, lines, items, stock, by="location")
    assert list(zip(got["item_id"], got["location_id"], strict=True)) == list(
        zip(want["item"], want["location"], strict=True)
    )
    for column in ("units_out", "daily_out", "on_hand", "days_of_cover", "shortfall"):
        assert got[column].tolist() == pytest.approx(want[column].tolist()), column
    assert got["spare_elsewhere"].tolist() == pytest.approx(want["spare_elsewhere"].tolist())
    assert got["runs_out_in_lead_time"].tolist() == want["flag"].tolist()
    names = {loc["id"]: loc["name"] for loc in view.locations}
    assert got["location_name"].tolist() == [names[i] for i in want["location"]]
    flagged = want[want["flag"]]
    action = np.where(
        flagged["spare_elsewhere"] <= 0,
        "order",
        np.where(
            flagged["spare_elsewhere"] >= flagged["shortfall"], "transfer", "transfer and order"
        ),
    )
    assert got.loc[got["runs_out_in_lead_time"], "action"].tolist() == action.tolist()
    assert got.loc[~got["runs_out_in_lead_time"], "action"].isna().all()
    assert "transfer" in set(action)  # the trap: out on the floor, stock in a warehouse
    assert str(got["action"].dtype) == "string" and str(got["location_id"].dtype) == "Int64"
    assert got.attrs["team_name"] == view.team["name"]
    assert got.attrs["grain"] == ["lines", "items", "stock"]


@pytest.mark.network
def test_reorder_lists_every_item_that_runs_out_by_default_as_the_how_to_prints_it(sb, make_client):
    """The how-to's "order these now": every item that sold and runs out within the lead time,
    those already out everywhere among them -- the old default top=10 printed 1 where 3 were
    out, and said nothing."""
    client = make_client(sb)
    view = sb.data("shop")
    lines, items, stock = client.lines_df(since="90D"), client.items_df(), client.stock_df()
    as_of = pd.Timestamp(lines.attrs["window"]["until"])
    raw = raw_lines(view)
    live = {it["id"]: float(it["quantity"]) for it in view.items}
    sold = raw[(raw["type"] == "out") & (raw["time"] >= as_of - 56 * DAY) & raw["item"].isin(live)]
    units = sold[sold["time"] <= as_of].groupby("item")["units"].sum()
    cover = pd.Series({i: max(live[i], 0) for i in units.index}) / (units / 56)
    lead = 150  # long enough that some items (not all) run out within it on this small history
    want = sorted(cover[cover <= lead].index)
    assert 0 < len(want) < len(units)
    order = _quietly(reorder, lines, items, look_back="8W", lead_days=lead)
    assert len(order) == len(units)  # no cut
    assert sorted(order.loc[order["runs_out_in_lead_time"], "item_id"]) == want
    assert order.attrs.get("cut") is None
    # a cut that drops a flagged row is said, in attrs and a warning
    last = int(np.flatnonzero(order["runs_out_in_lead_time"].to_numpy(dtype=bool))[-1])
    below = int(order["runs_out_in_lead_time"].iloc[last:].sum())
    with pytest.warns(CutWarning) as said:
        cut = reorder(lines, items, look_back="8W", lead_days=lead, top=max(last, 1))
    assert len(cut) == max(last, 1)
    assert cut.attrs["cut"] == {
        "top": max(last, 1),
        "rows": len(units),
        "cut": len(units) - max(last, 1),
        "flagged_cut": below,
        "said": str(said[0].message),
    }
    noun = "item runs" if below == 1 else "items run"
    assert str(said[0].message) == (
        f"reorder: {below} more {noun} out within the lead time (150 days) below the top "
        f"{max(last, 1)}; top=None keeps every one"
    )
    with pytest.warns(CutWarning, match=r"^reorder: \d+ more items? (at a location )?runs? out"):
        reorder(lines, items, stock, by="location", look_back="8W", lead_days=lead, top=1)
    whole = _quietly(reorder, lines, items, look_back="8W", lead_days=lead, top=len(units))
    assert whole.attrs["cut"]["flagged_cut"] == 0  # nothing cut: nothing said


def _sales(*rows) -> pd.DataFrame:
    """Out lines of ``(days before T, item, location, units)``, as of their newest (a frame
    built by hand records no moment: analyses would warn)."""
    lines = pd.DataFrame(
        {
            "transaction_time": pd.array([T - d * DAY for d, *_ in rows], "datetime64[ms, UTC]"),
            "type": pd.Categorical(["out"] * len(rows)),
            "item_id": pd.array([r[1] for r in rows], dtype="Int64"),
            "item_name": pd.array([f"I{r[1]}" for r in rows], dtype="string"),
            "location_id": pd.array([r[2] for r in rows], dtype="Int64"),
            "quantity": [float(r[3]) for r in rows],
        }
    )
    lines.attrs["as_of"] = str(lines["transaction_time"].max())
    return lines


def _stock(*rows) -> pd.DataFrame:
    """Stock of ``(item, location, units)``; location 1 the floor, 2 the warehouse."""
    return pd.DataFrame(
        {
            "item_id": pd.array([r[0] for r in rows], dtype="Int64"),
            "item_name": pd.array([f"I{r[0]}" for r in rows], dtype="string"),
            "location_id": pd.array([r[1] for r in rows], dtype="Int64"),
            "location_name": pd.array([{1: "Floor", 2: "Warehouse"}[r[1]] for r in rows], "string"),
            "quantity": [float(r[2]) for r in rows],
        }
    )


def test_reorder_per_location_worked_by_hand_transfer_order_or_both():
    """28 days, lead 7: item 1 sells 1 a day on the floor (out there; 10 spare in the warehouse:
    transfer), item 2 likewise (2 spare: transfer 2 and order), item 3 too (the warehouse sells
    it as fast as it holds it: none spare, order); item 4 sells 1 a day at both (5 on the
    floor: flagged, the warehouse's 30 minus its own 7: 23 spare), item 5 has weeks of cover."""
    lines = _sales(
        (1, 1, 1, 28),
        (1, 2, 1, 28),
        (1, 3, 1, 28),
        (1, 3, 2, 28),
        (2, 4, 1, 28),
        (2, 4, 2, 28),
        (3, 5, 1, 28),
    )
    items = pd.DataFrame({"item_id": pd.array([1, 2, 3, 4, 5], dtype="Int64")}).assign(
        name=lambda d: "I" + d["item_id"].astype(str), quantity=0.0
    )
    stock = _stock((1, 1, 0), (1, 2, 10), (2, 1, -1), (2, 2, 2), (3, 2, 7), (4, 1, 5), (4, 2, 30))
    stock = pd.concat([stock, _stock((5, 1, 100))], ignore_index=True)
    got = reorder(lines, items, stock, by="location", look_back="28D", lead_days=7)
    got = got.set_index(["item_id", "location_id"])
    assert got["daily_out"].tolist() == [1.0] * 7
    assert got.loc[(3, 1), "on_hand"] == 0  # listed at the warehouse only: none on the floor
    assert got["shortfall"].to_dict() == {
        (1, 1): 7.0,
        (2, 1): 7.0,
        (3, 1): 7.0,
        (3, 2): 0.0,
        (4, 1): 2.0,
        (4, 2): 0.0,
        (5, 1): 0.0,
    }
    assert got["spare_elsewhere"].to_dict() == {
        (1, 1): 10.0,
        (2, 1): 2.0,
        (3, 1): 0.0,
        (3, 2): 0.0,
        (4, 1): 23.0,
        (4, 2): 0.0,
        (5, 1): 0.0,
    }
    assert got["action"].to_dict() == {
        (1, 1): "transfer",
        (2, 1): "transfer and order",
        (3, 1): "order",
        (3, 2): "order",  # 7 days of cover, within the lead time: exactly
        (4, 1): "transfer",
        (4, 2): None,  # <NA>: not flagged
        (5, 1): None,
    }
    assert got.loc[(4, 1), "days_of_cover"] == 5.0 and got["location_name"].loc[(1, 1)] == "Floor"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: reorder(_sales((1, 1, 1, 1)), _ITEMS, by="location"), ConfigError,
         r"reorder: by='location' needs the stock there: pass client\.stock_df\(\)"),
        (lambda: reorder(_sales((1, 1, 1, 1)), _ITEMS, _STOCK, by="shelf"), ConfigError,
         "reorder: by='shelf' must be one of 'item', 'location'"),
        (lambda: reorder(_sales((1, 1, 1, 1)), _ITEMS, [], by="location"), ArgumentTypeError,
         r"reorder: stock must be a DataFrame, not list\. Pass client\.stock_df\(\)"),
        (lambda: reorder(_sales((1, 1, 1, 1)).drop(columns="location_id"), _ITEMS, _STOCK,
                         by="location"), ConfigError,
         r"reorder: lines lack|reorder: lines lacks the column\(s\) \['location_id'\]"),
    ],
)  # fmt: skip
def test_reorder_per_location_refuses_what_it_cannot_answer(call, error, message):
    with pytest.raises(error, match=f"^{message}"):
        call()


_ITEMS = pd.DataFrame(
    {"item_id": pd.array([1], dtype="Int64"), "name": ["I1"], "quantity": [1.0], "cost": [2.0]}
).assign(price=3.0, sku="S1")
_STOCK = _stock((1, 1, 1))


# -- ABC classes -------------------------------------------------------------------------------
def _classes(values: pd.Series, low: float, high: float) -> pd.Series:
    """The documented rule in plain pandas: in order, the most first; A while the share before
    the item is below ``low``, B below ``high``, else (and nothing moved) C."""
    ordered = values.sort_values(ascending=False, kind="stable")
    before = (ordered / ordered.sum()).cumsum().shift(fill_value=0.0)
    cls = np.where(before < low, "A", np.where(before < high, "B", "C"))
    return pd.Series(np.where(ordered > 0, cls, "C"), index=ordered.index)


@pytest.mark.network
@pytest.mark.parametrize("measure", ["cost", "price", "quantity"])
def test_abc_classes_equal_plain_pandas_on_the_servers_json(sb, make_client, measure):
    client = make_client(sb)
    view = sb.data("shop")
    lines, items, stock = client.lines_df(since="90D"), client.items_df(), client.stock_df()
    as_of = pd.Timestamp(lines.attrs["window"]["until"])
    raw = raw_lines(view)
    live = {it["id"]: it for it in view.items}
    sold = raw[(raw["type"] == "out") & (raw["time"] >= as_of - 90 * DAY) & (raw["time"] <= as_of)]
    units = sold.groupby("item")["units"].sum().reindex(sorted(live), fill_value=0.0)
    factor = {"cost": "cost", "price": "price"}.get(measure)
    values = units * [float(live[i][factor]) for i in units.index] if factor else units
    values = values.sort_index()  # ties in item order
    want = _classes(values, 0.8, 0.95)
    got = _quietly(abc_classes, lines, items, measure=measure)
    assert got["item_id"].tolist() == want.index.tolist()
    assert got["class"].astype(str).tolist() == want.tolist()
    assert got["units_out"].tolist() == pytest.approx(units.reindex(want.index).tolist())
    column = {"cost": "value_out_at_cost", "price": "value_out_at_price"}.get(measure, "units_out")
    assert got[column].tolist() == pytest.approx(values.reindex(want.index).tolist())
    assert got["share"].tolist() == pytest.approx((values / values.sum())[want.index].tolist())
    assert set(want) == {"A", "B", "C"} and got["class"].cat.ordered

    per_place = _quietly(abc_classes, lines, items, stock, by="location", measure=measure)
    held = _raw_stock(view)
    held = held[held["qty"] > 0].assign(cls=lambda d: d["item"].map(want))
    held["value"] = held["qty"] * held["item"].map(lambda i: float(live[i]["cost"]))
    sums = held.groupby(["location", "cls"]).agg(
        items=("item", "nunique"), units=("qty", "sum"), value=("value", "sum")
    )
    mine = per_place.set_index(["location_id", "class"])
    for (loc, cls), row in sums.iterrows():
        assert mine.loc[(loc, cls), "items"] == row["items"]
        assert mine.loc[(loc, cls), ["units", "stock_value_at_cost"]].tolist() == pytest.approx(
            [row["units"], row["value"]]
        )
    share = mine["stock_value_at_cost"] / mine.groupby(level=0)["stock_value_at_cost"].transform(
        "sum"
    )
    assert mine["share_of_value"].tolist() == pytest.approx(share.tolist())
    assert mine["items"].sum() == len(held)
    assert per_place.attrs["abc"]["measure"] == measure
    assert per_place.attrs["team_name"] == view.team["name"]


def test_abc_classes_worked_by_hand_the_item_crossing_a_cut_in_its_class():
    """Values 50, 30, 10, 6, 4 and one of nothing: 50 % before item 2, 80 % before item 3
    (so item 2, crossing 80 %, is A), 90 % before item 4 (B), 96 % before item 5 (C)."""
    lines = _sales((1, 1, 1, 50), (1, 2, 1, 30), (1, 3, 1, 10), (1, 4, 1, 6), (1, 5, 1, 4))
    items = pd.DataFrame(
        {
            "item_id": pd.array([6, 5, 4, 3, 2, 1], dtype="Int64"),
            "name": pd.array([f"I{i}" for i in (6, 5, 4, 3, 2, 1)], dtype="string"),
            "cost": [9.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "price": [9.0, 2.0, 2.0, 2.0, 2.0, np.nan],
        }
    )
    got = abc_classes(lines, items, look_back="7D")
    assert got["item_id"].tolist() == [1, 2, 3, 4, 5, 6]
    assert got["class"].astype(str).tolist() == ["A", "A", "B", "B", "C", "C"]
    assert got["cumulative_share"].tolist() == pytest.approx([0.5, 0.8, 0.9, 0.96, 1.0, 1.0])
    wider = abc_classes(lines, items, look_back="7D", cuts=(0.5, 0.99))
    assert wider["class"].astype(str).tolist() == ["A", "B", "B", "B", "B", "C"]
    by_price = abc_classes(lines, items, look_back="7D", measure="price")  # item 1: no price
    assert by_price["item_id"].tolist()[:2] == [2, 3] and by_price["class"].iloc[-1] == "C"
    assert by_price.set_index("item_id").loc[1, "class"] == "C"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"cuts": (0.95, 0.8)}, ConfigError, r"abc_classes: cuts=\(0\.95, 0\.8\) must rise"),
        ({"cuts": (0.8, 1.5)}, ConfigError, "abc_classes: cuts=.* must rise within 0 to 1"),
        ({"cuts": 0.8}, ArgumentTypeError, "abc_classes: cuts must be two shares"),
        ({"cuts": ("a", 1)}, ArgumentTypeError, "abc_classes: cuts must be a number"),
        ({"measure": "weight"}, ConfigError, "abc_classes: measure='weight' must be one of"),
        ({"by": "location"}, ConfigError, "abc_classes: by='location' needs the stock there"),
        ({"look_back": 90}, ConfigError, "abc_classes: look_back=90 has no unit"),
    ],
)
def test_abc_classes_refuse_what_they_cannot_answer(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}"):
        abc_classes(_sales((1, 1, 1, 1)), _ITEMS, **kwargs)


# -- crosstab ----------------------------------------------------------------------------------
@pytest.mark.network
def test_crosstab_equals_plain_pandas_on_the_servers_json(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    tx, lines = client.transactions_df(), client.lines_df()
    raw = pd.DataFrame(
        {
            "member": t["created_by"]["name"],
            "month": pd.Timestamp(t["transaction_time"]).strftime("%Y-%m"),
            "type": t["type"],
            "location": _place(t).get("name"),
            "qty": abs(float(t["total_quantity"])),
        }
        for t in view.transactions
    )
    want = pd.crosstab([raw["member"], raw["month"]], raw["type"])
    got = crosstab(tx, rows=["member", "month"], columns="type")
    assert got.columns.tolist() == ["in", "out", "move", "adjust"]
    assert got.index.names == ["member", "month"]
    pd.testing.assert_frame_equal(
        got, want.reindex(index=got.index, columns=got.columns), check_names=False
    )
    assert (
        got.attrs["team_name"] == view.team["name"] and got.attrs["crosstab"]["metric"] == "count"
    )

    where = crosstab(tx, rows="location", columns="type", metric="quantity")
    sums = raw.pivot_table(index="location", columns="type", values="qty", aggfunc="sum")
    assert sorted(where.index) == sorted(sums.index)
    for kind in sums.columns:
        assert where[kind].tolist() == pytest.approx(sums[kind].reindex(where.index).fillna(0))

    r_lines = raw_lines(view)  # partner x month on a lines frame: transactions counted once
    r_lines = r_lines[r_lines["time"] >= pd.Timestamp("2026-05-01", tz="UTC")]
    r_lines = r_lines.assign(month=r_lines["time"].dt.strftime("%Y-%m"))
    r_lines["partner"] = r_lines["partner"].fillna("(none)")
    counts = r_lines.groupby(["partner", "month"])["tx"].nunique().unstack(fill_value=0)
    who_buys = crosstab(lines, rows="partner", columns="month", since="2026-05-01")
    pd.testing.assert_frame_equal(
        who_buys, counts.reindex(index=who_buys.index, columns=who_buys.columns), check_names=False
    )
    assert who_buys.index[-1] == "(none)"  # moves and adjustments: no partner, last


def _tx_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "transaction_id": pd.array([1, 2, 3, 4], dtype="Int64"),
            "transaction_time": pd.array(
                pd.to_datetime(
                    [
                        "2026-01-31T23:30Z",
                        "2026-02-01T10:00Z",
                        "2026-02-02T10:00Z",
                        "2026-03-01T00:00Z",
                    ]
                ),
                "datetime64[ms, UTC]",
            ),
            "type": pd.Categorical(["adjust", "out", "in", "out"]),
            "created_by_id": pd.array([7, 7, 8, None], dtype="Int64"),
            "created_by_name": pd.array(["Ann", "Ann Lee", "Bo", None], dtype="string"),
            "total_quantity": [-5.0, 2.0, 3.0, 1.0],
        }
    )


def test_crosstab_worked_by_hand_newest_names_time_zones_and_signs():
    tx = _tx_frame()
    got = crosstab(tx, rows="member", columns="month")
    # member 7 renamed (Ann -> Ann Lee): one row under the newest name; none: "(none)", last
    assert got.to_dict("index") == {
        "Ann Lee": {"2026-01": 1, "2026-02": 1, "2026-03": 0},
        "Bo": {"2026-01": 0, "2026-02": 1, "2026-03": 0},
        "(none)": {"2026-01": 0, "2026-02": 0, "2026-03": 1},
    }
    seoul = crosstab(tx, rows="member", columns="month", tz="Asia/Seoul")  # 08:30 on 1 Feb
    assert seoul.loc["Ann Lee"].tolist() == [2, 0]
    units = crosstab(tx, rows="type", columns="year", metric="quantity")
    assert units["2026"].to_dict() == {"in": 3.0, "out": 3.0, "adjust": 5.0}
    signed = crosstab(tx, rows="type", columns="year", metric="quantity", signed=True)
    assert signed.loc["adjust", "2026"] == -5.0
    weeks = crosstab(tx, rows="type", columns="week")  # labelled by their Monday
    assert weeks.columns.tolist() == ["2026-01-26", "2026-02-02", "2026-02-23"]
    assert crosstab(tx, rows=["type"], columns="quarter").columns.tolist() == ["2026Q1"]
    assert crosstab(tx.iloc[:0], rows="member", columns="type").empty
    # a frame built by hand: the adjust before the first in/out/move opens the record
    opened = crosstab(tx, rows="member", columns="type", exclude_opening_counts=True)
    assert opened.attrs["opening_counts_excluded"] == [1]
    assert opened.to_dict("index") == {
        "Ann Lee": {"in": 0, "out": 1},
        "Bo": {"in": 1, "out": 0},
        "(none)": {"in": 0, "out": 1},
    }


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"rows": 3}, ArgumentTypeError, "crosstab: rows must be a key or a list of keys"),
        ({"rows": []}, ArgumentTypeError, "crosstab: rows must be a key or a list of keys"),
        ({"rows": "type"}, ConfigError, r"crosstab: a key is given twice \(\['type', 'type'\]\)"),
        ({"rows": "shelf"}, ConfigError, "crosstab: 'shelf' is not one of 'type', 'location'"),
        ({"rows": "item"}, ConfigError, r"crosstab: 'item' needs a 'item_name' column: a lines"),
        ({"rows": "member", "columns": ["type"]}, ArgumentTypeError, "crosstab: columns must be"),
        ({"rows": "member", "metric": "sum"}, ConfigError, "crosstab: metric='sum' must be one"),
        ({"rows": "member", "tz": "Mars/Base"}, ConfigError, "crosstab: tz='Mars/Base' is not"),
        ({"rows": "member", "signed": "yes"}, ArgumentTypeError, "crosstab: signed must be True"),
    ],
)
def test_crosstab_refuses_what_it_cannot_answer(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}"):
        crosstab(_tx_frame(), **kwargs)
