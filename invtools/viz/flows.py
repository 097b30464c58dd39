"""plot_transfers: the stock moved between locations, one bar per from -> to pair.

Draws :func:`invtools.analysis.transfer_flows`'s frame: a horizontal bar per pair of
locations, the largest on top, each bar saying its units, moves and items.

>>> flow_label("Warehouse North", "Shop floor")
'Warehouse North → Shop floor'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from invtools._config import check_kind
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.viz.common import choices_text, columns_text
from invtools.viz.style import TYPE_COLORS, new_axes, no_data

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_transfers", "FLOW_VALUES"]

#: ``value=`` -> the words of the axis and the title.
FLOW_VALUES = {"units": "units moved", "transactions": "moves", "items": "distinct items moved"}
_TITLES = {"units": "Units moved", "transactions": "Moves", "items": "Items moved"}
_COLUMNS = ("from_location_name", "to_location_name", *FLOW_VALUES)


def flow_label(source: Any, destination: Any) -> str:
    """``"A → B"``: a pair of locations as a bar names it (a missing name: ``"(none)"``)."""
    named = ["(none)" if pd.isna(x) else str(x) for x in (source, destination)]
    return f"{named[0]} → {named[1]}"


def plot_transfers(
    flows: pd.DataFrame, value: str = "units", *, top: int | None = 20, ax: Axes | None = None
) -> Axes:
    """The stock moved between locations: one horizontal bar per (from, to) pair of
    :func:`invtools.analysis.transfer_flows`'s frame, the largest on top, in the colour moves
    have in every picture (:data:`~invtools.viz.TYPE_COLORS`).

    ``value``: what the bars measure, ``"units"`` (default), ``"transactions"`` (moves) or
    ``"items"`` (distinct items); each bar is labelled with all three ("1,204 units · 87
    moves · 45 items"). ``top``: at most that many pairs, the largest (the title says "the 20
    largest of 34"); None draws them all. The title says the span of the moves drawn (their
    first and last ``first_move``/``last_move``, when the frame has them).

    >>> import pandas as pd
    >>> flows = pd.DataFrame({"from_location_name": ["North", "South"],
    ...                       "to_location_name": ["Shop", "Shop"],
    ...                       "units": [120.0, 80.0], "transactions": [9, 7], "items": [6, 5]})
    >>> ax = plot_transfers(flows)
    >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_title()
    (['North → Shop', 'South → Shop'], 'Units moved between locations')
    """
    who = "plot_transfers"
    if not isinstance(flows, pd.DataFrame):
        raise ArgumentTypeError(
            f"{who}: flows must be a DataFrame from analysis.transfer_flows(lines), got "
            f"{type(flows).__name__}"
        )
    missing = [c for c in _COLUMNS if c not in flows.columns]
    if missing:
        raise ConfigError(
            f"{who}: flows needs the column(s) {missing}; it has {columns_text(flows)}. Build it "
            "with invtools.analysis.transfer_flows(client.lines_df())."
        )
    if not isinstance(value, str) or value not in FLOW_VALUES:
        raise ConfigError(f"{who}: value={value!r} must be one of {choices_text(FLOW_VALUES)}.")
    check_kind(top, (int, type(None)), f"{who}: top", "a whole number of pairs, or None for all")
    if top is not None and (isinstance(top, bool) or top < 1):
        raise ConfigError(f"{who}: top={top!r} must be 1 or more (or None for every pair).")
    ranked = flows.assign(_v=pd.to_numeric(flows[value], errors="coerce").fillna(0.0))
    ranked = ranked.sort_values("_v", ascending=False, kind="stable")
    shown = ranked if top is None else ranked.head(top)
    rows = len(shown)
    ax = new_axes(ax, (9.0, float(np.clip(1.2 + 0.36 * rows, 2.4, 9.0))))
    title = f"{_TITLES[value]} between locations"
    if rows < len(flows):
        title += f", the {rows} largest of {len(flows)} pairs"
    title += _span(shown)
    ax.set_title(title)
    ax.set_xlabel(FLOW_VALUES[value])
    if not rows:
        no_data(ax, "no moves between locations")
        return ax
    labels = [
        flow_label(a, b)
        for a, b in zip(shown["from_location_name"], shown["to_location_name"], strict=True)
    ]
    at = np.arange(rows)
    ax.barh(at, shown["_v"].to_numpy(dtype=float), color=TYPE_COLORS["move"], height=0.6)
    ax.set_yticks(at, labels)
    ax.set_ylim(rows - 0.5, -0.5)  # the largest on top, no empty band above or below
    for y, (_, row) in zip(at, shown.iterrows(), strict=True):
        ax.annotate(
            _said(row),
            (row["_v"], y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            size="small",
        )
    from matplotlib.ticker import StrMethodFormatter

    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_xlim(0, float(shown["_v"].max() or 1) * 1.5)  # room for the labels at the ends
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def _said(row: pd.Series) -> str:
    """``"1,204 units · 87 moves · 45 items"``."""
    units = float(row["units"])
    shown = f"{units:,.0f}" if units == round(units) else f"{units:,.1f}"
    moves, items = int(row["transactions"]), int(row["items"])
    return (
        f"{shown} units · {moves:,} move{'s' * (moves != 1)} · {items:,} item{'s' * (items != 1)}"
    )


def _span(shown: pd.DataFrame) -> str:
    """``", May 2025 to Oct 2026"``: the months of the first and last move drawn, when known."""
    if not {"first_move", "last_move"} <= set(shown.columns) or shown.empty:
        return ""
    first, last = shown["first_move"].min(), shown["last_move"].max()
    if pd.isna(first) or pd.isna(last):
        return ""
    a, b = f"{first:%b %Y}", f"{last:%b %Y}"
    return f", {a}" if a == b else f", {a} to {b}"
