"""The activity explorer: :func:`~invtools.viz.plot_activity` with controls.

:class:`ActivityExplorer` (made by :func:`activity_explorer` from a
frame or a client's window) wraps the plot with controls for the date range, frequency, metric
(and whether quantities are absolute or signed), split (suppliers and customers apart),
transaction types, opening stock counts left out or not, and chart kind, and a summary that
follows every change and says what it counts. It is an ipywidgets ``VBox``: display it by
leaving it last in a cell.

The explorer draws on its own ``matplotlib.figure.Figure`` (never pyplot, so nothing shows
twice under ``%matplotlib inline``) and shows it as PNG bytes in an ``Image`` widget: that
renders the same in JupyterLab, in a notebook saved with widget state and in exported HTML,
whatever matplotlib backend the kernel uses.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import ipywidgets as widgets
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from invtools._types import parse_time
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames import window_of
from invtools.notebook.controls import TypeChoice, inline_label
from invtools.viz import activity_table, opening_counts, plot_activity
from invtools.viz.common import check_tz

__all__ = ["ActivityExplorer", "activity_explorer"]

_FREQ_OPTIONS = (("day", "D"), ("week", "W"), ("month", "M"))
_PERIOD_FORMAT = {"D": "%a %Y-%m-%d", "W": "week of %Y-%m-%d", "M": "%B %Y"}
#: What the total line says each quantity view counts.
_UNITS_SAID = {
    False: "absolute: an adjustment of -5 counts as 5",
    True: "signed: as recorded, an adjustment of -5 subtracts 5",
}
_LEAVE_OUT = "Leave out opening stock counts"


class ActivityExplorer(widgets.VBox):
    """Transaction activity with controls; see :func:`activity_explorer`.

    Controls (set their ``.value`` from code too): ``since``, ``until`` (DatePicker, bounded
    by the frame's first and last day), ``freq`` ("D"/"W"/"M"), ``metric``
    ("count"/"quantity"), ``units`` ("absolute"/"signed", for quantities), ``by``
    ("type"/"location"/"supplier"/"customer", "item" with lines), ``types`` (a
    :class:`~invtools.notebook.controls.TypeChoice`: a tuple of in/out/move/adjust),
    ``exclude_counts`` (bool: leave out opening stock counts),
    ``kind`` ("bar"/"line"). After each change: ``figure`` and ``ax`` (what is drawn),
    ``table`` (the numbers per period, from :func:`~invtools.viz.activity_table`),
    ``summary`` (totals per category in the range), ``busiest`` ((period start, value) or
    None), ``image`` (the PNG shown), ``summary_html``, ``message`` (errors, if any).
    """

    def __init__(
        self,
        data: pd.DataFrame,
        *,
        lines: pd.DataFrame | None = None,
        tz: str | None = None,
        top: int | None = 8,
    ) -> None:
        if not isinstance(data, pd.DataFrame):
            raise ArgumentTypeError(
                f"activity_explorer needs a transactions DataFrame or a Client, "
                f"not {type(data).__name__}"
            )
        if lines is not None and not isinstance(lines, pd.DataFrame):
            raise ArgumentTypeError(
                f"activity_explorer: lines must be a lines DataFrame "
                f"(invtools.frames.lines_df) or None, not {type(lines).__name__}"
            )
        self.data = data
        self.lines = lines
        self.tz = tz or "UTC"
        self.top = top
        self.figure = Figure(figsize=(10.0, 4.0), layout="constrained")
        # table, summary and busiest: set by redraw() (at the end)
        self.busiest: tuple[pd.Timestamp, float] | None = None
        self.redraws = 0
        self._held = 0
        # The opening stock counts of the transactions (False) and of the item frame (True).
        self._flags: dict[bool, np.ndarray] = {}
        has_items = "item_name" in data.columns or "item_id" in data.columns
        self._item_frame = lines if lines is not None else (data if has_items else None)
        # The range follows the frame: its first and last day are the pickers' bounds and the
        # default range (a frame fetched with since= is not drawn over the lines' whole past).
        first, last = self._date_bounds()
        days = {"min": first, "max": last, "layout": {"width": "18em"}}
        self.since = widgets.DatePicker(value=first, description="From", **days)
        self.until = widgets.DatePicker(value=last, description="To", **days)
        narrow, wide = {"button_width": "5em"}, {"button_width": "6em"}
        self.freq = widgets.ToggleButtons(options=_FREQ_OPTIONS, value="W", style=narrow)
        self.metric = widgets.ToggleButtons(options=("count", "quantity"), style=wide)
        self.units = widgets.ToggleButtons(
            options=("absolute", "signed"),
            style=wide,
            tooltips=(
                "Every quantity as positive: a count that found 5 fewer adds 5",
                "As recorded: a count that found 5 fewer subtracts 5",
            ),
        )
        # Suppliers and customers apart: one legend of delivery partners, one of buyers.
        splits = ["type", "location", "supplier", "customer"]
        if self._item_frame is not None:
            splits.append("item")
        self.by = widgets.Dropdown(options=splits, description="Split by", layout={"width": "14em"})
        self.types = TypeChoice()
        self.exclude_counts = widgets.Checkbox(
            description=_LEAVE_OUT,
            indent=False,
            layout={"width": "auto", "margin": "0 0 0 2em", "flex": "0 0 auto"},
        )
        self.kind = widgets.ToggleButtons(
            options=(("bars", "bar"), ("lines", "line")), style=narrow
        )
        self.image = widgets.Image(format="png", layout={"max_width": "100%"})
        self.summary_html = widgets.HTML()
        self.message = widgets.HTML()
        rows = [
            [self.since, self.until, self.by],
            # ToggleButtons' own descriptions sit above their buttons in JupyterLab 4.
            [inline_label("Per"), self.freq, inline_label("Chart"), self.kind],
            [inline_label("Metric"), self.metric, inline_label("Units"), self.units],
            [self.types, self.exclude_counts],
        ]
        row, wraps = {"align_items": "center"}, {"align_items": "center", "flex_flow": "row wrap"}
        # The Types row wraps in a narrow output (the docs site's column) rather than cutting
        # the checkboxes' names short; the others shrink their buttons onto two lines.
        controls = widgets.VBox(
            [widgets.HBox(r, layout=wraps if r[0] is self.types else row) for r in rows]
        )
        super().__init__(children=[controls, self.message, self.image, self.summary_html])
        for control in itertools.chain(*rows):  # each redraws on change (labels never change)
            control.observe(self._on_control, names="value")
        self.redraw()

    # -- public

    @property
    def ax(self):
        """The Axes of the current picture."""
        return self.figure.axes[0] if self.figure.axes else None

    def frame(self) -> pd.DataFrame:
        """The rows currently counted: the lines frame when split by item, else the
        transactions, keeping only the chosen types and, with ``exclude_counts`` ticked,
        leaving out the opening stock counts (the date range is applied by
        :func:`~invtools.viz.activity_table`: ``activity_table(ex.frame(), **ex.settings())``
        is ``ex.table``)."""
        df = self._base()
        if self.exclude_counts.value:
            df = df[~self._openings(df)]
        return self._of_types(df)

    def settings(self) -> dict[str, Any]:
        """The arguments :func:`~invtools.viz.activity_table` gets for the current controls."""
        controls = ("freq", "by", "metric", "since", "until")  # each named as its argument
        chosen = {name: getattr(self, name).value for name in controls}
        return {**chosen, "top": self.top, "tz": self.tz, "signed": self.signed}

    @property
    def signed(self) -> bool:
        """Whether quantities are counted as recorded (the Units control on "signed")."""
        return self.units.value == "signed"

    @contextmanager
    def hold(self) -> Iterator[ActivityExplorer]:
        """Change several controls with one redraw at the end:
        ``with ex.hold(): ex.freq.value = "M"; ex.by.value = "supplier"``."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
            if not self._held:
                self.redraw()

    def redraw(self) -> None:
        """Recompute the table and the picture from the controls (called on every change)."""
        self.units.disabled = self.metric.value != "quantity"  # counts have no sign
        df = self.frame()
        s = self.settings()
        self.figure.clear()
        ax = self.figure.add_subplot()
        try:
            if s["since"] is not None and s["until"] is not None and s["since"] > s["until"]:
                raise ConfigError(
                    f"Start {s['since'].isoformat()} is after end {s['until'].isoformat()}: "
                    "choose a start on or before the end."
                )
            self.table = activity_table(df, **s)
            plot_activity(df, **s, kind=self.kind.value, ax=ax)
            if self.exclude_counts.value:  # the picture says so too, not only the summary
                ax.set_title(f"{ax.get_title()}, without opening stock counts")
        except ConfigError as exc:
            self.table = pd.DataFrame()
            self.message.value = f"<span style='color:#d62728'>✗ {html.escape(str(exc))}</span>"
            ax.text(
                0.5, 0.5, "see the message above", transform=ax.transAxes, ha="center", va="center"
            )
            ax.set_axis_off()
        else:
            self.message.value = ""
        self._summarise()
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=100)
        self.image.value = buf.getvalue()
        self.redraws += 1

    def __repr__(self) -> str:
        s = {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in self.settings().items()}
        lines = None if self.lines is None else len(self.lines)
        kind = self.kind.value
        return (
            f"ActivityExplorer(rows={len(self.data)}, lines={lines}, settings={s!r}, kind={kind!r})"
        )

    # -- internals

    def _on_control(self, _change: dict) -> None:
        if not self._held:
            self.redraw()

    def _base(self) -> pd.DataFrame:
        """The item frame when split by item (offered only when there is one), else the data."""
        if self.by.value == "item" and self._item_frame is not None:
            return self._item_frame
        return self.data

    def _of_types(self, df: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``df`` of the chosen transaction types."""
        return df[df["type"].astype(object).isin(self.types.value)] if "type" in df.columns else df

    def _openings(self, df: pd.DataFrame) -> np.ndarray:
        """Which rows of ``df`` (the data or the item frame) are opening stock counts
        (:func:`~invtools.viz.opening_counts`); for the lines, also the lines of the
        transactions flagged in the transactions frame (lines built by hand have no memo, nor
        the frames' ``opening_count``). Worked
        out once per frame: the frames never change."""
        lines = df is not self.data
        if lines not in self._flags:
            flagged = np.zeros(len(df), dtype=bool)
            if {"type", "transaction_time"} <= set(df.columns):
                flagged = opening_counts(df).to_numpy(dtype=bool)
            if lines and "transaction_id" in df.columns and "transaction_id" in self.data:
                ids = self.data.loc[self._openings(self.data), "transaction_id"]
                flagged = flagged | df["transaction_id"].isin(ids).to_numpy(bool)
            self._flags[lines] = flagged
        return self._flags[lines]

    def _counts_note(self, grand: float) -> str:
        """A line on the opening stock counts in view: how many were left out, or, in a
        quantity view that includes them, how much of the total they are."""
        if self.by.value in ("supplier", "customer"):  # adjustments have no partner
            return ""
        base = self._base()
        rows = self._of_types(base[self._openings(base)])
        # (a table was drawn, so the frame has times)
        times = pd.to_datetime(rows["transaction_time"], utc=True).dt.tz_convert(self.tz)
        since, until = self.since.value or dt.date.min, self.until.value or dt.date.max
        rows = rows[times.dt.date.between(since, until).to_numpy(dtype=bool)]
        if rows.empty:
            return ""
        n = rows["transaction_id"].nunique() if "transaction_id" in rows.columns else len(rows)
        column = "total_quantity" if "total_quantity" in rows.columns else "quantity"
        q = pd.to_numeric(rows[column], errors="coerce") if column in rows.columns else None
        units = 0.0 if q is None else float((q if self.signed else q.abs()).sum())
        counts = f"{n} opening stock count{'s' if n != 1 else ''}"
        if self.exclude_counts.value:
            return f"<br><i>Left out: {counts} ({units:,.0f} units).</i>"
        if self.metric.value != "quantity" or not grand:
            return ""
        return (
            f"<br><i>Includes {counts}: {units:,.0f} units, {units / grand:.0%} of the "
            f"total. Tick \u201c{_LEAVE_OUT}\u201d to see the trade without them.</i>"
        )

    def _date_bounds(self) -> tuple[dt.date | None, dt.date | None]:
        """The first and last day (in ``tz``) of the frame's transaction times; of the lines
        only when the frame has none."""
        for frame in (self.data, self._item_frame):
            if frame is None or "transaction_time" not in frame.columns:
                continue
            times = pd.to_datetime(frame["transaction_time"], utc=True).dt.tz_convert(self.tz)
            if times.notna().any():
                return times.min().date(), times.max().date()
        return None, None

    def _summarise(self) -> None:
        table = self.table
        metric = self.metric.value
        if table.empty:
            self.summary = pd.DataFrame({metric: []})
            self.busiest = None
            self.summary_html.value = "<i>Nothing to summarise in this range.</i>"
            return
        totals = table.sum(axis=0)
        grand = totals.sum()
        # Signed totals can cancel out: their shares are of the units either way.
        weight = totals.abs() if self.signed else totals
        share = weight / weight.sum() if weight.sum() else totals * 0.0
        self.summary = pd.DataFrame({metric: totals, "share": share})  # index: the categories
        counted = "lines" if self.by.value == "item" else "transactions"
        unit = "units" if metric == "quantity" else counted
        said = f"{grand:,.0f} {unit}"
        if self.by.value in ("supplier", "customer"):
            said += f" with a {self.by.value}"
        shown = self.summary.assign(share=self.summary["share"].map("{:.0%}".format))
        if metric == "quantity":
            said += f" ({_UNITS_SAID[self.signed]})"
            shown[metric] = shown[metric].map("{:,.0f}".format)
        noun = self.freq.label
        per_period = table.sum(axis=1)  # the index holds the period starts
        start, most = cast(pd.Timestamp, per_period.idxmax()), per_period.max()
        self.busiest = (start, most) if grand else None
        period = start.strftime(_PERIOD_FORMAT[self.freq.value])
        busiest = f"{period} ({most:,.0f} {unit})" if grand else "none"
        self.summary_html.value = (
            f"<b>Total:</b> {html.escape(said)} in {len(table)} {noun}(s) &nbsp; "
            f"<b>Busiest {noun}:</b> {html.escape(busiest)}"
            + self._counts_note(grand)
            + shown.reset_index().to_html(
                escape=True, border=0, index=False, classes="invtools-summary"
            )
        )


def activity_explorer(
    df_or_client: Any,
    *,
    since: Any = None,
    until: Any = None,
    lines: pd.DataFrame | None = None,
    tz: str | None = None,
    top: int | None = 8,
) -> ActivityExplorer:
    """Explore transaction activity: :func:`~invtools.viz.plot_activity` with controls.

    ``df_or_client``: a transactions frame (``client.transactions_df()`` or
    :func:`invtools.frames.transactions_df`; no network), or a Client, whose transactions are
    fetched once (with a progress bar; cached like every request). ``lines``: a lines frame
    (:func:`invtools.frames.lines_df`) to allow splitting by item. ``tz``: the time zone days
    and weeks are cut in (default UTC); ``top``: most categories drawn, the rest is "other".

    ``since``/``until``: the window, spelled as for the client's methods -- a duration back
    from now (``"90D"``, ``"12W"``, a ``Timedelta``), a month (``"2026-10"``: all of it), a
    date, a time. A Client is asked for that window only (``client.transactions_df(since=...,
    until=...)``: the values are passed through as given, or, with a ``tz`` other than UTC,
    as the moments they stand for in ``tz``); a frame, and ``lines``, are cut to it. Dates
    and months are days of ``tz``.

    Controls: date range (from the frame's first to its last day, which are also the furthest
    the pickers go: a frame fetched with ``since=`` is explored from then, even split by item
    over longer ``lines``), per day/week/month, count or quantity, units absolute or signed
    (quantities), split by type/location/supplier/customer(/item: suppliers and customers
    never share a legend), transaction types (checkboxes), leave out the opening stock counts
    (:func:`~invtools.viz.opening_counts`), bars or lines. A start after the end is a message
    in words, not an exception. The picture and a summary (totals per category, the total --
    saying whether units are absolute or signed -- the busiest period, and the opening stock
    counts left out or, in a quantity view, their share) follow every change; the same
    numbers are in ``explorer.table`` and ``explorer.summary``.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-03-18"],
    ...                                                       utc=True),
    ...                    "type": ["in", "out"], "total_quantity": [5.0, 2.0]})
    >>> ex = activity_explorer(tx)
    >>> ex.freq.value = "M"
    >>> ex.table.to_dict("list")
    {'in': [1], 'out': [1]}
    >>> ex.metric.value = "quantity"
    >>> ex.units.value = "signed"
    >>> ex.summary_html.value.split(" in ")[0]
    '<b>Total:</b> 7 units (signed: as recorded, an adjustment of -5 subtracts 5)'
    >>> activity_explorer(tx, since="2026-03-10").data["type"].tolist()   # or "90D", "2026-03"
    ['out']
    """
    check_tz(tz, "activity_explorer")
    client = hasattr(df_or_client, "team") and hasattr(df_or_client, "transactions")
    if client and isinstance(df_or_client, type):  # the class itself, not a client of it
        raise ArgumentTypeError(
            f"activity_explorer: {df_or_client.__name__} is the class; pass a client made "
            "from it (invtools.connect(), or Client(token)) or a transactions frame"
        )
    # durations back from the client's clock, or the end of the frame's window (one "now")
    window = None if client else window_of(df_or_client)
    now = df_or_client.now if client else None if window is None else window[1].to_pydatetime()
    lo = parse_time(since, name="activity_explorer: since", tz=tz, now=now)
    hi = parse_time(until, end=True, name="activity_explorer: until", tz=tz, now=now)
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(
            f"activity_explorer: since={since!r} ({lo:%Y-%m-%d %H:%M} UTC) is "
            f"after until={until!r} ({hi:%Y-%m-%d %H:%M} UTC); give a since on "
            "or before the until"
        )
    if client:
        if tz not in (None, "UTC"):  # the client reads dates in UTC: give it the moments
            since, until = lo, hi
        data = df_or_client.transactions_df(since=since, until=until)
    else:
        data = _window(df_or_client, lo, hi)
    lines = _window(lines, lo, hi, "lines")  # None stays None
    return ActivityExplorer(data, lines=lines, tz=tz, top=top)


def _window(df: Any, lo: Any, hi: Any, what: str = "the frame") -> Any:
    """The rows of ``df`` from ``lo`` to ``hi`` (aware datetimes or None) by their
    ``transaction_time``; ``df`` unchanged without a window (or when it is no frame: the
    explorer says so)."""
    if (lo is None and hi is None) or not isinstance(df, pd.DataFrame):
        return df
    if "transaction_time" not in df.columns:
        raise ConfigError(
            f"activity_explorer: since/until cut {what} by its transaction_time "
            f"column, which it has not"
        )
    times = pd.to_datetime(df["transaction_time"], utc=True)
    return df[times.between(lo or times.min(), hi or times.max()).to_numpy(dtype=bool)]
