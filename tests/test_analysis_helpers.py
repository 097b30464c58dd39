"""The analyst's helpers of issue 35: activity profiles (the pooling of years said), the top N
of a group with its ties kept, the from -> to table of moves and its figure, and
``activity_table(top=N, other=False)``; each equal to plain pandas on the stand-in's JSON."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from truth import raw_lines

from invtools import analysis, viz
from invtools.errors import ArgumentTypeError, ConfigError


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _raw_transactions(view) -> pd.DataFrame:
    """The server's transaction list, with plain pandas."""
    return pd.DataFrame(
        {
            "id": t["id"],
            "time": pd.Timestamp(t["transaction_time"]),
            "type": t["type"],
            "qty": abs(float(t["total_quantity"])),
            "partner": (t["partner"] or {}).get("name"),
        }
        for t in view.transactions
    )


# -- activity profiles ---------------------------------------------------------------------------
@pytest.mark.network
def test_month_profile_is_the_mean_per_year_present_or_the_sum_as_said(sb, make_client):
    tx = make_client(sb).transactions_df()
    raw = _raw_transactions(sb.data("shop"))
    as_of = pd.Timestamp(tx.attrs["as_of"])  # the moment the list was read, the server's clock
    months = pd.period_range(raw["time"].min().tz_localize(None), as_of.tz_localize(None), freq="M")
    years = pd.Series(months.month).value_counts()
    assert years.max() == 2 and years.min() == 1  # an 18-month history: six months twice
    sums = raw.groupby([raw["time"].dt.month, "type"]).agg(n=("id", "nunique"), u=("qty", "sum"))
    for how in ("mean", "sum"):
        got = analysis.activity_profile(tx, by="month", how=how)
        assert sorted(set(got["month"])) == list(range(1, 13))
        assert got.attrs["pooling"].startswith("mean per year" if how == "mean" else "sum over")
        mine = got.set_index(["month", "type"])
        for (month, kind), row in sums.iterrows():
            div = years[month] if how == "mean" else 1
            assert mine.loc[(month, kind), "years"] == years[month]
            assert mine.loc[(month, kind), ["transactions", "units"]].tolist() == pytest.approx(
                [row["n"] / div, row["u"] / div]
            ), (how, month, kind)
        quiet = mine.index.difference(sums.index)  # a present month without a type's activity
        assert (mine.loc[quiet, ["transactions", "units"]] == 0).all().all()
        assert got.attrs["team_name"] == sb.data("shop").team["name"]
    may = got[got["month_name"] == "May"]
    assert (may["years"] == 2).all()


@pytest.mark.network
def test_weekday_profile_of_lines_counts_transactions_units_and_days(sb, make_client):
    lines = make_client(sb).lines_df(since="2026-03-01")
    raw = raw_lines(sb.data("shop"))
    raw = raw[raw["time"] >= pd.Timestamp("2026-03-01", tz="UTC")]
    until = pd.Timestamp(lines.attrs["window"]["until"])
    days = pd.Series(pd.period_range("2026-03-01", until.tz_localize(None), freq="D").day_of_week)
    got = analysis.activity_profile(lines, by="weekday", how="mean").set_index(["weekday", "type"])
    want = raw.groupby([raw["time"].dt.day_of_week, "type"]).agg(
        n=("tx", "nunique"), u=("qty", lambda q: q.abs().sum())
    )
    for (day, kind), row in want.iterrows():
        per = days.value_counts()[day]
        assert got.loc[(day, kind), "days"] == per
        assert got.loc[(day, kind), ["transactions", "units"]].tolist() == pytest.approx(
            [row["n"] / per, row["u"] / per]
        )
    assert got.attrs["profile"]["first"].startswith("2026-03-01")


def test_the_months_present_come_from_the_window_not_only_the_rows():
    tx = pd.DataFrame(
        {
            "transaction_time": pd.to_datetime(
                ["2025-01-10", "2026-01-12", "2026-06-01"], utc=True
            ),
            "type": ["out", "out", "in"],
            "total_quantity": [4.0, 2.0, 10.0],
        }
    )
    tx.attrs.update(source="api", window={"since": "2025-01-01", "until": "2026-07-31T12:00Z"})
    got = analysis.activity_profile(tx, how="mean")
    jan = got[(got["month"] == 1) & (got["type"] == "out")].iloc[0]
    assert (jan["years"], jan["units"], jan["transactions"]) == (2, 3.0, 1.0)
    sep = got[got["month"] == 9]  # no row, but in the window (once): listed, with zeros
    assert sep["years"].tolist() == [1, 1] and (sep["units"] == 0).all()
    assert set(got.loc[got["month"] == 7, "years"]) == {2}  # July 2025 and (part of) July 2026
    assert got["month_name"].iloc[0] == "Jan" and got["type"].tolist()[:2] == ["in", "out"]
    summed = analysis.activity_profile(tx, how="sum")
    assert summed.loc[(summed["month"] == 1) & (summed["type"] == "out"), "units"].item() == 6.0


