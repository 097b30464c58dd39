"""Pictures of inventory activity, drawn with matplotlib from invtools' DataFrames.

Every ``plot_*`` function takes the frame it draws (never a client: plots do not fetch),
an optional ``ax`` and returns the :class:`~matplotlib.axes.Axes` it drew on, the seaborn way:

- ``ax=None`` makes a new figure with :func:`matplotlib.pyplot.subplots` (constrained layout),
  so the picture shows inline in a notebook cell like any pyplot figure.
- Pass an ``ax`` to draw into your own figure: a grid of subplots, or a
  ``matplotlib.figure.Figure()`` inside an ipywidgets ``Output`` (a pyplot figure there shows
  twice under ``%matplotlib inline``). Nothing here calls ``plt.show()``.

Text and background colours come from rcParams, so ``plt.style.context("dark_background")``
works. Transaction types always get the same colours (:data:`TYPE_COLORS`).

The numbers behind :func:`plot_activity` come from :func:`activity_table`, a pure function
you can call to print the same figures as a table.

>>> import pandas as pd
>>> tx = pd.DataFrame({
...     "transaction_time": pd.to_datetime(
...         ["2026-03-02 09:00", "2026-03-03 10:00", "2026-03-18 11:00"], utc=True),
...     "type": ["in", "out", "out"],
...     "total_quantity": [5.0, 2.0, 1.0]})
>>> activity_table(tx, "W")
type                       in  out
period
2026-03-02 00:00:00+00:00   1    1
2026-03-09 00:00:00+00:00   0    0
2026-03-16 00:00:00+00:00   0    1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from invtools.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = [
    "TYPE_COLORS",
    "activity_table",
    "plot_activity",
    "plot_stock_history",
    "plot_calendar",
]

#: Fixed colours of the transaction types, the same in every picture (and readable on a dark
#: background): stock coming in is green, going out red, moves blue, adjustments purple.
TYPE_COLORS: dict[str, str] = {
    "in": "#2ca02c",
    "out": "#d62728",
    "move": "#1f77b4",
    "adjust": "#9467bd",
}
TYPE_ORDER = ("in", "out", "move", "adjust")
#: The bucket that holds every category outside the top N, and the label of missing values.
OTHER = "other"
NONE = "(none)"
# Mid grey reads on both white and black backgrounds.
_OTHER_COLOR = "0.6"
_OUT_OF_STOCK_COLOR = "#d62728"

#: Most items :func:`plot_stock_history` draws at once before the lines stop being readable.
MAX_STOCK_ITEMS = 8
#: Most periods :func:`plot_activity` draws as separate bars (one patch per period and
#: category). Beyond that, e.g. a year and a half by day, bars are a pixel or two wide and
#: thousands of patches take seconds to draw, so each category becomes one filled step area.
MAX_BAR_PERIODS = 120

_BY_CHOICES = ("type", "location", "partner", "item")
_METRICS = ("count", "quantity")
_KINDS = ("bar", "line")

# User-facing frequency -> (pandas Period frequency, singular noun for labels).
# Periods rather than resample bins: a period has an unambiguous start (weeks start on Monday)
# and ``period_range`` gives every period between two dates, so empty ones show as zero.
_FREQS: dict[str, tuple[str, str]] = {
    "D": ("D", "day"),
    "W": ("W-SUN", "week"),
    "M": ("M", "month"),
    "ME": ("M", "month"),
    "MS": ("M", "month"),
    "Q": ("Q-DEC", "quarter"),
    "QE": ("Q-DEC", "quarter"),
    "QS": ("Q-DEC", "quarter"),
    "Y": ("Y-DEC", "year"),
    "YE": ("Y-DEC", "year"),
    "YS": ("Y-DEC", "year"),
    "A": ("Y-DEC", "year"),
}
_WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")


# --------------------------------------------------------------------------------------------
# The numbers
# --------------------------------------------------------------------------------------------


def activity_table(
    df: pd.DataFrame,
    freq: str = "W",
    by: str | None = "type",
    metric: str = "count",
    top: int | None = 8,
    start: Any = None,
    end: Any = None,
    *,
    tz: str | None = None,
) -> pd.DataFrame:
    """Transaction activity per period and category: the numbers :func:`plot_activity` draws.

    ``df`` is a transactions frame (``transactions_df``: one row per transaction) or a lines
    frame (``lines_df``: one row per transaction line, with ``item_name`` and ``quantity``).

    - ``freq``: ``"D"``, ``"W"`` (weeks start on Monday), ``"M"`` (calendar months), also
      ``"Q"``, ``"Y"`` and the pandas spellings ``"ME"``, ``"MS"``, ``"W-SAT"``... (a
      ``"W-XXX"`` week *ends* on that day, as in pandas).
    - ``by``: ``"type"``, ``"location"`` (``to_location_name``: where stock came in, went out
      or was adjusted, the destination of a move; ``from_location_name`` when there is none),
      ``"partner"``, ``"item"`` (lines frames only), ``None`` (one column ``"all"``), or the
      name of any other column of ``df``. Missing values count as ``"(none)"``.
    - ``metric``: ``"count"`` (transactions, or lines for a lines frame) or ``"quantity"``:
      the sum of ``abs(total_quantity)`` (lines: ``abs(quantity)``). Absolute values because
      adjust quantities are signed and a correction of -5 is as much activity as +5; a missing
      quantity counts as 0.
    - ``top``: keep the ``top`` categories with the largest totals over the range, sum the rest
      into ``"other"``; ``None`` keeps all.
    - ``start``, ``end``: the range, both included (an ``end`` without a time of day includes
      that whole day); by default the first and last transaction. Every period of the range is
      a row, with zeros where nothing happened; the first and last periods count only what
      falls inside the range (``start="2026-03-04"`` by week leaves out 2 and 3 March).
    - ``tz``: the time zone periods are cut in (default UTC, the service's time zone); a shop
      in Seoul wants ``tz="Asia/Seoul"`` so that its days start at its midnight.

    Returns a DataFrame: index ``period`` (period start timestamps, tz-aware), one column per
    category (types in the order in/out/move/adjust, others largest first, then ``"other"``),
    int64 counts or float64 quantities. No rows in range and no ``start``/``end``: an empty
    frame.

    >>> import pandas as pd
    >>> lines = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-01-05", "2026-01-20", "2026-03-01"], utc=True),
    ...     "type": ["in", "adjust", "out"], "item_name": ["bolt", "bolt", "nut"],
    ...     "quantity": [10.0, -3.0, 4.0]})
    >>> activity_table(lines, "M", by="item", metric="quantity")
    item                       bolt  nut
    period
    2026-01-01 00:00:00+00:00  13.0  0.0
    2026-02-01 00:00:00+00:00   0.0  0.0
    2026-03-01 00:00:00+00:00   0.0  4.0
    """
    pfreq, _noun = _period_freq(freq)
    if metric not in _METRICS:
        raise ConfigError(f"metric={metric!r} is not one of {_choices(_METRICS)}.")
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer))
                            or top < 1):
        raise ConfigError(f"top={top!r} must be a positive whole number (or None for all).")
    tz = _tz(tz)
    times = _times(df, "activity_table")
    categories = _categories(df, by)
    values = _values(df, metric)

    lo, hi_excl, hi = _range(start, end, tz)
    keep = pd.Series(True, index=df.index)
    if lo is not None:
        keep &= times >= lo
    if hi_excl is not None:
        keep &= times < hi_excl
    elif hi is not None:
        keep &= times <= hi
    keep = keep.fillna(False).to_numpy(dtype=bool)
    # Wall-clock times in the chosen zone, naive: Period cannot hold a time zone.
    local = times[keep].dt.tz_convert(tz).dt.tz_localize(None)
    periods = local.dt.to_period(pfreq)

    seen = periods.dropna()  # a row without a time cannot be placed in any period
    first = pd.Period(lo.tz_convert(tz).tz_localize(None), pfreq) if lo is not None else (
        seen.min() if len(seen) else None)
    last = pd.Period(hi.tz_convert(tz).tz_localize(None), pfreq) if hi is not None else (
        seen.max() if len(seen) else None)
    if first is None or last is None:  # nothing in range and no explicit range
        return _empty_table(by, metric, tz)
    if last < first:
        raise ConfigError(f"end ({end!r}) is before start ({start!r}).")
    full = pd.period_range(first, last, freq=pfreq)

    frame = pd.DataFrame({"period": periods.array, "cat": categories[keep].to_numpy(),
                          "value": values[keep].to_numpy()})
    table = frame.pivot_table(index="period", columns="cat", values="value", aggfunc="sum",
                              fill_value=0, observed=True)
    table = table.reindex(full, fill_value=0)
    table = _top(table, top, by)
    table = table.astype("int64" if metric == "count" else "float64")
    table.index = _localize(full.start_time, tz)
    table.index.name = "period"
    table.columns = pd.Index([str(c) for c in table.columns], dtype=object,
                             name=by if by is not None else None)
    return table


def _empty_table(by: str | None, metric: str, tz: str) -> pd.DataFrame:
    index = pd.DatetimeIndex([], tz=tz, name="period")
    columns = pd.Index([], dtype=object, name=by)
    return pd.DataFrame(index=index, columns=columns,
                        dtype="int64" if metric == "count" else "float64")


def _period_freq(freq: str) -> tuple[str, str]:
    """Map a user frequency to a pandas Period frequency and a noun ("week")."""
    if not isinstance(freq, str):
        raise ConfigError(f"freq={freq!r} must be a string such as 'D', 'W' or 'M'.")
    key = freq.strip()
    upper = key.upper()
    if upper in _FREQS:
        return _FREQS[upper]
    if upper.startswith("W-") and upper[2:] in _WEEKDAYS:
        return upper, "week"
    raise ConfigError(
        f"freq={freq!r} is not a frequency plots understand; use 'D' (days), 'W' (weeks "
        "starting Monday), 'M' (months), 'Q' or 'Y', or a pandas spelling like 'ME' or 'W-SAT'."
    )


def _tz(tz: str | None) -> str:
    if tz is None:
        return "UTC"
    try:
        pd.Timestamp("2026-01-01", tz=tz)
    except Exception as exc:  # pandas raises several types for a bad zone name
        raise ConfigError(f"tz={tz!r} is not a time zone name (e.g. 'UTC', 'Europe/Paris').") from exc
    return tz


def _times(df: pd.DataFrame, who: str, column: str = "transaction_time") -> pd.Series:
    """The time column as tz-aware UTC datetimes (naive times are taken as UTC)."""
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{who} needs a pandas DataFrame, got {type(df).__name__}.")
    if column not in df.columns:
        raise ConfigError(
            f"{who} needs a {column!r} column; this frame has {_cols(df)}. Pass a frame from "
            "invtools.frames (transactions_df or lines_df) or client.transactions_df()."
        )
    col = df[column]
    if not pd.api.types.is_datetime64_any_dtype(col):
        try:
            col = pd.to_datetime(col, utc=True)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"column {column!r} does not hold dates/times: {exc}") from exc
    if getattr(col.dt, "tz", None) is None:
        col = col.dt.tz_localize("UTC")
    return col.dt.tz_convert("UTC")


def _is_lines(df: pd.DataFrame) -> bool:
    """A lines frame (one row per transaction line) rather than one row per transaction."""
    cols = set(df.columns)
    return "total_quantity" not in cols and bool(cols & {"item_id", "item_name", "quantity"})


def _categories(df: pd.DataFrame, by: str | None) -> pd.Series:
    """One label per row for the split ``by`` (plain Python strings, missing -> "(none)")."""
    if by is None:
        return pd.Series("all", index=df.index, dtype=object)
    if not isinstance(by, str):
        raise ConfigError(f"by={by!r} must be one of {_choices(_BY_CHOICES)}, None or a column name.")
    if by == "type":
        col = _need(df, "type", by)
    elif by == "location":
        to = df["to_location_name"] if "to_location_name" in df.columns else None
        frm = df["from_location_name"] if "from_location_name" in df.columns else None
        if to is None and frm is None:
            raise ConfigError(
                f"by='location' needs a 'to_location_name' or 'from_location_name' column; "
                f"this frame has {_cols(df)}."
            )
        col = to if frm is None else frm if to is None else to.astype(object).where(
            to.notna(), frm.astype(object))
    elif by == "partner":
        col = _need(df, "partner_name", by)
    elif by == "item":
        if "item_name" not in df.columns and "item_id" not in df.columns:
            raise ConfigError(
                "by='item' needs a lines frame (one row per transaction line, with 'item_name'), "
                "e.g. invtools.frames.lines_df(details); a transactions frame has one row per "
                "transaction and no items. Split it by 'type', 'location' or 'partner' instead."
            )
        col = df["item_name"] if "item_name" in df.columns else df["item_id"]
    elif by in df.columns:
        col = df[by]
    else:
        raise ConfigError(
            f"by={by!r} is not one of {_choices(_BY_CHOICES)} or None, nor a column of this "
            f"frame ({_cols(df)})."
        )
    # Vectorised to text (categories, ids, names alike), so labels are plain str.
    return col.astype("string").fillna(NONE).astype(object)


def _need(df: pd.DataFrame, column: str, by: str) -> pd.Series:
    if column not in df.columns:
        raise ConfigError(f"by={by!r} needs a {column!r} column; this frame has {_cols(df)}.")
    return df[column]


def _values(df: pd.DataFrame, metric: str) -> pd.Series:
    if metric == "count":
        return pd.Series(1, index=df.index, dtype="int64")
    column = "total_quantity" if "total_quantity" in df.columns else "quantity"
    if column not in df.columns:
        raise ConfigError(
            "metric='quantity' needs a 'total_quantity' column (transactions frame) or a "
            f"'quantity' column (lines frame); this frame has {_cols(df)}. Use metric='count'."
        )
    q = pd.to_numeric(df[column], errors="coerce").astype("float64")
    return q.abs().fillna(0.0)


def _range(start: Any, end: Any, tz: str):
    """(start, exclusive end or None, inclusive end) as UTC timestamps; naive values in ``tz``."""

    def ts(value: Any, name: str) -> pd.Timestamp | None:
        if value is None:
            return None
        try:
            t = pd.Timestamp(value)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{name}={value!r} is not a date or time: {exc}") from exc
        if t is pd.NaT:
            return None
        return (t.tz_localize(tz) if t.tzinfo is None else t).tz_convert("UTC")

    lo, hi = ts(start, "start"), ts(end, "end")
    hi_excl = None
    if hi is not None:
        local = hi.tz_convert(tz)
        if local == local.normalize():  # a date: include that whole day
            hi_excl = (local + pd.Timedelta(days=1)).tz_convert("UTC")
    if lo is not None and hi is not None and hi < lo:
        raise ConfigError(f"end ({end!r}) is before start ({start!r}).")
    return lo, hi_excl, hi


def _localize(index: pd.DatetimeIndex, tz: str) -> pd.DatetimeIndex:
    # Midnight does not exist (or exists twice) on DST days in a few zones: take the later one.
    return index.tz_localize(tz, nonexistent="shift_forward",
                             ambiguous=np.zeros(len(index), dtype=bool))


def _top(table: pd.DataFrame, top: int | None, by: str | None) -> pd.DataFrame:
    """Keep the ``top`` largest columns, sum the rest into "other"; order the columns."""
    totals = table.sum(axis=0)
    # Largest first, ties by name so the order (and the colours) never depend on input order.
    ranked = sorted(table.columns, key=lambda c: (-totals[c], str(c)))
    if top is not None and len(ranked) > top:
        kept, rest = ranked[:top], ranked[top:]
        out = table[kept].copy()
        other = table[rest].sum(axis=1)
        if OTHER in out.columns:  # a real category called "other": merge rather than clash
            out[OTHER] = out[OTHER] + other
        else:
            out[OTHER] = other
        table = out
        ranked = kept
    if by == "type":
        ranked = sorted(ranked, key=lambda c: TYPE_ORDER.index(c) if c in TYPE_ORDER else 99)
    order = [c for c in ranked if c != OTHER] + ([OTHER] if OTHER in table.columns else [])
    return table[order]


def _cols(df: pd.DataFrame) -> str:
    names = [str(c) for c in df.columns]
    shown = ", ".join(repr(n) for n in names[:12])
    return f"columns [{shown}{', ...' if len(names) > 12 else ''}]" if names else "no columns"


def _choices(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)


# --------------------------------------------------------------------------------------------
# Drawing helpers
# --------------------------------------------------------------------------------------------


def _new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # only here: importing invtools.plots never picks a backend

    _fig, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


def _colors(columns: Iterable[str], by: str | None) -> dict[str, Any]:
    """Fixed colours for types and "other"; the style's colour cycle for everything else."""
    import matplotlib as mpl

    cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]
    out: dict[str, Any] = {}
    i = 0
    for col in columns:
        if col == OTHER:
            out[col] = _OTHER_COLOR
        elif by == "type" and col in TYPE_COLORS:
            out[col] = TYPE_COLORS[col]
        else:
            out[col] = cycle[i % len(cycle)]
            i += 1
    return out


