"""Notebook widgets: pick a team's token safely, explore transaction activity.

- :func:`token_picker` offers the tokens found in the environment *by name* and a masked field
  to paste a new one, checks the chosen token against ``/v1/teams/linked`` and hands out a
  ready :class:`~invtools.client.Client`.
- :func:`activity_explorer` wraps :func:`invtools.plots.plot_activity` with controls for the
  date range, frequency, metric, split, transaction types and chart kind.

Both return ipywidgets ``VBox`` subclasses: display them by leaving them last in a cell.

How the picker keeps tokens out of sight: widget state is what a notebook saves (and what the
browser holds), so no synced trait ever holds a token. The dropdown's options are names; the
environment is read again at the moment a name is chosen; the ``Password`` field is emptied
as soon as it is read, before the network check; status lines and the picker's repr are built
from the team's name, never the token, and every message (and log line) is scrubbed of the
token even when the server echoes it back. The token then lives only inside the client's HTTP
session.

The picker owns the clients it makes: choosing another team (or a choice failing) closes the
previous client, so its connections, cache file and rate limiter's thread do not pile up over
a session of switching teams.

The explorer draws on its own ``matplotlib.figure.Figure`` (never pyplot, so nothing shows
twice under ``%matplotlib inline``) and shows it as PNG bytes in an ``Image`` widget: that
renders the same in JupyterLab, in a notebook saved with widget state and in exported HTML,
whatever matplotlib backend the kernel uses.

>>> picker = token_picker(environ={"INVTOOLS_TOKEN_SHOP": "s3cret"})   # doctest: +SKIP
>>> picker.dropdown.options                                           # doctest: +SKIP
('shop',)
"""

from __future__ import annotations

import datetime as dt
import html
import io
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import pandas as pd
import traitlets
from matplotlib.figure import Figure

from invtools.client import DEFAULT_BASE_URL, TEAM_PATH, Client, clean_token
from invtools.environment import BASE_URL_ENV, team_tokens
from invtools.errors import (
    APIError,
    AuthenticationError,
    ConfigError,
    InvtoolsError,
    NotFoundError,
    TransportError,
)
from invtools._types import TX_TYPES as TYPE_ORDER
from invtools.viz import activity_table, plot_activity

__all__ = ["token_picker", "activity_explorer", "TokenPicker", "ActivityExplorer"]

logger = logging.getLogger("invtools")

#: What a team that does not manage stock by location cannot use.
LOCATION_ONLY = "items, stock, transactions and locations"
PASTED = "pasted token"
_MASK = "***"


