"""Issue 25, item 3: the next questions in one call -- ``analysis.reorder``,
``analysis.dead_stock`` and ``analysis.audit`` -- each equal to plain pandas on the stand-in's
raw JSON (``sb.data("shop")``), typed, and saying when its question reaches outside the frame's
window."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from invtools import (
    ArgumentTypeError,
    ConfigError,
    CutWarning,
    DeletedItemsWarning,
    WindowWarning,
)
from invtools.analysis import audit, dead_stock, reorder

DAY = pd.Timedelta(days=1)


def _raw_sales(view) -> pd.DataFrame:
    """Every ``out`` line of the server's own details: item, time, units."""
    rows = []
    for row in view.transactions:
        if row["type"] != "out":
            continue
        d = view.transaction(row["id"])
        for line in d["items"]:
            rows.append(
                {
                    "item": line["id"],
                    "time": pd.Timestamp(d["transaction_time"]),
                    "qty": abs(float(line["quantity"])),
                }
            )
    return pd.DataFrame(rows)


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        warnings.simplefilter("error", WindowWarning)
        return fn(*args, **kwargs)


def _typed(df, **dtypes) -> None:
    for column, dtype in dtypes.items():
        assert str(df[column].dtype) == dtype, (column, df[column].dtype)


T = pd.Timestamp("2026-10-31", tz="UTC")


def _lines(*rows) -> pd.DataFrame:
    """A lines frame of ``(days before T, type, item id, quantity)`` rows, as the client types
    it (a type or an item of None: missing; a quantity of None: <NA>)."""
    df = pd.DataFrame(
        {
            "transaction_time": pd.array([T - d * DAY for d, *_ in rows], "datetime64[ms, UTC]"),
            "type": pd.Categorical([r[1] for r in rows]),
            "item_id": pd.array([r[2] for r in rows], dtype="Int64"),
            "item_name": pd.array(
                [None if r[2] is None else f"line {r[2]}" for r in rows], "string"
            ),
            "quantity": pd.array([r[3] for r in rows], dtype="Float64"),
        }
    )
    if len(df):  # as of its newest time, as a fetched frame records its moment
        df.attrs["as_of"] = df["transaction_time"].max().isoformat()
    return df


def _no_context(df: pd.DataFrame) -> pd.DataFrame:
    df.attrs.clear()
    return df


def _from_team(df: pd.DataFrame, team_id: int, name: str) -> pd.DataFrame:
    df.attrs.update(source="api", team_id=team_id, team_name=name)
    return df


