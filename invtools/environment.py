"""The old home of :func:`~invtools.connect` and the demo environment, now
:mod:`invtools.notebook.connection`; kept only while older code still imports from here.

``invtools.client`` imports ``TOKEN_ENV`` from this module until it moves to
:mod:`invtools.api` (the environment names live in ``invtools._config`` now), and notebooks
written before the split say ``from invtools.environment import is_demo``. New code imports
from :mod:`invtools` or :mod:`invtools.notebook`. The other names are looked up in
:mod:`invtools.notebook.connection` on first use, so importing this module imports nothing
but the configuration (no cycle with the client).

>>> TOKEN_ENV
'INVTOOLS_TOKEN'
"""

from __future__ import annotations

import importlib

from invtools._config import BASE_URL_ENV, TEAM_TOKEN_PREFIX, TOKEN_ENV

_MOVED = ("connect", "demo_server", "stop_demo_server", "team_tokens", "TeamTokens",
          "is_demo", "session_summary")

__all__ = ["TOKEN_ENV", "BASE_URL_ENV", "TEAM_TOKEN_PREFIX", *_MOVED]


def __getattr__(name: str):
    if name in _MOVED:
        return getattr(importlib.import_module("invtools.notebook.connection"), name)
    raise AttributeError(f"module 'invtools.environment' has no attribute {name!r}")
