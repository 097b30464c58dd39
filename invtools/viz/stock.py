"""plot_stock_history: the stock of one or a few items over time, and when it ran out.

Also the item selection it needs: ids or names -> the items of a ``stock_history`` frame, and
the minimum-stock levels to draw.

>>> MAX_STOCK_ITEMS
8
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from invtools._config import check_flag
from invtools._types import parse_time
from invtools.errors import ConfigError
from invtools.frames import context_of, deleted_items, leave_out_deleted
from invtools.frames.stock import opening_levels
from invtools.viz.common import check_tz, columns_text, frame_times
from invtools.viz.style import (
    OTHER_COLOR,
    color_cycle,
    date_axis,
    legend_outside,
    new_axes,
    no_data,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_stock_history", "MAX_STOCK_ITEMS"]

#: Most items :func:`plot_stock_history` draws at once before the lines stop being readable.
MAX_STOCK_ITEMS = 8
#: The marker shapes of the lines' stock-outs, one per line drawn (as many as items at most).
OUT_MARKERS = ("X", "o", "s", "^", "D", "v", "P", "*")


def plot_stock_history(
    history: pd.DataFrame,
    *,
    item_ids: Any = None,
    min_stock: float | Mapping[Any, float] | None = None,
    tz: str | None = None,
    as_of: Any = None,
    include_deleted: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """Stock of one or a few items over time, as steps, with the moments it ran out.

    ``history`` is a ``stock_history`` frame (transaction_time, transaction_id, item_id,
    item_name, location_id, location_name, stock, change). Each item's stock is drawn as a
    step line (``drawstyle="steps-post"``: the level holds until the next transaction), from
    its first recorded transaction -- of a history of a window (``lines_df(since=...)``), from
    the window's start, at its **opening balance** (the level before its first line there) --
    to **the end of the data**: the moment the history is as of (its lines', kept when a few
    items are picked: :func:`invtools.frames.context_of`; else its last time, of any item), or
    ``as_of``. An item whose last transaction came weeks earlier still held that level since,
    so its line goes on (its last point is that level at the end), and a line that stops
    means the data stops. A history per location (``by_location=True``) draws one line per
    item and location, named by the location's name. Each line marks the points where its
    stock is at or below zero with its own marker (:data:`OUT_MARKERS`: ``X`` for the first
    line, ``o`` for the second, ...) in its own colour, shown beside its name in the legend
    (titled "markers: out of stock"), and shades the span until stock came back (or the end)
    in its colour: two items out at once stay apart. The x axis names the month on the first
    tick of every month.

    - ``item_ids``: the items to draw, by id (or name), one or a list; default every item in
      ``history``. More than :data:`MAX_STOCK_ITEMS` raises :class:`ConfigError`: pick a few.
    - ``min_stock``: a dashed horizontal line at the minimum stock: one number for all items,
      or a mapping item id (or name) -> number, drawn in each item's colour (items not drawn
      are ignored, so a mapping for the whole catalogue is fine).
    - ``tz``: time zone of the x axis (default UTC).
    - ``as_of``: where the lines end, e.g. ``"2026-10-31"`` (a date means the end of that
      day, in ``tz``; ``"30D"`` 30 days before the moment the history is as of); rows after
      it are not drawn. Default: that moment.
    - ``include_deleted``: items deleted in the service (``item_deleted`` in ``history``) are
      not drawn when ``item_ids`` is not given, with a
      :class:`~invtools.errors.DeletedItemsWarning` naming them; ``True`` draws them. Items
      asked for in ``item_ids`` are drawn either way. A deleted item's label says "(deleted)".

    >>> import pandas as pd
    >>> h = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-03-01", "2026-03-05", "2026-03-09"],
    ...                                        utc=True),
    ...     "item_id": [7, 7, 7], "item_name": ["bolt"] * 3, "stock": [10.0, 0.0, 6.0]})
    >>> ax = plot_stock_history(h, min_stock=4, as_of="2026-03-12T18:00")
    >>> ax.get_ylabel(), ax.get_lines()[0].get_ydata().tolist()
    ('stock (units)', [10.0, 0.0, 6.0, 6.0])
    >>> str(pd.Timestamp(ax.get_lines()[0].get_xdata()[-1]))    # 6 held until the end
    '2026-03-12 18:00:00'

    """
    tz = check_tz(tz)
    times = frame_times(history, "plot_stock_history", what="history")
    for column in ("item_id", "stock"):
        if column not in history.columns:
            raise ConfigError(
                f"plot_stock_history needs a {column!r} column; this frame has "
                f"{columns_text(history)}. Build it with invtools.frames.stock_history(lines)."
            )
    h = history.assign(_t=times.dt.tz_convert(tz).dt.tz_localize(None))
    # Where every line ends, naive in ``tz``: ``as_of`` (a date: the end of that day), else the
    # moment the frame is as of (its context), or its last time if later (NaT for an empty
    # frame), deleted items' rows included.
    ctx = context_of(history)
    moment, end = ctx.as_of, h["_t"].max()
    if moment is not None and not (pd.notna(end) and moment.tz_convert(tz).tz_localize(None) < end):
        end = moment.tz_convert(tz).tz_localize(None)
    if as_of is not None:
        now = times.max() if moment is None else moment  # a duration counts back from it
        stop = parse_time(as_of, end=True, name="as_of", tz=tz, now=now)
        end = pd.Timestamp(stop).tz_convert(tz).tz_localize(None)
        h = h[h["_t"] <= end]
    # Of a window: each line starts at the window's start, at its opening balance.
    since = None if ctx.window is None else ctx.window[0]
    start = None if since is None else since.tz_convert(tz).tz_localize(None)
    opening = _openings(h) if start is not None else {}
    deleted = deleted_items(h)
    h = leave_out_deleted(
        h,
        deleted,
        include=check_flag(include_deleted, "plot_stock_history: include_deleted")
        or item_ids is not None,
        who="plot_stock_history",
    )
    names = h["item_name"] if "item_name" in h.columns else pd.Series(pd.NA, index=h.index)
    # item id -> its label: its name (the first seen), else "item <id>"; "(deleted)" said
    first = pd.DataFrame({"id": h["item_id"], "name": names.astype(object)})
    first = first.dropna(subset=["id"]).drop_duplicates("id")
    label_of = {
        i: (str(n) if pd.notna(n) else f"item {i}") + (" (deleted)" if i in deleted else "")
        for i, n in zip(first["id"].tolist(), first["name"].tolist(), strict=True)
    }

    def resolve(key: Any) -> Any:
        """An item id or name -> the item id, or None if this history does not have it."""
        if not isinstance(key, str):
            return key if key in label_of else None
        hit = h["item_id"][names.astype(object) == key]
        if len(hit):
            return hit.iloc[0]
        return int(key) if key.isdigit() and int(key) in label_of else None

    wanted = _select_items(item_ids, label_of, resolve)
    ax = new_axes(ax, (10, 4))
    ax.set_ylabel("stock (units)")
    ax.set_xlabel(f"time ({tz})")
    if not wanted:
        ax.set_title("Stock history")
        no_data(ax, "no stock history")
        return ax
    ax.set_title(
        f"Stock of {label_of[wanted[0]]}" if len(wanted) == 1 else f"Stock of {len(wanted)} items"
    )

    by_location = "location_id" in h.columns and h["location_id"].notna().any()
    place_of = _places(h) if by_location else {}
    colors, shapes = itertools.cycle(color_cycle()), itertools.cycle(OUT_MARKERS)
    rim = ax.get_facecolor()  # a marker's edge: two items out at once stay apart
    color_of: dict[Any, Any] = {}  # an item's first colour, for its minimum
    ran_out = False
    for item_id in wanted:
        rows = h[h["item_id"] == item_id]
        groups = rows.groupby("location_id", dropna=False) if by_location else [(None, rows)]
        for loc, part in groups:
            part = part.sort_values("_t", kind="stable")
            color = next(colors)
            color_of.setdefault(item_id, color)
            label = label_of[item_id]
            if by_location:
                label += " (all locations)" if pd.isna(loc) else f" ({place_of[loc]})"
            x = part["_t"].to_numpy()
            y = pd.to_numeric(part["stock"], errors="coerce").to_numpy(dtype=float)
            out = y <= 0
            before = opening.get((item_id, None if pd.isna(loc) else loc))
            if before is not None and start < x[0] and (pd.isna(end) or start <= end):
                # its level from the window's start: not a stock-out of its own (none is
                # counted by stockouts either), whatever it was
                x = np.insert(x, 0, np.array([start]).astype(x.dtype))
                y, out = np.insert(y, 0, before), np.insert(out, 0, False)
            held = pd.notna(end) and x[-1] < end  # the last level holds to the end
            ran_out |= bool(out.any())
            # The line's own marker, at the rows out of stock only: each line its shape and
            # colour, in the legend beside its name (a line never out has none).
            marks: dict[str, Any] = {"marker": next(shapes)}
            marks["markevery"] = np.flatnonzero(out).tolist()
            ax.plot(
                np.append(x, np.array([end]).astype(x.dtype)) if held else x,
                np.append(y, y[-1]) if held else y,
                drawstyle="steps-post",
                color=color,
                label=label,
                **(marks if out.any() else {}),
                markersize=9,
                markeredgecolor=rim,
                markeredgewidth=1,
            )
            # the runs out of stock: +1 where one opens, -1 on the row after it (the restock)
            steps = np.diff(np.concatenate(([0], out.astype(int), [0])))
            for lo, back in zip(
                np.flatnonzero(steps == 1), np.flatnonzero(steps == -1), strict=True
            ):
                right = x[back] if back < len(x) else end
                if right > x[lo]:
                    ax.axvspan(x[lo], right, color=color, alpha=0.15, linewidth=0)

    single = not isinstance(min_stock, Mapping)
    for item_id, level in _min_levels(min_stock, wanted, resolve):
        ax.axhline(
            level,
            linestyle="--",
            linewidth=1,
            color=OTHER_COLOR if single else color_of[item_id],
            label=f"minimum {'stock' if single else label_of[item_id]} ({level:g})",
        )
    date_axis(ax)
    legend_outside(ax, title="markers: out of stock" if ran_out else None)
    return ax


def _openings(h: pd.DataFrame) -> dict[tuple[Any, Any], float]:
    """(item id, location id or None) -> its opening balance
    (:func:`invtools.frames.stock.opening_levels`); none when ``h`` lacks what they need."""
    if not {"transaction_id", "location_id", "change"} <= set(h.columns):
        return {}
    first = opening_levels(h)
    return {
        (i, None if pd.isna(loc) else loc): float(level)
        for i, loc, level in zip(
            first["item_id"], first["location_id"], first["stock"], strict=True
        )
        if pd.notna(level)
    }


def _places(h: pd.DataFrame) -> dict[Any, str]:
    """Location id -> its name in a legend: as its newest row names it, else "location <id>"."""
    ids = h["location_id"].dropna().unique().tolist()
    place_of = {loc: f"location {loc}" for loc in ids}
    if "location_name" in h.columns:
        named = h.dropna(subset=["location_id", "location_name"]).sort_values("_t", kind="stable")
        for loc, name in zip(named["location_id"], named["location_name"], strict=True):
            place_of[loc] = str(name)
    return place_of


def _select_items(items: Any, label_of: dict[Any, str], resolve) -> list[Any]:
    if items is None:
        wanted = list(label_of)
    else:
        one = isinstance(items, (str, int, np.integer)) or not isinstance(items, Iterable)
        keys = [items] if one else list(items)
        wanted = []
        for key in keys:
            item_id = resolve(key)
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
            f"{MAX_STOCK_ITEMS} with item_ids=[...] (ids or names), "
            f"e.g. item_ids=[{wanted[0]!r}, ...]. First items: {some}, ..."
        )
    return wanted


def _min_levels(min_stock: Any, wanted: list[Any], resolve) -> list[tuple[Any, float]]:
    """(item id, level) of the minimum lines to draw: one level for all (id None), or those of
    a mapping's items that are drawn."""
    if min_stock is None:
        return []
    if isinstance(min_stock, Mapping):
        levels = ((resolve(key), level) for key, level in min_stock.items())
        return [(i, float(v)) for i, v in levels if i in wanted and v is not None and pd.notna(v)]
    try:
        return [(None, float(min_stock))]
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"min_stock={min_stock!r} must be a number or a mapping item id -> number."
        ) from exc