# --------------------------------------------------------------------------------------------
# Token picker
# --------------------------------------------------------------------------------------------


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***`` (longest first, so a token that contains
    another is masked whole).

    >>> scrub("Bearer abc123 was refused", ["abc123"])
    'Bearer *** was refused'
    """
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, _MASK)
    return text


class TokenPicker(widgets.VBox):
    """Choose the team to work with; see :func:`token_picker`.

    Attributes: ``client`` (the ready :class:`~invtools.client.Client`, ``None`` until a token
    works and again after a choice fails; the picker closes it when another choice replaces
    it), ``team`` (its :class:`~invtools.client.Team`), ``base_url`` (where tokens are checked),
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
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        options = dict(client_options or {})
        if "base_url" in options:
            raise ConfigError("pass base_url= to token_picker itself, not in client_options")
        if base_url is None:
            # The same environment the tokens come from, read the way connect() reads it (an
            # empty value counts as unset), so a notebook pointed at a server by
            # INVTOOLS_BASE_URL gets a picker that checks tokens there too.
            base_url = (os.environ if environ is None else environ).get(BASE_URL_ENV) \
                or DEFAULT_BASE_URL
        self.base_url = base_url
        self._options = options
        # Looked up when a name is chosen, not copied: the picker keeps no token of its own
        # (an explicit ``environ`` is only referenced) and never puts one in widget state.
        self._tokens = (lambda: team_tokens(os.environ)) if environ is None else (
            lambda: team_tokens(dict(environ)))
        self._callbacks: list[Callable[[Client], Any]] = []
        if callable(on_change):
            self._callbacks.append(on_change)
        elif on_change is not None:
            self._callbacks.extend(on_change)
        self.message = ""

        names = list(self._tokens())
        self.dropdown = widgets.Dropdown(options=names, value=None, description="Team",
                                         layout=widgets.Layout(width="16em"))
        self.password = widgets.Password(placeholder="or paste a token",
                                         layout=widgets.Layout(width="18em"))
        self.button = widgets.Button(description="Connect", icon="plug",
                                     tooltip="Check the pasted token (or the chosen team)")
        self.status = widgets.HTML()
        super().__init__(children=[widgets.HBox([self.dropdown, self.password, self.button]),
                                   self.status])
        self.dropdown.observe(self._on_dropdown, names="value")
        self.button.on_click(self._on_button)
        if names:
            found = ", ".join(names)
            self._say("info", f"Choose a team ({len(names)} token(s) in the environment: "
                              f"{found}) or paste a token and press Connect.")
        else:
            self._say("info", "No INVTOOLS_TOKEN or INVTOOLS_TOKEN_<NAME> in the environment: "
                              "paste a token and press Connect.")

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
        current = self.dropdown.value
        names = list(self._tokens())
        with self.hold_trait_notifications():
            self.dropdown.unobserve(self._on_dropdown, names="value")
            self.dropdown.options = names
            self.dropdown.value = current if current in names else None
            self.dropdown.observe(self._on_dropdown, names="value")

    def connect(self, name: str | None = None) -> Client | None:
        """Check the token named ``name`` (from the environment), or, without a name, the
        pasted token if there is one, else the dropdown's choice. Returns the client or None."""
        if name is None:
            pasted = self.password.value
            # Emptied before anything else, so the token is in the synced state for as short a
            # time as possible and never when the notebook is saved.
            self.password.value = ""
            if pasted.strip():
                return self._check(pasted, PASTED)
            name = self.dropdown.value
            if name is None:
                self._say("error", "Paste a token into the field, or choose a team, first.")
                return None
        token = self._tokens().get(name)
        if token is None:
            self._fail(f"No token named {name!r} in the environment any more (was "
                       f"INVTOOLS_TOKEN{'' if name == 'default' else '_' + name.upper()} "
                       "unset?).")
            return None
        return self._check(token, name)

    def __repr__(self) -> str:
        team = (f"{self.team.name!r} (id {self.team.id}, {self.team.mode_name} mode)"
                if self.team is not None else None)
        return f"TokenPicker(base_url={self.base_url!r}, names={self.names!r}, team={team})"

    # -- events

    def _on_dropdown(self, change: dict) -> None:
        if change["new"] is not None:
            self.connect(change["new"])

    def _on_button(self, _widget: Any) -> None:
        self.connect()

    # -- the check

    def _check(self, token: str, label: str) -> Client | None:
        secrets = {token, token.strip()}
        try:
            secrets.add(clean_token(token))
        except ConfigError:
            pass
        self.button.disabled = True
        self._say("info", f"Checking {_label(label)} against {self.base_url}{TEAM_PATH} …")
        client = None
        try:
            client = Client(token, base_url=self.base_url, **self._options)
            team = client.team()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status line
            if client is not None:
                client.close()
            self._fail(scrub(self._explain(exc, label), secrets))  # closes the previous one
            return None
        finally:
            del token
            self.button.disabled = False
        if label == PASTED:
            # The dropdown no longer describes the team in use.
            self.dropdown.unobserve(self._on_dropdown, names="value")
            self.dropdown.value = None
            self.dropdown.observe(self._on_dropdown, names="value")
        where = f"{_label(label)} at {self.base_url}"
        who = (f"{team.name} (team {team.id}, {team.mode_name} mode)")
        if team.uses_locations:
            self._say("ok", f"Connected to {who} with {where}.", strong=team.name)
        else:
            self._say("warn", f"Connected to {who} with {where}, but this team does not manage "
                              f"stock by location: {LOCATION_ONLY} will not work (the service "
                              "refuses them). Members, partners and item attributes do.",
                      strong=team.name)
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
                logger.warning("token_picker on_change callback %s failed: %s",
                               scrub(repr(callback), secrets), why)
                self._say("warn", f"{self.message} (A callback failed: {why})")
        return client

    def _explain(self, exc: BaseException, label: str) -> str:
        url = f"{self.base_url}{TEAM_PATH}"
        if isinstance(exc, AuthenticationError):
            ref = f" [correlation id {exc.correlation_id}]" if exc.correlation_id else ""
            return (f"{_label(label).capitalize()}: token refused (401) by {self.base_url} — it "
                    "may have been deleted; issue a new one under Settings > Integrations." + ref)
        if isinstance(exc, TransportError):
            return (f"Could not reach {url}: {exc} Check the base URL ({self.base_url}; the "
                    f"service is {DEFAULT_BASE_URL}) and this machine's network or proxy.")
        if isinstance(exc, NotFoundError):
            return (f"{url} answered 404: {self.base_url} does not look like the inventory "
                    f"API. Check the base URL: it is the API's root, e.g. {DEFAULT_BASE_URL}, "
                    "with nothing after the host.")
        if isinstance(exc, ConfigError):
            return f"Cannot use {_label(label)}: {exc}"
        if isinstance(exc, APIError):
            return (f"{url} answered {exc.status} ({exc.title or 'error'}); check the base URL "
                    f"({self.base_url}) and try again. {exc}")
        if isinstance(exc, InvtoolsError):
            return f"Checking {_label(label)} failed: {exc}"
        return f"Checking {_label(label)} failed unexpectedly: {type(exc).__name__}: {exc}"

    # -- status line

    def _fail(self, text: str) -> None:
        self._close_client()
        self.team = None
        self.client = None
        self._say("error", text)

    def _close_client(self) -> None:
        # The picker made this client, so it closes it (connection pool, cache file, limiter
        # thread) before handing out another; it stays the ``client`` trait's ``old`` value,
        # so observers still see which one was replaced.
        if self.client is not None:
            self.client.close()

    def _say(self, level: str, text: str, *, strong: str | None = None) -> None:
        self.message = text
        icon, color = {"ok": ("✓", "#2ca02c"), "warn": ("⚠", "#b8860b"),
                       "error": ("✗", "#d62728"), "info": ("", "inherit")}[level]
        esc = lambda t: html.escape(t, quote=False)  # noqa: E731 - element text, not attributes
        body = esc(text)
        if strong:
            body = body.replace(esc(strong), f"<b>{esc(strong)}</b>", 1)
        self.status.value = (f"<span style='color:{color}'>{icon}</span> {body}" if icon
                             else body)


