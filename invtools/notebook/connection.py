"""Connect a notebook to the real service, or to the built-in demo server when there is no token.

Every example notebook starts with :func:`connect`. With ``INVTOOLS_TOKEN`` (and optionally
``INVTOOLS_BASE_URL``) in the environment it returns a :class:`~invtools.api.Client` for that
team. Without a token it starts the stand-in server (:mod:`invtools.sandbox`) in the background
of the kernel, says so loudly, and returns a client of its demo shop, so a notebook runs on a
fresh machine with no account.

The demo server, the clients :func:`connect` made (remembered weakly, for
:func:`session_summary`: a client you drop is collected, and its session closed, and only its
team's name and its counts are kept) and whether the banner was said are state of this process;
:func:`stop_demo_server` stops the server and forgets the rest.

The demo's answers never go to the user's response cache: the server takes a new port (and
tokens) at every start, so they would never be asked for again and only make the file grow.
Clients of the demo server (from :func:`connect` and the token picker) share a cache in a
temporary folder of the server's own (:func:`demo_cache_path`), removed when it stops.

Every client of the demo server gets the same options, whichever helper made it
(:func:`connect`, :func:`~invtools.notebook.token_picker`, :func:`~invtools.each_team`):
:func:`demo_client_options` is the one rule. A client is paced as the demo server limits, not
as the real service does: not at all by default (the demo server limits nothing, so the
notebooks run in seconds), at its rate when it was started with one
(``demo_server(rate_limit=5)``). An option given explicitly wins.

>>> client = connect(quiet=True)            # no INVTOOLS_TOKEN here: the demo shop
>>> client.team().name
'Greenfield Hardware & Garden'
>>> stop_demo_server()
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invtools._config import (
    BASE_URL_ENV,
    TEAM_TOKEN_PREFIX,
    TOKEN_ENV,
    check_flag,
    check_kind,
    normalise_base_url,
)
from invtools.api import Client
from invtools.errors import ArgumentTypeError, ConfigError, InvtoolsError

if TYPE_CHECKING:  # the stand-in is imported when it is started
    from invtools.sandbox import Sandbox

__all__ = [
    "connect",
    "demo_server",
    "stop_demo_server",
    "team_tokens",
    "TeamTokens",
    "is_demo",
    "session_summary",
    "token_home",
    "demo_cache_path",
    "demo_client_options",
]

_lock = threading.RLock()
_server: Any = None  # the running demo server of this process, if any
_stack = contextlib.ExitStack()  # stops the running demo server and removes its cache folder
_cache_dir: str | None = None  # the demo server's response cache folder (temporary)
_options: dict[str, Any] = {}  # what the running demo server was started with
_exported: dict[str, str] = {}  # INVTOOLS_TOKEN_<TEAM> -> demo token, as demo_server() set them
_announced = False
# Clients made by connect() in this process, for session_summary(); weakly, so that connect()
# keeps no client (its connections, its cache file) alive; what a dropped one did is kept.
_clients: weakref.WeakValueDictionary[int, Client] = weakref.WeakValueDictionary()
_retired: dict[int, tuple[str | None, Any]] = {}  # dropped clients' team name and counts
_made = itertools.count()
_since = 0  # the number of the first client the summary counts (stop_demo_server forgets)


def demo_server(
    *, rate_limit: int | None = None, shops: int | None = None, **options: Any
) -> Sandbox:
    """Start (once per process) and return the built-in demo server.

    The demo server answers like the real API on 127.0.0.1 with seeded demo data: the
    location-mode shop ``"shop"``, its branches ``"harrogate"`` and ``"york"`` (``shops``
    location-mode teams in all; see :func:`invtools.sandbox.serve`) and the Basic-mode café
    ``"basic"``. Its rate limit is off by default so the example notebooks run in seconds;
    the real service allows about 5 requests per second per endpoint. It stops when the
    process exits (or on :func:`stop_demo_server`).

    Starting it also exports ``INVTOOLS_TOKEN_<TEAM>`` for this process (demo tokens of a
    local server, not secrets), so the token picker offers the demo teams by name. Once it
    runs, ``demo_server()`` returns it; asked for with other options (``rate_limit=5``), it
    raises :class:`~invtools.errors.ConfigError`: :func:`stop_demo_server` first.

    >>> sb = demo_server()
    >>> sb.base_url, sorted(sb.tokens)      # doctest: +ELLIPSIS
    ('http://127.0.0.1:...', ['basic', 'harrogate', 'shop', 'york'])
    >>> demo_server() is sb, sorted(team_tokens())
    (True, ['basic', 'harrogate', 'shop', 'york'])
    """
    global _server, _cache_dir, _options
    for name, value in (("rate_limit", rate_limit), ("shops", shops)):
        if value is not None:
            check_kind(value, int | float, f"demo_server({name})", "a number")
    given = {"rate_limit": rate_limit, "shops": shops, **options}
    asked = {k: v for k, v in given.items() if v is not None}
    with _lock:
        if _server is not None and any(_options.get(k) != v for k, v in asked.items()):
            raise ConfigError(
                f"the demo server already runs with {_options}; call stop_demo_server() "
                f"first to start it with {asked}"
            )
        if _server is None:
            from invtools.sandbox import serve

            _options = {"rate_limit": 0, "shops": 3, **asked}
            _server = _stack.enter_context(serve(**_options))
            _cache_dir = tempfile.mkdtemp(prefix="invtools-demo-cache-")  # 0700
            _stack.callback(shutil.rmtree, _cache_dir, ignore_errors=True)
            atexit.register(_stop_server)
            for name, token in _server.tokens.items():
                key = TEAM_TOKEN_PREFIX + name.upper()
                if key not in os.environ:
                    os.environ[key] = _exported[key] = token
        return _server


def stop_demo_server() -> None:
    """Stop the built-in demo server of this process, and start afresh.

    Stops the server (if one runs) and removes the ``INVTOOLS_TOKEN_<TEAM>`` variables it
    exported; forgets the clients :func:`connect` made (:func:`session_summary` starts from
    zero again, the clients themselves are left open) and that the demo banner was said. The
    next :func:`connect` or :func:`demo_server` starts a new server. Calling it when no server
    runs is harmless.

    >>> stop_demo_server()
    >>> session_summary()["teams"]
    []
    """
    global _announced, _since
    with _lock:
        _stop_server()
        for key, token in _exported.items():
            if os.environ.get(key) == token:  # unless someone set it to something else since
                del os.environ[key]
        _exported.clear()
        _clients.clear()
        _retired.clear()
        _since = next(_made)
        _announced = False


def _stop_server() -> None:
    global _server, _cache_dir
    with _lock:
        _stack.close()  # the cache folder removed, then the server stopped
        _server = _cache_dir = None


def demo_cache_path(base_url: str | None = None) -> Path | None:
    """The response cache file of the demo server of this process: in a temporary folder of
    its own, removed when the server stops (never the user's cache). None when no demo server
    runs, or when ``base_url`` is given and is not the demo server's.

    >>> demo_cache_path() is None                   # no demo server yet
    True
    >>> demo_cache_path(demo_server().base_url).name
    'responses.sqlite'
    """
    with _lock:
        if _server is None or _cache_dir is None:
            return None
        if base_url is not None and base_url.rstrip("/") != _server.base_url.rstrip("/"):
            return None
        return Path(_cache_dir) / "responses.sqlite"


def demo_client_options(base_url: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The :class:`~invtools.api.Client` options for a client at ``base_url``: ``options``
    (copied) plus, when ``base_url`` is the built-in demo server's, what every client of the
    demo server gets unless told otherwise. The one rule :func:`connect` and the token picker
    both follow:

    - ``rate_limit``: the demo server's own limit, in requests per second (its
      ``rate_limit`` per ``rate_window``): 0 (not paced) for the default demo server, which
      limits nothing; 5 for ``demo_server(rate_limit=5)``. Read when the client is made, so a
      client made after ``demo_server().rate_limit = 5`` is paced at 5.
    - ``rate_limit_scope``: ``"token"`` when the server counts one budget per token
      (its ``shared_rate_limit`` quirk), else the client's default.
    - ``cache``: the demo server's own cache (:func:`demo_cache_path`), never the user's.

    Other addresses get ``options`` as given (the real service's pace is the client's default).

    >>> sb = demo_server()
    >>> opts = demo_client_options(sb.base_url, {"progress": False})
    >>> opts["rate_limit"], opts["cache"] == demo_cache_path(), opts["progress"]
    (0.0, True, False)
    >>> demo_client_options(sb.base_url, {"rate_limit": 5})["rate_limit"]    # given: kept
    5
    >>> demo_client_options("https://rest.boxhero-app.com", {"rate_limit": 2})
    {'rate_limit': 2}
    """
    out = dict(options or {})
    with _lock:
        server, cache = _server, demo_cache_path(base_url)
    if server is None or cache is None:  # not the demo server's address
        return out
    out.setdefault("rate_limit", server.rate_limit / server.rate_window)
    if "shared_rate_limit" in server.quirks:
        out.setdefault("rate_limit_scope", "token")
    out.setdefault("cache", cache)
    return out


class TeamTokens(dict):
    """name -> token, as :func:`team_tokens` finds them; displays the names only, so showing
    it in a notebook (or a log line, or an error) never reveals a token: ``str()`` and
    IPython's display of a cell's value both use this ``__repr__``."""

    def __repr__(self) -> str:
        return "TeamTokens(" + ", ".join(f"{name}=<hidden>" for name in self) + ")"


def team_tokens(environ: Mapping[str, str] | None = None) -> TeamTokens:
    """Tokens found in the environment, by name: ``INVTOOLS_TOKEN`` as ``"default"`` and each
    ``INVTOOLS_TOKEN_<NAME>`` as ``"<name>"`` (lower case). Empty values are skipped. The
    result is a dict whose display shows the names, never the tokens.

    >>> found = team_tokens({"INVTOOLS_TOKEN_SHOP": "t1", "INVTOOLS_TOKEN": "t0", "HOME": "/"})
    >>> found, sorted(found), found["shop"]
    (TeamTokens(default=<hidden>, shop=<hidden>), ['default', 'shop'], 't1')
    """
    env = check_environ(environ, "team_tokens")
    found = TeamTokens()
    for key in sorted(env):
        if key != TOKEN_ENV and not key.startswith(TEAM_TOKEN_PREFIX):
            continue
        value = env[key]
        if not isinstance(value, str):  # its value is never shown: it may be a token
            raise ArgumentTypeError(
                f"team_tokens(environ): {key} holds a {type(value).__name__}, not a token's "
                "text; environment values are strings"
            )
        if value.strip():
            found["default" if key == TOKEN_ENV else key[len(TEAM_TOKEN_PREFIX) :].lower()] = value
    return found


def check_environ(environ: Any, who: str) -> Mapping[str, str]:
    """``environ`` as the environment to read (None: ``os.environ``); anything but a mapping
    is the package's :class:`~invtools.errors.ArgumentTypeError`, naming ``who``."""
    env = os.environ if environ is None else environ
    if not isinstance(env, Mapping):
        raise ArgumentTypeError(
            f"{who}(environ): a mapping of names to values such as os.environ, "
            f"not {type(env).__name__}"
        )
    return env


def connect(team: str | None = None, *, quiet: bool = False, **client_options: Any) -> Client:
    """A client for the team to investigate: from the environment, or the demo server.

    - ``team=None`` (or ``"default"``): ``INVTOOLS_TOKEN``; ``team="shop"``:
      ``INVTOOLS_TOKEN_SHOP`` (the names :func:`team_tokens` gives).
    - The base URL comes from ``INVTOOLS_BASE_URL`` when set, else the real service.
    - With no such token, the built-in demo server starts (said loudly, unless ``quiet``) and
      the client talks to its team ``team`` (default ``"shop"``, the location-mode demo shop;
      ``"harrogate"`` and ``"york"`` are its branches, ``"basic"`` is a team in Basic mode).
      The client is paced as the demo server limits (not at all, by default) and its
      answers are cached in the demo server's own temporary folder (:func:`demo_cache_path`),
      not in the user's cache: :func:`demo_client_options`, the rule the token picker
      follows too.

    Other keyword arguments go to :class:`~invtools.api.Client`.

    >>> shop = connect()                    # no INVTOOLS_TOKEN: the demo server, said loudly
    >>> cafe = connect("basic")
    >>> shop.team().mode_name, cafe.team().mode_name, is_demo(cafe)
    ('Location', 'Basic', True)
    """
    if team is not None and not isinstance(team, str):
        raise ArgumentTypeError(
            f"connect(team): team is a name such as 'shop' (a token is read from "
            f"INVTOOLS_TOKEN_<NAME>), not a {type(team).__name__}"
        )
    quiet = check_flag(quiet, "connect(quiet)")
    default = team is None or team == "default"
    env_name = TOKEN_ENV if team is None or default else TEAM_TOKEN_PREFIX + team.upper()
    token = os.environ.get(env_name, "").strip()
    if token and not (_server is not None and token in _server.tokens.values()):  # not a demo's
        # an explicit base_url= wins over the environment's; never the demo server's
        base_url = client_options.get("base_url", os.environ.get(BASE_URL_ENV) or None)
        if base_url is not None:
            client_options["base_url"] = token_home(token, base_url)
        return _remember(Client(token, **client_options))
    if team is not None and not re.fullmatch(r"[A-Za-z0-9_]{1,20}", team):
        # Not shown: what is pasted where a name belongs is often the token itself.
        raise ConfigError(
            f"connect(team): no INVTOOLS_TOKEN_<NAME> for the {len(team)} characters given "
            f"(not repeated here, in case they are a token). A team name is up to 20 letters, "
            f"digits or '_'; a token goes to invtools.Client(token, ...) or into "
            f"INVTOOLS_TOKEN_<NAME>."
        )
    if "base_url" in client_options:
        raise ConfigError(
            f"base_url={client_options['base_url']!r} was given but there is no token: set "
            f"{env_name}, or pass the token to invtools.Client(token, base_url=...)"
        )

    server = demo_server()
    name = "shop" if default else team
    if name not in server.tokens:
        raise ConfigError(
            f"no token for team {name!r}: set {env_name}, or use one of the demo teams "
            f"{sorted(server.tokens)}"
        )
    global _announced
    if not quiet and not _announced:
        _announced = True
        print(
            f"*** No {env_name} in the environment: using the BUILT-IN DEMO SERVER at "
            f"{server.base_url} (demo team {name!r}, made-up data). Set {env_name} "
            f"(and {BASE_URL_ENV}) to investigate your own team. ***",
            file=sys.stderr,
        )
    options = demo_client_options(server.base_url, client_options)
    return _remember(Client(server.tokens[name], base_url=server.base_url, **options))


def _remember(client: Client) -> Client:
    n = next(_made)
    _clients[n] = client  # numbered: the summary lists teams in the order made
    # its counts outlive it (each_team's clients are dropped as soon as a team answered)
    weakref.finalize(client, _retire, n, client._requester, client._counters)
    return client


def _retire(n: int, requester: Any, counters: Any) -> None:
    if n >= _since:  # not one stop_demo_server() forgot
        team = requester.team
        _retired[n] = (None if team is None else team.name, counters.snapshot())


def session_summary() -> dict[str, Any]:
    """What the clients made by :func:`connect` in this process did, those dropped since too:
    team names, rows and pages fetched, requests sent, responses served from cache. No
    tokens.

    >>> session_summary()["sent"]
    0
    """
    done = dict(_retired)
    for n, client in list(_clients.items()):  # a copy: one may be collected meanwhile
        try:
            team_name = client.team().name  # fetched once per client: normally no request
        except InvtoolsError:
            team_name = None
        done[n] = (team_name, client.stats)
    made = [done[n] for n in sorted(done)]  # in the order the clients were made
    teams = list(dict.fromkeys(name for name, _stats in made if name is not None))
    counts = ("rows", "pages", "sent", "from_cache")
    return {"teams": teams, **{key: sum(getattr(s, key) for _n, s in made) for key in counts}}


def token_home(token: str, base_url: str) -> str:
    """Where ``token`` may be sent: the built-in demo server of this process for one of its
    demo tokens (wherever ``base_url`` points), else ``base_url``. A token that is not the
    demo's is never sent to the demo server: :class:`ConfigError` if ``base_url`` is its.

    >>> sb = demo_server()
    >>> token_home(sb.tokens["shop"], "https://rest.boxhero-app.com") == sb.base_url
    True
    >>> token_home("tok_my-own", "https://rest.boxhero-app.com")
    'https://rest.boxhero-app.com'
    >>> token_home("tok_my-own", sb.base_url)               # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: this token is not one of the built-in demo server's, ...
    """
    with _lock:
        server = _server
    if server is None:
        return base_url
    if token in server.tokens.values():
        return server.base_url
    try:
        if normalise_base_url(base_url) != server.base_url:
            return base_url
    except ConfigError:  # not a URL at all: the client says what is wrong with it
        return base_url
    raise ConfigError(
        f"this token is not one of the built-in demo server's, so it is not sent to the "
        f"demo server at {server.base_url} (it knows only the demo teams "
        f"{', '.join(sorted(server.tokens))}). To check your own token, give your "
        f"service's base_url (or none: {BASE_URL_ENV}, else the real service)."
    )


def is_demo(client: Client) -> bool:
    """Whether ``client`` talks to the built-in demo server of this process.

    >>> is_demo(connect(quiet=True))        # no INVTOOLS_TOKEN: the demo server
    True
    """
    check_kind(client, Client, "is_demo(client)", "an invtools.Client")
    return _server is not None and client.base_url == _server.base_url
