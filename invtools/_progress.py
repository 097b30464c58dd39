"""The one way invtools shows progress: ``tqdm.auto`` bars (a widget in a notebook, text in a
terminal), removed when done.

:func:`progress_bar` is a bar over a known number of steps (detail requests), which shows the
time left; :func:`walk_progress` passes the pages of a list walk through and shows a bar once
the walk is longer than a few pages, so short walks stay silent. ``tqdm.auto`` is imported on
first use: in a notebook it pulls in ipywidgets, and ``import invtools`` must stay light.
Imports nothing of invtools.

>>> [p for p in walk_progress([1, 2], enabled=False)]
[1, 2]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["progress_bar", "walk_progress"]


def progress_bar(*, total: int | None = None, desc: str | None = None, unit: str = " req",
                 enabled: bool = True, initial: int = 0) -> Any:
    """A ``tqdm.auto`` bar (a silent one when not ``enabled`` or there is nothing to do).

    >>> with progress_bar(total=3, enabled=False) as bar:
    ...     bar.update(3)
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc or None, unit=unit, initial=initial, leave=False,
                dynamic_ncols=True, disable=not enabled or total == 0)


def walk_progress(pages: Iterable[Any], *, enabled: bool = True, desc: str = "",
                  after: int = 3) -> Iterator[Any]:
    """Pass ``pages`` through, with a bar once the walk goes past ``after`` pages. A page with
    ``rows`` (decoded) counts its rows and shows the page number; any other page counts one.
    """
    if not enabled:
        yield from pages
        return
    bar = None
    done = number = 0
    try:
        for page in pages:
            number += 1
            rows = getattr(page, "rows", None)
            size = len(rows) if rows is not None else 1
            done += size
            if bar is None and number > after:
                bar = progress_bar(desc=desc, unit=" rows" if rows is not None else " pages",
                                   initial=done - size)
            if bar is not None:
                bar.update(size)
                if rows is not None:
                    bar.set_postfix(pages=number, refresh=False)
            yield page
    finally:
        if bar is not None:
            bar.close()
