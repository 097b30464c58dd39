"""The spec's page-walking rules, as a plain generator: no HTTP, no pandas.

A list endpoint answers with a page envelope ``{items, count, limit, cursor, has_more}``.
Walking it (spec part 4, rules 1-4):

1. call without ``cursor`` first;
2. while ``has_more`` is true, call again with the ``cursor`` of the last page;
3. stop when ``has_more`` is false -- even if that last page carries a non-null cursor
   (the real service sometimes does; a ``while cursor:`` loop would never end);
4. keep every filter identical on every call.

A server that breaks these rules (hands out the same cursor twice, drops a field of the
envelope, says ``has_more`` with no cursor to follow) gets a :class:`PaginationError`
instead of an endless loop.

A walk hands out each page's body undecoded (:func:`iter_raw_pages`): the walk engine decodes
rows itself, in bulk, and trims them as its caller asked (:class:`Trim`).

>>> bodies = {None: b'{"items":[1,2],"cursor":2,"has_more":true}',
...           2: b'{"items":[3],"cursor":null,"has_more":false}'}
>>> [(p.number, p.n_rows) for p in iter_raw_pages(lambda params: bodies[params.get("cursor")])]
[(1, 2), (2, 1)]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from invtools.errors import ConfigError, PaginationError

__all__ = ["Page", "RawPage", "Trim", "iter_raw_pages", "raw_envelope", "check_walk_args"]

#: Page size used unless asked otherwise; also the largest the service accepts.
DEFAULT_LIMIT = 100
MAX_LIMIT = 100
#: Empty pages in a row that say ``has_more`` a walk follows before it calls the list
#: broken (a server that would never end); raise it if a list really has longer runs.
MAX_EMPTY_RUN = 50


@dataclass(frozen=True)
class Page:
    """One page of a walk.

    ``rows`` are the page's rows (after any ``keep``/``stop_at``/``max_rows`` trimming),
    ``number`` counts from 1, ``cursor`` and ``has_more`` are the server's, and
    ``from_cache`` says whether the page came from the local cache instead of the server.
    """

    rows: list[dict[str, Any]] = field(repr=False)
    number: int
    cursor: Any
    has_more: bool
    from_cache: bool = False

    def __repr__(self) -> str:  # rows can be 100 dicts; show their count instead
        return (
            f"Page(number={self.number}, rows={len(self.rows)}, cursor={self.cursor!r}, "
            f"has_more={self.has_more}, from_cache={self.from_cache})"
        )


def check_envelope(body: Any, *, number: int = 1) -> tuple[list, Any, bool]:
    """Return ``(items, cursor, has_more)`` of a page body, or raise :class:`PaginationError`.

    >>> check_envelope({"items": [], "count": 0, "cursor": None, "has_more": False})
    ([], None, False)
    """
    where = f"page {number}"
    if not isinstance(body, Mapping):
        raise PaginationError(
            f"{where} is not a JSON object but {type(body).__name__}; is this a list endpoint?"
        )
    missing = [k for k in ("items", "has_more", "cursor") if k not in body]
    if missing:
        raise PaginationError(
            f"{where} lacks {', '.join(missing)} of the page envelope "
            "(items, count, limit, cursor, has_more); is this a list endpoint?"
        )
    items, cursor, has_more = body["items"], body["cursor"], body["has_more"]
    if not isinstance(items, list):
        raise PaginationError(f"{where}: 'items' is {type(items).__name__}, not a list")
    if not isinstance(has_more, bool):
        raise PaginationError(f"{where}: 'has_more' is {has_more!r}, not true/false")
    if cursor is not None and (isinstance(cursor, bool) or not isinstance(cursor, (int, str))):
        raise PaginationError(f"{where}: 'cursor' is {cursor!r}, not an integer or null")
    if has_more and cursor in (None, ""):
        raise PaginationError(f"{where} says has_more but gives no cursor to continue from")
    return items, cursor, has_more


class RawPage(NamedTuple):
    """One page of a raw walk: the undecoded ``body`` (bytes), the envelope's fields and
    ``n_rows``, the number of rows on the page."""

    body: bytes
    number: int
    cursor: Any
    has_more: bool
    n_rows: int


# A JSON key as it appears in a body: escaped quotes inside a string (\"cursor\") never match.
_CURSOR = re.compile(rb'"cursor"\s*:\s*(null|-?\d+|"[^"\\]*")')
_HAS_MORE = re.compile(rb'"has_more"\s*:\s*(true|false)')
_COUNT = re.compile(rb'"count"\s*:\s*(\d+)[,}\s]')


def raw_envelope(body: bytes, *, number: int = 1) -> tuple[Any, bool, int]:
    """``(cursor, has_more, count)`` of an undecoded page body, checked like
    :func:`check_envelope`; ``count`` is the number of rows on the page.

    Decoding a whole page only to learn where the walk goes next costs more than everything
    else in a warm walk, so the fields are found in the bytes. When a key appears other
    than exactly once (a row with a field of that name, say), the body is decoded instead.

    >>> raw_envelope(b'{"items": [], "count": 0, "cursor": 42, "has_more": true}')
    (42, True, 0)
    """
    cursors, more, counts = _CURSOR.findall(body), _HAS_MORE.findall(body), _COUNT.findall(body)
    if len(cursors) != 1 or len(more) != 1 or len(counts) != 1:
        try:
            decoded = json.loads(body)
        except ValueError:
            raise PaginationError(f"page {number} is not JSON; is this a list endpoint?") from None
        items, cursor, has_more = check_envelope(decoded, number=number)
        return cursor, has_more, len(items)
    cursor, has_more = json.loads(cursors[0]), more[0] == b"true"
    check_envelope({"items": [], "cursor": cursor, "has_more": has_more}, number=number)
    return cursor, has_more, int(counts[0])


def iter_raw_pages(
    fetch: Callable[[dict[str, Any]], bytes],
    params: Mapping[str, Any] | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    max_pages: int | None = None,
    start: Any = None,
) -> Iterator[RawPage]:
    """Walk a list endpoint page by page, lazily: nothing is fetched until asked.

    ``fetch(params)`` returns a page's raw body; the walk reads only ``cursor``/``has_more``
    from it (:func:`raw_envelope`). ``params`` are the filters, sent identically on every call
    together with ``limit`` (and ``cursor`` after the first page). ``max_pages`` stops the walk
    early. ``start`` resumes a walk: the first call carries ``cursor=start``, a cursor the
    server handed out before (how :mod:`invtools.api.chains` runs several chains). The
    arguments are checked at once, before anything is sent.

    >>> def fetch(params):
    ...     start = params.get("cursor", 0)
    ...     rows = list(range(start, min(start + params["limit"], 7)))
    ...     more = rows[-1] < 6
    ...     cursor = rows[-1] + 1 if more else None
    ...     return json.dumps({"items": rows, "cursor": cursor, "has_more": more}).encode()
    >>> [p.n_rows for p in iter_raw_pages(fetch, limit=3)]
    [3, 3, 1]
    >>> [p.body for p in iter_raw_pages(fetch, limit=3, start=4)]
    [b'{"items": [4, 5, 6], "cursor": null, "has_more": false}']
    """
    check_walk_args(limit, max_pages, None)
    base = {k: v for k, v in (params or {}).items() if k != "cursor"}  # the walk owns the cursor
    return _walk(fetch, {**base, "limit": limit}, max_pages, start)


def check_walk_args(limit: Any, max_pages: Any, max_rows: Any) -> None:
    """Raise :class:`~invtools.errors.ConfigError` unless ``limit`` is 1 to
    :data:`MAX_LIMIT` and ``max_pages``/``max_rows`` are None or whole numbers >= 0: checked
    when a walk is made, before anything is sent.

    >>> check_walk_args(100, None, 0)
    >>> check_walk_args(100, -1, None)
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: max_pages must be a non-negative integer or None, not -1
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
    for name, value in (("max_pages", max_pages), ("max_rows", max_rows)):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ConfigError(f"{name} must be a non-negative integer or None, not {value!r}")