# -- reorder -----------------------------------------------------------------------------------
@pytest.mark.network
def test_reorder_equals_plain_pandas_on_the_servers_json(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    lines, items = client.lines_df(since="8W"), client.items_df()
    as_of = pd.Timestamp(lines.attrs["window"]["until"])
    sales = _raw_sales(view)
    live = {it["id"]: it for it in view.items}
    window = sales[
        (sales["time"] >= as_of - 56 * DAY) & (sales["time"] <= as_of) & sales["item"].isin(live)
    ]
    units = window.groupby("item")["qty"].sum().rename_axis("item").reset_index()
    units = units.sort_values(["qty", "item"], ascending=[False, True])  # every one: no cut
    for lead_days in (14, 150):
        got = _quietly(reorder, lines, items, lead_days=lead_days)
        assert got["item_id"].tolist() == units["item"].tolist()
        assert got["units_out"].tolist() == units["qty"].tolist()
        daily = units["qty"] / 56
        on_hand = units["item"].map(lambda i: float(live[i]["quantity"]))
        cover = on_hand.clip(lower=0) / daily
        assert got["daily_out"].tolist() == pytest.approx(daily.tolist())
        assert got["on_hand"].tolist() == on_hand.tolist()
        assert got["days_of_cover"].tolist() == pytest.approx(cover.tolist())
        runs_out = [as_of + pd.Timedelta(days=c) for c in cover]
        assert all(
            abs(a - b) < pd.Timedelta("1ms") for a, b in zip(got["runs_out"], runs_out, strict=True)
        )
        assert got["runs_out_in_lead_time"].tolist() == (cover <= lead_days).tolist()
        assert got["sku"].tolist() == [live[i]["sku"] for i in units["item"]]
    assert got["runs_out_in_lead_time"].any() and not got["runs_out_in_lead_time"].all()
    _typed(
        got,
        item_id="Int64",
        item_name="string",
        units_out="float64",
        daily_out="float64",
        on_hand="float64",
        days_of_cover="float64",
        runs_out="datetime64[ms, UTC]",
        runs_out_in_lead_time="boolean",
    )
    assert got.attrs["team_name"] == view.team["name"]


def test_reorder_flags_what_is_already_out_and_ranks_by_units_out():
    t = pd.Timestamp("2026-10-31", tz="UTC")
    lines = pd.DataFrame(
        {
            "transaction_time": pd.array(
                [t - 2 * DAY, t - DAY, t, t - 40 * DAY], dtype="datetime64[ms, UTC]"
            ),
            "type": pd.Categorical(["out", "out", "out", "out"]),
            "item_id": pd.array([1, 2, 3, 1], dtype="Int64"),
            "item_name": pd.array(["A", "B", "C", "A"], dtype="string"),
            "quantity": [6.0, 4.0, 2.0, 100.0],  # the last one is before the window
        }
    )
    items = pd.DataFrame(
        {
            "item_id": pd.array([1, 2, 3], dtype="Int64"),
            "name": pd.array(["A", "B", "C"], dtype="string"),
            "quantity": [0.0, -2.0, 100.0],
        }
    )
    lines.attrs["as_of"] = t.isoformat()
    got = reorder(lines, items, look_back="28D", top=2, lead_days=0).set_index("item_id")
    assert got.index.tolist() == [1, 2]  # the top two by units out in the window
    assert got["units_out"].tolist() == [6.0, 4.0]
    assert got["days_of_cover"].tolist() == [0.0, 0.0]  # already out (or below zero)
    assert (got["runs_out"] == t).all() and got["runs_out_in_lead_time"].all()
    everything = reorder(lines, items, look_back="28D", top=None, as_of=t)
    assert everything["item_id"].tolist() == [1, 2, 3]
    assert everything["days_of_cover"].iloc[2] == pytest.approx(100 / (2 / 28))
    items.loc[2, "quantity"] = 1e9  # cover past a century: runs out "never"
    far = reorder(lines, items, look_back="28D", top=None, as_of=t)
    assert pd.isna(far["runs_out"].iloc[2]) and not far["runs_out_in_lead_time"].iloc[2]
    assert reorder(lines, items, as_of="2261-12-30").empty  # nothing sold then, and no error
    with pytest.raises(ConfigError, match="1678 to 2261"):  # beyond what pandas' times hold
        reorder(lines, items, as_of="9999-12-31")


def test_reorder_counts_the_sales_from_the_look_backs_start_to_as_of_and_names_what_it_knows():
    """Worked by hand: a look-back of 28 days, so one unit a day is 28 units out. A sale on the
    look-back's first moment and one at as_of count; one before, one after, a line with no
    type, an ``in`` line, a sale of no item and a sale of no quantity do not."""
    lines = _lines(
        (28, "out", 1, -14.0),  # the look-back's first moment: counted
        (0, "out", 1, -14.0),  # as_of itself: counted
        (29, "out", 1, -100.0),  # before the look-back
        (-1, "out", 1, -50.0),  # after as_of
        *[(d, "out", i, -28.0) for d, i in ((3, 2), (3, 3), (3, 5))],
        (5, None, 2, -7.0),  # a line without a type is no sale
        (5, "in", 2, 10.0),
        (4, "out", 6, -56.0),  # an item the items frame does not know
        (3, "out", None, -4.0),  # a sale of no item
        (2, "out", 4, -3.0),
        (2, "out", 4, None),  # a sale of no quantity: counts nothing
    )
    items = pd.DataFrame(
        {
            "item_id": pd.array([1, 2, 3, 4, 5, 1], dtype="Int64"),  # item 1 twice: the first row
            "name": pd.array(["Mug", "Jug", "Cup", "Pot", "Pan", "Old mug"], dtype="string"),
            "sku": pd.array(["M-1", "J-2", None, "P-4", "P-5", "X"], dtype="string"),
            "quantity": [36_500.0, 36_500.5, 14.5, 30.0, 14.0, 0.0],
        }
    )
    got = reorder(lines, items, look_back="28D", top=None, as_of=T)
    assert got.index.equals(pd.RangeIndex(6))
    assert got["item_id"].tolist() == [6, 1, 2, 3, 5, 4]  # most units out first, then by id
    assert got["units_out"].tolist() == [56.0, 28.0, 28.0, 28.0, 28.0, 3.0]
    assert got["item_name"].tolist() == ["line 6", "Mug", "Jug", "Cup", "Pan", "Pot"]
    assert got["sku"].tolist()[1:] == ["M-1", "J-2", pd.NA, "P-5", "P-4"]
    assert pd.isna(got["sku"].iloc[0])
    mine = got.set_index("item_id")
    assert mine["daily_out"].tolist() == [2.0, 1.0, 1.0, 1.0, 1.0, 3 / 28]
    assert mine["days_of_cover"].iloc[1:].tolist() == [36_500.0, 36_500.5, 14.5, 14.0, 280.0]
    # a cover of a century runs out a century on; past it, never
    assert mine.loc[1, "runs_out"] == T + 36_500 * DAY and pd.isna(mine.loc[2, "runs_out"])
    # the default lead time is 14 days: 14 days of cover runs out in it, 14.5 does not
    assert mine["runs_out_in_lead_time"].iloc[1:].tolist() == [False, False, False, True, False]
    # the unknown item: no stock on hand known, so no cover and no flag
    assert pd.isna(mine.loc[6, "on_hand"]) and pd.isna(mine.loc[6, "days_of_cover"])
    assert pd.isna(mine.loc[6, "runs_out"]) and pd.isna(mine.loc[6, "runs_out_in_lead_time"])
    _typed(got, item_id="Int64", item_name="string", sku="string", days_of_cover="float64")
    with pytest.warns(CutWarning, match=r"^reorder: 1 more item runs out within the lead time"):
        assert reorder(lines, items, look_back="28D", top=1, as_of=T)["item_id"].tolist() == [6]

    no_sku = reorder(lines, items.drop(columns="sku"), look_back="28D", top=None, as_of=T)
    assert no_sku["sku"].isna().all() and str(no_sku["sku"].dtype) == "string"


def test_reorder_leaves_deleted_items_out_unless_asked_and_says_so():
    lines = _lines((1, "out", 1, -5.0), (1, "out", 2, -3.0))
    lines["item_deleted"] = pd.array([False, True], dtype="boolean")
    items = pd.DataFrame({"item_id": pd.array([1], "Int64"), "name": ["Mug"], "quantity": [9.0]})
    with pytest.warns(DeletedItemsWarning, match=r"^reorder: left out 1 deleted item \(2 "):
        assert reorder(lines, items, look_back="7D")["item_id"].tolist() == [1]
    kept = reorder(lines, items, look_back="7D", include_deleted=True)
    assert kept["item_id"].tolist() == [1, 2]


_SOLD = _lines((1, "out", 1, -5.0))
_ITEMS = pd.DataFrame({"item_id": pd.array([1], "Int64"), "name": ["Mug"], "quantity": [9.0]})
_STOCK = pd.DataFrame(
    {
        "location_id": pd.array([1], "Int64"),
        "location_name": pd.array(["Shop"], "string"),
        "item_id": pd.array([1], "Int64"),
        "item_name": pd.array(["Mug"], "string"),
        "quantity": [3.0],
    }
)
_COSTS = _ITEMS.assign(cost=[2.0])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: reorder([1], _ITEMS),
            ArgumentTypeError,
            r"reorder: lines must be a DataFrame, not list\. Pass a lines frame",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS.drop(columns="quantity")),
            ConfigError,
            r"reorder: items lacks the column\(s\) \['quantity'\]\. Pass an items frame",
        ),
        (
            lambda: reorder(_SOLD, "items"),
            ArgumentTypeError,
            r"reorder: items must be a DataFrame, not str\. Pass an items frame",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, top=0),
            ConfigError,
            r"reorder: top=0 must be 1 or more \(None: every item that sold\)",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, top=2.5),
            ArgumentTypeError,
            "reorder: top must be a whole number, not float",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, top=True),
            ArgumentTypeError,
            "reorder: top must be a whole number, not bool",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, lead_days=-1),
            ConfigError,
            "reorder: lead_days=-1 must be 0 or more days",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, lead_days=float("nan")),
            ConfigError,
            "reorder: lead_days=nan must be 0 or more days",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, lead_days="14"),
            ArgumentTypeError,
            "reorder: lead_days must be a number, not str",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, as_of=42),
            ArgumentTypeError,
            "reorder: as_of must be a time",
        ),
        (
            lambda: reorder(_SOLD, _ITEMS, look_back=56),
            ConfigError,
            'reorder: look_back=56 has no unit: write look_back="56D"',
        ),
        (
            lambda: reorder(_no_context(_SOLD.iloc[:0]), _ITEMS),
            ConfigError,
            "reorder: the lines are empty and no as_of was given: pass as_of=",
        ),
        (
            lambda: reorder(
                _from_team(_SOLD.copy(), 7, "Shop"), _from_team(_ITEMS.copy(), 9, "York")
            ),
            ConfigError,
            r"reorder: its frames are of 2 teams \('Shop' \(team 7\)",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, _STOCK, by="shelf"),
            ConfigError,
            "dead_stock: by='shelf' must be one of 'location', 'item'",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, _STOCK, by=1),
            ArgumentTypeError,
            "dead_stock: by must be text, one of 'location', 'item'; not int",
        ),
        (
            lambda: dead_stock({}, _COSTS, _STOCK),
            ArgumentTypeError,
            r"dead_stock: lines must be a DataFrame, not dict\. Pass a lines frame",
        ),
        (
            lambda: dead_stock(_SOLD, _ITEMS, _STOCK),
            ConfigError,
            r"dead_stock: items lacks the column\(s\) \['cost'\]\. Pass an items frame",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, None),
            ArgumentTypeError,
            r"dead_stock: stock must be a DataFrame, not NoneType\. Pass client\.stock_df\(\)",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, _STOCK.drop(columns="location_name")),
            ConfigError,
            r"dead_stock: stock lacks the column\(s\) \['location_name'\]\. Pass client",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, _STOCK, as_of=[2026]),
            ArgumentTypeError,
            "dead_stock: as_of must be a time",
        ),
        (
            lambda: dead_stock(_SOLD, _COSTS, _STOCK, look_back=90),
            ConfigError,
            'dead_stock: look_back=90 has no unit: write look_back="90D"',
        ),
        (
            lambda: dead_stock(_no_context(_SOLD.iloc[:0]), _COSTS, _STOCK),
            ConfigError,
            "dead_stock: the lines are empty and no as_of was given: pass as_of=",
        ),
        (
            lambda: dead_stock(
                _from_team(_SOLD.copy(), 7, "Shop"), _COSTS, _from_team(_STOCK.copy(), 9, "York")
            ),
            ConfigError,
            r"dead_stock: its frames are of 2 teams \('Shop' \(team 7\)",
        ),
    ],
)
def test_reorder_and_dead_stock_refuse_what_they_cannot_answer_saying_why(call, error, message):
    with pytest.raises(error, match=f"^{message}"):
        call()


