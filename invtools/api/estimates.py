"""What fetching the lines of each window would cost, said before any detail is fetched:
:meth:`Estimates.fetch_costs`, inherited by :class:`~invtools.api.client.Client`.

The transactions list is walked once, as far as the widest window reaches (newest first; the
whole list for "everything"), after the items list ``lines_df`` anchors its levels at, and both
are left in their records: a ``lines_df(since=...)`` of any of the windows soon after (within
the items list's 10 minutes) replays them, no list request again. Each window's rows then say, with
no request, how many details the cache holds for good (at the revision the list shows) and how
many are still to fetch; the time is the pacing budget's estimate
(:meth:`~invtools.api.details.Pace.seconds`, the one the cost line says) at the pace the last
fetch of details saw, in any process of the cache folder.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from invtools._types import TXS_PATH, parse_window
from invtools.api import details
from invtools.api.dataframes import DataFrames
from invtools.api.pagination import DEFAULT_LIMIT
from invtools.api.plan import NO_TIME, row_key
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.http.pacing import bucket_of

__all__ = ["Estimates", "COST_COLUMNS"]

#: The columns of :meth:`Estimates.fetch_costs`, in order, and their dtypes.
COST_COLUMNS = {
    "since": "datetime64[ms, UTC]",
    "transactions": "int64",
    "cached": "int64",
    "to_fetch": "int64",
    "list_pages": "int64",
    "requests": "int64",
    "seconds": "float64",
    "at_most": "float64",
    "time": "string",
}

_EPOCH = pd.Timestamp(0, tz="UTC")


class Estimates(DataFrames):
    """:meth:`fetch_costs`, over the frame methods of the client."""

    def fetch_costs(
        self,
        windows: Iterable[Any] = ("30D", "90D", None),
        *,
        refresh: bool = False,
        max_age: Any = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """What ``lines_df(since=window)`` would cost for each of ``windows``, before any
        detail is fetched: one row per window, indexed by its label (``"30D"``; None, the
        whole list: ``"everything"``). A window is anything ``since=`` takes: a length of time
        back from the service's clock (``"30D"``, ``"12W"``, ``"6M"``), a date, a month.

        The items list is read first, as ``lines_df`` reads it (its levels' anchor: a page
        per 100 items), then the transactions list is walked once, as far as the widest window
        reaches (``"everything"``: the whole list, a page per 100 transactions: at 100,000
        transactions about 1,000 requests, minutes at the real pace; its bar shows them), and
        both are kept in their records: a ``lines_df`` of any of the windows within 10 minutes
        (the items list's ``max_age``) sends only the details it lacks. Later it reads the
        items list again, and the window's pages of the transactions list with it (its levels
        are anchored at the two read together: docs/explanation/now.md).
        Columns:

        - ``since``: where the window starts (NaT: everything);
        - ``transactions``: the list's rows in it;
        - ``cached``: their details the cache holds for good (at the revision the list
          shows), read with no request; ``to_fetch``: the others;
        - ``list_pages``: the pages of the list that hold the window (what walking it costs;
          this call's walk, or its record, pays them: ``attrs["requests"]`` says what it sent);
        - ``requests``: what ``lines_df(since=window)`` sends now: the details to fetch, and
          the list's pages too when its walk is not kept (no cache file);
        - ``seconds``, ``time``: how long they take at the pace the last fetch of details saw
          (in any process of the cache folder), as the cost line says it; ``at_most``: how
          long at most (NaN once a fetch has shown the pace: before, the service may allow
          less than the configured rate).

        Run again on the same cache (Restart & Run All, within 10 minutes) it sends nothing,
        and the details fetched since count as cached. ``attrs`` hold where it came from
        (:class:`~invtools.Provenance`: ``requests`` this call sent).

        >>> costs = client.fetch_costs(windows=("7D", "30D", None))
        >>> costs.index.tolist()
        ['7D', '30D', 'everything']
        >>> int(costs.loc["everything", "transactions"]) == len(client.transactions_df())
        True
        >>> bool((costs["to_fetch"] == costs["transactions"] - costs["cached"]).all())
        True
        """
        asked = _windows(windows)
        now = functools.cache(self.now)
        for value in asked.values():  # each checked before anything is sent
            parse_window(value, None, now=now)

        def build() -> pd.DataFrame:
            starts = {k: parse_window(v, None, now=now)[0] for k, v in asked.items()}
            open_ = [k for k, lo in starts.items() if lo is None]
            dated = [(lo, k) for k, lo in starts.items() if lo is not None]
            widest = open_[0] if open_ else min(dated)[1]
            # the anchor of lines_df's levels first, as it reads it: it replays both then
            list(self.items(refresh=refresh, max_age=max_age, progress=progress))
            walk, _ = self._windowed(
                asked[widest], None, refresh=refresh, max_age=max_age, progress=progress
            )
            rows = [(*row_key(row), row.get("revision")) for row in walk]
            clock = self.service_clock  # back from the data's moment, as a frame's window
            moment = clock.now() if walk.data_as_of is None else clock.of_local(walk.data_as_of)
            ms = np.array([r[0] for r in rows], dtype=np.int64)
            pairs = [(tid, rev if isinstance(rev, int) else None) for _ms, tid, rev in rows]
            held = np.array(self._held_details(pairs) if pairs else [], dtype=bool)
            table = pd.DataFrame(
                [self._window_cost(v, moment, ms, held) for v in asked.values()],
                index=pd.Index(list(asked), name="window"),
                columns=list(COST_COLUMNS),
            )
            return table.astype(COST_COLUMNS)

        return self._framed(TXS_PATH, {"windows": list(asked)}, build, grain="windows")

    def _window_cost(self, since: Any, moment: Any, ms: np.ndarray, held: np.ndarray) -> list:
        """A row of :meth:`fetch_costs`: the window from ``since`` (back from ``moment``, the
        data's) over the list's rows (their times ``ms``, whether the cache ``held`` each
        one's detail)."""
        lo = parse_window(since, None, now=lambda: moment)[0]
        inside = np.ones(len(ms), dtype=bool)
        if lo is not None:  # rows carry whole milliseconds: the walk's own rule
            inside = ms >= -(-(pd.Timestamp(lo) - _EPOCH) // pd.Timedelta(milliseconds=1))
            inside &= ms != NO_TIME
        n, cached = int(inside.sum()), int(held[inside].sum())
        pages = max(1, math.ceil((n + (lo is not None)) / DEFAULT_LIMIT))
        seconds, at_most = self._seconds(TXS_PATH + "/1", n - cached)
        requests = n - cached
        if self.cache_path is None:  # no record to replay: the list is walked again
            more, more_at_most = self._seconds(TXS_PATH, pages)
            requests, seconds, at_most = requests + pages, seconds + more, at_most + more_at_most
        time = details.about(seconds) if requests else "nothing to send"
        return [lo, n, cached, n - cached, pages, requests, seconds, at_most, time]

    def _seconds(self, path: str, n: int) -> tuple[float, float]:
        """About how long ``n`` requests of ``path``'s bucket take, at the pace seen (and at
        most, NaN once a pace was seen): the budget's estimate
        (:meth:`~invtools.api.details.Pace.seconds`), ``concurrency`` in flight; not paced,
        the service's latency bounds them."""
        if n <= 0:
            return 0.0, math.nan
        budget = getattr(self._requester.session, "budget", None)
        if budget is None or budget.unlimited:  # not paced, or the service states no limit
            return n * details.SERVICE_LATENCY / self.concurrency, math.nan
        bucket = bucket_of(self._requester.url(path), self.rate_limit_scope)
        seconds, at_most = details.Pace(budget, bucket, self.concurrency, False).seconds(n)
        return seconds, math.nan if at_most is None else at_most


def _windows(windows: Any) -> dict[str, Any]:
    """``windows`` by their labels (None: ``"everything"``), checked: an iterable of
    ``since=`` values, not one value, not empty, each once."""
    if isinstance(windows, (str, bytes)) or windows is None or not isinstance(windows, Iterable):
        raise ArgumentTypeError(
            f"fetch_costs: windows is a list of windows, such as ('30D', '90D', None), "
            f"not {windows!r}"
        )
    listed = list(windows)
    asked = {"everything" if w is None else str(w): w for w in listed}
    if not asked:
        raise ConfigError("fetch_costs: windows is empty; give one, e.g. ('30D', '90D', None)")
    if len(asked) < len(listed):
        raise ConfigError(f"fetch_costs: windows names a window twice ({listed!r}); give each once")
    return asked
