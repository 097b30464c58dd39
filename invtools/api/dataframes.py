"""The DataFrame methods of :class:`~invtools.api.client.Client` (``items_df()``,
``transactions_df()``, ...): each a walk or a list of the client's, built into a typed frame
by :mod:`invtools.frames`, with where it came from in ``df.attrs``
(:class:`~invtools.Provenance`: team, endpoint, filters, when, how old, requests; no token).

The client inherits it; it builds on the resource methods it inherits in turn
(:class:`~invtools.api.resources.Resources`: ``items()``, ``transactions()``, ...), and counts
each frame's requests on the client's counters (:mod:`invtools.api.stats`). Each frame checks
the team's mode once, when its walk starts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from invtools import frames
from invtools._config import check_flag
from invtools._durations import counts_back
from invtools._types import (
    ATTRS_PATH,
    ITEMS_PATH,
    LOCATIONS_PATH,
    MEMBERS_PATH,
    PARTNERS_PATH,
    TXS_PATH,
    check_tx_type,
    parse_window,
)
from invtools.api.clock import ServiceClock
from invtools.api.endpoints import Team, default_max_age
from invtools.api.resources import Resources
from invtools.api.stats import Measurement
from invtools.api.walk import Walk
from invtools.frames.arrow import give_back
from invtools.frames.lines import lines_of
from invtools.frames.openings import decide_openings
from invtools.frames.provenance import Provenance
from invtools.frames.tally import holds_line

__all__ = ["DataFrames", "with_levels"]


class DataFrames(Resources):
    """The ``*_df`` methods of the client, over its resource methods."""

    @property
    def service_clock(self) -> ServiceClock:
        """The service's clock as this client reads it, checked (:mod:`invtools.api.clock`):
        what :meth:`now` gives and what its frames are as of. The mirror tells it the rows a
        sync saw (``saw_recorded``), as the frames do."""
        return self._requester.service_clock

    def items_df(
        self,
        *,
        item_ids: Iterable[int] | None = None,
        location_ids: Iterable[int] | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Items (:func:`invtools.frames.items_df`); the arguments of :meth:`items`. The
        ``attr_<name>`` columns come from the team's attribute definitions, so every call has
        the same columns, even one that finds no item. ``attrs["currency_symbol"]``: the
        team's, what ``cost`` and ``price`` are in (``viz.plot_stock_value`` says it).

        >>> df = client.items_df(location_ids=[3102])         # the demo shop's shop floor
        >>> df.attrs["endpoint"], df.attrs["filters"], df.attrs["rows"] == len(df)
        ('/v1/items', {'location_ids': [3102]}, True)
        """
        walk = self.items(
            item_ids=item_ids,
            location_ids=location_ids,
            max_rows=max_rows,
            refresh=refresh,
            max_age=max_age,
            progress=progress,
        )
        df = self._framed(
            ITEMS_PATH,
            walk.spec.params,
            lambda: frames.items_df(
                list(walk),  # first: the walk checks the team's mode before anything is sent
                attributes=self._plain_list(ATTRS_PATH, refresh, dated=False),
            ),
        )
        # what costs and prices are counted in: a plot of their value says it
        df.attrs["currency_symbol"] = self.team().currency_symbol
        return df

    def stock_df(
        self,
        *,
        item_ids: Iterable[int] | None = None,
        location_ids: Iterable[int] | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Stock per item and location (:func:`invtools.frames.stock_df`), location names
        included; the arguments of :meth:`items`."""
        walk = self.items(
            item_ids=item_ids,
            location_ids=location_ids,
            refresh=refresh,
            max_age=max_age,
            progress=progress,
        )
        return self._framed(
            ITEMS_PATH,
            walk.spec.params,
            lambda: frames.stock_df(
                list(walk),  # first: the walk checks the team's mode before anything is sent
                self._plain_list(LOCATIONS_PATH, refresh, dated=False),
            ),
            grain="stock",
        )

    def transactions_df(
        self,
        *,
        type: str | Iterable[str] | None = None,  # noqa: A002 - the API's own name
        since: Any = None,
        until: Any = None,
        with_lines: bool = False,
        chains: int | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Transaction rows, newest first (:func:`invtools.frames.transactions_df`); the
        arguments of :meth:`transactions`. A whole list is read from its page bytes by
        pyarrow. ``with_lines=True`` fetches each row's detail (one request each, cached for
        good per revision) and gives one row per line: the transaction's columns, then the
        line columns of :func:`invtools.frames.lines_df` (levels recomputed from each item's
        earliest line, not anchored: take levels from :meth:`lines_df`), each item named as
        the items list (walked too, with the same ``refresh``/``max_age``) says now.

        >>> tx = client.transactions_df(since="2026-10-01", with_lines=True)
        >>> len(tx) > tx["transaction_id"].nunique()   # a transaction of several items: rows
        True
        """
        filters = {"type": _as_json(check_tx_type(type)), "since": since, "until": until}
        with_lines = check_flag(with_lines, "with_lines")

        def build() -> tuple[pd.DataFrame, _Asked | None]:
            walk, asked = self._windowed(
                since,
                until,
                type=type,
                chains=chains,
                max_rows=max_rows,
                refresh=refresh,
                max_age=max_age,
                progress=progress,
            )
            if with_lines:
                tx, details = self._tx_and_details(walk, progress, asked)
                with closing(details):
                    return _join_lines(tx, details, all_types=type is None), asked
            if asked is None and not walk.spec.trimmed:  # a whole list, read by pyarrow
                return walk.frame(), asked
            return _tx_frame(walk), asked

        if not with_lines:
            return self._framed(TXS_PATH, filters, build)
        joined = self._framed(TXS_PATH, filters, build, grain="lines")
        items = self.items(refresh=refresh, max_age=max_age, progress=progress)
        return frames.current_names(joined, {"items": frames.items_df(list(items))})

    def locations_df(self, *, refresh: bool = False) -> pd.DataFrame:
        """All locations (:func:`invtools.frames.locations_df`)."""
        return self._framed(
            LOCATIONS_PATH, {}, lambda: frames.locations_df(self.locations(refresh=refresh))
        )

    def partners_df(
        self,
        *,
        type: str | int | None = None,  # noqa: A002 - the API's own name
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Partners (:func:`invtools.frames.partners_df`); the arguments of :meth:`partners`."""
        walk = self.partners(
            type=type, max_rows=max_rows, refresh=refresh, max_age=max_age, progress=progress
        )
        return self._framed(PARTNERS_PATH, {"type": type}, lambda: frames.partners_df(walk))

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

    def _tx_and_details(
        self, walk: Walk, progress: bool | None, asked: _Asked | None
    ) -> tuple[pd.DataFrame, Generator[dict | None, None, None]]:
        """The rows of ``walk`` as a transactions frame (a whole list read by pyarrow, as
        :meth:`transactions_df` reads it; no row held as a dict), then their details at the
        revision the list shows, one per row in order (None: deleted since). The list is read
        whole first, so the bar knows the total, and the service's clock is checked against
        the rows before any detail is asked for: rows recorded after it move it on
        (:meth:`ServiceClock.saw_recorded`), and a window counted back from it starts that
        much later."""
        whole = asked is None and not walk.spec.trimmed
        tx = walk.frame() if whole else _tx_frame(walk)
        clock = self._requester.service_clock
        clock.saw_recorded(tx["created_at"].max() if len(tx) else None)
        if asked is not None and asked.back is not None:  # as _framed will cut, before details
            began = walk.data_as_of
            floor = pd.Timestamp(
                (clock.now() if began is None else clock.of_local(began)) - asked.back
            )
            tx = tx[tx["transaction_time"] >= floor].reset_index(drop=True)
        return tx, self._row_details(tx, progress, "the list" if asked is None else "the window")

    def _row_details(
        self, tx: pd.DataFrame, progress: bool | None, what: str = "the window"
    ) -> Generator[dict | None, None, None]:
        """The details of the rows of ``tx`` (their mode checked by the walk), one at a time
        (so what a frame is built from is never all held at once); a long fetch says first
        what ``what`` holds, from the rows alone (:func:`invtools.frames.tally.holds_line`)."""
        revisions = [None if pd.isna(r) else r for r in tx["revision"].tolist()]
        pairs = list(zip(tx["transaction_id"].tolist(), revisions, strict=True))
        holds = functools.partial(holds_line, tx, what=what)
        with closing(self._details(pairs, progress=progress, holds=holds)) as fetched:
            for _pair, detail in fetched:
                yield detail

    def _windowed(self, since: Any, until: Any, **options: Any) -> tuple[Walk, _Asked | None]:
        """The walk of :meth:`transactions` (``options``) from ``since`` to ``until``
        (durations back from :meth:`now`, asked once), and what was asked (None: a whole
        list); what a frame of it holds is decided by ``_framed``."""
        now = functools.cache(self.now)
        lo, hi = parse_window(since, until, now=now)
        if lo is None and hi is None:
            return self.transactions(**options), None
        back = now() - lo if lo is not None and counts_back(since) else None
        reach = lo
        if lo is not None and back is not None and not options.get("refresh"):
            # "the last 90 days" of the data's moment: a walk replayed from its record is as of
            # when that walk began, up to max_age ago, so reach back that much further
            reach = lo - default_max_age(self._requester.url(TXS_PATH), options.get("max_age"))
        return self.transactions(since=reach, until=hi, **options), _Asked(lo, hi, back)

    def _framed(
        self,
        path: str,
        filters: Mapping[str, Any],
        build: Callable[[], pd.DataFrame | tuple[pd.DataFrame, _Asked | None]],
        *,
        grain: str | None = None,
    ) -> pd.DataFrame:
        """Build a frame while counting its requests; record where it came from (no token)
        and its context, decided here once: the team (its service and id), the ``grain`` (by
        default the endpoint's), the moment it is as of (when its data left the server, on the
        service's clock, checked against the rows' ``created_at``) and, for a walk asked for a
        window (``build`` returns the frame and what was asked), the window it holds
        (:func:`invtools.frames.fit_window`)."""
        with self._counters.measure() as m:
            built = build()
        df, asked = built if isinstance(built, tuple) else (built, None)
        return self._recorded(df, asked, m, path, filters, grain=grain)

    def _recorded(
        self,
        df: pd.DataFrame,
        asked: _Asked | None,
        m: Measurement,
        path: str,
        filters: Mapping[str, Any],
        *,
        grain: str | None = None,
        after: datetime | None = None,
        team: Team | None = None,
    ) -> pd.DataFrame:
        """``df``, built in measurement ``m``, with its record (see :meth:`_framed`);
        ``after``: the time from which its rows hold every transaction of the window, only
        some of its details having arrived (:func:`invtools.frames.complete_since`): its
        window starts there; ``team``: the team as read before (None: read now)."""
        clock = self._requester.service_clock
        team, s = team or self.team(), m.stats
        if "created_at" in df.columns and len(df):
            clock.saw_recorded(df["created_at"].max())
        moment = clock.now() if m.data_as_of is None else clock.of_local(m.data_as_of)
        window = None
        as_of = moment
        since = until = None
        if asked is not None:  # "90D": back from the data's moment (the clock checked)
            since = asked.since if asked.back is None else moment - asked.back
            until = asked.until
        if after is not None and (since is None or after > since):
            since = after
        if since is not None or until is not None:
            df, window, as_of = frames.fit_window(df, since, until, moment=moment)
        record = Provenance(
            source="api",
            team_id=team.id,
            team_name=team.name,
            base_url=self._requester.base_url,
            endpoint=path,
            filters=dict(filters),
            window=window,
            grain=grain or _GRAINS.get(path),
            as_of=as_of,
            fetched_at=m.finished_at or datetime.now(UTC),
            data_as_of=None if m.data_as_of is None else moment,
            pages=s.pages,
            rows=len(df),
            requests=s.sent,
            from_cache=s.from_cache,
            retries=s.retries,
        )
        return frames.with_provenance(df, record)


def _as_json(value: Any) -> Any:
    """A filter as a JSON value (what ``df.attrs`` keeps): several types as a list."""
    return list(value) if isinstance(value, tuple) else value


@dataclass
class _Asked:
    """The window a walk of the transactions list was asked for: its bounds as first read
    (None: open) and, when ``since`` counts back (``"90D"``), how far: the frame's window then
    starts that long before the moment its data are as of."""

    since: datetime | None
    until: datetime | None
    back: timedelta | None


#: What one row of each endpoint's frame is (``attrs["grain"]``).
_GRAINS = {
    ITEMS_PATH: "items",
    TXS_PATH: "transactions",
    LOCATIONS_PATH: "locations",
    PARTNERS_PATH: "partners",
    MEMBERS_PATH: "members",
    ATTRS_PATH: "attributes",
}


def _tx_frame(walk: Walk) -> pd.DataFrame:
    """The rows of a walk of part of the list (a window, the newest rows): their opening
    counts by the memo alone, as the part may start mid-history (an ordinary count first)."""
    df = frames.transactions_df(walk)
    df.attrs["walk"] = walk.summary()
    return decide_openings(df, opened=pd.NaT)


def with_levels(
    lines: pd.DataFrame, *, all_types: bool, current: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``lines`` (:func:`invtools.frames.lines.lines_of`) with their stock levels recomputed
    from the quantities when every type is there to recompute them from, anchored at the
    ``current`` stock when given (see ``lines_df``). What building the lines freed goes back
    first (a ``lines_df()`` re-run of 100,000 transactions: a peak of +117-119 MiB, not
    +137-141)."""
    give_back()
    return frames.rebase_levels(lines, current) if all_types else lines


def _join_lines(tx: pd.DataFrame, found: Iterable[dict | None], *, all_types: bool) -> pd.DataFrame:
    """The transactions frame left-joined with the line columns of their details."""
    lines = with_levels(lines_of(tx, found), all_types=all_types)
    own = [c for c in lines.columns if c not in tx.columns]  # item_id, item_name, ...
    return tx.merge(lines[["transaction_id", *own]], how="left", on="transaction_id", sort=False)
