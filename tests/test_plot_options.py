"""Issue 19's options of the activity views and the stock history's end, asserted on the
numbers and the artists drawn.

- signed or absolute quantities (``signed=``): the table, the stacks (negatives below zero),
  the y label;
- suppliers and customers apart (``by="supplier"`` / ``"customer"``, :func:`partner_types`);
- opening stock counts recognised (:func:`opening_counts`) and left out
  (``exclude_opening_counts=``);
- ``plot_stock_history`` draws every item to the end of the data (or ``as_of``).
"""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from test_plots import history_frame, lines_frame, tx_frame

from invtools.errors import ConfigError, DeletedItemsWarning
from invtools.viz import (
    MAX_BAR_PERIODS,
    activity_table,
    opening_counts,
    partner_types,
    plot_activity,
    plot_stock_history,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def shop() -> pd.DataFrame:
    """A record that opens with a stocktake (two adjusts before the first sale), then trade
    with suppliers and customers, a cycle count and a memo-marked count of a new line."""
    df = tx_frame(
        [
            {"time": "2026-03-02T06:00Z", "type": "adjust", "qty": 500},
            {"time": "2026-03-02T06:10Z", "type": "adjust", "qty": 300},
            {"time": "2026-03-02T09:00Z", "type": "out", "qty": 3, "partner": "J. Smith"},
            {"time": "2026-03-03T09:00Z", "type": "in", "qty": 40, "partner": "Acme"},
            {"time": "2026-03-04T09:00Z", "type": "adjust", "qty": -5},
            {"time": "2026-03-10T09:00Z", "type": "out", "qty": 6, "partner": "Trade Ltd"},
            {"time": "2026-03-11T09:00Z", "type": "in", "qty": 20, "partner": "Bolt Co"},
            {"time": "2026-03-12T09:00Z", "type": "out", "qty": 2},
            {"time": "2026-03-12T10:00Z", "type": "adjust", "qty": 60},
            {"time": "2026-03-13T10:00Z", "type": "adjust", "qty": 2},
            {"time": "2026-03-13T11:00Z", "type": "move", "qty": 8, "partner": "Acme"},
        ]
    )
    df["memo"] = pd.array(
        [
            None,
            "Stock count",
            "Card payment",
            "PO-1",
            "Found in stocktake",
            None,
            "PO-2",
            None,
            "Initial stock of the garden line",
            "Cycle count",
            None,
        ],
        dtype="string",
    )
    return df


# ---------------------------------------------------------------------------- opening counts


def test_opening_counts_are_the_leading_adjusts_and_the_memos_that_say_so(shop):
    flagged = opening_counts(shop)
    assert flagged.index.equals(shop.index) and flagged.dtype == bool
    # rows 0-1 open the record (before the first sale, whatever the memo); row 8 says so;
    # "Found in stocktake" and "Cycle count" are counts mid-history: activity, kept
    assert flagged[flagged].index.tolist() == [0, 1, 8]


def test_opening_counts_need_another_type_to_open_and_see_lines_too(shop):
    only_adjusts = shop[shop["type"] == "adjust"]  # nothing to open: only the memo rule
    assert opening_counts(only_adjusts)[lambda s: s].index.tolist() == [8]
    lines = lines_frame(
        [
            {"time": "2026-03-02T06:00Z", "type": "adjust", "qty": 12, "item": "bolt", "tx": 1},
            {"time": "2026-03-02T06:00Z", "type": "adjust", "qty": 30, "item": "nut", "tx": 1},
            {"time": "2026-03-02T09:00Z", "type": "out", "qty": 1, "item": "bolt", "tx": 2},
            {"time": "2026-03-05T09:00Z", "type": "adjust", "qty": -1, "item": "nut", "tx": 3},
        ]
    )
    assert opening_counts(lines).tolist() == [True, True, False, False]  # no memo: rule 2
    with pytest.raises(ConfigError, match="'type'"):
        opening_counts(shop.drop(columns="type"))


def test_excluding_opening_counts_leaves_out_exactly_those_rows(shop):
    whole = activity_table(shop, "W", metric="quantity")
    without = activity_table(shop, "W", metric="quantity", exclude_opening_counts=True)
    assert whole.to_numpy().sum() - without.to_numpy().sum() == 500 + 300 + 60
    assert without["adjust"].sum() == 5 + 2  # the cycle counts stay, as activity
    ax = plot_activity(shop, "W", metric="quantity", exclude_opening_counts=True)
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}
    assert heights["adjust"] == without["adjust"].tolist() == [5.0, 2.0]
    assert ax.get_title() == (  # the data end on a Thursday: the last week is partial
        "Quantity per week by type: 2 Mar 2026 to 9 Mar 2026 (last week partial, hatched), "
        "without opening stock counts"
    )


