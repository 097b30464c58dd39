"""One test guards the public surface: every name in __all__ resolves, nothing heavy on import."""

from __future__ import annotations

import subprocess
import sys

import invtools

EXPECTED = {
    "__version__",
    # errors
    "InvtoolsError",
    "ConfigError",
    "TransportError",
    "PaginationError",
    "APIError",
    "AuthenticationError",
    "TeamModeError",
    "InvalidRequestError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    # the cache file stayed locked; an argument of the wrong kind; a mirror another sync holds
    "CacheError",
    "ArgumentTypeError",
    "LockedError",
    # said when an analysis or plot leaves deleted items out
    "DeletedItemsWarning",
    "WindowWarning",
    "CutWarning",
    "ClockWarning",
    "LevelsWarning",
    # the client and the mirror
    "Client",
    "Team",
    "Page",
    "RequestStats",
    "TransactionMirror",
    "SyncReport",
    # where a frame came from (df.attrs)
    "Provenance",
    # the response cache: what is in it per team, pruning it
    "cache_info",
    "prune_cache",
    # connecting from notebooks
    "connect",
    "demo_server",
    "team_tokens",
    "is_demo",
    # the same question for several teams at once
    "each_team",
    "TeamResults",
    # plots and widgets (imported on first use)
    "activity_table",
    "plot_activity",
    "plot_stock_history",
    "plot_calendar",
    "token_picker",
    "activity_explorer",
    # public submodules
    "frames",
    "analysis",
    "sandbox",
}


def test_the_public_surface_is_exactly_what_we_promise():
    # Adding or removing a public name is a decision: make it here, on purpose.
    assert set(invtools.__all__) == EXPECTED
    assert len(invtools.__all__) == len(EXPECTED)  # no duplicates


def test_every_public_name_resolves():
    for name in invtools.__all__:
        assert getattr(invtools, name) is not None, name


def test_import_does_not_pull_in_matplotlib_or_ipywidgets():
    code = (
        "import sys, invtools; "
        "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _public_callables():
    """(qualified name, function) for every public function, method and property of
    invtools, frames, analysis and sandbox (what the reference documents)."""
    import inspect

    from invtools import analysis, frames, sandbox

    for mod in (invtools, frames, analysis, sandbox):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj):  # with what it inherits from invtools (the client's parts)
                own = [k for k in obj.__mro__ if k.__module__.startswith("invtools")]
                for member, value in {m: v for k in own[::-1] for m, v in vars(k).items()}.items():
                    fn = value.fget if isinstance(value, property) else value
                    if not member.startswith("_") and inspect.isfunction(fn):
                        yield f"{mod.__name__}.{name}.{member}", fn
            elif inspect.isfunction(obj):
                yield f"{mod.__name__}.{name}", obj


def test_every_public_callable_says_what_it_returns_and_it_is_not_any():
    # issue 20: an editor shows what comes back; Any only where it is truly any JSON
    import inspect

    decoded_json = {"invtools.Client.get"}
    vague = []
    for name, fn in _public_callables():
        returns = inspect.signature(fn).return_annotation
        if name not in decoded_json and returns in (inspect.Signature.empty, "Any"):
            vague.append(name)
    assert vague == []
    assert len(dict(_public_callables())) > 100  # the walk above found the surface
