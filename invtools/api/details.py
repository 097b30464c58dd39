"""Transaction details, several in flight at once: :meth:`DetailsPart.transaction_details`,
and what a first fetch will cost (:func:`cost_line`, from what the token's budget believes:
:meth:`invtools.http.pacing.Budget.expected_seconds`).

Lines come only from each transaction's detail, one request each. The real service answers in
about 0.8 s, so one request at a time reaches a quarter of its 5 requests/s; the client keeps
``concurrency`` details in flight (:func:`invtools.api.fanout.fanout`) while its pacing budget
still holds the rate. ``lines_df()``, ``transactions_df(with_lines=True)`` and the mirror's
sync all fetch their details here.

Before a batch of known size starts, the details the cache does not hold are counted (keys
only, nothing sent); when fetching them should take more than :data:`ANNOUNCE_SECONDS`, one
line on stderr says how many and about how long, and the progress bar counts only those.

>>> print(cost_line(4046, 4046 / 5, 5))
4,046 transaction details to fetch, about 13 min at 5 requests/s; Ctrl-C keeps what has been fetched
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterable, Mapping, Sized
from contextlib import closing
from typing import Any

from invtools._progress import progress_bar
from invtools._types import TXS_PATH
from invtools.api.endpoints import EndpointsPart
from invtools.api.fanout import fanout
from invtools.errors import ConfigError, NotFoundError
from invtools.http.pacing import bucket_of

__all__ = ["DetailsPart", "SERVICE_LATENCY", "ANNOUNCE_SECONDS", "about", "cost_line"]

#: Seconds the real service takes to answer one request (library-notes: latency).
SERVICE_LATENCY = 0.8
#: A fetch expected to take longer than this says so first, on one line of stderr.
ANNOUNCE_SECONDS = 30.0


class DetailsPart(EndpointsPart):
    """``transaction_details``; needs ``transaction``, ``in_cache``, ``concurrency``,
    ``rate_limit`` and ``progress`` from the client."""

    def transaction_details(
        self, rows: Iterable[Any], *, refresh: bool = False, progress: bool | None = None
    ) -> Generator[tuple[Any, dict | None], None, None]:
        """``(row, detail)`` for each row, in the order of ``rows``; ``detail`` is None when
        the transaction was deleted since the list was read (its detail answers 404).

        ``rows``: list rows (dicts with ``id`` and ``revision``, as :meth:`transactions`
        gives them) or ``(id, revision)`` pairs; each detail is fetched at that revision
        (cached for good; ``refresh=True`` fetches it again anyway). Up to ``concurrency``
        requests are in flight (the client's pacing keeps the rate). ``rows`` is read lazily:
        a generator (``client.transactions(...)``) has its details fetched while it is still
        walked. For a list or tuple, the details the cache lacks are counted first: a fetch
        expected to take over 30 s says so on stderr, and the progress bar (``progress``:
        the client's setting by default) counts those and shows the time left.

        Ctrl-C (or any error) stops it at once: nothing more is sent, the requests in flight
        are not waited for, and every detail already fetched is in the cache.

        >>> pairs = list(client.transaction_details(client.transactions(since="2026-10-25")))
        >>> len(pairs) > 0, all(detail["id"] == row["id"] for row, detail in pairs)
        (True, True)
        >>> sum(len(detail["items"]) for _, detail in pairs) >= len(pairs)  # lines, >= 1 each
        True
        """
        keyed: Iterable[tuple[Any, tuple[int, int | None]]] = ((row, _key(row)) for row in rows)
        missing: list[bool] | None = None
        total: int | None = None
        if isinstance(rows, Sized) and not isinstance(rows, Mapping):
            listed = list(keyed)  # reject a bad row before anything is sent
            keyed, missing = listed, self._uncached(listed, refresh)
            total = sum(missing)
            self._announce(total)
        show = self.progress if progress is None else progress

        def fetch(pair: tuple[Any, tuple[int, int | None]]) -> tuple[Any, dict | None]:
            row, (tid, revision) = pair
            try:
                return row, self.transaction(tid, revision=revision, refresh=refresh)
            except NotFoundError:
                return row, None  # deleted since the list was read

        with (
            progress_bar(
                total=total, desc="transaction details", unit=" details", enabled=show
            ) as bar,
            closing(fanout(fetch, keyed, workers=self.concurrency)) as results,
        ):
            if missing is not None and total is not None and total < len(missing):
                bar.set_postfix(cached=len(missing) - total, refresh=False)
            for i, (row, detail) in enumerate(results):
                if missing is None or missing[i]:
                    bar.update(1)
                yield row, detail

    def _uncached(
        self, keyed: list[tuple[Any, tuple[int, int | None]]], refresh: bool
    ) -> list[bool]:
        """For each row, True when its detail will be requested from the server."""
        if refresh:
            return [True] * len(keyed)
        held = self.in_cache(
            (f"{TXS_PATH}/{tid}", {"revision": revision}) for _row, (tid, revision) in keyed
        )
        # A detail without a revision expires within a minute: counted as a request.
        return [
            not h or revision is None
            for h, (_row, (_tid, revision)) in zip(held, keyed, strict=True)
        ]

    def _announce(self, misses: int) -> None:
        budget = getattr(self._requester.session, "budget", None)
        if budget is None or misses <= 0:
            return  # not paced: the time depends only on the server, which is not known
        # What the budget believes now: a stated room goes at the speed of the requests in
        # flight, the rest at the pace it keeps (slower after 429s).
        bucket = bucket_of(self._requester.url(f"{TXS_PATH}/1"), self.rate_limit_scope)
        seconds = budget.expected_seconds(
            bucket, misses, in_flight=self.concurrency / SERVICE_LATENCY
        )
        if seconds > ANNOUNCE_SECONDS:
            print(cost_line(misses, seconds, misses / seconds), file=sys.stderr, flush=True)


def _key(row: Any) -> tuple[int, int | None]:
    """``(id, revision)`` of a list row or a pair."""
    try:
        if isinstance(row, Mapping):
            tid, revision = row["id"], row.get("revision")
        else:
            tid, revision = row
        return int(tid), None if revision is None else int(revision)
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"a transaction detail needs a list row (with 'id' and 'revision') "
            f"or an (id, revision) pair, not {row!r}"
        ) from None


def about(seconds: float) -> str:
    """A duration as a person says it.

    >>> about(42), about(809.2), about(7300), about(3599)
    ('about 42 s', 'about 13 min', 'about 2 h 2 min', 'about 1 h')
    """
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h" + (f" {minutes} min" if minutes else "")


def cost_line(misses: int, seconds: float, per_second: float) -> str:
    """The one line a long first fetch prints before it starts.

    >>> print(cost_line(120, 96.0, 1.25))  # doctest: +NORMALIZE_WHITESPACE
    120 transaction details to fetch, about 2 min at 1.25 requests/s;
    Ctrl-C keeps what has been fetched
    """
    return (
        f"{misses:,} transaction details to fetch, {about(seconds)} at {per_second:.3g} "
        f"requests/s; Ctrl-C keeps what has been fetched"
    )
