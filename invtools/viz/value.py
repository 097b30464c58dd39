"""plot_stock_value: the value of the stock month by month, on an axis from 0 in its currency.

Draws :func:`invtools.analysis.stock_value_by_month`'s frame: a value axis that starts at
zero (a month's value is a share of nothing held, not a wiggle around an arbitrary floor)
and says its currency when one is known.

>>> currency_label({"currency_code": "GBP", "currency_symbol": "£"})
'GBP'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from invtools._config import check_kind
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.viz.common import columns_text
from invtools.viz.style import legend_outside, new_axes, no_data

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_stock_value"]

#: The columns drawn, and their legend labels.
_SERIES = {"value_at_cost": "at cost", "value_at_price": "at price"}
#: Where a frame may say its currency (``attrs``), most precise first.
CURRENCY_KEYS = ("currency_code", "currency", "currency_symbol")


def plot_stock_value(
    monthly: pd.DataFrame,
    *,
    items: pd.DataFrame | None = None,
    currency: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """The stock's value at each month's end, at cost and at price, as lines over the months.

    ``monthly`` is :func:`invtools.analysis.stock_value_by_month`'s frame (``month``,
    ``value_at_cost``, ``value_at_price``). The value axis starts at 0, so a month's height
    is its value, and its label carries the currency: ``currency`` (e.g. ``"GBP"`` or
    ``"£"``), else one the frame says in its ``attrs`` (``currency_code``, ``currency`` or
    ``currency_symbol``), else one ``items`` (the items frame valued) says there; none known,
    the label says "stock value" alone. Thousands are grouped ("12,500").

    >>> import pandas as pd
    >>> monthly = pd.DataFrame({"month": ["2026-09", "2026-10"],
    ...                         "value_at_cost": [41000.0, 39500.0],
    ...                         "value_at_price": [70000.0, 66000.0]})
    >>> ax = plot_stock_value(monthly, currency="GBP")
    >>> ax.get_ylabel(), float(ax.get_ylim()[0]), ax.get_title()
    ('stock value (GBP)', 0.0, 'Stock value month by month')
    """
    if not isinstance(monthly, pd.DataFrame):
        raise ArgumentTypeError(
            f"plot_stock_value: monthly must be a DataFrame from "
            f"analysis.stock_value_by_month, got {type(monthly).__name__}"
        )
    missing = [c for c in ("month", *_SERIES) if c not in monthly.columns]
    if missing:
        raise ConfigError(
            f"plot_stock_value: monthly needs the column(s) {missing}; it has "
            f"{columns_text(monthly)}. Build it with analysis.stock_value_by_month(history, items)."
        )
    check_kind(items, (pd.DataFrame, type(None)), "plot_stock_value: items", "an items frame")
    check_kind(currency, (str, type(None)), "plot_stock_value: currency", "text such as 'GBP'")
    unit = currency or currency_label(monthly.attrs) or currency_label(getattr(items, "attrs", {}))
    ax = new_axes(ax, (10, 4))
    ax.set_title("Stock value month by month")
    ax.set_xlabel("month (value at its end)")
    ax.set_ylabel(f"stock value ({unit})" if unit else "stock value")
    if monthly.empty:
        no_data(ax, "no months to value")
        return ax
    months = [str(m) for m in monthly["month"]]
    for column, label in _SERIES.items():
        values = pd.to_numeric(monthly[column], errors="coerce").to_numpy(dtype=float)
        ax.plot(range(len(months)), values, marker="o", label=label)
    ax.set_xticks(*_month_ticks(months))
    ax.set_ylim(bottom=0)
    from matplotlib.ticker import StrMethodFormatter

    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.grid(axis="y", alpha=0.3)
    legend_outside(ax)
    return ax


def _month_ticks(months: list[str]) -> tuple[list[int], list[str]]:
    """Where the month labels go and what they say: "May" with the year under the first and
    every January ("Jan\n2026"), every month up to two years' worth, else every few."""
    try:
        periods = [pd.Period(m, "M") for m in months]
    except (ValueError, TypeError):  # not "2026-05": as written, a few of them
        step = -(-len(months) // 12)
        return list(range(0, len(months), step)), months[::step]
    step = -(-len(months) // 24)
    at = list(range(0, len(months), step))
    names = [  # Period.strftime: pandas 2.2's Period takes no format spec in an f-string
        periods[i].strftime("%b\n%Y" if k == 0 or periods[i].month <= step else "%b")
        for k, i in enumerate(at)
    ]
    return at, names


def currency_label(attrs: Mapping[Any, Any]) -> str | None:
    """The currency ``attrs`` say (a frame's), by :data:`CURRENCY_KEYS`; None if none."""
    for key in CURRENCY_KEYS:
        value = attrs.get(key) if isinstance(attrs, Mapping) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