def test_profiles_refuse_bad_input_naming_the_argument():
    tx = pd.DataFrame({"transaction_time": pd.to_datetime([], utc=True), "type": []})
    with pytest.raises(ConfigError, match="activity_profile: how='avg'"):
        analysis.activity_profile(tx.assign(total_quantity=[]), how="avg")
    with pytest.raises(ConfigError, match="activity_profile: by='hour'"):
        analysis.activity_profile(tx.assign(total_quantity=[]), by="hour")
    with pytest.raises(ArgumentTypeError, match="activity_profile: transactions must be"):
        analysis.activity_profile([1, 2])
    with pytest.raises(ConfigError, match="no units"):
        analysis.activity_profile(tx)
    with pytest.raises(ArgumentTypeError, match="activity_profile: tz"):
        analysis.activity_profile(tx.assign(total_quantity=[]), tz=5)


# -- top N with ties -----------------------------------------------------------------------------
def test_top_keeps_every_row_that_ties_with_the_nth_and_says_so():
    sales = pd.DataFrame(
        {
            "partner_name": ["A", "B", "C", "D", "E", "F", "G", "A"],
            "quantity": [9.0, 7.0, 5.0, 4.0, 3.0, 3.0, 3.0, 1.0],
        }
    )
    got = top(sales, by="partner_name", value="quantity", n=5)
    assert got["partner_name"].tolist() == ["A", "B", "C", "D", "E", "F", "G"]
    assert got["rank"].tolist() == [1, 2, 3, 4, 5, 5, 5]
    assert got["tied"].tolist() == [False] * 4 + [True] * 3
    assert got.attrs["top"] | {"said": None} == {
        "n": 5,
        "rows": 7,
        "beyond_n": 2,
        "tied_at_n": 3,
        "said": None,
    }
    assert "3 tie at the 5th place" in got.attrs["top"]["said"]
    alone = top(sales, by="partner_name", value="quantity", n=3)
    assert len(alone) == 3 and alone.attrs["top"]["tied_at_n"] == 0
    counted = top(sales, by="partner_name", n=1)  # value=None: rows
    assert counted[["partner_name", "rows"]].values.tolist() == [["A", 2]]


@pytest.mark.network
def test_top_customers_and_what_they_take_equal_plain_pandas(sb, make_client):
    lines = make_client(sb).lines_df()
    out = lines[lines["type"] == "out"].dropna(subset=["partner_name"])
    raw = raw_lines(sb.data("shop"))
    raw = raw[(raw["type"] == "out") & raw["partner"].notna()]
    for value, agg, column, how in [
        ("quantity", "sum", "qty", "sum"),
        ("transaction_id", "nunique", "tx", "nunique"),
    ]:
        got = top(out, by="partner_name", value=value, n=5, agg=agg)
        per = raw.groupby("partner")[column].agg(how)
        rank = per.rank(method="min", ascending=False)
        assert set(got["partner_name"]) == set(rank[rank <= 5].index), value
        assert got.set_index("partner_name")[value].to_dict() == per[rank <= 5].to_dict()
        assert (
            got.set_index("partner_name")["rank"].to_dict() == rank[rank <= 5].astype(int).to_dict()
        )
        nth = rank.sort_values().iloc[4]
        tied = int((rank == nth).sum())
        assert got.attrs["top"]["tied_at_n"] == (tied if tied > 1 else 0), value
        assert got.attrs["team_name"] == sb.data("shop").team["name"]
    best = top(out, by="partner_name", value="quantity", n=3)
    taken = top(
        out[out["partner_name"].isin(best["partner_name"])],
        by="item_name",
        value="quantity",
        n=2,
        within="partner_name",
    )
    for partner, rows in taken.groupby("partner_name"):
        per = raw[raw["partner"] == partner].groupby("item_name")["qty"].sum()
        rank = per.rank(method="min", ascending=False)
        assert set(rows["item_name"]) == set(rank[rank <= 2].index), partner
    first = taken["partner_name"].iloc[0]  # the customer who took the most comes first
    assert first == best["partner_name"].iloc[0]


