"""The stand-in service without the HTTP: the :class:`Sandbox` object and its request pipeline.

:class:`Sandbox` is what :func:`~invtools.sandbox.serve` yields: demo tokens, the switches a
test or notebook sets at runtime (``rate_limit``, ``quirks``, ``faults``), the request log, read
access to each team's data and the mutations. :func:`respond` answers one request as
``(status, headers, body)``, or None when an injected fault drops the connection; the HTTP
server (:mod:`invtools.sandbox.server`) only moves bytes.

Request pipeline, in order: fault injection -> auth (401) -> route (404) -> rate limit (429)
-> team mode (400) -> parameters (400) -> handler (:mod:`invtools.sandbox.routes`).

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
    what a 429 carries (and accepted requests then carry none).

>>> from invtools.sandbox.data import build
>>> sb = Sandbox(build(size=200), seed=0, rate_limit=0)
>>> status, headers, body = respond(sb, "GET", "/v1/members/7001",
...                                 {"Authorization": "Bearer " + sb.tokens["shop"]})
>>> status, json.loads(body)["item"]["name"], sb.requests[-1].route
(200, 'Maya Okafor', '/v1/members/{id}')
"""

from __future__ import annotations

import json
import math
import random
import string
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from invtools.sandbox.limits import BODY_FAULTS, Faults, Latency, RateLimiter
from invtools.sandbox.routes import ApiError, Params, find_route
from invtools.sandbox.store import TeamStore, TeamView

__all__ = ["Sandbox", "RequestRecord", "QUIRKS", "respond"]


class Headers(Protocol):
    """A request's headers as the service reads them: by name with ``get`` (a dict, or the
    case-insensitive ``email.message.Message`` that ``http.server`` hands over)."""

    def get(self, name: str, /) -> str | None: ...


QUIRKS = frozenset(
    {"last_cursor_not_null", "team_wrapped", "shared_rate_limit"}
    | {f"ratelimit_headers:{h}" for h in ("reset", "retry_after", "none")}
)
_TOKEN_CHARS = string.ascii_lowercase + string.digits
Reply = tuple[int, dict[str, str], bytes]


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
    def of(cls, method: str, target: str, fault: str | None = None, status: int | None = None):
        """The record of a request for ``target`` (a path and query), not yet routed."""
        parts = urlsplit(target)
        params = parse_qs(parts.query, keep_blank_values=True)
        return cls(method, parts.path, None, params, status, fault=fault)