def _date_axis(ax: Axes) -> None:
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _legend_outside(ax: Axes, title: str | None = None) -> None:
    # Outside the plotting area, so it never hides a bar or a line.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title=title,
              frameon=False)


def _no_data(ax: Axes, message: str) -> None:
    # No colour given: the text takes the style's text colour (readable on dark themes too).
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center",
            fontsize="large", alpha=0.8)
    ax.set_xticks([])
    ax.set_yticks([])


# --------------------------------------------------------------------------------------------
# plot_activity
# --------------------------------------------------------------------------------------------


def plot_activity(
    df: pd.DataFrame,
    freq: str = "W",
    by: str | None = "type",
    metric: str = "count",
    *,
    top: int | None = 8,
    kind: str = "bar",
    start: Any = None,
    end: Any = None,
    tz: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Transaction activity over time: stacked bars (or lines) per period, split by category.

    Arguments as in :func:`activity_table`, which computes the numbers drawn (call it to see
    them as a table). ``kind="bar"`` stacks one bar per period across the period's width
    (``ax.containers``, one per category); above :data:`MAX_BAR_PERIODS` periods each category
    is instead one filled step area spanning whole periods (``ax.stairs``: a ``StepPatch`` per
    category in ``ax.patches``, whose ``get_data()`` gives the stack's top and baseline per
    period), the same picture at a fraction of the drawing time. ``kind="line"`` draws one
    line per category with a point at each period start. Periods without activity are drawn
    as zero, never skipped. With nothing in range the Axes says so instead of raising.

    ``ax=None`` draws on a new pyplot figure (shown inline in notebooks); pass an ``ax`` to
    draw elsewhere (e.g. on a ``matplotlib.figure.Figure()`` inside a widget).

    >>> import pandas as pd
    >>> tx = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-03-02", "2026-03-18"], utc=True),
    ...     "type": ["in", "out"], "total_quantity": [5.0, 2.0]})
    >>> ax = plot_activity(tx, "W", metric="quantity")
    >>> ax.get_ylabel(), [t.get_text() for t in ax.get_legend().get_texts()]
    ('quantity (units) per week', ['in', 'out'])
    """
    if kind not in _KINDS:
        raise ConfigError(f"kind={kind!r} is not one of {_choices(_KINDS)}.")
    table = activity_table(df, freq, by, metric, top, start, end, tz=tz)
    noun = _period_freq(freq)[1]
    what = ("lines" if _is_lines(df) else "transactions") if metric == "count" else "quantity"
    ax = _new_axes(ax, (10, 4))

    title = f"{'Transactions' if what == 'transactions' else what.capitalize()} per {noun}"
    if by is not None:
        title += f" by {by}"
    ax.set_title(title)
    ax.set_ylabel(f"{what} per {noun}" if metric == "count" else f"quantity (units) per {noun}")
    ax.set_xlabel(f"{noun} (starting)" if noun != "day" else "day")

    if table.empty or not table.to_numpy().any():
        _no_data(ax, "no transactions in range")
        return ax

    # Plot naive wall-clock times so tick labels show the period starts of the chosen zone.
    starts = table.index.tz_localize(None)
    periods = pd.PeriodIndex(starts, freq=_period_freq(freq)[0])
    widths = (periods + 1).start_time - periods.start_time
    colors = _colors(table.columns, by)

    if kind == "bar" and len(table) > MAX_BAR_PERIODS:
        # One artist per category instead of one per period: same stack, same colours and
        # legend; empty periods show as the baseline (nothing filled).
        edges = np.append(starts.to_numpy(), (starts[-1] + widths[-1]).to_numpy())
        bottom = np.zeros(len(table))
        for col in table.columns:
            top = bottom + table[col].to_numpy(dtype=float)
            ax.stairs(top, edges, baseline=bottom, fill=True, label=col, color=colors[col],
                      linewidth=0)
            bottom = top
        ax.set_xlim(edges[0], edges[-1])
    elif kind == "bar":
        bottom = np.zeros(len(table))
        x = (starts + widths * 0.1).to_numpy()
        w = (widths * 0.8).to_numpy()
        for col in table.columns:
            heights = table[col].to_numpy(dtype=float)
            ax.bar(x, heights, width=w, bottom=bottom, align="edge", label=col,
                   color=colors[col], linewidth=0)
            bottom = bottom + heights
        ax.set_xlim(starts[0].to_numpy(), (starts[-1] + widths[-1]).to_numpy())
    else:
        for col in table.columns:
            ax.plot(starts.to_numpy(), table[col].to_numpy(dtype=float), marker="o",
                    markersize=3, label=col, color=colors[col])
        if len(starts) > 1:  # a line's last point is at the last period's start
            ax.set_xlim(starts[0].to_numpy(), starts[-1].to_numpy())
    ax.set_ylim(bottom=0)
    if metric == "count":
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _date_axis(ax)
    if by is not None:
        _legend_outside(ax, title=by)
    return ax


# --------------------------------------------------------------------------------------------
# plot_stock_history
# --------------------------------------------------------------------------------------------


def plot_stock_history(
    history: pd.DataFrame,
    *,
    items: Any = None,
    min_stock: float | Mapping[Any, float] | None = None,
    tz: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Stock of one or a few items over time, as steps, with the moments it ran out.

    ``history`` is a ``stock_history`` frame (transaction_time, transaction_id, item_id,
    item_name, location_id, stock, change). Each item's stock is drawn as a step line
    (``drawstyle="steps-post"``: the level holds until the next transaction), from its first
    to its last recorded transaction. Points where stock is at or below zero get a red ``x``
    and the span until stock came back is shaded.

    - ``items``: item ids and/or names to draw (one or a list); default every item in
      ``history``. More than :data:`MAX_STOCK_ITEMS` raises :class:`ConfigError`: pick a few.
    - ``min_stock``: a dashed horizontal line at the minimum stock: one number for all items,
      or a mapping item id (or name) -> number, drawn in each item's colour (items not drawn
      are ignored, so a mapping for the whole catalogue is fine).
    - ``tz``: time zone of the x axis (default UTC).

    >>> import pandas as pd
    >>> h = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-03-01", "2026-03-05", "2026-03-09"], utc=True),
    ...     "item_id": [7, 7, 7], "item_name": ["bolt"] * 3, "stock": [10.0, 0.0, 6.0]})
    >>> ax = plot_stock_history(h, min_stock=4)
    >>> ax.get_ylabel(), ax.get_lines()[0].get_ydata().tolist()
    ('stock (units)', [10.0, 0.0, 6.0])
    """
    tz = _tz(tz)
    times = _times(history, "plot_stock_history")
    for column in ("item_id", "stock"):
        if column not in history.columns:
            raise ConfigError(
                f"plot_stock_history needs a {column!r} column; this frame has {_cols(history)}. "
                "Build it with invtools.frames.stock_history(lines)."
            )
    h = history.assign(_t=times.dt.tz_convert(tz).dt.tz_localize(None))
    names = h["item_name"] if "item_name" in h.columns else pd.Series(pd.NA, index=h.index)
    label_of = _item_labels(h["item_id"], names)

    wanted = _select_items(items, label_of, names, h["item_id"])
    ax = _new_axes(ax, (10, 4))
    ax.set_ylabel("stock (units)")
    ax.set_xlabel(f"time ({tz})")
    if not wanted:
        ax.set_title("Stock history")
        _no_data(ax, "no stock history")
        return ax
    ax.set_title(f"Stock of {label_of[wanted[0]]}" if len(wanted) == 1
                 else f"Stock of {len(wanted)} items")

    by_location = "location_id" in h.columns and h["location_id"].nunique(dropna=False) > 1
    import matplotlib as mpl

    cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]
    t_max = h.loc[h["item_id"].isin(wanted), "_t"].max()
    marked = False
    color_of: dict[Any, Any] = {}
    n = 0
    for item_id in wanted:
        rows = h[h["item_id"] == item_id]
        groups = rows.groupby("location_id", dropna=False, sort=True) if by_location else [(None, rows)]
        for loc, part in groups:
            part = part.sort_values("_t", kind="stable")
            color = cycle[n % len(cycle)]
            n += 1
            color_of.setdefault(item_id, color)
            label = label_of[item_id]
            if by_location:
                label += " (all locations)" if pd.isna(loc) else f" (location {loc})"
            x = part["_t"].to_numpy()
            y = pd.to_numeric(part["stock"], errors="coerce").to_numpy(dtype=float)
            ax.plot(x, y, drawstyle="steps-post", color=color, label=label)
            out = y <= 0
            if out.any():
                ax.plot(x[out], y[out], linestyle="none", marker="x", markersize=8,
                        markeredgewidth=2, color=_OUT_OF_STOCK_COLOR, zorder=3,
                        label=None if marked else "out of stock")
                marked = True
                for lo, hi in _runs(out):
                    right = x[hi + 1] if hi + 1 < len(x) else t_max
                    if right > x[lo]:
                        ax.axvspan(x[lo], right, color=_OUT_OF_STOCK_COLOR, alpha=0.12,
                                   linewidth=0)

    for item_id, level in _min_levels(min_stock, wanted, label_of, names, h["item_id"]):
        single = not isinstance(min_stock, Mapping)
        ax.axhline(level, linestyle="--", linewidth=1,
                   color=_OTHER_COLOR if single else color_of[item_id],
                   label=f"minimum stock ({level:g})" if single
                   else f"minimum {label_of[item_id]} ({level:g})")
    _date_axis(ax)
    _legend_outside(ax)
    return ax


