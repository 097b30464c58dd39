"""A walk's pages merged into the frame of one plain walk: every page body parsed at once by
pyarrow (:func:`invtools.frames.transactions_df_from_pages`), then trimmed where each chain's
rows stop counting, sorted newest first (type chains) and each id kept once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from invtools import frames
from invtools.api.plan import NO_TIME
from invtools.api.walkparts import Piece
from invtools.errors import PaginationError

__all__ = ["frame_of", "frame_keys"]


def frame_of(pieces: Sequence[Piece], *, by_key: bool) -> pd.DataFrame:
    """The frame of a walk's ``pieces`` (in walk order; type chains' in any order, sorted here
    by ``(transaction_time, id)`` when ``by_key``). Each id once, the first kept.

    >>> from invtools.api.pagination import RawPage
    >>> body = b'{"items":[{"id":3,"transaction_time":"2026-05-02T00:00:00Z"},' \\
    ...        b'{"id":2,"transaction_time":"2026-05-01T00:00:00Z"}]}'
    >>> frame_of([Piece(0, RawPage(body, 1, None, False, 2), keep=1)], by_key=False)["id"].tolist()
    [3]
    """
    df = frames.transactions_df_from_pages(p.page.body for p in pieces)
    counts = [p.page.n_rows for p in pieces]
    if sum(counts) != len(df):
        raise PaginationError(
            f"the pages' counts add up to {sum(counts)} rows but they hold "
            f"{len(df)}; walk with chains=1"
        )
    offsets = np.cumsum([0, *counts])
    idx = np.concatenate(
        [
            np.arange(off, off + (n if p.keep is None else min(p.keep, n)))
            for p, off, n in zip(pieces, offsets, counts, strict=False)
        ]  # offsets: 1 more
        or [np.arange(0)]
    )
    idx = idx.astype(np.int64)
    ms, ids = frame_keys(df)
    if by_key:
        idx = idx[np.lexsort((-ids[idx], -ms[idx]))]
    first = ~pd.Series(ids[idx]).duplicated().to_numpy() | (ids[idx] == -1)
    out = df.take(idx[first]).reset_index(drop=True)
    return out if len(out) < len(df) or by_key else df


def frame_keys(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's key as two int64 arrays: time in ms (:data:`NO_TIME` when missing), id."""
    t = df["transaction_time"].dt.tz_convert(None).to_numpy().astype("datetime64[ms]")
    ms = np.where(np.isnat(t), NO_TIME, t.astype(np.int64))
    return ms, df["id"].to_numpy(dtype=np.int64, na_value=-1)
