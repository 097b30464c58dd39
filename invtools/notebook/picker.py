"""The token picker: choose a team's token safely and get a ready client.

:func:`token_picker` offers the tokens found in the environment *by name* and a masked field
to paste a new one, checks the chosen token against ``/v1/teams/linked`` (asking the server
each time: a cached team would call a token deleted since "Connected") and hands out a ready
:class:`~invtools.api.Client`. It is an ipywidgets ``VBox``: display it by leaving it last in
a cell.

How the picker keeps tokens out of sight: widget state is what a notebook saves (and what the
browser holds), so no synced trait ever holds a token. The dropdown's options are names; the
environment is read again at the moment a name is chosen; the ``Password`` field is emptied
by every action (Connect, choosing a name instead, :meth:`~TokenPicker.refresh`) as soon as
it is read, before the network check; status lines and the picker's repr are built from the
team's name, never the token, and every message (and log line) is scrubbed of the
token even when the server echoes it back. The token then lives only inside the client's HTTP
session.

The picker owns the clients it makes: choosing another team (or a choice failing) closes the
previous client, so its connections and cache file do not pile up over a session of switching
teams.

For example, with the stand-in server of :func:`invtools.sandbox.serve` as ``sandbox``:

>>> picker = token_picker(base_url=sandbox.base_url,
...                       environ={"INVTOOLS_TOKEN_SHOP": sandbox.tokens["shop"]})
>>> picker.dropdown.options
('shop',)
>>> picker.dropdown.value = "shop"              # what choosing "shop" in the notebook does
>>> print(picker.message)                       # doctest: +ELLIPSIS
Connected to Greenfield Hardware & Garden (team ..., Location mode) with token 'shop' at ...
>>> sandbox.tokens["shop"] in picker.message + repr(picker)    # never the token itself
False
>>> picker.client.close()
"""

from __future__ import annotations

import contextlib
import html
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets
import traitlets

from invtools._config import BASE_URL_ENV, DEFAULT_BASE_URL, check_kind, clean_token
from invtools._types import TEAM_PATH
from invtools.api import Client
from invtools.errors import (
    APIError,
    AuthenticationError,
    ConfigError,
    InvtoolsError,
    NotFoundError,
    TransportError,
)
from invtools.notebook.connection import (
    check_environ,
    demo_client_options,
    is_demo,
    team_tokens,
    token_home,
)

__all__ = ["token_picker", "TokenPicker", "scrub"]

logger = logging.getLogger("invtools")