def _walk(
    fetch: Callable[[dict[str, Any]], bytes], base: dict, max_pages: int | None, cursor: Any
) -> Iterator[RawPage]:
    seen: set = set()
    number = empty = 0
    filters = ", ".join(f"{k}={v!r}" for k, v in base.items() if v is not None)
    while max_pages is None or number < max_pages:
        # A fresh dict per call: the filters stay identical even if fetch mutates its argument.
        call = dict(base) if cursor is None else {**base, "cursor": cursor}
        number += 1
        body = fetch(call)
        cursor, has_more, count = raw_envelope(body, number=number)
        yield RawPage(body, number, cursor, has_more, count)
        if not has_more:
            return
        if cursor in seen:
            raise PaginationError(
                f"the server handed out cursor {cursor!r} twice (again on page {number}); "
                f"stopping instead of looping. Filters: {filters}"
            )
        seen.add(cursor)
        empty = empty + 1 if count == 0 else 0
        if empty >= MAX_EMPTY_RUN:
            raise PaginationError(
                f"the server said has_more on {empty} empty pages in a row (up to page "
                f"{number}); stopping instead of walking on for ever. Filters: {filters} "
                f"(invtools.api.pagination.MAX_EMPTY_RUN allows longer runs)"
            )


class Trim:
    """A caller's trimming of a walk's rows, page after page: ``keep(row)`` drops the rows it
    returns false for, ``stop_at(row)`` ends the walk at the first row it returns true for
    (that row and the rest dropped), ``max_rows`` ends it after that many kept rows. ``done``:
    no further page is wanted.

    >>> trim = Trim(keep=lambda r: r % 2, stop_at=lambda r: r > 6, max_rows=None)
    >>> trim([1, 2, 3, 4]), trim.done, trim([5, 6, 7, 8]), trim.done
    ([1, 3], False, [5], True)
    """

    def __init__(
        self,
        *,
        keep: Callable[[Any], bool] | None = None,
        stop_at: Callable[[Any], bool] | None = None,
        max_rows: int | None = None,
    ) -> None:
        self.keep, self.stop_at, self.left = keep, stop_at, max_rows
        self.stopped = False

    @property
    def done(self) -> bool:
        return self.stopped or (self.left is not None and self.left <= 0)

    def __call__(self, items: list) -> list:
        rows = []
        for row in items:
            if self.stop_at is not None and self.stop_at(row):
                self.stopped = True
                break
            if self.keep is None or self.keep(row):
                rows.append(row)
        if self.left is not None:
            rows = rows[: self.left]
            self.left -= len(rows)
        return rows
