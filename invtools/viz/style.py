"""How every picture looks: the fixed colours, a new Axes, the date axis, the legend, the
no-data text.

Shared by the plotting modules of :mod:`invtools.viz`. matplotlib is imported inside the
functions, never at import time, so importing :mod:`invtools.viz` picks no backend. Colours of
text and background come from rcParams, so ``plt.style.context("dark_background")`` works.

>>> TYPE_COLORS["in"], TYPE_COLORS["out"]
('#2ca02c', '#d62728')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from invtools._config import check_kind
from invtools.viz.tables import OTHER

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["TYPE_COLORS"]

#: Fixed colours of the transaction types, the same in every picture (and readable on a dark
#: background): stock coming in is green, going out red, moves blue, adjustments purple.
TYPE_COLORS: dict[str, str] = {
    "in": "#2ca02c",
    "out": "#d62728",
    "move": "#1f77b4",
    "adjust": "#9467bd",
}
#: Mid grey reads on both white and black backgrounds ("other", a single minimum line).
OTHER_COLOR = "0.6"


def new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax`` itself, or the Axes of a new pyplot figure (constrained layout)."""
    if ax is not None:
        from matplotlib.axes import Axes

        return check_kind(ax, Axes, "ax", "a matplotlib Axes (from plt.subplots(), say) or None")
    import matplotlib.pyplot as plt  # only here: importing invtools.viz never picks a backend

    return plt.subplots(figsize=figsize, layout="constrained")[1]


def color_cycle() -> list[Any]:
    """The style's colour cycle (``axes.prop_cycle``)."""
    import matplotlib as mpl

    return mpl.rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]


def category_colors(columns: Iterable[str], by: str | None) -> dict[str, Any]:
    """Fixed colours for types and "other"; for everything else the style's colour cycle
    without its greys (a grey series beside the grey "other" reads as part of it), extended
    with tab20's colours when there are more series than the cycle has colours: every named
    series its own colour.

    >>> colors = category_colors([f"p{i}" for i in range(12)] + ["other"], "partner")
    >>> len(set(colors.values())) == 13, colors["other"]
    (True, '0.6')
    """
    import matplotlib as mpl
    import matplotlib.colors as mcolors

    columns = list(columns)
    fixed = {**(TYPE_COLORS if by == "type" else {}), OTHER: OTHER_COLOR}

    def grey(color: Any) -> bool:
        r, g, b = mcolors.to_rgb(color)
        return max(r, g, b) - min(r, g, b) < 0.08

    named = [c for c in columns if c not in fixed]
    palette = [c for c in color_cycle() if not grey(c)]
    if len(named) > len(palette):
        seen = {mcolors.to_hex(c) for c in palette}
        tab20 = mpl.colormaps["tab20"]
        more = [tab20(i) for i in range(tab20.N)]  # an int picks that colour of the map
        palette += [c for c in more if not grey(c) and mcolors.to_hex(c) not in seen]
    cycle = itertools.cycle(palette or color_cycle())
    return {col: fixed[col] if col in fixed else next(cycle) for col in columns}


def date_axis(ax: Axes) -> None:
    r"""Concise date ticks (3 to 10 of them) on the x axis; ticks finer than months name the
    month on the first tick of each ("Oct 05", "07", ..., "Nov 02"), not only on a tick that
    falls on the 1st; the first tick and the first of each new year say the year under them
    ("May\n2025", ..., "Jan\n2026"), as :func:`~invtools.viz.plot_stock_value` does, so no
    lone year label sits under a tick of its own."""
    import matplotlib.dates as mdates

    class MonthFirst(mdates.ConciseDateFormatter):
        def format_ticks(self, values):
            labels = super().format_ticks(values)
            dates = [mdates.num2date(v) for v in values]
            return year_labels(month_first_labels(labels, dates), dates)

    locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    # the ticks say the year now; the offset only below a day (its date)
    offsets = ["", "", "", "", "%Y-%b-%d", "%Y-%b-%d %H:%M"]
    ax.xaxis.set_major_formatter(MonthFirst(locator, offset_formats=offsets))


def year_labels(labels: list[str], dates: list[Any]) -> list[str]:
    r"""``labels`` of ticks at ``dates`` with the year under the first tick and under the
    first tick of each new year; a tick the formatter labelled with the year alone (a 1
    January) names its month instead. Ticks of years keep their labels.

    >>> from datetime import datetime
    >>> at = [datetime(2025, m, 1) for m in (5, 9)] + [datetime(2026, m, 1) for m in (1, 5)]
    >>> year_labels(["May", "Sep", "2026", "May"], at)
    ['May\n2025', 'Sep', 'Jan\n2026', 'May']
    """
    if len({d.year for d in dates}) == len(dates) and all(
        label == str(d.year) for label, d in zip(labels, dates, strict=True)
    ):
        return list(labels)  # a tick per year: they say it already
    out = []
    for i, (label, when) in enumerate(zip(labels, dates, strict=True)):
        if i == 0 or when.year != dates[i - 1].year:
            if label == str(when.year):
                label = f"{when:%b}"
            label = f"{label}\n{when:%Y}" if label else label
        out.append(label)
    return out


def month_first_labels(labels: list[str], dates: list[Any]) -> list[str]:
    """``labels`` of ticks at ``dates`` with the month's name on the first tick of each month,
    when ticks are finer than months (some month has two): a day ``"05"`` becomes
    ``"Oct 05"``, a time ``"06:00"`` ``"Oct 05 06:00"``; a label naming its month is kept.

    >>> from datetime import datetime
    >>> days = [datetime(2026, 10, d) for d in (5, 12, 19, 26)] + [datetime(2026, 11, 1)]
    >>> month_first_labels(["05", "12", "19", "26", "Nov"], days)
    ['Oct 05', '12', '19', '26', 'Nov']
    """
    months = [(d.year, d.month) for d in dates]
    if len(set(months)) == len(months):  # months or coarser: every tick has its own label
        return list(labels)
    out = []
    for i, (label, when) in enumerate(zip(labels, dates, strict=True)):
        first = i == 0 or months[i] != months[i - 1]
        if first and label and when.strftime("%b") not in label:
            label = f"{when:%b} {label}" if label.isdigit() else f"{when:%b %d} {label}"
        out.append(label)
    return out


def legend_outside(ax: Axes, title: str | None = None) -> None:
    """The legend to the right of the plotting area, so it never hides a bar or a line."""
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title=title, frameon=False
    )


def no_data(ax: Axes, message: str, *, ticks: bool = False) -> None:
    """Say ``message`` in the middle of an Axes (in the style's text colour); without
    ``ticks``, an empty Axes: its ticks go."""
    ax.text(
        0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", size="large", alpha=0.8
    )
    if not ticks:
        ax.set_xticks([])
        ax.set_yticks([])