class Sandbox:
    """The running stand-in server (what :func:`serve` yields).

    Attributes: ``base_url``, ``tokens`` (team key -> demo token), ``rate_limit``, ``quirks``,
    ``faults``, ``latency`` (a :class:`~invtools.sandbox.limits.Latency`; all settable at
    runtime), ``requests`` (the log of :class:`RequestRecord`), ``in_flight`` and
    ``max_in_flight`` (requests being answered now, and the most at once since
    :meth:`clear_log`).
    """

    def __init__(
        self,
        stores: dict[str, TeamStore],
        *,
        seed: int,
        rate_limit: int,
        quirks=(),
        faults: Faults | None = None,
        clock=time,
        latency: float = 0.0,
        jitter: float = 0.25,
        rate_window: float = 1.0,
        stated_budget: bool = False,
        count_after_latency: bool = False,
        coarse_budget: bool = False,
    ) -> None:
        self._stores = stores
        self.latency = Latency(latency, jitter=jitter, seed=seed)
        self.clock = clock  # anything with monotonic(): the rate window runs on its time
        rng = random.Random(f"invtools-tokens-{seed}")
        self.tokens = {
            key: f"sbx_{key}_" + "".join(rng.choices(_TOKEN_CHARS, k=32)) for key in stores
        }
        self._by_token = {tok: stores[key] for key, tok in self.tokens.items()}
        self.rate_limit = rate_limit
        if not (isinstance(rate_window, (int, float)) and 0 < rate_window < float("inf")):
            raise ValueError(
                f"rate_window is the seconds a budget counts over, > 0; got {rate_window!r}"
            )
        self.rate_window = float(rate_window)
        self.stated_budget = bool(stated_budget)
        self.count_after_latency = bool(count_after_latency)
        self.coarse_budget = bool(coarse_budget)
        self.quirks = quirks
        self.faults = faults
        self.requests: list[RequestRecord] = []
        self.limiter = RateLimiter()
        self.base_url = ""
        self.stopping = threading.Event()
        self._lock = threading.Lock()  # of the request log and the counts in flight
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests being answered at once (tests read it)

    def _flight(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def __repr__(self) -> str:  # never the tokens
        return f"Sandbox(base_url={self.base_url!r}, teams={sorted(self._stores)})"

    @property
    def rate_limit(self) -> int:
        return self._rate_limit

    @rate_limit.setter
    def rate_limit(self, value: int) -> None:
        if int(value) < 0:
            raise ValueError("rate_limit is requests per second per endpoint, >= 0 (0 = off)")
        self._rate_limit = int(value)

    @property
    def quirks(self) -> set[str]:
        return self._quirks

    @quirks.setter
    def quirks(self, value) -> None:
        value = {value} if isinstance(value, str) else set(value or ())
        unknown = value - QUIRKS
        if unknown:
            raise ValueError(f"unknown quirks {sorted(unknown)}; known: {sorted(QUIRKS)}")
        if len({q for q in value if q.startswith("ratelimit_headers:")}) > 1:
            raise ValueError("choose at most one ratelimit_headers:* quirk")
        self._quirks = value

    @property
    def faults(self) -> Faults | None:
        return self._faults

    @faults.setter
    def faults(self, value: Faults | None) -> None:
        if value is not None:
            value.reset()  # on_requests counts from now
        self._faults = value

    # -- inspection and mutations ----------------------------------------------------------
    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    def _record(self, rec: RequestRecord) -> None:
        with self._lock:
            self.requests.append(rec)

    def store(self, team: str) -> TeamStore:
        try:
            return self._stores[team]
        except KeyError:
            raise KeyError(f"no team {team!r}; teams: {sorted(self._stores)}") from None

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
        store = self._location_store(team)
        with store.lock:
            return store.add_transaction(**fields)

    def edit_transaction(self, tx_id: int, team: str = "shop", **changes) -> dict:
        """Edit a transaction: revision + 1; no changes = one line's quantity changes."""
        store = self._location_store(team)
        with store.lock:
            return store.edit_transaction(tx_id, **changes)

    def delete_transaction(self, tx_id: int, team: str = "shop") -> None:
        """Delete a transaction: it leaves the list, its detail answers 404."""
        store = self._location_store(team)
        with store.lock:
            store.delete_transaction(tx_id)

    def edit_partner(self, partner_id: int, team: str = "shop", **changes) -> dict:
        """Edit or delete (``deleted=True``) a partner (see :meth:`TeamStore.edit_partner`)."""
        store = self.store(team)
        with store.lock:
            return store.edit_partner(partner_id, **changes)

    def _location_store(self, team: str) -> TeamStore:
        store = self.store(team)
        if store.log is None:
            raise ValueError(f"team {team!r} is in basic mode and has no location transactions")
        return store

    # -- request handling (called from connection threads) --------------------------------
    def handle(self, method: str, target: str, headers: Headers, fault: str | None = None) -> Reply:
        """Answer one request: ``(status, headers, body)``; records it in ``requests``."""
        rec = RequestRecord.of(method, target, fault)
        try:
            status, extra, payload = self._dispatch(rec, method, headers)
        except ApiError as err:
            status, extra, payload = err.status, err.headers, err.body()
        rec.status = status
        self._record(rec)
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        return status, {"Content-Type": "application/json; charset=utf-8", **extra}, body

    def _dispatch(self, rec: RequestRecord, method: str, headers: Headers):
        store = self._authenticate(headers.get("Authorization"))
        rec.team = store.key
        route, obj_id = find_route(rec.path)
        if route is None:
            raise ApiError(404, "/errors/not-found", f"No endpoint at {rec.path}")
        rec.route = route.template
        if method != "GET":
            title = f"{method} is not supported here; this sandbox is read-only"
            raise ApiError(405, "/errors/method-not-allowed", title)
        limit_headers = self._rate_check(store.key, route.template)
        if route.location_only and not store.uses_locations:
            title = (
                f"{route.template} is only available to teams that manage stock by location; "
                f"team {store.team['name']!r} is in mode {store.team['mode']}"
            )
            raise ApiError(400, "/errors/invalid-team-mode", title)
        with store.lock:
            payload = route.handler(store, Params(rec.params), obj_id, self._quirks)
        return 200, limit_headers, payload

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
        limit, quirks = self._rate_limit, self._quirks
        if not limit:
            return {}
        key = (team, "*" if "shared_rate_limit" in quirks else template)
        now = self.clock.monotonic()
        allowed, remaining, reset = self.limiter.hit(
            key, limit=limit, now=now, window=self.rate_window
        )
        variant = next((q.split(":")[1] for q in quirks if q.startswith("ratelimit_headers:")), "")
        stated = {"X-Ratelimit-Limit": str(limit), "X-Ratelimit-Remaining": str(remaining)}
        wait = {"X-Ratelimit-Reset": f"{reset:.3f}"}
        if self.coarse_budget:  # as many services state it: per minute, whole seconds
            headers = {
                "X-Ratelimit-Limit": str(round(limit * 60 / self.rate_window)),
                "X-Ratelimit-Remaining": str(remaining),
                "X-Ratelimit-Reset": str(math.ceil(reset)),
            }
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


def respond(sb: Sandbox, method: str, target: str, headers: Headers) -> Reply | None:
    """Answer one request, injected faults first: ``(status, headers, body)``, or None when a
    ``"drop"`` fault says to close the connection without any answer.

    ``"slow"`` waits (cut short when the server stops) and then answers normally;
    ``"500"``/``"502"``/``"503"`` answer that status with an HTML body, as a proxy in front of
    the real service does.
    """
    sb._flight(+1)
    try:
        if sb.count_after_latency:  # network time before the counter: arrivals jitter
            sb.stopping.wait(sb.latency.draw())
        reply = _answer(sb, method, target, headers)
        if reply is not None and not sb.count_after_latency:
            # Counted by the rate limit on arrival, answered after the service's latency.
            sb.stopping.wait(sb.latency.draw())
        return reply
    finally:
        sb._flight(-1)


def _answer(sb: Sandbox, method: str, target: str, headers: Headers) -> Reply | None:
    faults = sb.faults
    kind = faults.decide() if faults is not None else None
    if kind == "drop":
        sb._record(RequestRecord.of(method, target, "drop"))
        return None
    if kind == "slow":
        assert faults is not None  # only faults decide "slow"
        sb.stopping.wait(faults.slow_seconds)
    if kind in ("500", "502", "503"):
        status = int(kind)
        phrase = HTTPStatus(status).phrase
        body = (
            f"<html><head><title>{status} {phrase}</title></head>"
            f"<body><h1>{status} {phrase}</h1>"
            f"<p>The upstream server is having trouble.</p></body></html>"
        ).encode()
        sb._record(RequestRecord.of(method, target, kind, status))
        return status, {"Content-Type": "text/html; charset=utf-8"}, body
    reply = sb.handle(method, target, headers, fault=kind)
    if kind in BODY_FAULTS and reply[0] == 200:
        reply = _damaged(reply, kind)
    return reply


def _damaged(reply: Reply, kind: str) -> Reply:
    """A 200 with its body damaged the way a failing proxy or a cut connection does it."""
    status, headers, body = reply
    if kind == "mislabelled":
        return status, {**headers, "Content-Type": "text/plain; charset=utf-8"}, body
    body = {"truncated": body[: len(body) // 2], "empty": b"", "empty_object": b"{}"}[kind]
    return status, headers, body
