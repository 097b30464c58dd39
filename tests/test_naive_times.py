"""Times without a time zone in a frame (issue 32, item 6): refused, by one rule, everywhere.

A frame's ``transaction_time`` or ``created_at`` made tz-naive (``.dt.tz_localize(None)``, a
spreadsheet read back) or left as text (a CSV read back without ``parse_dates``) gave a bare
pandas ``TypeError`` (or ``AttributeError``) in ``stock_history``, ``reorder``, ``audit``,
``month_end_stock`` and more, and was silently taken as UTC by the plots. The rule
(``invtools.frames.reader.check_times``): a time column must hold tz-aware times; anything else
is a :class:`~invtools.ConfigError` naming the function, the column and the one line that fixes
the frame. Each public analysis, ``frames.stock_history`` and each plot that reads a time is
called with such a frame; then with the frame fixed by that line, which must give the answer
the original frame gives.
"""

from __future__ import annotations

import inspect
import io
import re
import warnings

import pandas as pd
import pytest

from invtools import analysis, frames, viz
from invtools.errors import ConfigError

pytestmark = pytest.mark.network

TIME_COLUMNS = ("transaction_time", "created_at")


@pytest.fixture(scope="module")
def world():
    """The frames of a small stand-in team, as the client gives them (times in UTC)."""
    import matplotlib

    matplotlib.use("Agg")
    from invtools import Client
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=60) as sb:
        client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0)
        lines = client.lines_df()
        w = dict(
            tx=client.transactions_df(),
            lines=lines,
            items=client.items_df(),
            stock=client.stock_df(),
            history=frames.stock_history(lines),
        )
        client.close()
    return w


def _calls(w):
    """name -> (function, its arguments by name, the arguments whose times are read)."""
    h, lines, items, stock, tx = w["history"], w["lines"], w["items"], w["stock"], w["tx"]
    return {
        "frames.stock_history": (frames.stock_history, {"lines": lines}, ["lines"]),
        "stockouts": (analysis.stockouts, {"history": h}, ["history"]),
        "stockout_summary": (analysis.stockout_summary, {"history": h}, ["history"]),
        "movement": (analysis.movement, {"lines": lines, "items": items}, ["lines"]),
        "stock_at": (analysis.stock_at, {"history": h}, ["history"]),
        "period_end_stock": (analysis.period_end_stock, {"history": h}, ["history"]),
        "month_end_stock": (analysis.month_end_stock, {"history": h}, ["history"]),
        "stock_value_by_month": (
            analysis.stock_value_by_month,
            {"history": h, "items": items},
            ["history"],
        ),
        "supplier_summary": (
            analysis.supplier_summary,
            {"lines": lines, "items": items},
            ["lines"],
        ),
        "shrinkage": (analysis.shrinkage, {"lines": lines, "items": items}, ["lines"]),
        "reorder": (analysis.reorder, {"lines": lines, "items": items}, ["lines"]),
        "dead_stock": (
            analysis.dead_stock,
            {"lines": lines, "items": items, "stock": stock},
            ["lines"],
        ),
        "audit": (analysis.audit, {"transactions": tx}, ["transactions"]),
        "activity_profile": (analysis.activity_profile, {"transactions": tx}, ["transactions"]),
        "transfer_flows": (analysis.transfer_flows, {"lines": lines}, ["lines"]),
        "abc_classes": (analysis.abc_classes, {"lines": lines, "items": items}, ["lines"]),
        "crosstab": (
            analysis.crosstab,
            {"transactions": tx, "rows": "member"},
            ["transactions"],
        ),
        "viz.activity_table": (viz.activity_table, {"df": tx}, ["df"]),
        "viz.opening_counts": (viz.opening_counts, {"df": tx}, ["df"]),
        "viz.plot_activity": (viz.plot_activity, {"df": tx}, ["df"]),
        "viz.plot_calendar": (viz.plot_calendar, {"df": tx}, ["df"]),
        "viz.plot_stock_history": (
            viz.plot_stock_history,
            {"history": h, "item_ids": items["item_id"][:3].tolist()},
            ["history"],
        ),
    }


#: What reads no time, so takes any: stock levels and values, partners, a monthly table, a
#: ranking of any table, a flows table drawn.
NO_TIMES = {"stock_value", "viz.partner_types", "viz.plot_stock_value", "top", "viz.plot_transfers"}


def _public(module, prefix=""):
    return {prefix + n for n in module.__all__ if inspect.isfunction(getattr(module, n))}


