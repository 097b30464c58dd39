"""Stock over time: the level of each item after every line, and levels recomputed from lines.

:func:`stock_history` reads the levels the service stored on each line; :func:`rebase_levels`
recomputes them from the quantities. Both take a :func:`~invtools.frames.lines_df` frame and
share one rule for a line's signed effect. :func:`opening_levels` is the one rule for what a
history knows of a stock before its first line (the analyses' and the plots' opening balance).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from invtools._config import check_flag, check_kind
from invtools._types import check_id, check_ids
from invtools.errors import ConfigError, LevelsWarning
from invtools.frames.context import context_of, held
from invtools.frames.lines import lines_df
from invtools.frames.provenance import PROVENANCE_KEYS, utc_stamp, with_provenance
from invtools.frames.reader import check_times
from invtools.frames.schemas import SCHEMAS

__all__ = [
    "stock_history",
    "rebase_levels",
    "in_series_order",
    "opening_levels",
    "known_from",
]

#: One stock: an item at one location, or (location_id <NA>) at all of them.
SERIES = ["item_id", "location_id"]


def _line_effects(lines: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each line's signed effect on the stock of all locations, of its ``to_location`` and of
    its ``from_location``: in ``+q``, out ``-q``, adjust the signed ``q``; a move ``0`` overall,
    ``+q`` into its destination and ``-q`` out of its source."""
    qty = lines["quantity"].to_numpy(dtype="float64", na_value=np.nan)
    kind = lines["type"].astype(object).to_numpy()
    inward = np.where(kind == "out", -np.abs(qty), np.where(kind == "adjust", qty, np.abs(qty)))
    return np.where(kind == "move", 0.0, inward), inward, -np.abs(qty)


