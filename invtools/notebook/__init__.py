"""Working in a notebook: connecting (to a team, or to the built-in demo server) and widgets.

What lives here:

- :mod:`~invtools.notebook.connection`: :func:`connect`, :func:`demo_server`,
  :func:`stop_demo_server`, :func:`team_tokens` (:class:`TeamTokens`), :func:`is_demo`,
  :func:`session_summary`, :func:`token_home`, :func:`demo_cache_path`,
  :func:`demo_client_options`: tokens from the environment, or the stand-in server with demo
  data when there is none; where a token may be sent; how every client of the demo server is
  paced and where its answers are cached (never the user's cache).
- :mod:`~invtools.notebook.teams`: :func:`each_team` (:class:`TeamResults`,
  :class:`TeamOutcome`): the same question for several teams at once, each at its own
  token's budget, a failed team's error in its slot.
- :mod:`~invtools.notebook.picker`: :func:`token_picker` (:class:`TokenPicker`) picks a team's
  token without ever showing it; :func:`scrub` masks secrets in a message.
- :mod:`~invtools.notebook.explorer`: :class:`ActivityExplorer`,
  :func:`invtools.viz.plot_activity` with controls, and :func:`activity_explorer`, one of a
  frame or of a client's window.
- :mod:`~invtools.notebook.controls`: :class:`TypeChoice`, the transaction types as
  checkboxes (the explorer's Types), and :func:`~invtools.notebook.controls.inline_label`, a
  control's name on its row (not exported here).
- :mod:`~invtools.notebook.demo`: runs the example notebooks end to end (``invtools demo``,
  ``make demo``); used by the command line, not exported here.

The widgets need ipywidgets and matplotlib, so they are imported on first use: ``connect()``
stays light. What it may import: :mod:`invtools.api`, :mod:`invtools.viz`,
:mod:`invtools.mirror`, :mod:`invtools.frames`, :mod:`invtools.sandbox` and the foundation
(``invtools.errors``, ``invtools._config``, ``invtools._types``, ...).

>>> from invtools.notebook import team_tokens
>>> team_tokens({"INVTOOLS_TOKEN_SHOP": "t1"})
TeamTokens(shop=<hidden>)
"""

from __future__ import annotations

import importlib

from invtools.notebook import connection, teams
from invtools.notebook.connection import *  # noqa: F403 - the names of connection.__all__
from invtools.notebook.teams import *  # noqa: F403 - and of teams.__all__

# name -> module that defines it; imported on first access (PEP 562): they need ipywidgets.
_WIDGETS = {
    "TokenPicker": "invtools.notebook.picker",
    "token_picker": "invtools.notebook.picker",
    "scrub": "invtools.notebook.picker",
    "ActivityExplorer": "invtools.notebook.explorer",
    "activity_explorer": "invtools.notebook.explorer",
    "TypeChoice": "invtools.notebook.controls",
}

__all__ = [*connection.__all__, *teams.__all__, *_WIDGETS]


def __getattr__(name: str):
    if name in _WIDGETS:
        value = getattr(importlib.import_module(_WIDGETS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'invtools.notebook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