PASTED = "the pasted token"  # how messages name a pasted token (a named one: token 'shop')
#: The status line's mark and its colour, by level ("info" has none).
_MARKS = {"ok": ("✓", "#2ca02c"), "warn": ("⚠", "#b8860b"), "error": ("✗", "#d62728")}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***`` (longest first, so a token that contains
    another is masked whole).

    >>> scrub("Bearer abc123 was refused", ["abc123"])
    'Bearer *** was refused'
    """
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


class TokenPicker(widgets.VBox):
    """Choose the team to work with; see :func:`token_picker`.

    Attributes: ``client`` (the ready :class:`~invtools.api.Client`, ``None`` until a token
    works and again after a choice fails; the picker closes it when another choice replaces
    it), ``team`` (its :class:`~invtools.api.Team`), ``base_url`` (where tokens are checked),
    ``message`` (the status as plain text), and the parts ``dropdown``, ``password``,
    ``button``, ``status``. ``client`` and ``team`` are (unsynced) traits, so
    ``picker.observe(handler, names="client")`` works too.
    """

    client = traitlets.Any(None, allow_none=True)  # not synced: it never reaches the browser
    team = traitlets.Any(None, allow_none=True)

    def __init__(
        self,
        *,
        base_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        on_change: Callable[[Client], Any] | Iterable[Callable[[Client], Any]] | None = None,
        **options: Any,
    ) -> None:
        env = check_environ(environ, "token_picker")
        if base_url is None:
            # The same environment the tokens come from, read the way connect() reads it (an
            # empty value counts as unset), so a notebook pointed at a server by
            # INVTOOLS_BASE_URL gets a picker that checks tokens there too.
            base_url = env.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        self.base_url = base_url
        self._options = options
        # Looked up when a name is chosen, not copied: the picker keeps no token of its own
        # (an explicit ``environ`` is only referenced) and never puts one in widget state.
        self._tokens = lambda: team_tokens(env)
        if on_change is None or callable(on_change):
            self._callbacks = [] if on_change is None else [on_change]
        else:
            self._callbacks = list(check_kind(on_change, Iterable, "on_change", "a callable"))
            for fn in self._callbacks:
                check_kind(fn, callable, "on_change", "a callable or a list of callables")

        names = list(self._tokens())
        self.dropdown = widgets.Dropdown(
            options=names, value=None, description="Team", layout={"width": "16em"}
        )
        self.password = widgets.Password(placeholder="or paste a token", layout={"width": "18em"})
        self.button = widgets.Button(
            description="Connect", icon="plug", tooltip="Check the pasted token, or the chosen team"
        )
        self.status = widgets.HTML()
        super().__init__(
            children=[widgets.HBox([self.dropdown, self.password, self.button]), self.status]
        )
        self.dropdown.observe(self._on_dropdown, names="value")
        self.button.on_click(lambda _button: self.connect())
        start = f"Choose a team ({len(names)} token(s) in the environment: {', '.join(names)}) or"
        if not names:
            start = "No INVTOOLS_TOKEN or INVTOOLS_TOKEN_<NAME> in the environment:"
        self._say("info", f"{start} paste a token and press Connect.")

    # -- public

    def on_change(self, callback: Callable[[Client], Any]) -> Callable[[Client], Any]:
        """Call ``callback(client)`` each time a token is checked and works (usable as a
        decorator). Callbacks are not called when a choice fails."""
        self._callbacks.append(callback)
        return callback

    @property
    def names(self) -> list[str]:
        """The names offered in the dropdown."""
        return list(self.dropdown.options)

    def refresh(self) -> None:
        """Read the environment again (after exporting a new ``INVTOOLS_TOKEN_<NAME>``)."""
        self._take_pasted()  # whatever the user does, the field is emptied
        current = self.dropdown.value
        names = list(self._tokens())
        self.dropdown.unobserve(self._on_dropdown, names="value")  # nothing to connect
        self.dropdown.options = names
        self.dropdown.value = current if current in names else None
        self.dropdown.observe(self._on_dropdown, names="value")

    def connect(self, name: str | None = None) -> Client | None:
        """Check the token named ``name`` (from the environment), or, without a name, the
        pasted token if there is one, else the dropdown's choice. Returns the client or None.
        The password field is emptied either way: a token pasted and then passed over for a
        name is dropped, not kept in the field (nor in a notebook saved with widget state)."""
        pasted = self._take_pasted()
        if name is None and pasted:
            return self._check(pasted, PASTED)
        client = self._check_named(self.dropdown.value if name is None else name)
        if pasted:  # a name was chosen over it
            note = "(The pasted token was not used; the field is empty again.)"
            self._say(self._level, f"{self.message} {note}", strong=self.team and self.team.name)
        return client

    def __repr__(self) -> str:
        team = self.team and f"{self.team.name!r} (id {self.team.id}, {self.team.mode_name} mode)"
        return f"TokenPicker(base_url={self.base_url!r}, names={self.names!r}, team={team})"

    def _take_pasted(self) -> str:
        """The pasted token (stripped; "" when there is none), with the field emptied first
        thing, so the token is in the synced state for as short a time as possible and never
        when the notebook is saved."""
        pasted = self.password.value
        self.password.value = ""
        return pasted.strip()

    # -- events

    def _on_dropdown(self, change: dict) -> None:
        if change["new"] is not None:
            self.connect(change["new"])

    # -- the check

    def _check_named(self, name: str | None) -> Client | None:
        if name is None:
            self._say("error", "Paste a token into the field, or choose a team, first.")
            return None
        token = self._tokens().get(name)
        if token is None:
            env = "INVTOOLS_TOKEN" if name == "default" else f"INVTOOLS_TOKEN_{name.upper()}"
            self._fail(f"No token named {name!r} in the environment any more (was {env} unset?).")
            return None
        return self._check(token, f"token {name!r}")

    def _check(self, token: str, label: str) -> Client | None:
        secrets = {token, token.strip()}
        with contextlib.suppress(ConfigError):
            secrets.add(clean_token(token))
        self.button.disabled = True
        client = None
        base_url = self.base_url
        try:
            # A token goes only where it belongs: a demo token to the demo server, any other
            # never there (ConfigError before anything is sent).
            base_url = token_home(token, self.base_url)
            self._say("info", f"Checking {label} against {base_url}{TEAM_PATH} …")
            # At the demo server: its pace and its cache, as connect() gives its clients.
            options = demo_client_options(base_url, self._options)
            client = Client(token, base_url=base_url, **options)
            # Asked of the server, never the cache: the team is cached for hours, and a token
            # deleted meanwhile must be reported refused, not "Connected".
            team = client.team(refresh=True)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status line
            if client is not None:
                client.close()
            self._fail(scrub(self._explain(exc, label, base_url), secrets))  # and the old one
            return None
        finally:
            del token
            self.button.disabled = False
        if label == PASTED:  # the dropdown no longer describes the team in use
            self.dropdown.value = None  # (which connects nothing)
        demo = " (the built-in demo server)" if is_demo(client) else ""
        where = f"{label} at {base_url}{demo}"
        who = f"{team.name} (team {team.id}, {team.mode_name} mode)"
        said = f"Connected to {who} with {where}"
        if not team.uses_locations:
            said += (
                ", but this team does not manage stock by location: items, stock, transactions "
                "and locations will not work (the service refuses them). Members, partners and "
                "item attributes do"
            )
        self._say("ok" if team.uses_locations else "warn", f"{said}.", strong=team.name)
        self._close_client()
        self.team = team
        self.client = client
        for callback in list(self._callbacks):
            try:
                callback(client)
            except Exception as exc:  # noqa: BLE001 - one bad callback must not hide the rest
                # The exception may quote the token (a callback that formats a request, say):
                # the log line is scrubbed like the status line.
                why = scrub(f"{type(exc).__name__}: {exc}", secrets)
                name = scrub(repr(callback), secrets)
                logger.warning("token_picker on_change callback %s failed: %s", name, why)
                self._say("warn", f"{self.message} (A callback failed: {why})")
        return client

    @staticmethod
    def _explain(exc: BaseException, label: str, base_url: str) -> str:
        url = f"{base_url}{TEAM_PATH}"
        if isinstance(exc, AuthenticationError):
            ref = f" [correlation id {exc.correlation_id}]" if exc.correlation_id else ""
            return (
                f"{label.capitalize()}: token refused (401) by {base_url} — it "
                "may have been deleted; issue a new one under Settings > Integrations." + ref
            )
        if isinstance(exc, TransportError):
            return (
                f"Could not reach {url}: {exc} Check the base URL ({base_url}; the "
                f"service is {DEFAULT_BASE_URL}) and this machine's network or proxy."
            )
        if isinstance(exc, NotFoundError):
            return (
                f"{url} answered 404: {base_url} does not look like the inventory "
                f"API. Check the base URL: it is the API's root, e.g. {DEFAULT_BASE_URL}, "
                "with nothing after the host."
            )
        if isinstance(exc, ConfigError):
            return f"Cannot use {label}: {exc}"
        if isinstance(exc, APIError):
            return (
                f"{url} answered {exc.status} ({exc.title or 'error'}); check the base URL "
                f"({base_url}) and try again. {exc}"
            )
        if isinstance(exc, InvtoolsError):
            return f"Checking {label} failed: {exc}"
        return f"Checking {label} failed unexpectedly: {type(exc).__name__}: {exc}"

    # -- status line

    def _fail(self, text: str) -> None:
        self._close_client()
        self.team = self.client = None
        self._say("error", text)

    def _close_client(self) -> None:
        # The picker made this client, so it closes it (connection pool, cache file) before
        # handing out another; it stays the ``client`` trait's ``old`` value,
        # so observers still see which one was replaced.
        if self.client is not None:
            self.client.close()

    def _say(self, level: str, text: str, *, strong: str | None = None) -> None:
        self.message, self._level = text, level
        body = html.escape(text, quote=False)  # element text, not attributes
        if strong:
            name = html.escape(strong, quote=False)
            body = body.replace(name, f"<b>{name}</b>", 1)
        if level in _MARKS:
            mark, color = _MARKS[level]
            body = f"<span style='color:{color}'>{mark}</span> {body}"
        self.status.value = body


def token_picker(
    *,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    on_change: Callable[[Client], Any] | Iterable[Callable[[Client], Any]] | None = None,
    **options: Any,
) -> TokenPicker:
    """A widget to choose which team to work with, without ever showing its token.

    Offers ``INVTOOLS_TOKEN`` (as ``"default"``) and each ``INVTOOLS_TOKEN_<NAME>`` (as
    ``"<name>"``) from ``environ`` (default ``os.environ``) by name, plus a masked field to
    paste a token and a Connect button. Choosing a name, or pressing Connect, checks the token
    against ``/v1/teams/linked`` at ``base_url`` (the server is asked every time, never the
    cache) and says which team and mode it belongs to, or what went wrong (refused token,
    wrong URL, a team that does not manage stock by location). Whatever is done, the masked
    field is emptied: a token pasted and then passed over for a name is dropped.

    - ``base_url``: where tokens are checked and clients point; ``None`` (the default) means
      ``INVTOOLS_BASE_URL`` from ``environ`` (default ``os.environ``) when set, else the real
      service (the same rule as :func:`invtools.connect`). A token only goes where it belongs
      (:func:`~invtools.notebook.connection.token_home`): the built-in demo server's tokens
      (exported by :func:`invtools.connect` when it starts it) to the demo server, wherever
      ``base_url`` points, and no other token to the demo server.
    - ``picker.client``: the ready :class:`~invtools.api.Client` (``None`` until a token
      works, and after a choice that failed); ``picker.team``: its team. The picker owns it:
      choosing another team, reconnecting, or a failed choice **closes** the previous client,
      so read ``picker.client`` again after a switch rather than keeping an old one (to keep a
      client for good, make your own: ``Client(token, base_url=...)``).
    - ``on_change``: a callable or a list of callables, called with the client each time a
      token works; add more with ``picker.on_change(fn)`` or observe the ``client`` trait:
      ``picker.observe(fn, names="client")`` (also sees it become ``None``).
    - Other keyword arguments go to :class:`~invtools.api.Client` (``cache``,
      ``rate_limit``, ``retries``, ``timeout``, ``progress``...), as with
      :func:`invtools.connect`: ``token_picker(rate_limit=2)``.

    >>> picker = token_picker(environ={"INVTOOLS_TOKEN_SHOP": "s3cret", "INVTOOLS_TOKEN": "t0"})
    >>> picker.names, "s3cret" in repr(picker)
    (['default', 'shop'], False)
    """
    return TokenPicker(base_url=base_url, environ=environ, on_change=on_change, **options)
