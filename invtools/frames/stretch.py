"""The one rule for what a partly fetched window holds in full: :func:`complete_since`.

A frame of transaction lines needs one detail per transaction. When only some details have
arrived (fetched newest first, in the background: ``client.lines_growing()``; a mirror's first
fill), the rows that have arrived hold every transaction from some moment up to the window's
end, and that stretch is what the frame may claim (``attrs["window"]``,
docs/explanation/now.md): every analysis on it is then exact for that stretch.

The stretch starts at the oldest arrived transaction newer than every one still missing. A
missing transaction's own time is never claimed: one that arrived at that same time (a tie,
the list ordering it first by id) is left out of the stretch, as the missing one would belong
in it. This reads the times, not the list's order, so it holds for any order of arrival.

>>> times = pd.Series(pd.to_datetime(["2026-10-30", "2026-10-20", "2026-10-20", "2026-10-01"],
...                                  utc=True))
>>> complete_since(times, 1)                      # the newest arrived
Timestamp('2026-10-30 00:00:00+0000', tz='UTC')
>>> complete_since(times, 2)                      # its tie still missing: not claimed
Timestamp('2026-10-30 00:00:00+0000', tz='UTC')
>>> complete_since(times, 3), complete_since(times, 4)
(Timestamp('2026-10-20 00:00:00+0000', tz='UTC'), None)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools.errors import ArgumentTypeError

__all__ = ["complete_since"]

#: The smallest step of a transaction time (the wire's and the frames' milliseconds).
_TICK = pd.Timedelta(1, "ms")


def complete_since(times: pd.Series, arrived: int | Any) -> pd.Timestamp | None:
    """The time from which every row of a list whose transaction times are ``times`` has
    arrived, ``arrived`` being how many of its first rows have (the list's order, newest
    first), or a boolean mask of the rows that have. None: every row has. With none arrived
    past the newest missing one, the instant after it (the rule above: an empty stretch that
    claims no missing row).

    >>> t = pd.Series(pd.to_datetime(["2026-10-30T10:00Z", "2026-10-29T09:00Z"]))
    >>> complete_since(t, 0)
    Timestamp('2026-10-30 10:00:00.001000+0000', tz='UTC')
    >>> complete_since(t, [False, True])              # the newest still missing
    Timestamp('2026-10-30 10:00:00.001000+0000', tz='UTC')
    """
    if not isinstance(times, pd.Series):
        raise ArgumentTypeError(
            f"complete_since(times) takes a Series of transaction times, not {type(times).__name__}"
        )
    when = pd.to_datetime(times, utc=True).reset_index(drop=True)
    if isinstance(arrived, (int, np.integer)) and not isinstance(arrived, bool):
        have = np.arange(len(when)) < arrived
    else:
        have = np.asarray(arrived, dtype=bool)
        if have.shape != (len(when),):
            raise ArgumentTypeError(
                f"complete_since(arrived): a count or one flag per row ({len(when)}), "
                f"not {arrived!r}"
            )
    missing = when[~have].dropna()
    if not len(missing):
        return None
    gap = missing.max()
    after = when[have & (when > gap).to_numpy(dtype=bool)]
    return after.min() if len(after) else gap + _TICK
