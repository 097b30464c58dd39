"""The DataFrame methods of :class:`~invtools.api.client.Client`: one line each over
:mod:`invtools.frames`, with where the rows came from in ``df.attrs``
(:class:`~invtools.Provenance`).

A mixin over the client's public calls (the resource methods, ``walk_frame``,
``transaction_details``, ``measure``, ``provenance``, ``require_locations``). Transaction
details (``lines_df``, ``transactions_df(with_lines=True)``) cost one request each, cached for
good per revision, several in flight at once (the client's ``concurrency``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from contextlib import closing
from typing import Any

import pandas as pd

from invtools import frames
from invtools._types import (
    ATTRS_PATH,
    ITEMS_PATH,
    LOCATIONS_PATH,
    MEMBERS_PATH,
    PARTNERS_PATH,
    TXS_PATH,
    check_tx_type,
)
from invtools.api.details import DetailsPart
from invtools.api.endpoints import check_keywords
from invtools.api.plan import chain_count

__all__ = ["FramesPart"]


class FramesPart(DetailsPart):
    """``*_df`` methods; needs the resource methods and ``measure``/``provenance``."""

    def items_df(self, **filters: Any) -> pd.DataFrame:
        """Items as a typed frame (:func:`invtools.frames.items_df`); takes the keywords of
        :meth:`items`. ``df.attrs`` says where it came from.

        The ``attr_<name>`` columns come from the team's attribute definitions
        (:meth:`attributes`, cached for 6 hours), so every call has the same columns, in the
        attributes' rank order, even one that finds no item.

        >>> df = client.items_df(location_ids=[3102])         # the demo shop's shop floor
        >>> df.attrs["endpoint"], df.attrs["filters"], df.attrs["rows"] == len(df)
        ('/v1/items', {'location_ids': [3102]}, True)
        >>> client.items_df(item_ids=[999999]).columns.equals(df.columns)   # none found
        True
        """
        check_keywords("items_df", filters, _ITEM_FILTERS)
        refresh = bool(filters.get("refresh"))
        return self._framed(
            ITEMS_PATH,
            _item_filters(filters),
            lambda: frames.items_df(
                self.items(**filters), attributes=self._plain_list(ATTRS_PATH, refresh, dated=False)
            ),
        )

    def stock_df(self, **filters: Any) -> pd.DataFrame:
        """Stock per item and location (:func:`invtools.frames.stock_df`), location names
        included; takes the keywords of :meth:`items`."""
        check_keywords("stock_df", filters, _ITEM_FILTERS)

        def build() -> pd.DataFrame:
            self.require_locations(ITEMS_PATH)
            names = self._plain_list(LOCATIONS_PATH, bool(filters.get("refresh")), dated=False)
            return frames.stock_df(self.items(**filters), names)

        return self._framed(ITEMS_PATH, _item_filters(filters), build)

    def transactions_df(
        self,
        *,
        type=None,
        since=None,
        until=None,  # noqa: A002
        with_lines: bool = False,
        **walk: Any,
    ) -> pd.DataFrame:
        """Transaction rows, newest first (:func:`invtools.frames.transactions_df`); takes the
        keywords of :meth:`transactions`. ``with_lines=True`` fetches each row's detail (one
        request per transaction, cached for good per revision; ``since``/``until`` limit how
        many) and returns one row per line: the transaction columns followed by the line
        columns of :func:`invtools.frames.lines_df` (a transaction without lines keeps one
        row with <NA> line columns).

        >>> tx = client.transactions_df(since="2026-10-01", with_lines=True)
        >>> tx["transaction_time"].min()                    # doctest: +ELLIPSIS
        Timestamp('2026-10-...', tz='UTC')
        >>> len(tx) > tx["id"].nunique()        # a transaction of several items: several rows
        True
        """
        check_keywords("transactions_df", walk, ("type", "since", "until", "with_lines", "chains"))
        type = check_tx_type(type)  # noqa: A001 - the filter's own name
        filters = {"type": _as_json(type), "since": since, "until": until}
        if (
            not with_lines
            and since is None
            and until is None
            and not (set(walk) - {"chains", "refresh", "max_age"})
        ):
            # A whole walk: page bodies go to pyarrow undecoded (about 5x faster than
            # json.loads plus the dict path on 200,000 rows, see benchmarks/bench_end_to_end.py),
            # fetched by several chains at once (invtools.api.walker).
            chains = walk.get("chains")
            chain_count(self.concurrency, chains)  # checked now
            self._max_age(TXS_PATH, walk.get("max_age"))

            def build() -> pd.DataFrame:
                return self.walk_frame(
                    TXS_PATH,
                    {"type": type},
                    chains=chains,
                    refresh=bool(walk.get("refresh")),
                    max_age=walk.get("max_age"),
                )

            return self._framed(TXS_PATH, filters, build)
        if not with_lines:
            return self._framed(
                TXS_PATH, filters, lambda: _tx_frame(self.transactions(**filters, **walk))
            )
        return self._framed(
            TXS_PATH,
            filters,
            lambda: _join_lines(*self._rows_and_details(filters, walk), all_types=type is None),
        )

    def lines_df(
        self,
        *,
        type=None,
        since=None,
        until=None,  # noqa: A002
        **walk: Any,
    ) -> pd.DataFrame:
        """One row per transaction line (:func:`invtools.frames.lines_df`), from one detail
        request per transaction in the window (``since``/``until``), each cached for good per
        revision; a progress bar shows the detail requests and the time left.

        Stock levels: when an earlier transaction is edited, the service recomputes every later
        level without raising those transactions' revisions, so a detail cached before the edit
        carries levels that are no longer true. Without a ``type`` filter the level columns are
        therefore recomputed from the line quantities (:func:`invtools.frames.rebase_levels`),
        starting from each item's earliest line in the frame; that keeps the whole history
        right. With ``since=``, an edit *before* the window made after its details were cached
        still shifts the whole window (``refresh=True`` refreshes the list, not the details):
        ``client.clear_cache()`` first, or use a full history or the mirror. With a
        ``type`` filter the levels are the stored ones (the other types' lines, needed to
        recompute them, are not in the frame)."""
        check_keywords("lines_df", walk, ("type", "since", "until", "chains"))
        type = check_tx_type(type)  # noqa: A001 - the filter's own name
        filters = {"type": _as_json(type), "since": since, "until": until}
        return self._framed(
            TXS_PATH,
            filters,
            lambda: _lines(self._rows_and_details(filters, walk)[1], all_types=type is None),
        )

    def locations_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """All locations (:func:`invtools.frames.locations_df`)."""
        return self._framed(
            LOCATIONS_PATH, {}, lambda: frames.locations_df(self.locations(refresh=refresh))
        )

    def partners_df(self, *, type=None, **walk: Any) -> pd.DataFrame:  # noqa: A002
        """Partners (:func:`invtools.frames.partners_df`); takes the keywords of
        :meth:`partners`."""
        check_keywords("partners_df", walk, ("type",))
        return self._framed(
            PARTNERS_PATH,
            {"type": type},
            lambda: frames.partners_df(self.partners(type=type, **walk)),
        )

    def members_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """Team members (:func:`invtools.frames.members_df`)."""
        return self._framed(
            MEMBERS_PATH, {}, lambda: frames.members_df(self.members(refresh=refresh))
        )

    def attributes_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """Item attribute definitions (:func:`invtools.frames.attributes_df`)."""
        return self._framed(
            ATTRS_PATH, {}, lambda: frames.attributes_df(self.attributes(refresh=refresh))
        )

    def _framed(
        self, path: str, filters: Mapping[str, Any], build: Callable[[], pd.DataFrame]
    ) -> pd.DataFrame:
        """Build a frame while counting its requests; record where it came from."""
        with self.measure() as m:
            df = build()
        record = dataclasses.replace(self.provenance(m, path, filters), rows=len(df))
        return frames.with_provenance(df, record)

    def _rows_and_details(self, filters: dict, walk: dict) -> tuple[list[dict], list[dict]]:
        """The rows in the window, then their details (:meth:`transaction_details`): one
        request each, several in flight, at the revision the list shows (cached for good, so
        fetched once, even with ``refresh=True``, which refreshes the list). The list is read
        whole first, so the uncached details are counted (a long fetch says so) and the bar
        knows the total and the time left."""
        rows = list(self.transactions(**filters, **walk))
        with closing(self.transaction_details(rows)) as fetched:
            # None: deleted since the list was read, no lines to show
            details = [detail for _row, detail in fetched if detail is not None]
        return rows, details


def _tx_frame(rows) -> pd.DataFrame:
    """The transactions frame of a walk's rows; how the walk ran in ``df.attrs["walk"]``."""
    df = frames.transactions_df(rows)
    summary = getattr(rows, "summary", None)
    if summary is not None:
        df.attrs["walk"] = summary()
    return df


_ITEM_FILTERS = ("item_ids", "location_ids")


def _as_json(value: Any) -> Any:
    """A filter as a JSON value (what ``df.attrs`` keeps): several types as a list."""
    return list(value) if isinstance(value, tuple) else value


def _item_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    return {k: filters.get(k) for k in _ITEM_FILTERS}


def _lines(details: list[dict], *, all_types: bool) -> pd.DataFrame:
    """The lines of ``details``; their stock levels recomputed from the quantities when every
    type of transaction is there to recompute them from (see ``lines_df``)."""
    lines = frames.lines_df(details)
    return frames.rebase_levels(lines) if all_types else lines


def _join_lines(rows: list[dict], details: list[dict], *, all_types: bool) -> pd.DataFrame:
    """Transactions frame left-joined with the line-only columns of their details (row order
    kept)."""
    tx = frames.transactions_df(rows)
    lines = _lines(details, all_types=all_types)
    own = [c for c in lines.columns if c not in tx.columns]  # transaction_id, item_id, ...
    return tx.merge(
        lines[own], how="left", left_on="id", right_on="transaction_id", sort=False
    ).drop(columns="transaction_id")