def test_a_look_back_before_the_lines_window_is_said_with_the_question_and_its_dates():
    lines = _SOLD.copy()
    lines.attrs["window"] = {
        "since": "2026-10-01T00:00:00.000Z",
        "until": "2026-10-31T00:00:00.000Z",
    }
    lines.attrs["as_of"] = lines.attrs["window"]["until"]
    said = (
        "reorder: the lines start 01 Oct 2026; the sales of 56 days before 31 Oct 2026 needs "
        'lines from 05 Sep 2026. Fetch them (client.lines_df(since="2026-09-05")), or ask '
        "about less; strict=True makes this an error."
    )
    with pytest.warns(WindowWarning) as caught:
        reorder(lines, _ITEMS)
    assert [str(w.message) for w in caught] == [said]
    dead = (
        "dead_stock: the lines start 01 Oct 2026; no sale in 90 days as of 31 Oct 2026 needs "
        "lines from 02 Aug 2026"
    )
    with pytest.warns(WindowWarning, match=f"^{dead}"):
        dead_stock(lines, _COSTS, _STOCK)


@pytest.mark.network
def test_reorders_window_reaching_before_the_lines_says_so(sb, make_client):
    lines, items = make_client(sb).lines_df(since="30D"), make_client(sb).items_df()
    start = pd.Timestamp(lines.attrs["window"]["since"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        with pytest.warns(WindowWarning, match=f"the lines start {start:%d %b %Y}"):
            reorder(lines, items)  # 8 weeks of a 30-day frame
        with pytest.raises(ConfigError, match="the lines start"):
            reorder(lines, items, strict=True)
    _quietly(reorder, lines, items, look_back="4W")  # inside the window: nothing said


# -- dead stock --------------------------------------------------------------------------------
@pytest.mark.network
def test_dead_stock_equals_plain_pandas_on_the_servers_json(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    lines, items, stock = client.lines_df(), client.items_df(), client.stock_df()
    sales = _raw_sales(view)
    as_of = max(pd.Timestamp(row["transaction_time"]) for row in view.transactions)
    recent = sales[(sales["time"] >= as_of - 90 * DAY) & (sales["time"] <= as_of)]
    sold = set(recent["item"])
    names = {loc["id"]: loc["name"] for loc in view.locations}
    held = pd.DataFrame(
        [
            {
                "location": q["location_id"],
                "item": it["id"],
                "qty": float(q["quantity"]),
                "value": float(q["quantity"]) * float(it["cost"]),
            }
            for it in view.items
            for q in it["quantities"]
            if q["quantity"] > 0
        ]
    )
    dead = held[~held["item"].isin(sold)]
    want = pd.DataFrame(
        {
            "items": dead.groupby("location")["item"].nunique(),
            "units": dead.groupby("location")["qty"].sum(),
            "value_at_cost": dead.groupby("location")["value"].sum(),
            "stock_value_at_cost": held.groupby("location")["value"].sum(),
        }
    ).fillna(0)
    want["share_of_value"] = want["value_at_cost"] / want["stock_value_at_cost"]
    want = want.sort_values("value_at_cost", ascending=False)
    got = _quietly(dead_stock, lines, items, stock)
    assert got["location_id"].tolist() == want.index.tolist()
    assert got["location_name"].tolist() == [names[i] for i in want.index]
    assert got["items"].tolist() == want["items"].tolist()
    for column in ("units", "value_at_cost", "stock_value_at_cost", "share_of_value"):
        assert got[column].tolist() == pytest.approx(want[column].tolist()), column
    assert 0 < got["share_of_value"].min() and got["share_of_value"].max() < 1
    _typed(
        got,
        location_id="Int64",
        location_name="string",
        items="int64",
        units="float64",
        value_at_cost="float64",
        share_of_value="float64",
    )
    assert got.attrs["team_name"] == view.team["name"]

    each = _quietly(dead_stock, lines, items, stock, by="item")
    pairs = set(zip(each["location_id"], each["item_id"], strict=True))
    assert pairs == set(zip(dead["location"], dead["item"], strict=True))
    mine = each.set_index(["location_id", "item_id"])
    theirs = dead.set_index(["location", "item"])
    assert mine.loc[list(theirs.index), "value_at_cost"].tolist() == pytest.approx(
        theirs["value"].tolist()
    )
    last = sales.groupby("item")["time"].max()
    for (_, item), when in mine["last_sale"].items():
        assert (pd.isna(when) and item not in last) or when == last[item]
        assert pd.isna(when) or when < as_of - 90 * DAY  # dead: no sale in the 90 days
    _typed(each, item_id="Int64", item_name="string", last_sale="datetime64[ms, UTC]")
    assert each["location_id"].drop_duplicates().tolist() == got["location_id"].tolist()


@pytest.mark.network
def test_dead_stocks_look_back_reaching_before_the_lines_says_so(sb, make_client):
    client = make_client(sb)
    lines, items, stock = client.lines_df(since="30D"), client.items_df(), client.stock_df()
    with pytest.warns(WindowWarning, match="no sale in 90 days"):
        dead_stock(lines, items, stock)
    with pytest.raises(ConfigError, match="needs lines from"):
        dead_stock(lines, items, stock, strict=True)
    _quietly(dead_stock, lines, items, stock, look_back="20D")  # inside the window: nothing said


def test_dead_stock_worked_by_hand_per_location_and_per_holding():
    """As of 31 Oct with a 90-day look-back. Sold in it: item 15 (10 days back) and item 14
    (on the look-back's first moment). Dead: 10 (last sold 91 days back), 11 (only a line
    with no type), 12 (sold after as_of only), 13 (no cost) and 16 (never sold)."""
    lines = _lines(
        (10, "out", 15, -1.0),
        (90, "out", 14, -1.0),
        (91, "out", 10, -1.0),
        (5, None, 11, -1.0),
        (-1, "out", 12, -1.0),
    )
    items = pd.DataFrame(
        {
            "item_id": pd.array(
                [10, 11, 12, 13, 14, 15, 16, 10], dtype="Int64"
            ),  # 10 twice: the first
            "cost": [1.0, 2.0, 0.25, None, 5.0, 3.0, 1.0, 9.0],
        }
    )
    rows = [  # location, its name, item, quantity
        (1, "Shop", 10, 5.0),
        (1, "Shop", 11, 1.0),
        (1, "Shop", 16, 2.0),
        (1, "Shop", 13, 4.0),
        (1, "Shop", 15, 10.0),
        (1, "Shop", 16, 0.0),  # nothing held
        (1, "Shop", 12, None),  # quantity unknown: not held
        (None, None, 10, 3.0),  # a holding with no location
        (3, "Back", 12, 2.0),  # a stock value under one
        (2, "Store", 14, 2.0),  # holds only what sold
        (5, "Annex", 15, 1.0),
    ]
    stock = pd.DataFrame(
        {
            "location_id": pd.array([r[0] for r in rows], dtype="Int64"),
            "location_name": pd.array([r[1] for r in rows], dtype="string"),
            "item_id": pd.array([r[2] for r in rows], dtype="Int64"),
            "item_name": pd.array([f"item {r[2]}" for r in rows], dtype="string"),
            "quantity": pd.array([r[3] for r in rows], dtype="Float64"),
        }
    )
    got = dead_stock(lines, items, stock, as_of=T)
    assert got.index.equals(pd.RangeIndex(5))
    # largest dead value first; Store and Annex both hold none dead: by id
    assert got["location_id"].tolist()[:1] == [1] and pd.isna(got["location_id"].iloc[1])
    assert got["location_id"].tolist()[2:] == [3, 2, 5]
    assert got["location_name"].tolist()[2:] == ["Back", "Store", "Annex"]
    assert got["items"].tolist() == [4, 1, 1, 0, 0]
    assert got["units"].tolist() == [12.0, 3.0, 2.0, 0.0, 0.0]
    assert got["value_at_cost"].tolist() == [9.0, 3.0, 0.5, 0.0, 0.0]
    assert got["stock_value_at_cost"].tolist() == [39.0, 3.0, 0.5, 10.0, 3.0]
    assert got["share_of_value"].tolist() == [9 / 39, 1.0, 1.0, 0.0, 0.0]
    _typed(
        got,
        location_id="Int64",
        location_name="string",
        items="int64",
        units="float64",
        value_at_cost="float64",
        stock_value_at_cost="float64",
        share_of_value="float64",
    )

    each = dead_stock(lines, items, stock, by="item", as_of=T)
    assert each.index.equals(pd.RangeIndex(6))
    # by location as above (the one with no location second), then largest value first, then id
    assert each["location_id"].tolist()[:4] == [1, 1, 1, 1] and pd.isna(each["location_id"][4])
    assert each["item_id"].tolist() == [10, 11, 16, 13, 10, 12]
    assert each["value_at_cost"].tolist()[:3] == [5.0, 2.0, 2.0]
    assert pd.isna(each["value_at_cost"][3]) and pd.isna(each["cost"][3])
    sold_10 = each["item_id"] == 10  # item 10, at the shop and with no location
    assert (each.loc[sold_10, "last_sale"] == T - 91 * DAY).all()
    assert each.loc[~sold_10, "last_sale"].isna().all()
    assert each["days_since_last_sale"].tolist()[::4] == [91.0, 91.0]
    assert each.loc[~sold_10, "days_since_last_sale"].isna().all()
    _typed(
        each,
        location_id="Int64",
        location_name="string",
        item_id="Int64",
        item_name="string",
        quantity="float64",
        cost="float64",
        value_at_cost="float64",
        last_sale="datetime64[ms, UTC]",
        days_since_last_sale="float64",
    )
    # as_of defaults to the newest line, the day after: item 12 sold then, and item 14's sale
    # is now 91 days back
    later = dead_stock(lines, items, stock, by="item")
    assert set(later["item_id"]) == {10, 11, 13, 14, 16}


# -- audit -------------------------------------------------------------------------------------
@pytest.mark.network
def test_audit_equals_plain_pandas_on_the_servers_json(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    tx = client.transactions_df()
    raw = pd.DataFrame(
        {
            "id": row["id"],
            "time": pd.Timestamp(row["transaction_time"]),
            "recorded": pd.Timestamp(row["created_at"]),
            "member": row["created_by"]["id"],
            "name": row["created_by"]["name"],
            "revision": row["revision"],
        }
        for row in view.transactions
    )
    raw["lag"] = (raw["recorded"] - raw["time"]) / DAY
    since, until = pd.Timestamp("2026-01-01", tz="UTC"), pd.Timestamp("2026-07-01", tz="UTC")
    window = raw[(raw["recorded"] >= since) & (raw["recorded"] < until)]
    window = window.assign(edited=window["revision"] > 0, backdated=window["lag"] > 1)
    flagged = window[window["edited"] | window["backdated"]]
    got = _quietly(audit, tx, recorded_since="2026-01", recorded_until="2026-06")
    assert set(got["transaction_id"]) == set(flagged["id"])
    assert got["edited"].any() and got["backdated"].any()
    mine = got.set_index("transaction_id").loc[flagged["id"]]
    assert mine["created_by_id"].tolist() == flagged["member"].tolist()
    assert mine["edited"].tolist() == flagged["edited"].tolist()
    assert mine["backdated"].tolist() == flagged["backdated"].tolist()
    assert mine["lag_days"].tolist() == pytest.approx(flagged["lag"].tolist())
    _typed(
        got,
        transaction_id="Int64",
        transaction_time="datetime64[ms, UTC]",
        created_at="datetime64[ms, UTC]",
        created_by_id="Int64",
        created_by_name="string",
        revision="Int64",
        edited="boolean",
        backdated="boolean",
        lag_days="float64",
    )
    assert got.attrs["team_name"] == view.team["name"]

    per = _quietly(audit, tx, recorded_since="2026-01", recorded_until="2026-06", by="member")
    g = window.groupby("member")
    want = pd.DataFrame(
        {
            "recorded": g.size(),
            "edited": g["edited"].sum(),
            "backdated": g["backdated"].sum(),
            "flagged": (window["edited"] | window["backdated"]).groupby(window["member"]).sum(),
            "max_lag_days": window[window["backdated"]].groupby("member")["lag"].max(),
        }
    )
    mine = per.set_index("created_by_id").loc[want.index]
    for column in ("recorded", "edited", "backdated", "flagged"):
        assert mine[column].tolist() == want[column].tolist(), column
    assert mine["max_lag_days"].tolist() == pytest.approx(
        want["max_lag_days"].tolist(), nan_ok=True
    )
    assert per["flagged"].is_monotonic_decreasing
    # a longer "late" flags fewer rows as backdated; the edited ones stay
    later = _quietly(audit, tx, recorded_since="2026-01", recorded_until="2026-06", late="7D")
    assert set(later["transaction_id"]) == set(
        window.loc[window["edited"] | (window["lag"] > 7), "id"]
    )


@pytest.mark.network
def test_audit_says_that_since_cuts_on_transaction_time(sb, make_client):
    """A row recorded in the window but dated before it is not in a frame fetched from the
    window's start; audit says so, and a frame from 30 days earlier finds it."""
    client = make_client(sb)
    tx = client.transactions_df()
    lag = tx["created_at"] - tx["transaction_time"]
    late = tx[(lag > pd.Timedelta(days=3)).to_numpy(dtype=bool)].iloc[0]
    since = (late["created_at"] - DAY).strftime("%Y-%m-%d")  # recorded after it, dated before
    short = client.transactions_df(since=since)
    with pytest.warns(WindowWarning, match="since= cuts on transaction time"):
        missed = audit(short, recorded_since=since)
    assert late["transaction_id"] not in set(missed["transaction_id"])
    with pytest.raises(ConfigError, match=r"client.transactions_df\(since="):
        audit(short, recorded_since=since, strict=True)
    earlier = (pd.Timestamp(since, tz="UTC") - pd.Timedelta(days=30)).strftime("%Y-%m-%d")
    longer = _quietly(audit, client.transactions_df(since=earlier), recorded_since=since)
    assert late["transaction_id"] in set(longer["transaction_id"])
    assert set(longer["transaction_id"]) == set(
        _quietly(audit, tx, recorded_since=since)["transaction_id"]
    )


def test_audit_refuses_what_it_cannot_read():
    with pytest.raises(ConfigError, match="transactions_df"):
        audit(pd.DataFrame({"id": [1]}))
    with pytest.raises(ConfigError, match="by="):
        audit(pd.DataFrame({"id": [1]}), by="item")
