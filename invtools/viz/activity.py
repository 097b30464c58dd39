"""plot_activity: transaction activity over time as stacked bars (or lines) per period.

The numbers drawn are :func:`~invtools.viz.tables.activity_table`'s; this module only draws
them.

>>> MAX_BAR_PERIODS
120
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from invtools.errors import ConfigError
from invtools.viz.common import (
    check_tz,
    choices_text,
    is_lines,
    period_freq,
    span_text,
    types_text,
)
from invtools.viz.style import (
    OTHER_COLOR,
    category_colors,
    date_axis,
    legend_outside,
    new_axes,
    no_data,
)
from invtools.viz.tables import covered_range, table_of

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_activity", "MAX_BAR_PERIODS"]

#: Most periods :func:`plot_activity` draws as separate bars (one patch per period and
#: category). Beyond that, e.g. a year and a half by day, bars are a pixel or two wide and
#: thousands of patches take seconds to draw, so each category becomes one filled step area.
MAX_BAR_PERIODS = 120
#: The room above the tallest bar or point, a fraction of its height.
HEADROOM = 0.08

_KINDS = ("bar", "line")


def plot_activity(
    df: pd.DataFrame,
    freq: str = "W",
    by: str | None = "type",
    metric: str = "count",
    *,
    top: int | None = 8,
    other: bool = True,
    kind: str = "bar",
    since: Any = None,
    until: Any = None,
    tz: str | None = None,
    signed: bool = False,
    exclude_opening_counts: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """Transaction activity over time: stacked bars (or lines) per period, split by category.

    Arguments as in :func:`~invtools.viz.activity_table`, which computes the numbers drawn
    (call it to see them as a table; ``top=5, other=False``: the five largest alone); the y
    label says whether quantities are absolute or
    signed, and the title when opening stock counts are left out. Signed quantities stack
    below zero where they are negative. ``kind="bar"`` stacks one bar per period across the
    period's width (``ax.containers``, one per category); above :data:`MAX_BAR_PERIODS`
    periods each category is instead one filled step area spanning whole periods
    (``ax.stairs``: a ``StepPatch`` per category in ``ax.patches``, whose ``get_data()`` gives
    the stack's top and baseline per period), the same picture at a fraction of the drawing
    time. ``kind="line"`` draws one line per category with a point at each period start.
    Periods without activity are drawn as zero, never skipped. With nothing in range the Axes
    says so instead of raising.

    A first or last period the data cover only in part (weeks or longer: the range, else the
    window the frame was fetched with, else its first and last transaction, starts after the
    period's first day or ends before its last) is drawn partial: veiled and hatched (a
    hatched span in ``ax.patches``), and the title says so, e.g. "(first and last weeks
    partial, hatched)": a short week is not a dip. The numbers are the table's either way.

    ``ax=None`` draws on a new pyplot figure (shown inline in notebooks); pass an ``ax`` to
    draw elsewhere (e.g. on a ``matplotlib.figure.Figure()`` inside a widget).

    >>> import pandas as pd
    >>> tx = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-03-02", "2026-03-18"], utc=True),
    ...     "type": ["in", "out"], "total_quantity": [5.0, 2.0]})
    >>> ax = plot_activity(tx, "W", metric="quantity")
    >>> ax.get_ylabel(), [t.get_text() for t in ax.get_legend().get_texts()]
    ('quantity (units, absolute) per week', ['in', 'out'])
    """
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ConfigError(f"plot_activity: kind={kind!r} is not one of {choices_text(_KINDS)}.")
    table = table_of(
        "plot_activity",
        df,
        freq,
        by,
        metric,
        top=top,
        other=other,
        since=since,
        until=until,
        tz=tz,
        signed=signed,
        exclude_opening_counts=exclude_opening_counts,
    )
    pfreq, noun = period_freq(freq)
    what = ("lines" if is_lines(df) else "transactions") if metric == "count" else "quantity"
    ax = new_axes(ax, (10, 4))

    title = f"{what.capitalize()} per {noun}"
    if by is not None:
        title += f" by {by}"
    # what the frame holds, said: its types when not all of them, and the periods drawn
    types = None if by == "type" else types_text(df)  # by type: the legend says them
    said = [types, span_text(cast(pd.DatetimeIndex, table.index).tz_localize(None), noun)]
    if any(said):
        title += ": " + ", ".join(t for t in said if t)
    import matplotlib.colors as mcolors

    partial = _partial_ends(table, pfreq, covered_range("plot_activity", df, since, until, tz), tz)
    if partial.any():  # said before the opening counts: a widget's title ends with those
        ends = f"first and last {noun}s" if partial[0] and partial[-1] else None
        which = ends or (("first " if partial[0] else "last ") + noun)
        title += f" ({'the ' + noun if len(table) == 1 else which} partial, hatched)"
    if exclude_opening_counts:
        title += ", without opening stock counts"
    ax.set_title(title)
    units = "signed" if signed else "absolute"
    ax.set_ylabel(
        f"{what} per {noun}" if metric == "count" else f"quantity (units, {units}) per {noun}"
    )
    ax.set_xlabel(f"{noun} (starting)" if noun != "day" else "day")

    if table.empty or not table.to_numpy().any():
        no_data(ax, "no transactions in range")
        return ax

    # Plot naive wall-clock times so tick labels show the period starts of the chosen zone.
    starts = cast(pd.DatetimeIndex, table.index).tz_localize(None)  # period starts
    periods = pd.PeriodIndex(starts, freq=pfreq)
    widths = (periods + 1).start_time - periods.start_time
    colors = category_colors(table.columns, by)
    values = table.to_numpy(dtype=float)

    def below(part: np.ndarray) -> np.ndarray:  # the sum of the categories stacked before each
        return np.cumsum(np.hstack([np.zeros((len(part), 1)), part[:, :-1]]), axis=1)

    # Where each category's bars start: positive values pile up from zero, negative ones (a
    # signed quantity view) pile down from it, so neither hides the other.
    bottoms = np.where(values < 0, below(values.clip(max=0)), below(values.clip(min=0)))
    edges = np.append(starts.to_numpy(), (starts[-1] + widths[-1]).to_numpy())
    x, width = (starts + widths * 0.1).to_numpy(), (widths * 0.8).to_numpy()  # bars
    for j, col in enumerate(table.columns):
        style = {"label": col, "color": colors[col]}
        if kind == "line":
            ax.plot(starts.to_numpy(), values[:, j], marker="o", markersize=3, **style)
        elif len(table) > MAX_BAR_PERIODS:  # one artist per category rather than per period
            stack = bottoms[:, j] + values[:, j]  # empty periods: the baseline, nothing filled
            ax.stairs(stack, edges, baseline=bottoms[:, j], fill=True, linewidth=0, **style)
        else:
            ax.bar(x, values[:, j], width, bottoms[:, j], align="edge", linewidth=0, **style)
    # A partial period: veiled in the background's colour and hatched, over what is drawn
    veil = mcolors.to_rgba(ax.get_facecolor(), 0.5)
    for k in np.flatnonzero(partial).tolist():
        ax.axvspan(
            cast(Any, starts[k].to_numpy()),  # a datetime64: matplotlib's date axis reads it
            cast(Any, (starts[k] + widths[k]).to_numpy()),
            facecolor=veil,
            edgecolor=OTHER_COLOR,
            hatch="///",
            linewidth=0,
            zorder=2.5,
        )
    if kind == "bar":
        ax.set_xlim(edges[0], edges[-1])
    elif len(starts) > 1:  # a line's last point is at the last period's start
        # matplotlib takes datetime64 through its date converter; its stubs say float
        ax.set_xlim(starts[0].to_numpy(), starts[-1].to_numpy())  # type: ignore[arg-type]
    if (values < 0).any():  # signed: what was counted away stacks below zero
        ax.axhline(0, color=OTHER_COLOR, linewidth=0.8)
    else:  # room above the tallest: a zero-height bar stacked on it pins matplotlib's margin
        tallest = values.max() if kind == "line" else (bottoms + values).max()
        ax.set_ylim(0, float(tallest) * (1 + HEADROOM))
    if metric == "count":
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    date_axis(ax)
    if by is not None:
        legend_outside(ax, title=by)
    return ax


def _partial_ends(
    table: pd.DataFrame, pfreq: str, span: tuple[Any, Any], tz: str | None
) -> np.ndarray:
    """Which periods of ``table`` are partial (by whole days of ``tz``): the first when what
    is known (``span``, UTC) starts after its first day, the last when it ends before its last
    day. A boolean per row; days never are."""
    partial = np.zeros(len(table), dtype=bool)
    if not len(table) or pfreq == "D":
        return partial
    zone = check_tz(tz)
    periods = pd.PeriodIndex(cast(pd.DatetimeIndex, table.index).tz_localize(None), freq=pfreq)
    lo, hi = (None if t is None else t.tz_convert(zone).tz_localize(None).normalize() for t in span)
    if lo is not None and lo > periods[0].start_time:
        partial[0] = True
    if hi is not None and hi < periods[-1].end_time.normalize():
        partial[-1] = True
    return partial
