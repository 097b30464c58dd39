"""Issue 25, item 3: the next questions in one call -- ``analysis.reorder``,
``analysis.dead_stock`` and ``analysis.audit`` -- each equal to plain pandas on the stand-in's
raw JSON (``sb.data("shop")``), typed, and saying when its question reaches outside the frame's
window."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from invtools import ConfigError, DeletedItemsWarning, WindowWarning
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
    units = units.sort_values(["qty", "item"], ascending=[False, True]).head(10)
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
            "id": pd.array([1, 2, 3], dtype="Int64"),
            "name": pd.array(["A", "B", "C"], dtype="string"),
            "quantity": [0.0, -2.0, 100.0],
        }
    )
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
    assert late["id"] not in set(missed["transaction_id"])
    with pytest.raises(ConfigError, match=r"client.transactions_df\(since="):
        audit(short, recorded_since=since, strict=True)
    earlier = (pd.Timestamp(since, tz="UTC") - pd.Timedelta(days=30)).strftime("%Y-%m-%d")
    longer = _quietly(audit, client.transactions_df(since=earlier), recorded_since=since)
    assert late["id"] in set(longer["transaction_id"])
    assert set(longer["transaction_id"]) == set(
        _quietly(audit, tx, recorded_since=since)["transaction_id"]
    )


def test_audit_refuses_what_it_cannot_read():
    with pytest.raises(ConfigError, match="transactions_df"):
        audit(pd.DataFrame({"id": [1]}))
    with pytest.raises(ConfigError, match="by="):
        audit(pd.DataFrame({"id": [1]}), by="item")