def test_every_public_analysis_and_plot_is_called(world):
    """A new analysis or plot is added here, or to NO_TIMES, or this fails."""
    names = set(_calls(world)) | NO_TIMES
    assert _public(analysis) | _public(viz, "viz.") <= names


def _quiet(fn, kwargs):
    import matplotlib.pyplot as plt

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # window and deleted-items warnings: not the point
            return fn(**kwargs)
    finally:
        plt.close("all")


def _same(got, expected):
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(got, expected)
    elif isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(got, expected)
    else:  # an Axes: drawn, and its lines where the original's are
        assert type(got) is type(expected)
        assert [ln.get_xydata().tolist() for ln in got.lines] == [
            ln.get_xydata().tolist() for ln in expected.lines
        ]


def _naive(df, column):
    out = df.copy()
    out[column] = out[column].dt.tz_localize(None)
    return out


def _cases(w):
    for name, (fn, kwargs, timed) in _calls(w).items():
        for arg in timed:
            for column in TIME_COLUMNS:
                if column in kwargs[arg].columns and (column != "created_at" or name == "audit"):
                    yield name, fn, kwargs, arg, column


def _who(name):
    return name.split(".")[-1]


def test_naive_times_are_refused_naming_the_function_the_column_and_the_fix(world):
    seen, wrong = 0, []
    for name, fn, kwargs, arg, column in _cases(world):
        seen += 1
        given = {**kwargs, arg: _naive(kwargs[arg], column)}
        try:
            _quiet(fn, given)
            wrong.append(f"{name}: naive {arg}[{column!r}] was taken")
            continue
        except ConfigError as exc:
            message = str(exc)
        except Exception as exc:  # noqa: BLE001 - the point: which bare errors remain
            wrong.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        fix = f'{arg}["{column}"] = {arg}["{column}"].dt.tz_localize("UTC")'
        if not (message.startswith(f"{_who(name)}: ") and fix in message):
            wrong.append(f"{name}: {message}")
            continue
        # the line it gives fixes it: the answer of the frame the client gave
        fixed = given[arg].copy()
        exec(fix, {}, {arg: fixed})  # the message's own line, run as a user would
        _same(_quiet(fn, {**kwargs, arg: fixed}), _quiet(fn, kwargs))
    assert not wrong, "\n".join(wrong)
    assert seen >= 18


def test_times_as_text_from_a_csv_are_refused_with_the_conversion_to_use(world):
    wrong = []
    for name, fn, kwargs, arg, column in _cases(world):
        if column != "transaction_time":
            continue
        text = pd.read_csv(io.StringIO(kwargs[arg].to_csv(index=False)))  # no parse_dates
        frame = kwargs[arg].assign(**{column: text[column]})
        try:
            _quiet(fn, {**kwargs, arg: frame})
            wrong.append(f"{name}: text {arg}[{column!r}] was taken")
            continue
        except ConfigError as exc:
            message = str(exc)
        except Exception as exc:  # noqa: BLE001
            wrong.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        fix = f'{arg}["{column}"] = pd.to_datetime({arg}["{column}"], utc=True)'
        if not (message.startswith(f"{_who(name)}: ") and fix in message):
            wrong.append(f"{name}: {message}")
    assert not wrong, "\n".join(wrong)


def test_times_in_another_zone_are_times_and_give_the_same_answer(world):
    """Aware is all the rule asks: Seoul's times name the same instants, and are taken."""
    h = world["history"]
    seoul = h.assign(transaction_time=h["transaction_time"].dt.tz_convert("Asia/Seoul"))
    expected = _quiet(analysis.stockout_summary, {"history": h})
    got = _quiet(analysis.stockout_summary, {"history": seoul})
    assert got["days_out"].tolist() == expected["days_out"].tolist()


def test_a_frame_read_back_from_a_spreadsheet_says_which_zone_to_give(world, tmp_path):
    """``to_excel`` writes local times without a zone (Excel has none); read back, they are
    refused, and the message says to give them their zone."""
    lines = world["lines"]
    path = tmp_path / "lines.xlsx"
    frames.to_excel(path, lines, tz="Asia/Seoul")
    back = pd.read_excel(path, sheet_name=0)
    with pytest.raises(ConfigError) as caught:
        analysis.reorder(lines=back, items=world["items"])
    assert re.search(r"zone.*tz_localize\(", str(caught.value))