# ---------------------------------------------------------------------------- signed


def test_signed_quantities_keep_the_adjustments_sign(shop):
    absolute = activity_table(shop, "W", metric="quantity")
    signed = activity_table(shop, "W", metric="quantity", signed=True)
    raw = shop["total_quantity"]
    assert absolute.to_numpy().sum() == raw.abs().sum()
    assert signed.to_numpy().sum() == raw.sum() == raw.abs().sum() - 2 * 5
    assert signed["adjust"].tolist() == [795.0, 62.0]  # 500 + 300 - 5; 60 + 2
    assert (signed.drop(columns="adjust") == absolute.drop(columns="adjust")).all().all()
    counts = activity_table(shop, "W", signed=True)  # counts have no sign
    assert counts.equals(activity_table(shop, "W"))
    with pytest.raises(ConfigError, match="signed='yes' must be True or False"):
        activity_table(shop, "W", signed="yes")


def test_signed_bars_stack_negatives_below_zero():
    df = tx_frame(
        [
            {"time": "2026-03-02T09:00Z", "type": "in", "qty": 10},
            {"time": "2026-03-03T09:00Z", "type": "adjust", "qty": -4},
            {"time": "2026-03-03T10:00Z", "type": "out", "qty": 3},
            {"time": "2026-03-09T09:00Z", "type": "adjust", "qty": 2},
        ]
    )
    ax = plot_activity(df, "W", metric="quantity", signed=True)
    bars = {c.get_label(): [(p.get_y(), p.get_height()) for p in c.patches] for c in ax.containers}
    assert bars["in"] == [(0.0, 10.0), (0.0, 0.0)]
    assert bars["out"] == [(10.0, 3.0), (0.0, 0.0)]
    assert bars["adjust"] == [(0.0, -4.0), (0.0, 2.0)]  # below zero, not inside the stack
    assert ax.get_ylim()[0] < -4 + 1e-9
    assert ax.get_ylabel() == "quantity (units, signed) per week"
    assert plot_activity(df, "W", metric="quantity").get_ylim()[0] == 0


def test_signed_step_areas_stack_negatives_below_zero_too():
    from matplotlib.patches import StepPatch

    days = MAX_BAR_PERIODS + 10
    start = pd.Timestamp("2026-01-01T09:00Z")
    rows = [
        {"time": (start + pd.Timedelta(days=d)).isoformat(), "type": "in", "qty": 5}
        for d in range(days)
    ]
    rows += [
        {"time": (start + pd.Timedelta(days=d, hours=1)).isoformat(), "type": "adjust", "qty": -2}
        for d in range(0, days, 3)
    ]
    ax = plot_activity(tx_frame(rows), "D", metric="quantity", signed=True)
    steps = {p.get_label(): p.get_data() for p in ax.patches if isinstance(p, StepPatch)}
    adjust = steps["adjust"]
    assert adjust.values[0] == -2 and adjust.baseline[0] == 0  # from zero down
    assert adjust.values[1] == adjust.baseline[1]  # nothing counted away that day
    assert steps["in"].values.tolist() == [5.0] * days


# ---------------------------------------------------------------------------- partners


def test_suppliers_and_customers_are_split_apart(shop):
    suppliers = activity_table(shop, "W", by="supplier")
    customers = activity_table(shop, "W", by="customer", metric="quantity")
    assert sorted(suppliers.columns) == ["Acme", "Bolt Co"] and suppliers.columns.name == "supplier"
    assert suppliers.to_numpy().sum() == 2  # the move naming Acme is not a delivery
    assert sorted(customers.columns) == ["J. Smith", "Trade Ltd"]
    assert customers.to_numpy().sum() == 3 + 6  # the sale without a customer is not counted
    ax = plot_activity(shop, "W", by="customer")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["J. Smith", "Trade Ltd"]
    assert ax.get_legend().get_title().get_text() == "customer"
    assert ax.get_title().startswith("Transactions per week by customer")