def _item_labels(ids: pd.Series, names: pd.Series) -> dict[Any, str]:
    labels: dict[Any, str] = {}
    # One row per item (first seen, in frame order) rather than a Python loop over every row.
    first = pd.DataFrame({"id": ids, "name": names.astype(object)}).drop_duplicates("id")
    for item_id, name in zip(first["id"].tolist(), first["name"].tolist(), strict=True):
        if item_id is pd.NA or item_id in labels:
            continue
        labels[item_id] = str(name) if name is not None and not pd.isna(name) else f"item {item_id}"
    return labels


def _resolve_item(key: Any, label_of: dict[Any, str], names: pd.Series, ids: pd.Series):
    """An item id or name -> the item id, or None if this history does not have it."""
    if not isinstance(key, str) and key in label_of:
        return key
    if isinstance(key, str):
        hit = ids[names.astype(object) == key]
        if len(hit):
            return hit.iloc[0]
        if key.isdigit() and int(key) in label_of:
            return int(key)
    return None


def _select_items(items: Any, label_of, names, ids) -> list[Any]:
    if items is None:
        wanted = list(label_of)
    else:
        keys = [items] if isinstance(items, (str, int, np.integer)) else list(items)
        wanted = []
        for key in keys:
            item_id = _resolve_item(key, label_of, names, ids)
            if item_id is None:
                some = ", ".join(f"{i} {n!r}" for i, n in list(label_of.items())[:10])
                raise ConfigError(
                    f"item {key!r} is not in this stock history; it has {len(label_of)} items"
                    + (f": {some}{', ...' if len(label_of) > 10 else ''}" if some else "")
                    + ". Pass item ids or names from that list."
                )
            if item_id not in wanted:
                wanted.append(item_id)
    if len(wanted) > MAX_STOCK_ITEMS:
        some = ", ".join(f"{i} {label_of[i]!r}" for i in wanted[:5])
        raise ConfigError(
            f"{len(wanted)} items are too many lines for one picture; pick at most "
            f"{MAX_STOCK_ITEMS} with items=[...] (ids or names), e.g. items=[{wanted[0]!r}, ...]. "
            f"First items: {some}, ..."
        )
    return wanted


