"""Transaction details, several in flight at once (:func:`fetch_details`), and what a first
fetch will cost, said before it starts (:func:`announce`).

Lines come only from each transaction's detail, one request each. The real service answers in
about 0.8 s, so one request at a time reaches a quarter of its 5 requests/s; the client keeps
``concurrency`` details in flight (:func:`invtools.api.fanout.fanout`) while its pacing budget
holds the rate. ``lines_df()``, ``transactions_df(with_lines=True)`` and the mirror's sync all
fetch their details here.

>>> print(cost_line(4046, 4046 / 5, 5))
4,046 transaction details to fetch, about 13 min at 5 requests/s; Ctrl-C keeps what has been fetched
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterable, Mapping, Sized
from contextlib import closing
from typing import Any

from invtools._progress import progress_bar
from invtools.api.fanout import fanout
from invtools.errors import ConfigError

__all__ = ["fetch_details", "announce", "about", "cost_line", "SERVICE_LATENCY"]

#: Seconds the real service takes to answer one request (library-notes: latency).
SERVICE_LATENCY = 0.8
#: A fetch expected to take longer than this says so first, on one line of stderr.
ANNOUNCE_SECONDS = 30.0

Pair = tuple[int, int | None]


def fetch_details(
    fetch: Callable[[int, int | None], dict | None],
    rows: Iterable[Any],
    *,
    held: Callable[[list[Pair]], list[bool]] | None,
    workers: int,
    progress: bool,
    announce: Callable[[int], None],
) -> Generator[tuple[Any, dict | None], None, None]:
    """``(row, fetch(id, revision))`` for each row, in order, ``workers`` at a time. ``rows``:
    list rows (``id``, ``revision``) or ``(id, revision)`` pairs, read lazily. For a list or
    tuple, ``held(pairs)`` says which the cache holds (None: none); ``announce(n)`` is told how
    many will be requested, and the bar counts only those. Ctrl-C (or any error) stops it at
    once: nothing more is sent, and what was fetched stays in the cache.

    >>> list(fetch_details(lambda t, r: {"id": t}, [(1, 0), (2, 0)], held=None, workers=2,
    ...                    progress=False, announce=print))
    2
    [((1, 0), {'id': 1}), ((2, 0), {'id': 2})]
    """
    keyed: Iterable[tuple[Any, Pair]] = ((row, _pair(row)) for row in rows)
    missing: list[bool] | None = None
    if isinstance(rows, Sized) and not isinstance(rows, Mapping):
        listed = list(keyed)  # a bad row is refused before anything is sent
        pairs = [pair for _row, pair in listed]
        keyed, missing = listed, [not h for h in (held(pairs) if held else [False] * len(pairs))]
        announce(sum(missing))
    total = None if missing is None else sum(missing)

    def one(item: tuple[Any, Pair]) -> tuple[Any, dict | None]:
        row, (tid, revision) = item
        return row, fetch(tid, revision)

    with (
        progress_bar(
            total=total, desc="transaction details", unit=" details", enabled=progress
        ) as bar,
        closing(fanout(one, keyed, workers=workers)) as results,
    ):
        if missing is not None and total is not None and total < len(missing):
            bar.set_postfix(cached=len(missing) - total, refresh=False)
        for i, result in enumerate(results):
            if missing is None or missing[i]:
                bar.update(1)
            yield result


def _pair(row: Any) -> Pair:
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


def announce(budget: Any, bucket: str, misses: int, concurrency: int) -> None:
    """Say on stderr, before it starts, a fetch of ``misses`` details expected to take over
    :data:`ANNOUNCE_SECONDS` at what ``budget`` believes of ``bucket`` now."""
    if misses <= 0:
        return
    seconds = budget.expected_seconds(bucket, misses, in_flight=concurrency / SERVICE_LATENCY)
    if seconds > ANNOUNCE_SECONDS:
        print(cost_line(misses, seconds, misses / seconds), file=sys.stderr, flush=True)


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
    """The one line a long first fetch prints before it starts."""
    return (
        f"{misses:,} transaction details to fetch, {about(seconds)} at {per_second:.3g} "
        f"requests/s; Ctrl-C keeps what has been fetched"
    )
