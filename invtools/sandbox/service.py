"""The stand-in service without the HTTP: the :class:`Sandbox` object, which holds every option,
and its request pipeline.

:class:`Sandbox` is what :func:`~invtools.sandbox.serve` yields: demo tokens, the switches a
test or notebook sets at runtime (``rate_limit``, ``quirks``, ``faults``, ``latency``), the
request log, read access to each team's data and the mutations. :meth:`Sandbox.respond` answers
one request as ``(status, headers, body)``, or None when an injected fault drops the connection;
the HTTP server (:mod:`invtools.sandbox.server`) only moves bytes.

Request pipeline, in order: fault injection -> auth (401) -> route (404) -> method (405) -> rate
limit (429) -> team mode (400) -> parameters (400) -> handler (:mod:`invtools.sandbox.routes`).

Rate limit
    ``rate_limit`` requests per rolling second per (token, route template), 0 = off. A 429
    carries ``X-Ratelimit-Limit`` (the per-second budget), ``X-Ratelimit-Remaining`` (0) and
    ``X-Ratelimit-Reset``: seconds until a slot frees, a decimal number with millisecond
    precision rounded up (e.g. ``0.347``), so a client that waits that long gets through.
    Accepted requests carry Limit and Remaining; with ``coarse_budget`` every answer carries
    all three as many services send them: Limit per minute (300 for 5 a second), Reset in whole
    seconds rounded up. Quirks ``ratelimit_headers:reset`` (only
    ``X-Ratelimit-Reset``), ``ratelimit_headers:retry_after`` (only ``Retry-After``, whole
    seconds rounded up, as HTTP requires) and ``ratelimit_headers:none`` (no headers) change
    what a 429 carries (and accepted requests then carry none). With no budget (0), every
    accepted answer says so as many services do: ``X-Ratelimit-Limit: unlimited`` and
    ``X-Ratelimit-Remaining: unlimited`` (under a ``ratelimit_headers:*`` quirk: nothing), and
    a client follows it (:mod:`invtools.http.pacing`).

Clock
    An answer to a team's token states the team's clock in ``Date``: just after the newest
    time its data knows (:meth:`~invtools.sandbox.store.TeamStore.now_ms`; the demo history
    ends on 31 October 2026), as the real service states the wall clock. Relative windows
    (``since="90D"``) count back from it (docs/explanation/now.md). Other answers (a 401, an
    injected 5xx) state the wall clock. ``date_skew`` skews what a team's answers state
    (:class:`~invtools.sandbox.limits.SkewedDate`), and ``"missing"`` leaves ``Date`` out of
    every answer.

>>> sb = Sandbox(size=200, rate_limit=0)
>>> status, headers, body = sb.respond("GET", "/v1/members/7001", "Bearer " + sb.tokens["shop"])
>>> status, json.loads(body)["item"]["name"], sb.requests[-1].route
(200, 'Maya Okafor', '/v1/members/{id}')
>>> headers["X-Ratelimit-Limit"], headers["X-Ratelimit-Remaining"]     # no budget, said
('unlimited', 'unlimited')
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from email.utils import formatdate
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from invtools.sandbox.data import build
from invtools.sandbox.limits import BODY_FAULTS, Faults, Latency, RateLimiter, SkewedDate
from invtools.sandbox.routes import ID_CHARS, ROUTES, ApiError, Params, find_route
from invtools.sandbox.store import TeamStore, TeamView

__all__ = ["Sandbox", "RequestRecord", "QUIRKS"]

QUIRKS = frozenset(
    {"last_cursor_not_null", "team_wrapped", "shared_rate_limit"}
    | {f"ratelimit_headers:{h}" for h in ("reset", "retry_after", "none")}
)
Reply = tuple[int, dict[str, str], bytes]
#: What a stand-in with no budget (``rate_limit=0``) says on every accepted answer.
UNLIMITED = {"X-Ratelimit-Limit": "unlimited", "X-Ratelimit-Remaining": "unlimited"}


@dataclass
class RequestRecord:
    """One request as the server saw it (never the token: ``team`` is the team's key)."""

    method: str
    path: str
    route: str | None
    params: dict[str, list[str]]
    status: int | None = None  # None: the connection was dropped
    team: str | None = None
    fault: str | None = None

    @classmethod
    def of(cls, method: str, target: str, fault=None, status=None) -> RequestRecord:
        """The record of a request for ``target`` (a path and query), not yet routed."""
        parts = urlsplit(target)
        params = parse_qs(parts.query, keep_blank_values=True)
        return cls(method, parts.path, None, params, status, fault=fault)


class Sandbox:
    """The stand-in service (what :func:`~invtools.sandbox.serve` yields), with its options.

    The demo data: ``seed``; ``size``, the number of the shop's transactions (default
    ``data.DEFAULT_SIZE``); ``shops``, how many location-mode teams it serves (1 to
    ``data.MAX_SHOPS``): the shop and its first ``shops - 1`` branches (``"harrogate"``,
    ``"york"``, ...: each with its own token, seeded data and a size that is a fraction of the
    shop's), besides the Basic-mode ``"basic"``.

    The budget: ``rate_limit`` requests per ``rate_window`` seconds (0 = off);
    ``rate_limit_scope``: ``"endpoint"`` (the documented budget, per token and endpoint) or
    ``"token"`` (one budget per token for all endpoints, as some production clients report: the
    ``shared_rate_limit`` quirk). Other models of the service's budget, which is not pinned
    down: ``rate_window`` (``rate_limit=300, rate_window=60`` is a minute's budget of 300),
    ``stated_budget=True`` (``X-Ratelimit-Limit``, ``-Remaining`` and ``-Reset`` on every
    answer; by default a success says Limit and Remaining, a 429 all three),
    ``coarse_budget=True`` (all three on every answer in the common coarse form: ``Limit`` per
    minute while the budget counts per ``rate_window``, ``Reset`` in whole seconds rounded up)
    and ``count_after_latency=True`` (the latency, with its jitter, comes before the request is
    counted, as network time does; by default a request is counted on arrival and its answer
    delayed). ``clock`` (any object with ``monotonic()``, the :mod:`time` module by default) is
    the time the rate window runs on: a test gives the server and the client one fake clock, and
    pacing is tested without sleeping.

    ``latency`` (seconds, 0 by default) makes every answer take about that long, uniformly
    within ``+-jitter`` (a fraction), seeded by ``seed``: ``latency=0.8`` answers like the real
    service. ``quirks`` (a subset of :data:`QUIRKS`) and ``faults`` (:class:`Faults`) reproduce
    what the real service may do.

    ``date_skew`` makes the service's clock wrong, as a client must expect of one: what the
    ``Date`` of a team's answers states (the data and their times do not move). None (the
    default): the team's clock; a :class:`~datetime.timedelta`: that far ahead of it
    (``timedelta(days=-30)``: 30 days behind; ``timedelta(days=63_000)``: a Date in 2199);
    ``"missing"``: no ``Date`` header on any answer; ``"unparseable"``:
    ``Mon, 01 Jan 0001 00:00:00 GMT``; ``"jumping"``: consecutive answers about 173 years
    apart (the first after it is set states the team's clock, the second 173 years later,
    the third the team's clock again, ...).

    >>> sb = Sandbox(size=200, rate_limit=0, date_skew=timedelta(days=-30))
    >>> shop = "Bearer " + sb.tokens["shop"]
    >>> sb.respond("GET", "/v1/teams/linked", shop)[1]["Date"]
    'Sat, 26 Sep 2026 12:42:03 GMT'
    >>> sb.date_skew = None                          # settable at runtime: the team's clock
    >>> sb.respond("GET", "/v1/teams/linked", shop)[1]["Date"]
    'Mon, 26 Oct 2026 12:42:03 GMT'
    >>> sb.date_skew = "missing"
    >>> "Date" in sb.respond("GET", "/v1/teams/linked", shop)[1]
    False

    Attributes: ``base_url``, ``tokens`` (team key -> demo token), ``rate_limit``, ``quirks``,
    ``faults``, ``date_skew``, ``latency`` (a :class:`~invtools.sandbox.limits.Latency`; all
    settable at runtime), ``requests`` (the log of :class:`RequestRecord`), ``in_flight`` and
    ``max_in_flight`` (requests being answered now, and the most at once since
    :meth:`clear_log`).
    """

    _stated: SkewedDate  # what date_skew makes of each team answer's Date

    def __init__(
        self,
        *,
        seed: int = 0,
        size: int | None = None,
        shops: int = 1,
        rate_limit: int = 5,
        rate_limit_scope: str = "endpoint",
        rate_window: float = 1.0,
        stated_budget: bool = False,
        coarse_budget: bool = False,
        count_after_latency: bool = False,
        clock=time,
        latency: float = 0.0,
        jitter: float = 0.25,
        quirks=(),
        faults: Faults | None = None,
        date_skew: timedelta | str | None = None,
    ) -> None:
        if rate_limit_scope not in ("endpoint", "token"):
            raise ValueError(f"rate_limit_scope is 'endpoint' or 'token', not {rate_limit_scope!r}")
        if not (isinstance(rate_window, int | float) and 0 < rate_window < float("inf")):
            raise ValueError(
                f"rate_window is the seconds a budget counts over, > 0; got {rate_window!r}"
            )
        self.latency = Latency(latency, jitter=jitter, seed=seed)
        self._stores = build(seed=seed, size=size, shops=shops)
        rng = random.Random(f"invtools-tokens-{seed}")
        self.tokens = {
            key: f"sbx_{key}_" + "".join(rng.choices(ID_CHARS, k=32)) for key in self._stores
        }
        self._by_token = {tok: self._stores[key] for key, tok in self.tokens.items()}
        self.rate_limit, self.rate_window, self.clock = rate_limit, float(rate_window), clock
        self.stated_budget, self.coarse_budget = stated_budget, coarse_budget
        self.count_after_latency = count_after_latency
        self.quirks = quirks
        if rate_limit_scope == "token":
            self.quirks = {*self.quirks, "shared_rate_limit"}
        self.faults = faults
        self.date_skew = date_skew
        self.requests: list[RequestRecord] = []
        self.limiter = RateLimiter()
        self.base_url = ""
        self.stopping = threading.Event()  # set when the server stops: wakes waiting answers
        self._lock = threading.Lock()  # of the request log and the counts in flight
        self.in_flight = self.max_in_flight = 0

    def __repr__(self) -> str:  # never the tokens
        return f"Sandbox(base_url={self.base_url!r}, teams={sorted(self._stores)})"

    def __setattr__(self, name: str, value: Any) -> None:
        """The switches a test or notebook sets at runtime are checked as they are set."""
        if name == "rate_limit":
            if int(value) < 0:
                raise ValueError("rate_limit is requests per second per endpoint, >= 0 (0 = off)")
            value = int(value)
        elif name == "quirks":
            value = {value} if isinstance(value, str) else set(value or ())
            if unknown := value - QUIRKS:
                raise ValueError(f"unknown quirks {sorted(unknown)}; known: {sorted(QUIRKS)}")
            if len({q for q in value if q.startswith("ratelimit_headers:")}) > 1:
                raise ValueError("choose at most one ratelimit_headers:* quirk")
        elif name == "faults" and value is not None:
            value.reset()  # on_requests counts from now
        elif name == "date_skew":  # checked; "jumping" counts answers from now
            super().__setattr__("_stated", SkewedDate(value))
        super().__setattr__(name, value)

    # -- inspection and mutations ----------------------------------------------------------
    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    def store(self, team: str) -> TeamStore:
        if team not in self._stores:
            raise KeyError(f"no team {team!r}; teams: {sorted(self._stores)}")
        return self._stores[team]

    def data(self, team: str = "shop") -> TeamView:
        """Read access to a team's current state, in wire format."""
        return TeamView(self.store(team))

    def revoke_token(self, team: str) -> None:
        """Revoke ``team``'s token, as deleting it in the web app does: from now on it is
        answered like any unknown token (401 ``/errors/tokens/invalid``). ``tokens`` still
        holds it, so a test can go on sending it."""
        self.store(team)  # a KeyError naming the teams
        self._by_token.pop(self.tokens[team], None)

    def add_transaction(self, team: str = "shop", **fields) -> dict:
        """Add a transaction (see :meth:`TeamStore.add_transaction`); returns its detail."""
        return self.store(team).locked(TeamStore.add_transaction, **fields)

    def edit_transaction(self, tx_id: int, team: str = "shop", **changes) -> dict:
        """Edit a transaction: revision + 1; no changes = one line's quantity changes."""
        return self.store(team).locked(TeamStore.edit_transaction, tx_id, **changes)

    def delete_transaction(self, tx_id: int, team: str = "shop") -> None:
        """Delete a transaction: it leaves the list, its detail answers 404."""
        self.store(team).locked(TeamStore.delete_transaction, tx_id)

    # Edits of the records transactions refer to: each returns the record as its list shows it
    # and changes no transaction's revision; an unknown or deleted id is a KeyError, an unknown
    # field or a bad value a ValueError (TeamStore.edit, under the team's lock).
    def edit_partner(self, partner_id: int, team: str = "shop", **changes) -> dict:
        """Edit a partner's ``name``, ``phone``, ``email``, ``address`` or ``memo``, or delete it
        (``deleted=True``: it leaves the partners list; references show ``deleted: true``)."""
        return self._edit(team, "partners", partner_id, changes)

    def edit_item(self, item_id: int, team: str = "shop", **changes) -> dict:
        """Edit an item's ``name``, ``sku``, ``barcode``, ``cost`` or ``price`` (a decimal string
        or a number, held as the wire's string with the team's decimals), or delete it
        (``deleted=True``). Transaction lines show its current name, SKU and barcode.

        A deleted item leaves ``/v1/items``, its ``/v1/items/{id}`` answers 404 and lines show
        ``deleted: true``. Its stock is not written off: no transaction is made and every level
        in the history stays (as the service keeps a deleted item's history), but it is no longer
        in stock anywhere one looks: a location's ``quantity`` sums the listed items, as it does
        for the items the demo data deletes.

        >>> sb = Sandbox(size=200, rate_limit=0)
        >>> sb.edit_item(100001, name="Compost 20L", price="5.5")["price"]
        '5.50'
        >>> sb.edit_item(100001, deleted=True)["name"]
        'Compost 20L'
        >>> 100001 in [item["id"] for item in sb.data().items]
        False
        """
        return self._edit(team, "items", item_id, changes)

    def edit_location(self, location_id: int, team: str = "shop", **changes) -> dict:
        """Edit a location's ``name`` or ``memo`` (``from_location``/``to_location`` show it)."""
        return self._edit(team, "locations", location_id, changes)

    def edit_member(self, member_id: int, team: str = "shop", **changes) -> dict:
        """Edit a member's ``name`` or ``role`` (admin, member, viewer), or delete them
        (``deleted=True``: they leave the members list; ``created_by`` shows ``deleted: true``)."""
        return self._edit(team, "members", member_id, changes)

    def edit_attribute(self, attr_id: int, team: str = "shop", **changes) -> dict:
        """Edit an item attribute's ``attr_name`` (every item's ``attrs`` entry shows the new
        name) or ``rank`` (an int; the other attributes' ranks and the order of an item's
        ``attrs`` stay as they are)."""
        return self._edit(team, "attrs", attr_id, changes)

    def _edit(self, team: str, kind: str, rec_id: int, changes: dict) -> dict:
        return self.store(team).locked(TeamStore.edit, kind, rec_id, **changes)

    # -- request handling (called from connection threads) --------------------------------
    def respond(self, method: str, target: str, authorization: str | None) -> Reply | None:
        """Answer one request for ``target`` (a path and query) after the service's latency:
        ``(status, headers, body)``, or None when a ``"drop"`` fault says to close the
        connection without any answer. Records it in ``requests``."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.count_after_latency:  # network time before the counter: arrivals jitter
                self.stopping.wait(self.latency.draw())
            reply = self._answer(method, target, authorization)
            if reply is not None and not self.count_after_latency:
                # Counted by the rate limit on arrival, answered after the service's latency.
                self.stopping.wait(self.latency.draw())
            if reply is None or "Date" in reply[1] or self.date_skew == "missing":
                return reply
            status, headers, body = reply  # not a team's answer: the wall clock
            return status, {"Date": formatdate(time.time(), usegmt=True), **headers}, body
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, method: str, target: str, authorization: str | None) -> Reply | None:
        """Injected faults first: ``"slow"`` waits (cut short when the server stops) and then
        answers normally; ``"500"``/``"502"``/``"503"`` answer that status with an HTML body, as
        a proxy in front of the real service does; body faults damage a 200's body."""
        faults = self.faults
        kind = faults.decide() if faults is not None else None
        if kind == "drop":
            self._log(RequestRecord.of(method, target, kind))
            return None
        if kind == "slow" and faults is not None:
            self.stopping.wait(faults.slow_seconds)
        if kind in ("500", "502", "503"):
            self._log(RequestRecord.of(method, target, kind, status := int(kind)))
            title = f"{status} {HTTPStatus(status).phrase}"
            page = (
                f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                "<p>The upstream server is having trouble.</p></body></html>"
            )
            return status, {"Content-Type": "text/html; charset=utf-8"}, page.encode()
        status, headers, body = self.handle(method, target, authorization, fault=kind)
        if status == 200 and kind in BODY_FAULTS:  # as a failing proxy or a cut connection
            if kind == "mislabelled":  # the whole body, labelled as text
                headers = {**headers, "Content-Type": "text/plain; charset=utf-8"}
            cut = {"truncated": body[: len(body) // 2], "empty": b"", "empty_object": b"{}"}
            body = cut.get(kind, body)
        return status, headers, body

    def handle(self, method: str, target: str, authorization: str | None, fault=None) -> Reply:
        """The service's answer to one request, ``(status, headers, body)``, recorded in
        ``requests`` with the injected ``fault`` it came with (tests wrap it to hold or change a
        request)."""
        rec = RequestRecord.of(method, target, fault)
        try:
            rec.status, headers, payload = self._dispatch(rec, authorization)
        except ApiError as err:
            rec.status, headers, payload = err.status, err.headers, err.body()
        self._log(rec)
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        if rec.team is not None:  # the team's clock: its data end "now" (TeamStore.now_ms)
            store = self._stores[rec.team]
            with store.lock:
                stated = self._stated.state(store.now_ms())  # as date_skew has it
            if stated is not None:
                headers = {"Date": stated, **headers}
        return rec.status, {"Content-Type": "application/json; charset=utf-8", **headers}, body

    def _log(self, rec: RequestRecord) -> None:
        with self._lock:
            self.requests.append(rec)

    def _dispatch(self, rec: RequestRecord, authorization: str | None) -> tuple[int, dict, Any]:
        store = self._authenticate(authorization)
        rec.team = store.key
        found = find_route(rec.path)
        if found is None:
            raise ApiError(404, "/errors/not-found", f"No endpoint at {rec.path}")
        rec.route, obj_id = found
        if rec.method != "GET":
            title = f"{rec.method} is not supported here; this sandbox is read-only"
            raise ApiError(405, "/errors/method-not-allowed", title)
        limit_headers = self._rate_check(store.key, rec.route)
        handler, location_only = ROUTES[rec.route]
        if location_only and store.log is None:
            title = (
                f"{rec.route} is only available to teams that manage stock by location; "
                f"team {store.team['name']!r} is in mode {store.team['mode']}"
            )
            raise ApiError(400, "/errors/invalid-team-mode", title)
        with store.lock:
            return 200, limit_headers, handler(store, Params(rec.params), obj_id, self.quirks)

    def _authenticate(self, header: str | None) -> TeamStore:
        header = (header or "").strip()
        scheme, _, rest = header.partition(" ")
        # Without the Bearer scheme the whole header is taken as the (then unknown) token.
        token = rest.strip() if scheme.lower() == "bearer" else header
        if not token:
            title = "An API token is required: send 'Authorization: Bearer <token>'"
            raise ApiError(401, "/errors/tokens/required", title)
        store = self._by_token.get(token)
        if store is None:
            # The real service echoes the token it was given; clients must not log it.
            raise ApiError(401, "/errors/tokens/invalid", "The API token is invalid", given=token)
        return store

    def _rate_check(self, team: str, template: str) -> dict[str, str]:
        """Spend one request of the budget: the headers an accepted answer carries, or the 429."""
        limit, quirks = self.rate_limit, self.quirks
        variant = next((q.split(":")[1] for q in quirks if q.startswith("ratelimit_headers:")), "")
        if not limit:  # no budget: said as services say it, unless the quirk says nothing
            return {} if variant else dict(UNLIMITED)
        key = (team, "*" if "shared_rate_limit" in quirks else template)
        allowed, remaining, reset = self.limiter.hit(
            key, limit=limit, now=self.clock.monotonic(), window=self.rate_window
        )
        stated = {"X-Ratelimit-Limit": str(limit), "X-Ratelimit-Remaining": str(remaining)}
        wait = {"X-Ratelimit-Reset": f"{reset:.3f}"}
        if self.coarse_budget:  # as many services state it: per minute, whole seconds
            headers = {**stated, "X-Ratelimit-Limit": str(round(limit * 60 / self.rate_window))}
            headers["X-Ratelimit-Reset"] = str(math.ceil(reset))
        elif allowed:  # with stated_budget the whole budget on every answer, as some state it
            headers = {**stated, **wait} if self.stated_budget else {} if variant else stated
        else:
            headers = {
                "": {**stated, **wait},
                "reset": wait,
                "retry_after": {"Retry-After": str(max(1, math.ceil(reset)))},
                "none": {},
            }[variant]
        if allowed:
            return headers
        per = "second" if self.rate_window == 1 else f"{self.rate_window:g} seconds"
        title = f"Too many requests: at most {limit} per {per} for this endpoint"
        raise ApiError(429, "/errors/too-many-requests", title, headers=headers)
