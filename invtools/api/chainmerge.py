"""Several chains' raw pages merged into the frame of one plain walk: every page body parsed
at once by pyarrow, then trimmed at the seams, sorted (type chains) and each id kept once.
Used by :func:`invtools.api.chains.walk_frame`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from invtools import frames
from invtools.api.chainwalk import NO_TIME, ChainWalk
from invtools.errors import PaginationError

__all__ = ["frame_rows", "merge_pages", "frame_keys"]


def frame_rows(walk: ChainWalk) -> pd.DataFrame:
    """The frame of a raw :class:`ChainWalk`: every page body parsed at once by pyarrow, then
    merged by :func:`merge_pages`."""
    meta: list[tuple] = []

    def bodies():
        for j, page, keep in walk:
            meta.append((j, page.number, page.count, keep))
            yield page.body

    try:
        df = frames.transactions_df_from_pages(bodies())
    finally:
        walk.close()
    return merge_pages(df, meta, by_key=walk.plan.kind == "types", last_chain=walk.last_chain)


def merge_pages(df: pd.DataFrame, pages: Sequence[tuple], *, by_key: bool,
                last_chain: int) -> pd.DataFrame:
    """The rows of one plain walk from the rows of several chains' pages, ``df`` holding
    them in arrival order and ``pages`` saying ``(chain, number, count, keep)`` for each
    (``keep``: rows kept from its start, None = all). Chains up to ``last_chain`` count:
    seam chains in chain and page order; type chains (``by_key``) newest first by
    ``(transaction_time, id)``. Each id once, the first kept.

    >>> t = pd.to_datetime([5, 4, 3, 2, 1], unit="s", utc=True)
    >>> df = pd.DataFrame({"id": [3, 2, 5, 4, 3], "transaction_time": t[[2, 3, 0, 1, 2]]})
    >>> merge_pages(df, [(1, 1, 2, None), (0, 1, 3, 2)], by_key=False, last_chain=1)["id"].tolist()
    [5, 4, 3, 2]
    """
    if sum(p[2] for p in pages) != len(df):
        raise PaginationError(f"the pages' counts add up to {sum(p[2] for p in pages)} rows "
                              f"but they hold {len(df)}; walk with chains=1")
    if len({p[0] for p in pages}) <= 1 and all(p[3] is None for p in pages):
        # One chain, nothing to trim; a walk that restarted fresh repeats some rows.
        ids = frame_keys(df)[1]
        again = pd.Series(ids).duplicated().to_numpy() & (ids != -1)
        return df.loc[~again].reset_index(drop=True) if again.any() else df
    offsets = np.cumsum([0] + [p[2] for p in pages])
    chosen = [(j, number, off, count if keep is None else min(keep, count))
              for (j, number, count, keep), off in zip(pages, offsets) if j <= last_chain]
    if not by_key:
        chosen.sort()
    idx = np.concatenate([np.arange(off, off + k) for _j, _n, off, k in chosen] or
                         [np.arange(0)]).astype(np.int64)
    if by_key:
        ms, ids = frame_keys(df)
        idx = idx[np.lexsort((-ids[idx], -ms[idx]))]
    ids = frame_keys(df)[1][idx]
    first = ~pd.Series(ids).duplicated().to_numpy() | (ids == -1)
    return df.take(idx[first]).reset_index(drop=True)


def frame_keys(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's key as two int64 arrays: time in ms (:data:`NO_TIME` when missing), id."""
    t = df["transaction_time"].dt.tz_convert(None).to_numpy().astype("datetime64[ms]")
    ms = np.where(np.isnat(t), NO_TIME, t.astype(np.int64))
    return ms, df["id"].to_numpy(dtype=np.int64, na_value=-1)
