"""plot_calendar: a year of daily activity as a heatmap, one column per week, one row per day.

The daily numbers are :func:`~invtools.viz.tables.activity_table`'s (by day, one column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from invtools.errors import ConfigError
from invtools.viz.common import check_tz, frame_times, is_lines, span_text
from invtools.viz.style import new_axes, no_data
from invtools.viz.tables import table_of

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_calendar"]

#: The most weeks one row of the calendar holds (half a year); a longer span wraps.
ROW_WEEKS = 27


def plot_calendar(
    df: pd.DataFrame,
    metric: str = "count",
    *,
    year: int | None = None,
    tz: str | None = None,
    cmap: Any = None,
    ax: Axes | None = None,
) -> Axes:
    """A calendar heatmap of daily activity over the data's span: one column per week, one
    row per weekday, from the month of the first transaction to the month of the last.

    Why this picture: months of days at a glance shows what bar charts smooth away: the weekly
    rhythm (which weekdays goods go out), holidays and closures (blank weeks), the stock-take
    day (one dark cell), seasonality, and gaps where nobody recorded anything, the first thing
    to rule out before trusting any total.

    ``df`` and ``metric`` as in :func:`~invtools.viz.activity_table` (count of transactions or
    lines, or absolute quantity). The months shown are those ``df`` spans, across years (the
    title says which; a tick names the year under its first month and every January);
    ``year``: only the months of that calendar year (the whole year if ``df`` has none). More
    than :data:`ROW_WEEKS` weeks wrap into rows of weeks, stacked (the image's rows: 7 per
    block and a blank one between blocks), each block's months named above it. Days
    are cut in ``tz`` (default UTC). ``cmap`` defaults to the style's ``image.cmap``. Days
    without activity are a faint grey (the colour bar's lower end); days
    outside the span ``df`` covers (before its first or after its last transaction) are left
    blank, since nothing is known about them.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-01", "2026-06-15"], utc=True)})
    >>> ax = plot_calendar(tx)
    >>> int(ax.images[0].get_array().sum()), ax.get_title()
    (3, 'Transactions per day, Jan 2026 to Jun 2026')
    """
    tz = check_tz(tz)
    # the frame's times, naive in ``tz``: the months and the days it covers
    local = frame_times(df, "plot_calendar").dropna().dt.tz_convert(tz).dt.tz_localize(None)
    if year is not None and (
        isinstance(year, bool)
        or not isinstance(year, (int, np.integer))
        or not 1678 <= year <= 2261  # the years pandas' nanosecond times hold
    ):
        raise ConfigError(f"year={year!r} must be a whole number such as 2026.")
    first, last = _span(local, None if year is None else int(year), tz)
    since, until = first.start_time.date().isoformat(), last.end_time.date().isoformat()
    table = table_of("plot_calendar", df, "D", None, metric, since=since, until=until, tz=tz)
    what = ("lines" if is_lines(df) else "transactions") if metric == "count" else "quantity"
    weeks = (last.end_time - first.start_time).days // 7 + 2
    # more than half a year of weeks: rows of at most ROW_WEEKS weeks, stacked, so the picture
    # reads at report width (18 months in one strip was 1838 x 261 px)
    rows = -(-weeks // ROW_WEEKS)
    per_row = -(-weeks // rows)
    ax = new_axes(
        ax, (float(np.clip(3 + 0.17 * per_row, 6, 10)), 2.8 if rows == 1 else 0.9 + 1.5 * rows)
    )
    span = span_text(pd.DatetimeIndex([first.start_time, last.start_time]), "month")
    # (wrapped: the first block's month names sit above it, under the title)
    ax.set_title(f"{what.capitalize()} per day, {span}", pad=6 if rows == 1 else 16)

    days = cast(pd.DatetimeIndex, table.index).tz_localize(None)  # period starts
    daily = table.iloc[:, 0].to_numpy(dtype=float) if table.shape[1] else np.zeros(len(days))
    # Days outside the span the frame covers are unknown, not quiet: leave them blank.
    if len(local):
        covered = (days >= local.min().normalize()) & (days <= local.max().normalize())
        daily = np.where(covered, daily, np.nan)
    first_monday = days[0] - pd.Timedelta(days=days[0].day_of_week)
    col = np.asarray((days - first_monday).days // 7)
    row = np.asarray(days.day_of_week)
    grid = np.full((7, int(col.max()) + 1), np.nan)
    grid[row, col] = daily
    rows = -(-grid.shape[1] // ROW_WEEKS)
    per_row = -(-grid.shape[1] // rows)
    if rows > 1:  # block r holds weeks r * per_row ...; a blank row between blocks
        stacked = np.full((rows * 8 - 1, per_row), np.nan)
        for r in range(rows):
            part = grid[:, r * per_row : (r + 1) * per_row]
            stacked[r * 8 : r * 8 + 7, : part.shape[1]] = part
        grid = stacked

    import matplotlib as mpl

    # Quiet days in a faint neutral "under" colour (readable on light and dark styles), so the
    # colour scale is spent on the days with activity.
    try:
        colormap = mpl.colormaps.get_cmap(cmap)  # None: the style's image.cmap
    except (TypeError, ValueError):
        shown = repr(cmap) if isinstance(cmap, str) else type(cmap).__name__
        raise ConfigError(
            f"plot_calendar: cmap={shown} is not a colormap (a name such as 'viridis', or a "
            "matplotlib Colormap)"
        ) from None
    colormap = colormap.with_extremes(under=(0.5, 0.5, 0.5, 0.2), bad=(0, 0, 0, 0))
    positive = grid[np.isfinite(grid) & (grid > 0)]
    vmin = (1.0 if metric == "count" else float(positive.min())) if positive.size else 1.0
    vmax = max(float(positive.max()), vmin + 1e-9) if positive.size else vmin + 1.0
    image = ax.imshow(
        np.ma.masked_invalid(grid),
        cmap=colormap,
        aspect="equal",
        interpolation="nearest",
        origin="upper",
        vmin=vmin,
        vmax=vmax,
        extent=(-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5),
    )
    month_starts = np.asarray(days.day == 1)
    starts = days[month_starts]  # a year under its first month and every January
    if rows == 1:
        ax.set_yticks(range(7), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
        names = [
            f"{d:%b}\n{d:%Y}" if i == 0 or d.month == 1 else f"{d:%b}" for i, d in enumerate(starts)
        ]
        ax.set_xticks(col[month_starts], names)
    else:  # each block's months named above it, its weekdays beside it
        ticks = [(r * 8 + d, name) for r in range(rows) for d, name in ((0, "Mon"), (6, "Sun"))]
        ax.set_yticks([t for t, _ in ticks], [n for _, n in ticks])
        ax.set_xticks([])
        for i, (c, d) in enumerate(zip(col[month_starts], starts, strict=True)):
            r, x = divmod(int(c), per_row)
            name = f"{d:%b %Y}" if i == 0 or d.month == 1 or x < 2 else f"{d:%b}"
            ax.text(x - 0.5, r * 8 - 0.8, name, ha="left", va="bottom", size="small")
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    label = f"{what} per day" if metric == "count" else "quantity (units) per day"
    figure = ax.figure  # typed Optional by matplotlib 3.8; an Axes drawn on has one
    assert figure is not None
    bar = figure.colorbar(
        image, ax=ax, label=label, shrink=0.8, pad=0.01, extend="min", extendfrac=0.08
    )
    if metric == "count":
        from matplotlib.ticker import MaxNLocator

        bar.locator = MaxNLocator(integer=True)
        bar.update_ticks()
    if not np.nansum(daily):
        where = f"in {year}" if year is not None else "in range"
        no_data(ax, f"no transactions {where}", ticks=True)
    return ax


def _span(local: pd.Series, year: int | None, tz: str) -> tuple[pd.Period, pd.Period]:
    """The first and last month shown: those of the data (within ``year`` when given); a
    year the data does not reach, whole; no data, this month."""
    months = local.dt.to_period("M")
    if year is not None:
        months = months[months.dt.year == year]
        if not len(months):
            return pd.Period(f"{year}-01", "M"), pd.Period(f"{year}-12", "M")
    if not len(months):
        now = pd.Period(pd.Timestamp.now(tz=tz).tz_localize(None), "M")
        return now, now
    return months.min(), months.max()