def stock_history(
    lines: pd.DataFrame | Iterable[Mapping[str, Any]],
    item_ids: Iterable[int] | None = None,
    location_id: int | None = None,
    *,
    by_location: bool = False,
) -> pd.DataFrame:
    """Stock level of each item after every transaction line that touched it.

    ``lines`` is a :func:`lines_df` frame (transaction details are accepted and converted).
    Columns: transaction_time (datetime64[ms, UTC]), transaction_id, item_id (Int64), item_name
    (string), location_id (Int64; <NA> means all locations), location_name (string: the name
    the newest line there gives it; <NA> for all locations), stock, change (float64),
    item_deleted (boolean).

    - The levels are the lines' own: a ``client.lines_df(since=...)`` without ``type``/``until``
      has them anchored at the service's current stock (the items list; otherwise a
      :class:`~invtools.errors.LevelsWarning` named the items that may be off), a mirror's
      are of its whole history (:func:`rebase_levels`; docs/explanation/now.md).
    - All locations (``location_id=None``): ``stock`` is each line's ``new_stock_level``.
    - One location: lines whose ``to_location`` is it give ``to_location_new_stock_level``,
      lines whose ``from_location`` is it give ``from_location_new_stock_level``; other lines
      are left out. A move between two locations thus appears in both locations' histories.
    - ``by_location=True``: one history per item and location, for every location in the
      lines (each row as for one location; ``location_id`` says which).
    - Lines without a level for that stock are left out.
    - ``item_deleted`` (boolean) is true on every row of an item that any of its lines says is
      deleted in the service (<NA> when the lines do not say); analyses and plots leave such
      items out unless asked (:mod:`invtools.frames.deleted`).
    - ``change`` is the step in ``stock`` from the item's previous point (at the same
      location). The first point of each item has no previous level in the data, so its change
      is the line's own signed effect: in ``+quantity``, out ``-quantity``, adjust the signed
      quantity, move ``-quantity`` out of the source, ``+quantity`` into the destination and ``0``
      for all locations.
    - Sorted by item_id, location_id, then transaction_time, then transaction_id ascending (so
      transactions at the same instant are ordered by id, the API's tiebreaker), then original
      line order.
    - The lines' context is carried on (``df.attrs``, see :func:`with_provenance`), its
      ``grain`` ``"history"``: among it the moment the lines are as of
      (:func:`~invtools.frames.context_of`), read before ``item_ids`` keeps some, so a history
      of a few items is measured to the same moment as the whole one, and their window as
      checked against the rows (docs/explanation/now.md). Lines with no recorded context give
      a history with none: its analyses say so, and take ``as_of=``.

    >>> lines = lines_df([{"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00.000Z",
    ...     "to_location": {"id": 1, "name": "WH", "deleted": False},
    ...     "items": [{"id": 9, "name": "Mug", "quantity": 5, "new_stock_level": 5,
    ...                "to_location_new_stock_level": 5}]},
    ...    {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00.000Z",
    ...     "to_location": {"id": 1, "name": "WH", "deleted": False},
    ...     "items": [{"id": 9, "name": "Mug", "quantity": 2, "new_stock_level": 3,
    ...                "to_location_new_stock_level": 3}]}])
    >>> stock_history(lines)[["stock", "change"]].values.tolist()
    [[5.0, 5.0], [3.0, -2.0]]
    """
    if location_id is not None:
        location_id = check_id(location_id, name="stock_history: location_id")
    if check_flag(by_location, "stock_history: by_location") and location_id is not None:
        raise ConfigError(
            "stock_history: give location_id (one location) or by_location=True "
            "(every location), not both"
        )
    if not isinstance(lines, pd.DataFrame):
        lines = lines_df(lines)
    missing = [c for c in ("item_id", "quantity", "new_stock_level") if c not in lines.columns]
    if missing:
        raise ConfigError(
            f"stock_history needs a lines frame (client.lines_df(), "
            f"mirror.lines_df()), one row per transaction line; this frame has "
            f"no {', '.join(missing)} column (a transactions frame?)"
        )
    check_times(lines, "transaction_time", who="stock_history", what="lines")
    schema = SCHEMAS["stock_history"]
    ctx = context_of(lines)  # of all the lines: the filter below never moves it
    wanted = check_ids(item_ids, name="item_ids")  # None when item_ids is None
    if wanted is not None:
        lines = lines[lines["item_id"].isin(wanted).fillna(False).to_numpy(dtype=bool)]
    overall, inward, outward = _line_effects(lines)
    if location_id is None and not by_location:
        nowhere = pd.array([pd.NA] * len(lines), dtype="Int64")
        everywhere = np.ones(len(lines), dtype=bool)
        parts = [(everywhere, "new_stock_level", overall, nowhere, _names(lines, None))]
    else:
        to_loc, from_loc = lines["to_location_id"], lines["from_location_id"]
        if by_location:
            to_here = to_loc.notna().to_numpy(dtype=bool)
            from_here = (from_loc.notna() & (from_loc != to_loc).fillna(True)).to_numpy(dtype=bool)
        else:
            to_here = (to_loc == location_id).fillna(False).to_numpy(dtype=bool)
            from_here = (from_loc == location_id).fillna(False).to_numpy(dtype=bool) & ~to_here
        parts = [
            (to_here, "to_location_new_stock_level", inward, to_loc.array, _names(lines, "to")),
            (
                from_here,
                "from_location_new_stock_level",
                outward,
                from_loc.array,
                _names(lines, "from"),
            ),
        ]
    # One row per line (``_line``: its label in ``lines``), its item's deletion as 1.0/0.0/NaN.
    keys = ["transaction_time", "transaction_id", "item_id", "item_name"]
    line = lines[keys].reset_index(drop=True).assign(_line=lines.index.to_numpy(), deleted=np.nan)
    if "item_deleted" in lines.columns:
        line["deleted"] = lines["item_deleted"].to_numpy(dtype="float64", na_value=np.nan)
    frames = [
        line[rows].assign(
            location_id=pd.array(where[rows], dtype="Int64"),
            location_name=names[rows],
            stock=lines[level].to_numpy(dtype="float64", na_value=np.nan)[rows],
            effect=effect[rows],
        )
        for rows, level, effect, where, names in parts
    ]
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    out = out[out["stock"].notna()]
    out = out.sort_values(
        ["item_id", "location_id", "transaction_time", "transaction_id", "_line"],
        kind="stable",
        na_position="last",
        ignore_index=True,
    )
    step = out.groupby(["item_id", "location_id"], sort=False, dropna=False)["stock"].diff()
    out["change"] = step.fillna(out["effect"]).to_numpy(dtype="float64")
    # Deletion is the item's present state: any line that says so (a detail fetched after
    # the deletion; one cached before it still says False) marks all its rows: 1.0, 0.0 or NaN
    # here, the schema's boolean below.
    per_item = out.groupby("item_id", sort=False, dropna=False)
    out["item_deleted"] = per_item["deleted"].transform("max")
    # A location is one place whatever its lines call it: named as its newest line names it.
    named = out.dropna(subset=["location_id", "location_name"]).sort_values(
        ["transaction_time", "transaction_id"], kind="stable"
    )
    name_of = named.drop_duplicates("location_id", keep="last").set_index("location_id")
    out["location_name"] = name_of["location_name"].reindex(out["location_id"]).array
    history = pd.DataFrame({col: out[col].astype(dtype) for col, dtype in schema.items()})
    if "source" in lines.attrs:
        kept = {k: lines.attrs[k] for k in PROVENANCE_KEYS if k in lines.attrs}
        window = None if ctx.window is None else held(history, *ctx.window)  # checked
        with_provenance(history, kept, grain="history", window=window)
    if ctx.as_of is not None:  # lines with no context give a history with none (no guess)
        history.attrs["as_of"] = utc_stamp(ctx.as_of)
    return history