def test_a_partner_type_column_wins_over_the_transaction_type(shop):
    inferred = partner_types(shop)
    assert inferred.dropna().to_dict() == {
        2: "customer",
        3: "supplier",
        5: "customer",
        6: "supplier",
    }  # the move's partner: neither
    typed = shop.assign(
        partner_type=pd.array(
            [
                None,
                None,
                "customer",
                "supplier",
                None,
                "supplier",
                "supplier",
                None,
                None,
                None,
                "supplier",
            ],
            dtype="string",
        )
    )  # Trade Ltd also supplies; Acme on the move
    assert sorted(activity_table(typed, "W", by="supplier").columns) == [
        "Acme",
        "Bolt Co",
        "Trade Ltd",
    ]
    with pytest.raises(ConfigError, match="partner"):
        partner_types(shop.drop(columns=["partner_name", "partner_id"]))


# ---------------------------------------------------------------------------- stock to the end


def _line(ax, label):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return [pd.Timestamp(x) for x in line.get_xdata()], line.get_ydata().tolist()


def test_each_item_is_drawn_to_the_end_of_the_data_or_until():
    h = history_frame(
        [
            ("2026-03-01T10:00Z", 7, "bolt", 10),
            ("2026-03-04T10:00Z", 7, "bolt", 4),
            ("2026-03-02T10:00Z", 8, "nut", 50),
            ("2026-03-20T10:00Z", 8, "nut", 30),
        ]
    )
    x, y = _line(plot_stock_history(h, item_ids=["bolt"]), "bolt")
    assert x[-1] == pd.Timestamp("2026-03-20T10:00") and y == [10.0, 4.0, 4.0]
    x, y = _line(plot_stock_history(h), "nut")  # the item that ends the data: as recorded
    assert x[-1] == pd.Timestamp("2026-03-20T10:00") and y == [50.0, 30.0]

    # until= later: every line goes on to it; a date means the end of that day
    ax = plot_stock_history(h, as_of=pd.Timestamp("2026-03-31T18:00Z"))
    for label, level in (("bolt", 4.0), ("nut", 30.0)):
        x, y = _line(ax, label)
        assert x[-1] == pd.Timestamp("2026-03-31T18:00") and y[-1] == level
    x, _ = _line(plot_stock_history(h, as_of="2026-03-31", tz="Europe/Paris"), "nut")
    assert x[-1].floor("s") == pd.Timestamp("2026-03-31T23:59:59")  # Paris wall clock

    # until= earlier: rows after it are not drawn
    x, y = _line(plot_stock_history(h, as_of="2026-03-03"), "bolt")
    assert y == [10.0, 10.0] and x[-1].date() == pd.Timestamp("2026-03-03").date()
    x, y = _line(plot_stock_history(h, as_of="2026-03-03"), "nut")
    assert y == [50.0, 50.0]


def test_an_item_out_of_stock_at_the_end_is_shaded_to_the_end():
    h = history_frame(
        [
            ("2026-03-01T10:00Z", 7, "bolt", 3),
            ("2026-03-05T10:00Z", 7, "bolt", 0),
            ("2026-03-15T10:00Z", 8, "nut", 9),
        ]
    )
    ax = plot_stock_history(h, item_ids=["bolt"])
    (span,) = ax.patches
    xs = span.get_patch_transform().transform(span.get_path().vertices)[:, 0]
    assert (xs.min(), xs.max()) == pytest.approx(
        (
            mdates.date2num(pd.Timestamp("2026-03-05T10:00")),
            mdates.date2num(pd.Timestamp("2026-03-15T10:00")),
        )
    )


def test_each_location_line_goes_to_the_end_too():
    h = history_frame(
        [
            ("2026-03-01T10:00Z", 7, "bolt", 3),
            ("2026-03-02T10:00Z", 7, "bolt", 5),
            ("2026-03-09T10:00Z", 7, "bolt", 1),
        ]
    )
    h["location_id"] = pd.array([1, 2, 2], dtype="Int64")
    ax = plot_stock_history(h)
    x, y = _line(ax, "bolt (location 1)")
    assert y == [3.0, 3.0] and x[-1] == pd.Timestamp("2026-03-09T10:00")
    x, y = _line(ax, "bolt (location 2)")
    assert y == [5.0, 1.0]


