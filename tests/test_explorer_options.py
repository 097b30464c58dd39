"""The activity explorer's issue-19 controls, driven without a browser: set ``.value``, then
assert on the table, the data plotted and the summary's words.

- Units: absolute or signed quantities, and the total line says which;
- Split by supplier / customer (suppliers and customers never share a legend);
- "Leave out opening stock counts", and the line that says how much they are;
- the Types checkboxes.
"""

from __future__ import annotations

import pandas as pd
import pytest

ipywidgets = pytest.importorskip("ipywidgets")

from test_widgets import assert_drawn, make_transactions  # noqa: E402
from traitlets import TraitError  # noqa: E402

from invtools.frames import lines_df, transactions_df  # noqa: E402
from invtools.notebook import activity_explorer  # noqa: E402
from invtools.viz import activity_table, opening_counts  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def demo():
    """The demo shop's whole record (4,000 transactions, opening with a stocktake) and the
    lines of its first 120 transactions, straight from the stand-in's data."""
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0) as sb:
        view = sb.data("shop")
        tx = transactions_df(view.transactions)
        oldest = sorted(view.transactions, key=lambda r: r["transaction_time"])[:120]
        lines = lines_df([view.transaction(row["id"]) for row in oldest])
    return tx, lines


def test_units_are_said_and_can_be_signed():
    tx = make_transactions()
    ex = activity_explorer(tx)
    assert ex.units.disabled and "absolute" not in ex.summary_html.value  # counts: no sign
    ex.metric.value = "quantity"
    assert not ex.units.disabled and ex.units.value == "absolute"
    q = tx["total_quantity"]
    assert f"<b>Total:</b> {q.abs().sum():,.0f} units (absolute" in ex.summary_html.value
    assert ex.ax.get_ylabel() == "quantity (units, absolute) per week"

    ex.units.value = "signed"
    expected = activity_table(
        tx, "W", metric="quantity", signed=True, since=ex.since.value, until=ex.until.value
    )
    assert_drawn(ex, expected)
    assert ex.table.to_numpy().sum() == pytest.approx(q.sum())
    assert ex.table["adjust"].sum() < 0  # the test frame's adjustments are all negative
    assert f"<b>Total:</b> {q.sum():,.0f} units (signed" in ex.summary_html.value
    assert ex.ax.get_ylabel() == "quantity (units, signed) per week"
    assert ex.summary["share"].sum() == pytest.approx(1.0)  # shares of the units moved


def test_the_demo_shop_says_both_totals_and_how_much_the_stocktake_is(demo):
    tx, _lines = demo
    ex = activity_explorer(tx)
    ex.metric.value = "quantity"
    q = tx["total_quantity"]
    openings = tx[opening_counts(tx)]
    assert openings["memo"].tolist() == ["Opening stocktake"] * 4
    assert f"Total:</b> {q.abs().sum():,.0f} units (absolute" in ex.summary_html.value
    share = openings["total_quantity"].sum() / q.abs().sum()
    assert (
        f"Includes 4 opening stock counts: {openings['total_quantity'].sum():,.0f} units, "
        f"{share:.0%} of the total"
    ) in ex.summary_html.value
    ex.units.value = "signed"
    assert f"Total:</b> {q.sum():,.0f} units (signed" in ex.summary_html.value
    assert q.abs().sum() != q.sum()  # the two totals the issue saw differ


def test_leaving_out_opening_counts_changes_what_is_plotted_and_says_so(demo):
    tx, _lines = demo
    ex = activity_explorer(tx)
    with ex.hold():
        ex.metric.value = "quantity"
        ex.freq.value = "M"
        ex.exclude_counts.value = True
    expected = activity_table(
        tx,
        "M",
        metric="quantity",
        exclude_opening_counts=True,
        since=ex.since.value,
        until=ex.until.value,
    )
    assert_drawn(ex, expected)
    left = tx.loc[opening_counts(tx), "total_quantity"].sum()
    whole = activity_table(tx, "M", metric="quantity", since=ex.since.value, until=ex.until.value)
    assert whole.to_numpy().sum() - ex.table.to_numpy().sum() == pytest.approx(left)
    assert f"Left out: 4 opening stock counts ({left:,.0f} units)" in ex.summary_html.value
    assert ex.ax.get_title().endswith("without opening stock counts")

    # Counted on the whole frame, not on the types shown: adjustments alone still leave the
    # stocktake out (in a frame of adjustments only, none would open the record).
    ex.types.value = ("adjust",)
    adjusts = tx[(tx["type"] == "adjust") & ~opening_counts(tx)]
    assert ex.table.to_numpy().sum() == pytest.approx(adjusts["total_quantity"].abs().sum())
    assert list(ex.table.columns) == ["adjust"]

    ex.exclude_counts.value = False
    assert "Left out" not in ex.summary_html.value
    assert not ex.ax.get_title().endswith("without opening stock counts")


def test_the_item_view_leaves_out_the_stocktakes_lines(demo):
    tx, lines = demo
    ex = activity_explorer(tx, lines=lines)
    with ex.hold():
        ex.by.value = "item"
        ex.metric.value = "quantity"
        ex.exclude_counts.value = True
    ids = tx.loc[opening_counts(tx), "transaction_id"]
    kept = lines[~lines["transaction_id"].isin(ids)]
    assert len(kept) < len(lines)
    expected = activity_table(
        kept, "W", "item", "quantity", top=8, since=ex.since.value, until=ex.until.value
    )
    assert_drawn(ex, expected)
    assert "Left out: 4 opening stock counts" in ex.summary_html.value


def test_the_types_are_checkboxes_that_set_and_follow_the_value():
    tx = make_transactions()
    ex = activity_explorer(tx)
    assert list(ex.types.boxes) == ["in", "out", "move", "adjust"]
    assert all(box.value for box in ex.types.boxes.values())
    before = ex.redraws
    ex.types.boxes["move"].value = False  # a click on "move"
    assert ex.types.value == ("in", "out", "adjust") and ex.redraws == before + 1
    assert list(ex.table.columns) == ["in", "out", "adjust"]
    ex.types.value = ("adjust", "out")  # from code: the boxes follow, in the types' order
    assert ex.types.value == ("out", "adjust")
    assert [b.value for b in ex.types.boxes.values()] == [False, True, False, True]
    assert ex.redraws == before + 2  # one redraw for a new value, not one per box
    with pytest.raises(TraitError, match="not a transaction type"):
        ex.types.value = ("returns",)


def test_repr_and_settings_name_the_units():
    ex = activity_explorer(make_transactions())
    assert ex.settings()["signed"] is False
    ex.units.value = "signed"
    assert ex.settings()["signed"] is True and "'signed': True" in repr(ex)
    pd.testing.assert_frame_equal(activity_table(ex.frame(), **ex.settings()), ex.table)
