"""What a walk asks for (:class:`Spec`) and the pages it hands out (:class:`Piece`): the
values :mod:`invtools.api.walker` works on and :mod:`invtools.api.walking` and
:mod:`invtools.api.framemerge` read.

>>> from invtools.api.pagination import RawPage
>>> piece = Piece(0, RawPage(b'{"items": [{"id": 2}, {"id": 1}]}', 1, None, False, 2), keep=1)
>>> piece.rows(), piece.kept()
([{'id': 2}, {'id': 1}], [{'id': 2}])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from invtools.api.pagination import RawPage

__all__ = ["Spec", "Piece"]


@dataclass(frozen=True)
class Spec:
    """What a walk asks for: the list's ``params``, ``limit``, a window (``since_ms``,
    ``until_ms``; ``since`` ends every chain at its first older row) and, for a plain walk,
    ``max_pages``, ``max_rows``, ``keep(row)`` and ``stop_at(row)`` (see
    :func:`invtools.api.pagination.iter_pages`)."""

    params: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 100
    since_ms: int | None = None
    until_ms: int | None = None
    max_pages: int | None = None
    max_rows: int | None = None
    keep: Callable[[dict], bool] | None = None
    stop_at: Callable[[dict], bool] | None = None


@dataclass
class Piece:
    """One page of chain ``j`` and how many of its rows count (``keep``; None: all)."""

    j: int
    page: RawPage
    keep: int | None = None
    _rows: list | None = None

    def rows(self) -> list[dict]:
        """The page's rows, decoded once."""
        if self._rows is None:
            items = json.loads(self.page.body).get("items")
            self._rows = (
                [r for r in items if isinstance(r, dict)] if isinstance(items, list) else []
            )
        return self._rows

    def kept(self) -> list[dict]:
        return self.rows() if self.keep is None else self.rows()[: self.keep]
