"""The lines frames of :class:`~invtools.api.client.Client`: ``lines_df()``, whole, and
``lines_growing()``, handed out while its details stream in (:mod:`invtools.api.growing`).

Both are one build (:class:`LinesBuild`): the items list its levels are anchored at, then the
transactions list of the window, walked (newest first), then one detail per row, and a frame
made of the first rows' details: ``lines_df`` makes it of all of them, a growing fetch of
those that have arrived, its window the stretch they hold in full
(:func:`invtools.frames.complete_since`).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pandas as pd

from invtools import frames
from invtools._types import TXS_PATH, check_tx_type
from invtools.api.dataframes import DataFrames, with_levels
from invtools.api.growing import GrowingLines
from invtools.frames.lines import lines_of
from invtools.frames.stock import unchecked_levels

__all__ = ["LineFrames", "LinesBuild"]

#: How far apart ``lines_df`` reads the items list (its levels' anchor) and walks the
#: transactions list at most: the older one, replayed, is read again.
_APART = timedelta(minutes=1)


@dataclass
class LinesBuild:
    """A lines frame being built: ``times``, the transaction times of the window's list rows
    (newest first), ``details``, their details to come in the same order; ``lines(details)``
    the lines of the first ``len(details)`` rows with their levels (a stream: of all, the rows
    let go once read), ``framed(lines, arrived)`` those lines as the frame (its record; the
    window the first ``arrived`` rows hold in full, None: all)."""

    times: pd.Series
    details: Generator[dict | None, None, None]
    lines: Callable[[list[dict | None] | Iterable[dict | None]], pd.DataFrame]
    framed: Callable[[pd.DataFrame, int | None], pd.DataFrame]


class LineFrames(DataFrames):
    """``lines_df`` and ``lines_growing``, over the frames of :class:`DataFrames`."""

    def lines_df(
        self,
        *,
        type: str | Iterable[str] | None = None,  # noqa: A002 - the API's own name
        since: Any = None,
        until: Any = None,
        chains: int | None = None,
        item_columns: str | Iterable[str] | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """One row per transaction line (:func:`invtools.frames.lines_df`), from one detail
        request per transaction in the window, each cached for good per revision.

        Stock levels: without ``type`` and ``until``, **anchored at the current stock** of
        the items list, read first (per location too; :func:`invtools.frames.rebase_levels`);
        else the details' stored ones (recomputed from each item's earliest line when every
        type is there), and with ``since`` a :class:`~invtools.errors.LevelsWarning` names
        the items. ``refresh=True`` walks both lists again, never a detail at its revision.
        The rule, and what is said when an item cannot be anchored: docs/explanation/now.md.

        Names are current (:func:`invtools.frames.current_names`; a rename raises no
        revision): each line's item name, SKU and barcode as the items list says (the one the
        levels are anchored at, else :meth:`items_df`'s), its partner, locations and member as
        the list rows do. ``item_columns`` names columns of :meth:`items_df`
        (``"attr_Category"``, ``"cost"``, ...) joined onto each line by ``item_id``, after
        ``item_name`` (:func:`invtools.frames.with_item_columns`: a deleted item's line gets
        <NA>; an unknown name is a ConfigError listing the items frame's columns).
        :meth:`lines_growing` hands the same frame out while its details stream in.

        >>> lines = client.lines_df(since="30D", item_columns=["sku", "attr_Category"])
        >>> lines.columns[lines.columns.get_loc("item_name") + 1]
        'attr_Category'
        >>> lines.attrs["endpoint"]
        ['/v1/location-txs', '/v1/items']
        """
        asked = dict(type=type, since=since, until=until, chains=chains, refresh=refresh)
        with self._lines_build(item_columns, max_age, progress, **asked) as build:
            with closing(build.details):
                made = build.lines(build.details)
        return build.framed(made, None)

    def lines_growing(
        self,
        *,
        type: str | Iterable[str] | None = None,  # noqa: A002 - the API's own name
        since: Any = None,
        until: Any = None,
        chains: int | None = None,
        item_columns: str | Iterable[str] | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> GrowingLines:
        """:meth:`lines_df` with the same arguments, returned as soon as the lists are walked:
        the details are fetched in a background thread (newest first, paced, each cached on
        arrival, so a stop or a killed kernel keeps them), and ``.frame()`` is, at any moment,
        the lines of the newest transactions whose details have all arrived, its window
        (``attrs["window"]``) that stretch, held in full: every analysis on it is exact for
        that stretch. ``.result()`` waits for the whole frame, the one :meth:`lines_df` gives,
        and raises what stopped the fetch; ``.cancel()`` stops it (:class:`GrowingLines`).

        >>> growing = client.lines_growing(since="30D")
        >>> part = growing.frame()                   # what has arrived so far, its window said
        >>> whole = growing.result()                 # every detail in
        >>> growing.done, len(whole) >= len(part), whole.attrs["window"]["since"] is not None
        (True, True, True)
        """
        asked = dict(type=type, since=since, until=until, chains=chains, refresh=refresh)
        with self._lines_build(item_columns, max_age, progress, growing=True, **asked) as build:
            context = contextvars.copy_context()  # its details counted in the frame's record
        build.framed(build.lines([]), 0)  # the items that name the lines read here, not later
        shown = self.progress if progress is None else progress
        return GrowingLines(build, context, progress=shown)

    @contextmanager
    def _lines_build(
        self,
        item_columns: Any,
        max_age: Any,
        progress: bool | None,
        *,
        growing: bool = False,
        **asked: Any,
    ) -> Iterator[LinesBuild]:
        """Within: the :class:`LinesBuild` of ``lines_df(**asked, ...)``, the lists read, its
        details to come, in the measurement of the frame's requests (``growing``: the details
        fetched with no bar of their own)."""
        type, since, until, refresh = (asked[k] for k in ("type", "since", "until", "refresh"))
        kind = check_tx_type(type)
        filters = {"type": list(kind) if isinstance(kind, tuple) else kind}
        filters.update(since=since, until=until)
        fresh = {"refresh": refresh, "max_age": max_age, "progress": progress}
        items = None
        if item_columns is not None:  # the names checked before any detail is fetched; its
            items = self.items_df(**fresh)  # requests counted in its record, merged onto the lines'
            frames.with_item_columns(frames.lines_df([]), items, item_columns)
        listed: list[dict] = []  # the items list the levels are anchored at names them too
        tx: pd.DataFrame | None = None  # the list rows, newest first

        def lines(found: Iterable[dict | None]) -> pd.DataFrame:
            nonlocal tx
            got = found if isinstance(found, list) else None
            assert tx is not None, "lines_df's stream is read once"
            rows = tx if got is None or len(got) == len(tx) else tx.iloc[: len(got)]
            if got is None:  # lines_df's one stream: the list rows let go once read
                tx = None
            made = lines_of(rows, found)
            del rows  # the lines hold the list's columns they need: let it go first
            if current is None and (type is not None or since is not None):
                how = f"type={type!r}" if type is not None else f"until={until!r}"
                unchecked_levels(made, f"lines_df({how}, ...)")
            return with_levels(made, all_types=type is None, current=current)

        def framed(made: pd.DataFrame, arrived: int | None) -> pd.DataFrame:
            nonlocal items
            if items is None:  # it names the lines' items now: a rename raises no revision
                items = frames.items_df(listed)
            after = None if arrived is None else frames.complete_since(times, arrived)
            done = self._recorded(
                made, window, m, TXS_PATH, filters, grain="lines", after=after, team=team
            )
            done = frames.current_names(done, {"items": items})
            if item_columns is None:
                return done
            return frames.with_item_columns(done, items, item_columns)

        with self._counters.measure() as m:  # every request of the frame counted in it
            team = self.team()  # what the frames' records name, read while the token is good
            # the items list first (it names the lines; without type= and until= it anchors
            # their levels too), so that it never counts a transaction the lines lack
            stock = self.items(**fresh)
            listed[:] = stock
            current = frames.stock_df(listed) if type is None and until is None else None
            walked = functools.partial(
                self._windowed, since, until, type=type, chains=asked["chains"], max_age=max_age
            )
            walk, window = walked(refresh=refresh, progress=progress)
            shown = False if growing else progress  # a growing fetch shows its own bar
            tx, details = self._tx_and_details(walk, shown, window)
            if (
                current is not None
                and stock.replayed
                and stock.data_as_of < walk.data_as_of - _APART
            ):
                stock = self.items(refresh=True, progress=progress)  # replayed: read again
                listed[:] = stock
                current = frames.stock_df(listed)
            if (
                current is not None
                and walk.replayed
                and walk.data_as_of < stock.data_as_of - _APART
            ):
                details.close()  # the list replayed from before the anchor: walked again
                walk, window = walked(refresh=True, progress=progress)
                tx, details = self._tx_and_details(walk, shown, window)
            times = tx["transaction_time"].copy()
            yield LinesBuild(times, details, lines, framed)
