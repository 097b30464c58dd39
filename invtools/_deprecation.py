"""Old spellings that keep working for a release: a keyword renamed, with a
``DeprecationWarning`` naming the function called and the new name.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as seen:
...     warnings.simplefilter("always")
...     renamed("plot_stock_history", "until", "as_of", "2026-10-31", None)
'2026-10-31'
>>> str(seen[0].message)
'plot_stock_history(until=...) is deprecated: it is as_of= (the old name works until 0.3)'
>>> renamed("plot_stock_history", "until", "as_of", None, "2026-10-31")
'2026-10-31'
"""

from __future__ import annotations

import warnings
from typing import Any

from invtools.errors import ConfigError

__all__ = ["renamed", "REMOVED_IN"]

#: The release that drops the old spellings.
REMOVED_IN = "0.3"


def renamed(
    who: str, old: str, new: str, old_value: Any, value: Any, *, stacklevel: int = 4
) -> Any:
    """``value``; or, given under its ``old`` name, that value with a ``DeprecationWarning``
    (both given: a :class:`~invtools.errors.ConfigError`). ``stacklevel`` points the warning
    at the user's call (the default: two calls below it)."""
    if old_value is None:
        return value
    if value is not None:
        raise ConfigError(f"{who}: give {new}= only ({old}= is its old name)")
    warnings.warn(
        f"{who}({old}=...) is deprecated: it is {new}= (the old name works until {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return old_value
