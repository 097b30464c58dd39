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

__all__ = ["renamed", "withdrawn", "attribute_renamed", "REMOVED_IN"]

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


def withdrawn(who: str, options: dict, name: str, why: str, *, stacklevel: int = 4) -> Any:
    """Take ``name`` out of ``options`` (a function's ``**keywords``) and return its value
    (None when not given), with a ``DeprecationWarning`` saying ``why``: a keyword on its way
    out of a public signature (it goes in :data:`REMOVED_IN`).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     withdrawn("walk", {"before": print}, "before", "is ignored: the walk checks it")
    <built-in function print>
    >>> str(seen[0].message)
    'walk(before=...) is ignored: the walk checks it (before= goes in 0.3)'
    """
    if name not in options:
        return None
    warnings.warn(
        f"{who}({name}=...) {why} ({name}= goes in {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return options.pop(name)


def attribute_renamed(owner: str, old: str, new: str, value: Any) -> Any:
    """``value``, read under an attribute's ``old`` name, with a ``DeprecationWarning``.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     attribute_renamed("ActivityExplorer", "start", "since", 42)
    42
    >>> str(seen[0].message)
    'ActivityExplorer.start is deprecated: it is .since (the old name works until 0.3)'
    """
    warnings.warn(
        f"{owner}.{old} is deprecated: it is .{new} (the old name works until {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=3,
    )
    return value
