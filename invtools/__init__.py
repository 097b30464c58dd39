"""invtools: investigate inventory from BoxHero's REST API as typed pandas DataFrames.

>>> import invtools
>>> issubclass(invtools.AuthenticationError, invtools.APIError)
True

The public surface is exactly ``__all__``. Heavy or optional parts (plots need matplotlib,
widgets need ipywidgets) are imported on first use, so ``import invtools`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from invtools.errors import (
    APIError,
    ArgumentTypeError,
    AuthenticationError,
    CacheError,
    ClockWarning,
    ConfigError,
    CutWarning,
    DeletedItemsWarning,
    InvalidRequestError,
    InvtoolsError,
    LevelsWarning,
    LockedError,
    NotFoundError,
    PaginationError,
    RateLimitError,
    ServerError,
    TeamModeError,
    TransportError,
    WindowWarning,
)

__version__ = "0.1.0"

if TYPE_CHECKING:  # what the lazy names below are, for mypy, pyright and editors
    from invtools import analysis, frames, sandbox
    from invtools.api import Client, Page, RequestStats, Team
    from invtools.api.cacheinfo import cache_info, prune_cache
    from invtools.frames.provenance import Provenance
    from invtools.mirror import SyncReport, TransactionMirror
    from invtools.notebook.connection import connect, demo_server, is_demo, team_tokens
    from invtools.notebook.explorer import activity_explorer
    from invtools.notebook.picker import token_picker
    from invtools.notebook.teams import TeamResults, each_team
    from invtools.viz import activity_table, plot_activity, plot_calendar, plot_stock_history

# module -> the names it defines, each resolved on first attribute access (PEP 562).
_LAZY_MODULES = {
    "invtools.api": ("Client", "Team", "Page", "RequestStats"),
    "invtools.api.cacheinfo": ("cache_info", "prune_cache"),
    "invtools.frames.provenance": ("Provenance",),
    "invtools.mirror": ("TransactionMirror", "SyncReport"),
    "invtools.notebook.connection": ("connect", "demo_server", "team_tokens", "is_demo"),
    "invtools.notebook.explorer": ("activity_explorer",),
    "invtools.notebook.picker": ("token_picker",),
    "invtools.notebook.teams": ("each_team", "TeamResults"),
    "invtools.viz": ("activity_table", "plot_activity", "plot_stock_history", "plot_calendar"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

# Public submodules, also imported on first access: ``invtools.frames.stock_history(...)``.
_SUBMODULES = ("frames", "analysis", "sandbox")

__all__ = [
    "__version__",
    "InvtoolsError",
    "CacheError",
    "ConfigError",
    "ArgumentTypeError",
    "LockedError",
    "TransportError",
    "PaginationError",
    "APIError",
    "AuthenticationError",
    "TeamModeError",
    "InvalidRequestError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "DeletedItemsWarning",
    "WindowWarning",
    "CutWarning",
    "ClockWarning",
    "LevelsWarning",
    *_LAZY,
    *_SUBMODULES,
]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"invtools.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'invtools' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
