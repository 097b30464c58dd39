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

What lives here:

- :mod:`~invtools.viz.tables`: :func:`activity_table` and the pure helpers it needs
  (categories, values, the range, top N). No matplotlib.
- :mod:`~invtools.viz.common`: what every plot shares (a frame's times, frequencies, time
  zones, the words of errors). Pure.
- :mod:`~invtools.viz.rows`: which rows a picture counts: :func:`opening_counts` (the
  stocktake a record starts with: :func:`invtools.frames.opening_counts`, a frame's
  ``opening_count`` column) and :func:`partner_types` (supplier or customer). Pure.
- :mod:`~invtools.viz.style`: :data:`TYPE_COLORS`, a new Axes, the date axis, the legend,
  the no-data text.
- :mod:`~invtools.viz.activity`: :func:`plot_activity` (and :data:`MAX_BAR_PERIODS`).
- :mod:`~invtools.viz.stock`: :func:`plot_stock_history` and its item selection (and
  :data:`MAX_STOCK_ITEMS`).
- :mod:`~invtools.viz.calendar`: :func:`plot_calendar`.
- :mod:`~invtools.viz.value`: :func:`plot_stock_value` (the stock's value month by month).
- :mod:`~invtools.viz.flows`: :func:`plot_transfers` (the stock moved between locations, from
  :func:`invtools.analysis.transfer_flows`).

What it may import: pandas, numpy, matplotlib (inside functions only, so importing
``invtools.viz`` picks no backend), :mod:`invtools.frames` and the foundation
(``invtools.errors``, ``invtools._types``, ...). Never :mod:`invtools.api`: plots draw
frames, they never fetch.

>>> import pandas as pd
>>> tx = pd.DataFrame({
...     "transaction_time": pd.to_datetime(
...         ["2026-03-02 09:00", "2026-03-03 10:00", "2026-03-18 11:00"], utc=True),
...     "type": ["in", "out", "out"],
...     "total_quantity": [5.0, 2.0, 1.0]})
>>> activity_table(tx, "W")  # doctest: +NORMALIZE_WHITESPACE
type                       in  out
period
2026-03-02 00:00:00+00:00   1    1
2026-03-09 00:00:00+00:00   0    0
2026-03-16 00:00:00+00:00   0    1
"""

from __future__ import annotations

from invtools.viz.activity import MAX_BAR_PERIODS, plot_activity
from invtools.viz.calendar import plot_calendar
from invtools.viz.flows import plot_transfers
from invtools.viz.rows import opening_counts, partner_types
from invtools.viz.stock import MAX_STOCK_ITEMS, plot_stock_history
from invtools.viz.style import TYPE_COLORS
from invtools.viz.tables import activity_table
from invtools.viz.value import plot_stock_value

__all__ = [
    "TYPE_COLORS",
    "MAX_BAR_PERIODS",
    "MAX_STOCK_ITEMS",
    "activity_table",
    "opening_counts",
    "partner_types",
    "plot_activity",
    "plot_stock_history",
    "plot_calendar",
    "plot_stock_value",
    "plot_transfers",
]