def _label(label: str) -> str:
    return "the pasted token" if label == PASTED else f"token {label!r}"


def token_picker(
    *,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    on_change: Callable[[Client], Any] | Iterable[Callable[[Client], Any]] | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> TokenPicker:
    """A widget to choose which team to work with, without ever showing its token.

    Offers ``INVTOOLS_TOKEN`` (as ``"default"``) and each ``INVTOOLS_TOKEN_<NAME>`` (as
    ``"<name>"``) from ``environ`` (default ``os.environ``) by name, plus a masked field to
    paste a token and a Connect button. Choosing a name, or pressing Connect, checks the token
    against ``/v1/teams/linked`` at ``base_url`` and says which team and mode it belongs to,
    or what went wrong (refused token, wrong URL, a team that does not manage stock by
    location).

    - ``base_url``: where tokens are checked and clients point; ``None`` (the default) means
      ``INVTOOLS_BASE_URL`` from ``environ`` (default ``os.environ``) when set, else the real
      service (the same rule as :func:`invtools.environment.connect`).
    - ``picker.client``: the ready :class:`~invtools.client.Client` (``None`` until a token
      works, and after a choice that failed); ``picker.team``: its team. The picker owns it:
      choosing another team, reconnecting, or a failed choice **closes** the previous client,
      so read ``picker.client`` again after a switch rather than keeping an old one (to keep a
      client for good, make your own: ``Client(token, base_url=...)``).
    - ``on_change``: a callable or a list of callables, called with the client each time a
      token works; add more with ``picker.on_change(fn)`` or observe the ``client`` trait:
      ``picker.observe(fn, names="client")`` (also sees it become ``None``).
    - ``client_options``: keyword arguments for :class:`~invtools.client.Client` (``cache``,
      ``rate_limit``, ``retries``, ``timeout``, ``progress``...).

    >>> picker = token_picker(environ={"INVTOOLS_TOKEN_SHOP": "s3cret", "INVTOOLS_TOKEN": "t0"})
    >>> picker.names, "s3cret" in repr(picker)
    (['default', 'shop'], False)
    """
    return TokenPicker(base_url=base_url, environ=environ, on_change=on_change,
                       client_options=client_options)


# --------------------------------------------------------------------------------------------
# Activity explorer
# --------------------------------------------------------------------------------------------

_FREQ_OPTIONS = (("day", "D"), ("week", "W"), ("month", "M"))
_PERIOD_FORMAT = {"D": "%a %Y-%m-%d", "W": "week of %Y-%m-%d", "M": "%B %Y"}


class ActivityExplorer(widgets.VBox):
    """Transaction activity with controls; see :func:`activity_explorer`.

    Controls (set their ``.value`` from code too): ``start``, ``end`` (DatePicker),
    ``freq`` ("D"/"W"/"M"), ``metric`` ("count"/"quantity"), ``by``
    ("type"/"location"/"partner", "item" with lines), ``types`` (a tuple of in/out/move/adjust),
    ``kind`` ("bar"/"line"). After each change: ``figure`` and ``ax`` (what is drawn),
    ``table`` (the numbers per period, from :func:`~invtools.plots.activity_table`),
    ``summary`` (totals per category in the range), ``busiest`` ((period start, value) or
    None), ``image`` (the PNG shown), ``summary_html``, ``message`` (errors, if any).
    """

    def __init__(
        self,
        data: pd.DataFrame,
        *,
        lines: pd.DataFrame | None = None,
        tz: str | None = None,
        top: int | None = 8,
        figsize: tuple[float, float] = (10.0, 4.0),
        dpi: int = 100,
    ) -> None:
        if not isinstance(data, pd.DataFrame):
            raise ConfigError(f"activity_explorer needs a DataFrame or a Client, not "
                              f"{type(data).__name__}")
        if lines is not None and not isinstance(lines, pd.DataFrame):
            raise ConfigError("lines must be a lines DataFrame (invtools.frames.lines_df) or None")
        self.data = data
        self.lines = lines
        self.tz = tz or "UTC"
        self.top = top
        self.dpi = dpi
        self.figure = Figure(figsize=figsize, layout="constrained")
        self.table = pd.DataFrame()
        self.summary = pd.DataFrame()
        self.busiest: tuple[pd.Timestamp, float] | None = None
        self.redraws = 0
        self._held = 0

        item_frame = lines if lines is not None else (data if _has_items(data) else None)
        self._item_frame = item_frame
        first, last = self._date_bounds()
        self.start = widgets.DatePicker(value=first, description="From",
                                        layout=widgets.Layout(width="18em"))
        self.end = widgets.DatePicker(value=last, description="To",
                                      layout=widgets.Layout(width="18em"))
        self.freq = widgets.ToggleButtons(options=_FREQ_OPTIONS, value="W", description="Per",
                                          style={"button_width": "5em"})
        self.metric = widgets.ToggleButtons(options=(("count", "count"),
                                                     ("quantity", "quantity")),
                                            value="count", description="Metric",
                                            style={"button_width": "6em"})
        splits = ["type", "location", "partner"] + (["item"] if item_frame is not None else [])
        self.by = widgets.Dropdown(options=splits, value="type", description="Split by",
                                   layout=widgets.Layout(width="14em"))
        self.types = widgets.SelectMultiple(options=TYPE_ORDER, value=TYPE_ORDER, rows=4,
                                            description="Types",
                                            layout=widgets.Layout(width="12em"))
        self.kind = widgets.ToggleButtons(options=(("bars", "bar"), ("lines", "line")),
                                          value="bar", description="Chart",
                                          style={"button_width": "5em"})
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.summary_html = widgets.HTML()
        self.message = widgets.HTML()
        controls = widgets.VBox([
            widgets.HBox([self.start, self.end, self.by]),
            widgets.HBox([self.freq, self.kind]),
            widgets.HBox([self.metric]),
        ])
        super().__init__(children=[widgets.HBox([controls, self.types]), self.message,
                                   self.image, self.summary_html])
        for control in (self.start, self.end, self.freq, self.metric, self.by, self.types,
                        self.kind):
            control.observe(self._on_control, names="value")
        self.redraw()

    # -- public

    @property
    def ax(self):
        """The Axes of the current picture."""
        return self.figure.axes[0] if self.figure.axes else None

    def frame(self) -> pd.DataFrame:
        """The rows currently counted: the lines frame when split by item, else the
        transactions, keeping only the chosen types (the date range is applied by
        :func:`~invtools.plots.activity_table`)."""
        df = self._item_frame if self.by.value == "item" else self.data
        if "type" in df.columns:
            df = df[df["type"].astype(object).isin(list(self.types.value))]
        return df

    def settings(self) -> dict[str, Any]:
        """The arguments :func:`~invtools.plots.activity_table` gets for the current controls."""
        return {"freq": self.freq.value, "by": self.by.value, "metric": self.metric.value,
                "top": self.top, "start": self.start.value, "end": self.end.value,
                "tz": self.tz}

    @contextmanager
    def hold(self) -> Iterator[ActivityExplorer]:
        """Change several controls with one redraw at the end:
        ``with ex.hold(): ex.freq.value = "M"; ex.by.value = "partner"``."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
            if not self._held:
                self.redraw()

    def redraw(self) -> None:
        """Recompute the table and the picture from the controls (called on every change)."""
        df = self.frame()
        s = self.settings()
        self.figure.clear()
        ax = self.figure.add_subplot()
        try:
            self.table = activity_table(df, s["freq"], s["by"], s["metric"], s["top"],
                                        s["start"], s["end"], tz=s["tz"])
            plot_activity(df, s["freq"], s["by"], s["metric"], top=s["top"],
                          kind=self.kind.value, start=s["start"], end=s["end"], tz=s["tz"],
                          ax=ax)
        except ConfigError as exc:
            self.table = pd.DataFrame()
            self.message.value = f"<span style='color:#d62728'>✗ {html.escape(str(exc))}</span>"
            ax.text(0.5, 0.5, "see the message above", transform=ax.transAxes,
                    ha="center", va="center")
            ax.set_axis_off()
        else:
            self.message.value = ""
        self._summarise()
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.dpi)
        self.image.value = buf.getvalue()
        self.redraws += 1

    def __repr__(self) -> str:
        return (f"ActivityExplorer(rows={len(self.data)}, "
                f"lines={None if self.lines is None else len(self.lines)}, "
                f"settings={self.settings()!r}, kind={self.kind.value!r})")

    # -- internals

    def _on_control(self, _change: dict) -> None:
        if not self._held:
            self.redraw()

    def _date_bounds(self) -> tuple[dt.date | None, dt.date | None]:
        frames = [f for f in (self.data, self._item_frame) if f is not None and len(f)
                  and "transaction_time" in f.columns]
        times = pd.concat([pd.to_datetime(f["transaction_time"], utc=True) for f in frames]) \
            if frames else pd.Series([], dtype="datetime64[ns, UTC]")
        times = times.dropna()
        if times.empty:
            return None, None
        local = times.dt.tz_convert(self.tz)
        return local.min().date(), local.max().date()

    def _summarise(self) -> None:
        table = self.table
        metric = self.metric.value
        if table.empty:
            self.summary = pd.DataFrame({metric: []})
            self.busiest = None
            self.summary_html.value = "<i>Nothing to summarise in this range.</i>"
            return
        totals = table.sum(axis=0)
        grand = totals.sum()
        self.summary = pd.DataFrame({
            metric: totals,
            "share": (totals / grand) if grand else totals * 0.0,
        })
        self.summary.index.name = table.columns.name
        per_period = table.sum(axis=1)
        self.busiest = (per_period.idxmax(), per_period.max()) if grand else None
        unit = ("lines" if self.by.value == "item" else "transactions") \
            if metric == "count" else "units"
        shown = self.summary.assign(share=self.summary["share"].map("{:.0%}".format))
        if metric == "quantity":
            shown[metric] = shown[metric].map("{:,.0f}".format)
        noun = dict((v, k) for k, v in _FREQ_OPTIONS)[self.freq.value]
        busiest = ("none" if self.busiest is None else
                   f"{self.busiest[0].strftime(_PERIOD_FORMAT[self.freq.value])} "
                   f"({self.busiest[1]:,.0f} {unit})")
        self.summary_html.value = (
            f"<b>Total:</b> {grand:,.0f} {unit} in {len(table)} {noun}(s) &nbsp; "
            f"<b>Busiest {noun}:</b> {html.escape(busiest)}"
            + shown.reset_index().to_html(escape=True, border=0, index=False,
                                          classes="invtools-summary")
        )


def _has_items(df: pd.DataFrame) -> bool:
    return "item_name" in df.columns or "item_id" in df.columns


def _is_client(obj: Any) -> bool:
    return hasattr(obj, "team") and hasattr(obj, "transactions")


def activity_explorer(
    df_or_client: Any,
    *,
    lines: pd.DataFrame | None = None,
    tz: str | None = None,
    top: int | None = 8,
) -> ActivityExplorer:
    """Explore transaction activity: :func:`~invtools.plots.plot_activity` with controls.

    ``df_or_client``: a transactions frame (``client.transactions_df()`` or
    :func:`invtools.frames.transactions_df`; no network), or a Client, whose transactions are
    fetched once (with a progress bar; cached like every request). ``lines``: a lines frame
    (:func:`invtools.frames.lines_df`) to allow splitting by item. ``tz``: the time zone days
    and weeks are cut in (default UTC); ``top``: most categories drawn, the rest is "other".

    Controls: date range, per day/week/month, count or quantity, split by
    type/location/partner(/item), transaction types, bars or lines. The picture and a summary
    (totals per category, the total and the busiest period) follow every change; the same
    numbers are in ``explorer.table`` and ``explorer.summary``.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-03-02", "2026-03-18"], utc=True),
    ...                    "type": ["in", "out"], "total_quantity": [5.0, 2.0]})
    >>> ex = activity_explorer(tx)
    >>> ex.freq.value = "M"
    >>> ex.table.to_dict("list")
    {'in': [1], 'out': [1]}
    """
    if _is_client(df_or_client):
        data = df_or_client.transactions_df()
    else:
        data = df_or_client
    return ActivityExplorer(data, lines=lines, tz=tz, top=top)