def _names(lines: pd.DataFrame, side: str | None) -> np.ndarray:
    """The ``<side>_location_name`` of each line (all <NA> when the frame has none, or for
    all locations: ``side`` None), as an object array."""
    column = f"{side}_location_name" if side else None
    if column is None or column not in lines.columns:
        return np.full(len(lines), pd.NA, dtype=object)
    return lines[column].astype(object).to_numpy()


def in_series_order(history: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`stock_history` frame that have a time, each series (an item at
    one location, or at all) in time order (the API's tiebreak: the transaction id)."""
    h = history[history["transaction_time"].notna().to_numpy(dtype=bool)]
    return h.sort_values(
        [*SERIES, "transaction_time", "transaction_id"], kind="stable", na_position="last"
    )


def opening_levels(history: pd.DataFrame) -> pd.DataFrame:
    """Each series' first row (of :func:`in_series_order`), its ``stock`` replaced by the level
    before it: its stock minus its change -- the series' **opening balance**, its level from
    the start of the window its lines were fetched with until that first line (an item that
    held 11 and had no line until March held 11 from the window's start). Sorted by item and
    location.

    >>> h = stock_history(lines_df([{"id": 1, "type": "out",
    ...     "transaction_time": "2026-03-02T00:00:00.000Z",
    ...     "items": [{"id": 9, "quantity": 2, "new_stock_level": 9}]}]))
    >>> opening_levels(h)["stock"].tolist()
    [11.0]
    """
    first = in_series_order(history).groupby(SERIES, dropna=False, sort=True).head(1)
    change = first["change"].to_numpy(dtype="float64", na_value=np.nan)
    return first.assign(stock=np.round(first["stock"].to_numpy(dtype="float64") - change, 9))


def known_from(history: pd.DataFrame) -> pd.Timestamp | None:
    """The moment from which ``history`` knows the level of every stock it holds (each at its
    :func:`opening_levels` until its first line): the start of the window its lines were
    fetched with (``lines_df(since=...)``; :func:`~invtools.frames.context_of`, so keeping a
    few items never moves it), else its first time; None when it has neither."""
    times = history["transaction_time"]
    first = times.min() if len(times) else None
    first = None if first is None or pd.isna(first) else first
    window = context_of(history).window
    since = None if window is None else window[0]
    if since is None or first is None:
        return first if since is None else since
    return min(since, first)


#: The columns rebase_levels reads (with to_location_id and from_location_id).
_REBASE_NEEDS = (
    "item_id type quantity transaction_time transaction_id new_stock_level "
    "to_location_new_stock_level from_location_new_stock_level"
)


def rebase_levels(lines: pd.DataFrame, current: pd.DataFrame | None = None) -> pd.DataFrame:
    """Recompute the stock-level columns of a :func:`invtools.frames.lines_df` frame from the
    line quantities, so they agree with the history the frame holds -- and, given the
    service's ``current`` stock, with the service.

    Stock after a line = the stock before the item's first line in the frame + the signed
    effects of its lines since, in (transaction_time, transaction_id) order -- the service's
    own replay order. Effects: in ``+q``, out ``-q``, adjust the signed ``q``, move ``0``
    overall and ``-q``/``+q`` at its from/to location. A returned level is null where the
    stored one was. Every type of transaction must be in the frame (a ``type``-filtered frame
    lacks the other types' effects).

    The stock before the first line (of each item, and of each item at each location):

    - ``current`` given (a :func:`invtools.frames.stock_df` frame of the items list, read no
      earlier than the newest line, the frame reaching now): **anchored**, so the item's last
      level is its current stock -- the sum of its rows -- and at a location its row there
      (0 when the item has none); every earlier level is that minus the effects after it.
      An item of the lines that ``current`` does not hold (deleted: the items list leaves
      it out) keeps the stored opening below.
    - else read off the *earliest* line's stored level (level minus its own effect).

    Why: editing a transaction makes the service recompute every later level without raising
    the later transactions' revisions, so details stored before the edit keep the old levels.
    Recomputing repairs every line after the earliest one; only the anchor repairs the
    opening stock of a frame that starts mid-history (a ``since=`` window) after an edit of
    a transaction before it.

    >>> lines = lines_df([
    ...   {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00.000Z",
    ...    "items": [{"id": 9, "quantity": 2, "new_stock_level": 1}]},     # stale: was 3
    ...   {"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00.000Z",
    ...    "items": [{"id": 9, "quantity": 5, "new_stock_level": 5}]}])
    >>> rebase_levels(lines)["new_stock_level"].tolist()
    [3.0, 5.0]
    >>> now = pd.DataFrame({"item_id": [9], "location_id": [1], "quantity": [13.0]})
    >>> rebase_levels(lines, now)["new_stock_level"].tolist()       # 5 more before May
    [13.0, 15.0]
    """
    check_kind(lines, pd.DataFrame, "rebase_levels: lines", "a lines DataFrame")
    if lines.empty:
        return lines
    needed = [*_REBASE_NEEDS.split(), *(f"{p}_location_id" for p in ("to", "from"))]
    missing = [c for c in needed if c not in lines.columns]
    if missing:
        raise ConfigError(f"rebase_levels needs a lines frame (client.lines_df()); no {missing}")
    anchors = None if current is None else _anchors(current)
    out = lines.copy(deep=False)  # its level columns are replaced, never written into
    overall, inward, outward = _line_effects(out)
    has_to = out["to_location_id"].notna().to_numpy(dtype=bool)
    has_from = (out["from_location_id"].notna() & (out["type"] == "move")).to_numpy(dtype=bool)
    parts = [  # (rows, level column, location key, effect)
        (np.ones(len(out), dtype=bool), "new_stock_level", None, overall),
        (has_to, "to_location_new_stock_level", "to_location_id", inward),
        (has_from, "from_location_new_stock_level", "from_location_id", outward),
    ]

    def floats(col: str) -> np.ndarray:
        return out[col].to_numpy(dtype="float64", na_value=np.nan)

    item, txs = floats("item_id"), floats("transaction_id")
    # datetime64, not one Timestamp object per line (1.2 s at 170,000)
    times = out["transaction_time"].to_numpy("datetime64[ns]")
    rebased = {col: floats(col).copy() for _rows, col, _key, _effect in parts}
    # One step per (line, stock it changes), as arrays (a frame of them, sorted and filtered
    # per column, was the peak of a 170,000-line lines_df(): +96 MiB). The stock of all
    # locations and the stocks of each location share no step: rebased one after the other.
    for family in (parts[:1], parts[1:]):
        steps = [(col, key, effect, np.flatnonzero(rows)) for rows, col, key, effect in family]
        steps = [step for step in steps if len(step[3])]
        if not steps:
            continue
        row = np.concatenate([idx for *_, idx in steps])
        part = np.concatenate([np.full(len(s[3]), k, dtype=np.int8) for k, s in enumerate(steps)])
        order = np.lexsort((row, txs[row], times[row]))  # time, transaction, line; stable
        row, part = row[order], part[order]
        # -1 stands for "all locations"; a location's from- and to-lines share one stock.
        loc = np.concatenate(
            [
                np.full(len(idx), -1.0) if key is None else floats(key)[idx]
                for _c, key, _e, idx in steps
            ]
        )[order]
        effect = np.concatenate([e[idx] for _c, _k, e, idx in steps])[order]
        level = np.concatenate([floats(col)[idx] for col, _k, _e, idx in steps])[order]
        stock = _stock_ids(item[row], loc)  # an item at one location, or at all of them
        running = pd.Series(effect).groupby(stock, sort=False).cumsum().to_numpy()
        opening = pd.Series(level - running).groupby(stock, sort=False)
        first = opening.transform("first").to_numpy()
        if anchors is not None:  # opening = current - every effect in the frame
            now = anchors.reindex(pd.MultiIndex.from_arrays([item[row], loc])).to_numpy(copy=True)
            now[np.isnan(now) & np.isin(item[row], anchors.index.get_level_values(0))] = 0.0
            total = pd.Series(running).groupby(stock, sort=False).transform("last").to_numpy()
            first = np.where(np.isnan(now), first, now - total)
        new = np.where(np.isnan(level), np.nan, np.round(first + running, 9))
        for k, (col, *_rest) in enumerate(steps):
            mine = part == k
            rebased[col][row[mine]] = new[mine]
    for col, values in rebased.items():
        # stubs: pd.array takes any dtype, here the column's own
        out[col] = pd.array(values, dtype=out[col].dtype)  # type: ignore[arg-type]
    return out


def unchecked_levels(lines: pd.DataFrame, who: str) -> None:
    """Say (:class:`~invtools.errors.LevelsWarning`, naming the items) that the stock levels
    of ``lines``, as ``who`` fetched them, are not checked against the service's current
    stock: they are the stored ones (with every type: recomputed from each item's earliest
    line), which an edit of an earlier transaction since its details were fetched shifts.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     unchecked_levels(lines_df([{"id": 1, "type": "out",
    ...         "items": [{"id": 9, "quantity": 2, "new_stock_level": 3}]}]), "my_lines()")
    >>> str(said[0].message)[:50]
    'my_lines(): the stock levels of item 9 are not che'
    """
    _warn(
        f"{who}: the stock levels of",
        lines["item_id"].dropna(),
        "are not checked against the current stock: lines_df(since=...) without type= or "
        "until= anchors them; filter or cut that frame",
    )


def _warn(head: str, items: Any, tail: str) -> None:
    """A :class:`~invtools.errors.LevelsWarning`: ``head``, the items named, ``tail``."""
    ids = sorted({int(i) for i in items})
    if ids:
        shown = ", ".join(map(str, ids[:10])) + (", ..." if len(ids) > 10 else "")
        count = f" ({len(ids)} items)" if len(ids) > 1 else ""
        warnings.warn(f"{head} item {shown}{count} {tail}", LevelsWarning, stacklevel=4)


def _anchors(current: pd.DataFrame) -> pd.Series:
    """The current stock by (item id, location id; -1 for all locations: the sum of the
    item's rows) as floats, from ``current`` (:func:`invtools.frames.stock_df`)."""
    check_kind(current, pd.DataFrame, "rebase_levels: current", "a stock_df() frame")
    missing = [c for c in ("item_id", "location_id", "quantity") if c not in current.columns]
    if missing:
        raise ConfigError(f"rebase_levels: current needs a stock_df() frame; no {missing}")
    rows = current.dropna(subset=["item_id"])
    item = rows["item_id"].to_numpy(dtype="float64", na_value=np.nan)
    loc = rows["location_id"].to_numpy(dtype="float64", na_value=np.nan)
    qty = pd.Series(rows["quantity"].to_numpy(dtype="float64", na_value=np.nan))
    total = qty.groupby(item).sum()
    everywhere = pd.Series(total.to_numpy(), index=[total.index, np.full(len(total), -1.0)])
    anchors = pd.concat([qty.groupby([item, loc]).sum(), everywhere])
    return anchors


def _stock_ids(item: np.ndarray, loc: np.ndarray) -> np.ndarray:
    """One int64 id per (item, location) pair of the two float arrays (a missing one counts
    as a value of its own): one key to group by (170,000 lines: the recomputing's temporaries
    peak at 39 MiB, with the two float keys at 47)."""
    items, _ = pd.factorize(item, use_na_sentinel=False)
    locs, seen = pd.factorize(loc, use_na_sentinel=False)
    return items * len(seen) + locs