def test_the_rows_module_examples_run():
    import doctest

    import invtools.viz.rows as rows

    result = doctest.testmod(rows)
    assert result.failed == 0 and result.attempted >= 4
    assert opening_counts(tx_frame([])).empty


def test_the_table_and_the_plot_take_the_same_options_by_keyword():
    import inspect

    def by_keyword(func):
        return {
            name
            for name, p in inspect.signature(func).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }

    assert by_keyword(activity_table) == by_keyword(plot_activity) - {"kind", "ax"}
    assert {"top", "since", "until", "tz", "signed"} <= by_keyword(activity_table)
    tx = pd.DataFrame(
        {
            "transaction_time": pd.to_datetime(
                ["2026-03-02", "2026-03-03", "2026-03-18"], utc=True
            ),
            "type": ["in", "out", "out"],
        }
    )
    with pytest.raises(TypeError):
        activity_table(tx, "W", "type", "count", 3)  # top only by its name, as in the plot
    assert activity_table(tx, "W", "type", "count", top=1).sum().to_dict() == {"out": 2, "other": 1}


@pytest.mark.parametrize("call", [activity_table, plot_activity])
def test_a_range_of_more_periods_than_a_chart_can_hold_is_refused_at_once(call):
    """Issue 26, item 9: until="9999-12-31" by day ran for minutes (2.9 million periods);
    now refused before any period is made (the suite's timeout would catch the minutes)."""
    tx = tx_frame([{"time": "2026-03-02", "type": "in"}, {"time": "2026-03-18"}])
    with pytest.raises(ConfigError, match=r"63,\d\d\d periods of a day"):
        call(tx, "D", until="2200-12-31")
    with pytest.raises(ConfigError, match="further off than a chart goes"):
        call(tx, "D", until="9999-12-31")
    assert len(activity_table(tx, "D", until="2030-12-31")) > 365  # years by day: fine


# ---------------------------------------------------------------------------- stock value


def test_stock_value_axis_from_zero_with_the_currency():
    # issue 25 item 5: "stock value month by month" had a y axis not from 0 and no currency
    from invtools import ArgumentTypeError
    from invtools.viz import plot_stock_value

    monthly = pd.DataFrame(
        {
            "month": ["2025-12", "2026-01", "2026-02"],
            "value_at_cost": [41000.0, 39500.0, 40200.0],
            "value_at_price": [70000.0, 66000.0, 68000.0],
        }
    )
    items = pd.DataFrame({"item_id": [1], "cost": [1.0], "price": [2.0]})
    items.attrs["currency_code"] = "GBP"
    ax = plot_stock_value(monthly, items=items)
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 70000
    assert ax.get_ylabel() == "stock value (GBP)"
    lines = {ln.get_label(): ln.get_ydata().tolist() for ln in ax.get_lines()}
    assert lines == {
        "at cost": [41000.0, 39500.0, 40200.0],
        "at price": [70000.0, 66000.0, 68000.0],
    }
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Dec\n2025", "Jan\n2026", "Feb"]
    assert plot_stock_value(monthly, currency="£").get_ylabel() == "stock value (£)"
    assert plot_stock_value(monthly).get_ylabel() == "stock value"  # none known: none said
    with pytest.raises(ArgumentTypeError, match="currency"):
        plot_stock_value(monthly, currency=3)
    with pytest.raises(ConfigError, match="value_at_cost"):
        plot_stock_value(monthly.drop(columns="value_at_cost"))


def test_the_items_of_a_team_say_its_currency_and_the_value_plot_shows_it(sb, make_client):
    from invtools.analysis import stock_value_by_month
    from invtools.frames import stock_history
    from invtools.viz import plot_stock_value

    client = make_client(sb)
    items = client.items_df()
    assert items.attrs["currency_symbol"] == sb.data("shop").team["currency_symbol"] == "£"
    history = stock_history(client.lines_df(since="2026-09-01"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        monthly = stock_value_by_month(history, items)
    assert plot_stock_value(monthly, items=items).get_ylabel() == "stock value (£)"
