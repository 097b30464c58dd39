"""Opening stock counts recognised on any slice (issue 44, item 3).

The stand-in's shop opens its record with four "Opening stocktake" adjustments. Whether a
transaction is one is decided once, where its frame is built (the ``opening_count`` column of
the transactions and lines frames, of the client's and the mirror's), so a slice keeps it: an
adjust-only slice of the lines (no memo, no in/out/move to date against) leaves them out with
``exclude_opening_counts=True`` (the activity views and :func:`invtools.analysis.crosstab`),
and :func:`invtools.analysis.shrinkage` leaves them out by default. Real HTTP against the
stand-in; ``sb.data()`` is the truth.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from invtools import TransactionMirror, frames
from invtools.analysis import crosstab, shrinkage
from invtools.mirror import batches
from invtools.viz import activity_table, opening_counts, plot_activity


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _openings(sb) -> list[int]:
    """The ids of the shop's opening stocktake, from the server's truth."""
    ids = [
        t["id"]
        for t in sb.data().transactions
        if t["type"] == "adjust" and t["memo"] == "Opening stocktake"
    ]
    assert len(ids) == 4
    return sorted(ids)


@pytest.fixture
def shop(sb):
    """The stand-in, one opening count's memo in another language: only its time (before the
    first in, out or move) says it opens the record."""
    openings = _openings(sb)
    sb.edit_transaction(openings[0], memo="Inventur")
    return sb, openings


def _adjust_lines(sb, *, leave_out: list[int]) -> pd.DataFrame:
    """Every adjust line of the server's truth (transaction, member, item, quantity), without
    the transactions ``leave_out``."""
    rows = []
    for t in sb.data().transactions:
        if t["type"] != "adjust" or t["id"] in leave_out:
            continue
        for line in sb.data().transaction(t["id"])["items"]:
            rows.append((t["id"], t["created_by"]["name"], line["id"], float(line["quantity"])))
    return pd.DataFrame(rows, columns=["tx", "member", "item_id", "quantity"])


def test_an_adjust_only_slice_of_the_lines_leaves_the_opening_counts_out(shop, make_client):
    sb, openings = shop
    lines = make_client(sb).lines_df()
    adjusts = lines[lines["type"] == "adjust"]  # no memo, no in/out/move to date against
    assert opening_counts(adjusts)[lambda s: s].index.isin(adjusts.index).all()
    flagged = sorted(set(adjusts.loc[opening_counts(adjusts), "transaction_id"].tolist()))
    assert flagged == openings

    table = activity_table(
        adjusts, "M", by="member", metric="quantity", top=None, exclude_opening_counts=True
    )
    truth = _adjust_lines(sb, leave_out=openings)
    per_member = truth.groupby("member")["quantity"].apply(lambda q: q.abs().sum())
    assert table.sum().sort_index().to_dict() == pytest.approx(per_member.sort_index().to_dict())
    assert table.attrs["opening_counts_excluded"] == openings  # said: which were left out
    kept = activity_table(adjusts, "M", by="member", metric="quantity", top=None)
    assert "opening_counts_excluded" not in kept.attrs
    assert kept.to_numpy().sum() > table.to_numpy().sum()

    ax = plot_activity(adjusts, "M", by="member", metric="quantity", exclude_opening_counts=True)
    assert ax.get_title().endswith(", without opening stock counts")


def test_crosstab_leaves_the_opening_counts_out_of_any_slice_and_says_so(shop, make_client):
    sb, openings = shop
    client = make_client(sb)
    tx, lines = client.transactions_df(), client.lines_df()
    # per member and month, each type's transactions: the server's rows, openings left out
    raw = pd.DataFrame(
        {
            "member": t["created_by"]["name"],
            "month": pd.Timestamp(t["transaction_time"]).strftime("%Y-%m"),
            "type": t["type"],
        }
        for t in sb.data().transactions
        if t["id"] not in openings
    )
    want = pd.crosstab([raw["member"], raw["month"]], raw["type"])
    got = crosstab(tx, rows=["member", "month"], columns="type", exclude_opening_counts=True)
    assert got.attrs["opening_counts_excluded"] == openings  # said: which were left out
    pd.testing.assert_frame_equal(
        got, want.reindex(index=got.index, columns=got.columns).fillna(0), check_names=False
    )
    assert got.to_numpy().sum() == len(tx) - len(openings)
    kept = crosstab(tx, rows=["member", "month"], columns="type")
    assert "opening_counts_excluded" not in kept.attrs
    assert kept["adjust"].sum() == got["adjust"].sum() + len(openings)

    # an adjust-only slice of the lines (no memo, no in/out/move): the units per member
    adjusts = lines[lines["type"] == "adjust"]
    units = crosstab(
        adjusts, rows="member", columns="type", metric="quantity", exclude_opening_counts=True
    )
    assert units.attrs["opening_counts_excluded"] == openings
    truth = _adjust_lines(sb, leave_out=openings)
    per_member = truth.groupby("member")["quantity"].apply(lambda q: q.abs().sum())
    assert units["adjust"].sort_index().to_dict() == pytest.approx(per_member.to_dict())
    # a window without them: nothing left out, and said so
    later = crosstab(
        tx, rows="member", columns="type", since="2026-06-01", exclude_opening_counts=True
    )
    assert later.attrs["opening_counts_excluded"] == []


def test_shrinkage_leaves_the_opening_counts_out_by_default_and_says_so(shop, make_client):
    sb, openings = shop
    client = make_client(sb)
    lines, items = client.lines_df(), client.items_df()
    got = shrinkage(lines, items, include_deleted=True).set_index("item_id")
    assert got.attrs["opening_counts_excluded"] == openings

    truth = _adjust_lines(sb, leave_out=openings)
    cost = {i["id"]: float(i["cost"]) for i in sb.data().items if i.get("cost") is not None}
    truth["value"] = truth["quantity"] * truth["item_id"].map(cost)
    per_item = truth.groupby("item_id").agg(
        adjustments=("tx", "nunique"),
        net_quantity=("quantity", "sum"),
        value_at_cost=("value", lambda v: v.sum(min_count=1)),
    )
    assert sorted(got.index.tolist()) == sorted(per_item.index.tolist())
    for column in per_item.columns:
        want = per_item[column].reindex(got.index).tolist()
        assert got[column].astype("float64").tolist() == pytest.approx(want, nan_ok=True)

    with_them = shrinkage(lines, items, include_deleted=True, exclude_opening_counts=False)
    assert with_them.attrs["opening_counts_excluded"] == []
    everything = _adjust_lines(sb, leave_out=[])
    assert with_them["net_quantity"].sum() == pytest.approx(everything["quantity"].sum())
    assert everything["quantity"].sum() - truth["quantity"].sum() > 1000  # the stocktake


def test_the_flag_is_decided_on_the_whole_frame_by_every_builder(shop, make_client, tmp_path):
    sb, openings = shop
    client = make_client(sb)

    def flagged(df: pd.DataFrame, key: str = "transaction_id") -> list[int]:
        assert df["opening_count"].dtype == "boolean" and df["opening_count"].notna().all()
        return sorted(set(df.loc[df["opening_count"].to_numpy(bool), key].tolist()))

    rows = sb.data().transactions
    details = [sb.data().transaction(t["id"]) for t in rows]
    assert flagged(client.transactions_df()) == openings  # a whole list: pyarrow
    assert flagged(client.transactions_df(chains=3)) == openings
    assert flagged(frames.transactions_df(rows)) == openings  # a list of dicts
    assert flagged(frames.lines_df(details)) == openings  # details: the memo and the times
    assert flagged(client.transactions_df(with_lines=True)) == openings
    # a window of the list may start mid-history: the memo alone says (not the "Inventur")
    since = min(t["transaction_time"] for t in rows if t["id"] in openings)
    assert flagged(client.lines_df(since=since)) == openings[1:]

    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync()
    assert flagged(mirror.transactions_df()) == openings
    assert flagged(mirror.transactions_df(type="adjust")) == openings
    assert flagged(mirror.lines_df(type="adjust")) == openings
    # the warehouse's batches: decided on the whole mirror, not on each batch
    parts = list(batches(mirror, size=7))
    assert flagged(pd.concat([t for t, _ in parts])) == openings
    assert flagged(pd.concat([lines for _, lines in parts])) == openings


def test_a_frame_built_by_hand_is_worked_out_from_its_columns():
    tx = pd.DataFrame(
        {
            "transaction_time": pd.to_datetime(
                ["2026-01-01 06:00", "2026-01-01 09:00", "2026-01-02 10:00"], utc=True
            ),
            "type": ["adjust", "out", "adjust"],
            "memo": [None, None, "cycle count"],
        }
    )
    assert opening_counts(tx).tolist() == [True, False, False]
    # a frame that says which are: its column is read as it is, on any slice
    said = tx.assign(opening_count=pd.array([False, False, True], dtype="boolean"))
    assert opening_counts(said).tolist() == [False, False, True]
    assert opening_counts(said[said["type"] == "adjust"]).tolist() == [False, True]


def test_a_window_that_starts_with_an_ordinary_count_counts_it(sb, make_client, tmp_path):
    # The first row of a window is a cycle count mid-history, before any in, out or move of
    # the window: not an opening count, so shrinkage (which leaves those out) counts it.
    rows = sb.data().transactions  # newest first
    oldest = rows[::-1]
    k = next(
        i
        for i, t in enumerate(oldest)
        if i > 10
        and t["type"] == "adjust"
        and oldest[i - 1]["transaction_time"] < t["transaction_time"]
    )
    count = oldest[k]
    client = make_client(sb)
    lines = client.lines_df(since=count["transaction_time"])
    assert lines["transaction_time"].min() == pd.Timestamp(count["transaction_time"])
    assert not lines["opening_count"].any()
    items = client.items_df()
    loss = shrinkage(lines, items, include_deleted=True, by="member")
    assert loss.attrs["opening_counts_excluded"] == []
    assert (
        loss["adjustments"].sum()
        == lines.loc[lines["type"] == "adjust", "transaction_id"].nunique()
    )
    # the mirror decides on its whole file, then cuts: the same
    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync()
    assert not mirror.lines_df(since=count["transaction_time"])["opening_count"].any()