def _min_levels(min_stock, wanted, label_of, names, ids):
    if min_stock is None:
        return []
    if isinstance(min_stock, Mapping):
        out = []
        for key, level in min_stock.items():
            item_id = _resolve_item(key, label_of, names, ids)
            if item_id in wanted and level is not None and not pd.isna(level):
                out.append((item_id, float(level)))
        return out
    try:
        return [(None, float(min_stock))]
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"min_stock={min_stock!r} must be a number or a mapping item id -> number."
        ) from exc


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges (first, last) of the consecutive True runs in ``mask``."""
    runs, start = [], None
    for i, flag in enumerate(mask):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(mask) - 1))
    return runs


# --------------------------------------------------------------------------------------------
# plot_calendar
# --------------------------------------------------------------------------------------------


def plot_calendar(
    df: pd.DataFrame,
    metric: str = "count",
    *,
    year: int | None = None,
    tz: str | None = None,
    cmap: Any = None,
    ax: Axes | None = None,
) -> Axes:
    """A calendar heatmap of daily activity: one column per week, one row per weekday.

    Why this picture: a year of days at a glance shows what bar charts smooth away: the weekly
    rhythm (which weekdays goods go out), holidays and closures (blank weeks), the stock-take
    day (one dark cell), seasonality, and gaps where nobody recorded anything, the first thing
    to rule out before trusting any total.

    ``df`` and ``metric`` as in :func:`activity_table` (count of transactions or lines, or
    absolute quantity). ``year``: the calendar year shown (default: the latest year in ``df``).
    Days are cut in ``tz`` (default UTC). ``cmap`` defaults to the style's ``image.cmap``.
    Days without activity are a faint grey (the colour bar's lower end); days outside the
    span ``df`` covers (before its first or after its last transaction) are left blank, since
    nothing is known about them.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-01", "2026-06-15"], utc=True)})
    >>> ax = plot_calendar(tx)
    >>> int(ax.images[0].get_array().sum()), ax.get_title()
    (3, 'Transactions per day, 2026')
    """
    tz = _tz(tz)
    times = _times(df, "plot_calendar")
    if year is None:
        local = times.dropna().dt.tz_convert(tz)
        year = int(local.dt.year.max()) if len(local) else pd.Timestamp.now(tz=tz).year
    elif isinstance(year, bool) or not isinstance(year, (int, np.integer)):
        raise ConfigError(f"year={year!r} must be a whole number such as 2026.")
    year = int(year)
    table = activity_table(df, "D", None, metric, None, f"{year}-01-01", f"{year}-12-31", tz=tz)
    what = ("lines" if _is_lines(df) else "transactions") if metric == "count" else "quantity"
    ax = _new_axes(ax, (12, 2.8))
    ax.set_title(f"{'Transactions' if what == 'transactions' else what.capitalize()} per day, {year}")

    days = table.index.tz_localize(None)
    daily = table.iloc[:, 0].to_numpy(dtype=float) if table.shape[1] else np.zeros(len(days))
    # Days outside the span the frame covers are unknown, not quiet: leave them blank.
    local = times.dropna().dt.tz_convert(tz).dt.tz_localize(None).dt.normalize()
    if len(local):
        covered = (days >= local.min()) & (days <= local.max())
        daily = np.where(covered, daily, np.nan)
    first_monday = days[0] - pd.Timedelta(days=days[0].day_of_week)
    col = np.asarray((days - first_monday).days // 7)
    row = np.asarray(days.day_of_week)
    grid = np.full((7, int(col.max()) + 1), np.nan)
    grid[row, col] = daily

    import matplotlib as mpl

    # Quiet days in a faint neutral "under" colour (readable on light and dark styles), so the
    # colour scale is spent on the days with activity.
    colormap = mpl.colormaps[cmap or mpl.rcParams["image.cmap"]] if not isinstance(
        cmap, mpl.colors.Colormap) else cmap
    colormap = colormap.with_extremes(under=(0.5, 0.5, 0.5, 0.2), bad=(0, 0, 0, 0))
    positive = grid[np.isfinite(grid) & (grid > 0)]
    vmin = (1.0 if metric == "count" else float(positive.min())) if positive.size else 1.0
    vmax = max(float(positive.max()), vmin + 1e-9) if positive.size else vmin + 1.0
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=colormap, aspect="equal",
                      interpolation="nearest", origin="upper", vmin=vmin, vmax=vmax,
                      extent=(-0.5, grid.shape[1] - 0.5, 6.5, -0.5))
    ax.set_yticks(range(7), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
    month_starts = [d for d in days if d.day == 1]
    ax.set_xticks([int((d - first_monday).days // 7) for d in month_starts],
                  [d.strftime("%b") for d in month_starts])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    label = f"{what} per day" if metric == "count" else "quantity (units) per day"
    bar = ax.figure.colorbar(image, ax=ax, label=label, shrink=0.8, pad=0.01, extend="min",
                             extendfrac=0.08)
    if metric == "count":
        from matplotlib.ticker import MaxNLocator

        bar.locator = MaxNLocator(integer=True)
        bar.update_ticks()
    if not np.nansum(daily):
        ax.text(0.5, 0.5, f"no transactions in {year}", transform=ax.transAxes, ha="center",
                va="center", fontsize="large")
    return ax
