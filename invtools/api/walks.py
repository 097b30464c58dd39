"""List walks of :class:`~invtools.api.client.Client`: :meth:`WalksPart.pages` (a plain
walk, page by page), :meth:`WalksPart.walk` (rows, in several chains when that helps) and
:meth:`WalksPart.walk_frame` (a whole transactions list as a frame, from its page bytes).

Every walk is a :class:`~invtools.api.walking.Walk` (replayed whole from the cache, or fetched
fresh: :mod:`invtools.api.walking`). This part checks the arguments and chooses how many
chains a walk may run; it builds on the client's core (:mod:`invtools.api.core`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from invtools._deprecation import withdrawn
from invtools._types import parse_duration
from invtools.api.core import ClientCore
from invtools.api.framemerge import frame_keys, frame_of
from invtools.api.pagination import DEFAULT_LIMIT, Page, check_walk_args
from invtools.api.plan import chain_count
from invtools.api.policy import default_max_age
from invtools.api.walking import Walk, store_of
from invtools.api.walkparts import Spec
from invtools.errors import ArgumentTypeError

__all__ = ["WalksPart", "Walk", "store_of"]  # Walk and store_of: from walking


class WalksPart(ClientCore):
    """``pages``, ``walk``, ``walk_frame``; needs the client's request path."""

    def pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        max_pages: int | None = None,
        max_rows: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
        keep: Callable[[dict], bool] | None = None,
        stop_at: Callable[[dict], bool] | None = None,
    ) -> Iterator[Page]:
        """Walk a paginated list page by page, lazily, as one plain chain (the rules of
        :func:`invtools.api.pagination.iter_pages`: ``max_pages``, ``max_rows``, ``keep``,
        ``stop_at``).

        Nothing is sent until the first page is asked for. The walk comes from the cache only
        whole -- the last plain walk of this list that reached its end, no older than
        ``max_age`` (``"1h"``, ``"10min"``, a timedelta; default: the transactions list 1
        hour, other lists their cache expiry), every page of it unchanged -- else every page
        is fetched fresh; ``refresh=True`` always fetches fresh.

        >>> [p.number for p in client.pages("/v1/items", max_pages=2)]
        [1, 2]
        """
        spec = Spec(
            params=dict(params or {}),
            limit=limit,
            max_pages=max_pages,
            max_rows=max_rows,
            keep=keep,
            stop_at=stop_at,
        )
        check_walk_args(limit, max_pages, max_rows)
        return Walk(
            self,
            path,
            spec,
            mode="pages",
            chains=1,
            refresh=refresh,
            max_age=self._max_age(path, max_age),
            progress=progress,
        )

    def walk(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        chains: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        limit: int = DEFAULT_LIMIT,
        progress: bool | None = None,
        **trim: Any,
    ) -> Walk:
        """Every row of a list, lazily: a :class:`Walk`. For the transactions list without a
        ``type`` filter, in several chains at once (at most ``chains``, default
        ``client.concurrency``; 1 = one plain chain, as with ``max_pages``, ``max_rows``,
        ``keep`` or ``stop_at`` in ``trim``). ``since``/``until`` (aware datetimes) keep a
        window, ``since`` ending each chain at its first older row. A walk of a list only
        Location-mode teams can read checks the team's mode when it starts. Arguments are
        checked now; nothing is sent yet.

        >>> walk = client.walk("/v1/location-txs", {"type": "in"})
        >>> sum(1 for _ in walk), walk.complete
        (12, True)
        """
        store = withdrawn("walk", trim, "store", _STORE)
        withdrawn("walk", trim, "before", _BEFORE)
        params = dict(params or {})
        check_walk_args(limit, trim.get("max_pages"), trim.get("max_rows"))
        n = 1 if trim else chain_count(getattr(self, "concurrency", None), chains)
        spec = Spec(
            params=params,
            limit=limit,
            since_ms=_ms(since, ceil=True),
            until_ms=_ms(until, ceil=False),
            **trim,
        )
        return Walk(
            self,
            path,
            spec,
            mode="rows",
            chains=n,
            store=store,
            refresh=refresh,
            max_age=self._max_age(path, max_age),
            progress=progress,
        )

    def walk_frame(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        chains: int | None = None,
        refresh: bool = False,
        max_age: Any = None,
        **withdrawn_options: Any,
    ) -> pd.DataFrame:
        """The transactions frame of a whole walk (no window) from its page bytes
        (:func:`invtools.frames.transactions_df_from_pages`), in several chains when that
        helps; ``df.attrs["walk"]`` says how (plan, chains, pages, fallback)."""
        withdrawn("walk_frame", withdrawn_options, "before", _BEFORE)
        for name in withdrawn_options:
            raise ArgumentTypeError(f"walk_frame() got an unexpected keyword argument {name!r}")
        n = chain_count(getattr(self, "concurrency", None), chains)
        walk = Walk(
            self,
            path,
            Spec(params=dict(params or {})),
            mode="pieces",
            chains=n,
            refresh=refresh,
            max_age=self._max_age(path, max_age),
        )
        with walk:
            pieces = list(walk)
            df = frame_of(pieces, by_key=walk.plan.merged)
            if walk.plan.kind == "merge":  # each chain's own type (see Run.pieces)
                df = df[df["type"].isin(walk.plan.types).to_numpy()].reset_index(drop=True)
            ms, ids = frame_keys(df)
            walk.keep_record(list(zip(ms.tolist(), ids.tolist(), strict=True)))
        df.attrs["walk"] = walk.summary()
        return df

    # -- what walks need of the client

    def _max_age(self, path: str, max_age: Any) -> timedelta | None:
        if max_age is None:
            return default_max_age(self._requester.url(path))
        return parse_duration(max_age, name="max_age", zero=True)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Engine parameters that left the public signatures (issue 20).
_STORE = "is deprecated: a walk keeps its record beside the cache"
_BEFORE = "is ignored: a walk of a list only Location-mode teams can read checks the mode itself"


def _ms(when: datetime | None, *, ceil: bool) -> int | None:
    """Epoch ms of ``when``: rounded up for ``since`` (a row strictly older stops the walk),
    down for ``until``; rows carry whole milliseconds, so both are exact."""
    if when is None:
        return None
    micros = (when - _EPOCH) // timedelta(microseconds=1)
    return -(-micros // 1000) if ceil else micros // 1000