def test_top_refuses_bad_input_naming_the_argument():
    df = pd.DataFrame({"k": ["a"], "v": [1.0], "s": ["x"]})
    with pytest.raises(ConfigError, match="top: by='nope'"):
        top(df, by="nope", value="v")
    with pytest.raises(ArgumentTypeError, match="top: n must be a whole number"):
        top(df, by="k", value="v", n=2.5)
    with pytest.raises(ConfigError, match="top: n=0"):
        top(df, by="k", value="v", n=0)
    with pytest.raises(ConfigError, match="top: value='s' is not a column of numbers"):
        top(df, by="k", value="s")
    with pytest.raises(ConfigError, match="top: agg='median'"):
        top(df, by="k", value="v", agg="median")
    with pytest.raises(ArgumentTypeError, match="top: df must be a DataFrame"):
        top({"k": 1}, by="k")


def top(*args, **kwargs):
    return analysis.top(*args, **kwargs)


# -- transfer flows ------------------------------------------------------------------------------
@pytest.mark.network
def test_transfer_flows_equal_plain_pandas_and_are_drawn(sb, make_client):
    lines = make_client(sb).lines_df()
    flows = analysis.transfer_flows(lines)
    raw = raw_lines(sb.data("shop"))
    moves = raw[raw["type"] == "move"]
    want = moves.groupby(["from", "to"]).agg(
        units=("qty", "sum"), transactions=("tx", "nunique"), items=("item", "nunique")
    )
    mine = flows.set_index(["from_location_id", "to_location_id"])
    assert sorted(mine.index) == sorted(want.index)
    assert mine.loc[want.index, ["units", "transactions", "items"]].values.tolist() == (
        want.values.tolist()
    )
    assert flows["units"].is_monotonic_decreasing
    names = {loc["id"]: loc["name"] for loc in sb.data("shop").locations}
    assert flows["from_location_name"].tolist() == [names[i] for i in flows["from_location_id"]]
    assert flows.attrs["team_name"] == sb.data("shop").team["name"]

    ax = viz.plot_transfers(flows)
    bars = [p.get_width() for p in ax.patches]
    assert bars == flows["units"].tolist()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == f"{flows['from_location_name'][0]} → {flows['to_location_name'][0]}"
    said = [t.get_text() for t in ax.texts]
    assert said[0].startswith(f"{flows['units'][0]:,.0f} units · {flows['transactions'][0]} moves")
    assert "between locations" in ax.get_title() and "2025" in ax.get_title()
    _, mine_ax = plt.subplots()
    assert viz.plot_transfers(flows, "transactions", top=2, ax=mine_ax) is mine_ax
    assert len(mine_ax.patches) == 2 and "the 2 largest of 3 pairs" in mine_ax.get_title()

    recent = analysis.transfer_flows(lines, since="2026-06-01")
    late = moves[moves["time"] >= pd.Timestamp("2026-06-01", tz="UTC")]
    assert recent["units"].sum() == late["qty"].sum()


def test_transfer_flows_and_their_figure_refuse_bad_input():
    with pytest.raises(ArgumentTypeError, match="transfer_flows: lines must be a DataFrame"):
        analysis.transfer_flows("lines")
    with pytest.raises(ConfigError, match="transfer_flows: lines lacks"):
        analysis.transfer_flows(pd.DataFrame({"type": []}))
    with pytest.raises(ArgumentTypeError, match="plot_transfers: flows must be a DataFrame"):
        viz.plot_transfers([1])
    with pytest.raises(ConfigError, match="plot_transfers: flows needs the column"):
        viz.plot_transfers(pd.DataFrame({"units": [1.0]}))
    flows = pd.DataFrame(
        {
            "from_location_name": ["A"],
            "to_location_name": ["B"],
            "units": [1.0],
            "transactions": [1],
            "items": [1],
        }
    )
    with pytest.raises(ConfigError, match="plot_transfers: value='weight'"):
        viz.plot_transfers(flows, "weight")
    empty = viz.plot_transfers(flows.iloc[:0])
    assert "no moves" in empty.texts[0].get_text()


# -- activity_table: the top N alone -------------------------------------------------------------
@pytest.mark.network
def test_activity_table_top_n_without_other_is_the_top_n_alone(sb, make_client):
    tx = make_client(sb).transactions_df()
    lumped = viz.activity_table(tx, "M", by="partner", metric="quantity", top=5)
    alone = viz.activity_table(tx, "M", by="partner", metric="quantity", top=5, other=False)
    raw = _raw_transactions(sb.data("shop"))
    per = raw.fillna({"partner": "(none)"}).groupby("partner")["qty"].sum()
    largest = sorted(per.index, key=lambda p: (-per[p], p))[:5]
    assert alone.columns.tolist() == largest and "other" in lumped.columns
    pd.testing.assert_frame_equal(alone, lumped[largest], check_column_type=False)
    assert alone.sum().to_dict() == pytest.approx(per[largest].to_dict())
    with pytest.raises(ConfigError, match="other='no' must be True or False"):
        viz.activity_table(tx, "M", by="partner", other="no")
