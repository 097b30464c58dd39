"""The stand-in HTTP server: routes, auth, team-mode gate, pagination, rate limit, quirks, faults.

A real ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (HTTP/1.1, keep-alive), run in a
background thread by :func:`serve`. It implements the API as ``spec/inventory-api.md`` and
``reference/api-facts.md`` describe it, and nothing of the client side.

Request pipeline, in order: fault injection -> auth (401) -> route (404) -> rate limit (429)
-> team mode (400) -> parameters (400) -> handler.

Pagination
    Items and partners: id ascending; the cursor is the last row's id and the next page holds
    ids strictly greater. Transactions: newest first by ``(transaction_time, id)``, both
    descending (at equal times the higher id comes first); the cursor is the id of the last
    row and the next page holds the rows whose ``(transaction_time, id)`` key is strictly
    smaller than that row's key. The key is looked up by id even if the row was deleted since
    (deleted rows keep their key as a tombstone), so between two pages no row is skipped or
    repeated because of additions or deletions: a row added or backdated to a key *after*
    the cursor (newer) is not returned by this walk, one added *before* it (older) is. An
    edit that changes the cursor row's own transaction_time moves the cursor with it.
    ``limit``: default 100, 1..100. The last page has ``cursor: null`` (the
    ``last_cursor_not_null`` quirk repeats the last row's id instead).

Rate limit
    ``rate_limit`` requests per rolling second per (token, route template), 0 = off. A 429
    carries ``X-Ratelimit-Limit`` (the per-second budget), ``X-Ratelimit-Remaining`` (0) and
    ``X-Ratelimit-Reset``: seconds until a slot frees, a decimal number with millisecond
    precision rounded up (e.g. ``0.347``), so a client that waits that long gets through.
    Accepted requests carry Limit and Remaining. Quirks ``ratelimit_headers:reset`` (only
    ``X-Ratelimit-Reset``), ``ratelimit_headers:retry_after`` (only ``Retry-After``, whole
    seconds rounded up, as HTTP requires) and ``ratelimit_headers:none`` (no headers) change
    what a 429 carries (and accepted requests then carry none).
"""

from __future__ import annotations

import json
import math
import random
import re
import socket
import string
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, urlsplit

from invtools.sandbox import data as demo_data
from invtools.sandbox.limits import Faults, RateLimiter
from invtools.sandbox.store import TYPE_CODE, TeamStore

QUIRKS = frozenset({
    "last_cursor_not_null", "team_wrapped", "shared_rate_limit",
    "ratelimit_headers:reset", "ratelimit_headers:retry_after", "ratelimit_headers:none",
})
MAX_LIMIT = 100
_ALNUM = string.ascii_lowercase + string.digits
_sysrand = random.SystemRandom()


def _rand_id(prefix: str) -> str:
    return prefix + "".join(_sysrand.choices(_ALNUM, k=24))


class ApiError(Exception):
    """An error response: status, envelope type and title, and extra envelope fields."""

    def __init__(self, status: int, type_: str, title: str, **extra: Any) -> None:
        super().__init__(title)
        self.status, self.type, self.title, self.extra = status, type_, title, extra

    def body(self) -> dict:
        return {"id": _rand_id("ex_"), "type": self.type, "title": self.title,
                "correlation_id": _rand_id("rq_"), **self.extra}


def _not_found(what: str) -> ApiError:
    return ApiError(404, "/errors/not-found", f"{what} was not found")


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


# -- routes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    template: str
    pattern: re.Pattern
    handler: str
    location_only: bool


def _route(template: str, handler: str, location_only: bool) -> Route:
    pattern = re.compile("^" + template.replace("{id}", r"(?P<id>\d{1,10})") + "$")
    return Route(template, pattern, handler, location_only)


ROUTES = [
    _route("/v1/teams/linked", "team", False),
    _route("/v1/items", "items", True),
    _route("/v1/items/{id}", "item", True),
    _route("/v1/location-txs", "txs", True),
    _route("/v1/location-txs/{id}", "tx", True),
    _route("/v1/transactions", "txs", True),
    _route("/v1/transactions/{id}", "tx", True),
    _route("/v1/locations", "locations", True),
    _route("/v1/locations/{id}", "location", True),
    _route("/v1/partners", "partners", False),
    _route("/v1/members", "members", False),
    _route("/v1/members/{id}", "member", False),
    _route("/v1/item-attrs", "attrs", False),
    _route("/v1/item-attrs/{id}", "attr", False),
]


# -- parameters ------------------------------------------------------------------------------
class Params:
    """Query parameters with validation problems collected for one 400 answer."""

    def __init__(self, params: dict[str, list[str]]) -> None:
        self.raw = params
        self.errors: list[dict] = []

    def _bad(self, name: str, given: Any, message: str) -> None:
        self.errors.append({"parameter": name, "given": given, "message": message})

    def int(self, name: str, *, default=None, lo=0, hi=2**31 - 1):
        values = self.raw.get(name)
        if not values:
            return default
        text = values[-1]
        try:
            value = int(text)
        except ValueError:
            self._bad(name, text, f"{name} must be an integer")
            return default
        if not lo <= value <= hi:
            self._bad(name, text, f"{name} must be between {lo} and {hi}")
            return default
        return value

    def int_list(self, name: str) -> list[int] | None:
        values = [v for raw in self.raw.get(name, []) for v in raw.split(",") if v != ""]
        out = []
        for v in values:
            try:
                out.append(int(v))
            except ValueError:
                self._bad(name, v, f"{name} must be integers (repeat the key for several)")
        return out or None

    def choice(self, name: str, allowed: dict[str, Any]):
        values = self.raw.get(name)
        if not values:
            return None
        if values[-1] not in allowed:
            self._bad(name, values[-1], f"{name} must be one of {', '.join(allowed)}")
            return None
        return allowed[values[-1]]

    def check(self) -> None:
        if self.errors:
            raise ApiError(400, "/errors/invalid-request", "The request has invalid parameters",
                           errors=self.errors)


# -- the server object -----------------------------------------------------------------------
class Sandbox:
    """The running stand-in server (what :func:`serve` yields).

    Attributes: ``base_url``, ``tokens`` (team key -> demo token), ``rate_limit``, ``quirks``,
    ``faults`` (settable at runtime), ``requests`` (the log of :class:`RequestRecord`).
    """

    def __init__(self, stores: dict[str, TeamStore], *, seed: int, rate_limit: int,
                 quirks=(), faults: Faults | None = None) -> None:
        self._stores = stores
        rng = random.Random(f"invtools-tokens-{seed}")
        self.tokens = {key: f"sbx_{key}_" + "".join(rng.choices(_ALNUM, k=32)) for key in stores}
        self._by_token = {tok: stores[key] for key, tok in self.tokens.items()}
        self.rate_limit = rate_limit
        self.quirks = quirks
        self.faults = faults
        self.requests: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self.limiter = RateLimiter()
        self.base_url = ""
        self.stopping = threading.Event()

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
        with self._log_lock:
            self.requests.clear()

    def _record(self, rec: RequestRecord) -> None:
        with self._log_lock:
            self.requests.append(rec)

    def store(self, team: str) -> TeamStore:
        try:
            return self._stores[team]
        except KeyError:
            raise KeyError(f"no team {team!r}; teams: {sorted(self._stores)}") from None

    def data(self, team: str = "shop") -> "TeamView":
        """Read access to a team's current state, in wire format."""
        return TeamView(self.store(team))

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

    def _location_store(self, team: str) -> TeamStore:
        store = self.store(team)
        if store.log is None:
            raise ValueError(f"team {team!r} is in basic mode and has no location transactions")
        return store

    # -- request handling (called from handler threads) -----------------------------------
    def handle(self, method: str, target: str, headers,
               fault: str | None = None) -> tuple[int, dict[str, str], bytes]:
        """Answer one request: ``(status, headers, body)``; records it in ``requests``."""
        rec = _record_for(method, target, fault)
        path, params = rec.path, rec.params
        try:
            status, extra, payload = self._dispatch(rec, method, path, params, headers)
        except ApiError as err:
            status, extra, payload = err.status, getattr(err, "headers", {}), err.body()
        rec.status = status
        self._record(rec)
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        return status, {"Content-Type": "application/json; charset=utf-8", **extra}, body

    def _dispatch(self, rec, method, path, params, headers):
        store = self._authenticate(headers.get("Authorization"))
        rec.team = store.key
        route, match = next(((r, m) for r in ROUTES if (m := r.pattern.match(path))),
                            (None, None))
        if route is None:
            raise ApiError(404, "/errors/not-found", f"No endpoint at {path}")
        rec.route = route.template
        if method != "GET":
            raise ApiError(405, "/errors/method-not-allowed",
                           f"{method} is not supported here; this sandbox is read-only")
        limit_headers = self._rate_check(store.key, route.template)
        if route.location_only and not store.uses_locations:
            raise ApiError(400, "/errors/invalid-team-mode",
                           f"{route.template} is only available to teams that manage stock by "
                           f"location; team {store.team['name']!r} is in mode "
                           f"{store.team['mode']}")
        p = Params(params)
        obj_id = int(match.group("id")) if "id" in match.groupdict() else None
        with store.lock:
            payload = getattr(self, "_h_" + route.handler)(store, p, obj_id)
        return 200, limit_headers, payload

    def _authenticate(self, header: str | None) -> TeamStore:
        header = (header or "").strip()
        scheme, _, rest = header.partition(" ")
        # Without the Bearer scheme the whole header is taken as the (then unknown) token.
        token = rest.strip() if scheme.lower() == "bearer" else header
        if not token:
            raise ApiError(401, "/errors/tokens/required",
                           "An API token is required: send 'Authorization: Bearer <token>'")
        store = self._by_token.get(token)
        if store is None:
            # The real service echoes the token it was given; clients must not log it.
            raise ApiError(401, "/errors/tokens/invalid", "The API token is invalid",
                           given=token)
        return store

    def _rate_check(self, team: str, template: str) -> dict[str, str]:
        limit = self._rate_limit
        if not limit:
            return {}
        quirks = self._quirks
        key = (team, "*" if "shared_rate_limit" in quirks else template)
        allowed, remaining, reset = self.limiter.hit(key, limit=limit, now=time.monotonic())
        variant = next((q.split(":", 1)[1] for q in quirks if q.startswith("ratelimit_headers:")),
                       None)
        if allowed:
            if variant is None:
                return {"X-Ratelimit-Limit": str(limit), "X-Ratelimit-Remaining": str(remaining)}
            return {}
        if variant is None:
            headers = {"X-Ratelimit-Limit": str(limit), "X-Ratelimit-Remaining": "0",
                       "X-Ratelimit-Reset": f"{reset:.3f}"}
        elif variant == "reset":
            headers = {"X-Ratelimit-Reset": f"{reset:.3f}"}
        elif variant == "retry_after":
            headers = {"Retry-After": str(max(1, math.ceil(reset)))}
        else:
            headers = {}
        err = ApiError(429, "/errors/too-many-requests",
                       f"Too many requests: at most {limit} per second for this endpoint")
        err.headers = headers
        raise err

    # -- handlers: (store, params, id) -> JSON-able ----------------------------------------
    def _h_team(self, store, p, _id):
        team = dict(store.team)
        return {"item": team} if "team_wrapped" in self._quirks else team

    def _page(self, rows: list[dict], limit: int, has_more: bool) -> dict:
        cursor = rows[-1]["id"] if rows and (has_more or "last_cursor_not_null" in self._quirks) \
            else None
        return {"items": rows, "count": len(rows), "limit": limit, "cursor": cursor,
                "has_more": has_more}

    @staticmethod
    def _paging(p: Params) -> tuple[int, int | None]:
        limit = p.int("limit", default=MAX_LIMIT, lo=1, hi=MAX_LIMIT)
        cursor = p.int("cursor")
        return limit, cursor

    def _h_items(self, store, p, _id):
        limit, cursor = self._paging(p)
        item_ids = p.int_list("item_ids")
        location_ids = p.int_list("location_ids")
        p.check()
        wanted = set(item_ids) if item_ids else None
        ids = [i for i in sorted(store.items)
               if not store.items[i]["deleted"] and (cursor is None or i > cursor)
               and (wanted is None or i in wanted)]
        page = ids[:limit]
        return self._page([store.item_json(i, location_ids) for i in page], limit,
                          len(ids) > limit)

    def _h_item(self, store, p, item_id):
        location_ids = p.int_list("location_ids")
        p.check()
        rec = store.items.get(item_id)
        if rec is None or rec["deleted"]:
            raise _not_found(f"Item {item_id}")
        return {"item": store.item_json(item_id, location_ids)}

    def _h_txs(self, store, p, _id):
        limit, cursor = self._paging(p)
        type_code = p.choice("type", TYPE_CODE)
        p.check()
        after = None
        if cursor is not None:
            after = store.log.row(cursor)
            if after is None:
                raise ApiError(400, "/errors/invalid-request", "The request has invalid parameters",
                               errors=[{"parameter": "cursor", "given": str(cursor),
                                        "message": "cursor is not one this list handed out; "
                                                   "start again without a cursor"}])
        rows, has_more = store.log.page_newest_first(after, limit, type_code)
        return self._page([store.tx_row_json(r) for r in rows], limit, has_more)

    def _h_tx(self, store, p, tx_id):
        revision = p.int("revision")
        p.check()
        detail = store.tx_version_json(tx_id, revision)
        if detail is None:
            what = f"Transaction {tx_id}" + (f" revision {revision}" if revision is not None else "")
            raise _not_found(what)
        return {"item": detail}

    def _h_locations(self, store, p, _id):
        rows = [store.location_json(i) for i in sorted(store.locations)]
        return {"items": rows, "count": len(rows)}

    def _h_location(self, store, p, loc_id):
        if loc_id not in store.locations:
            raise _not_found(f"Location {loc_id}")
        return {"item": store.location_json(loc_id)}

    def _h_partners(self, store, p, _id):
        limit, cursor = self._paging(p)
        ptype = p.choice("type", {"0": 0, "1": 1})
        p.check()
        ids = [i for i in sorted(store.partners)
               if not store.partners[i]["deleted"] and (cursor is None or i > cursor)
               and (ptype is None or store.partners[i]["type"] == ptype)]
        rows = [_public(store.partners[i]) for i in ids[:limit]]
        return self._page(rows, limit, len(ids) > limit)

    def _h_members(self, store, p, _id):
        rows = [_public(m) for _, m in sorted(store.members.items()) if not m["deleted"]]
        return {"items": rows, "count": len(rows)}

    def _h_member(self, store, p, member_id):
        m = store.members.get(member_id)
        if m is None or m["deleted"]:
            raise _not_found(f"Member {member_id}")
        return {"item": _public(m)}

    def _h_attrs(self, store, p, _id):
        rows = [dict(a) for _, a in sorted(store.attrs.items())]
        return {"items": rows, "count": len(rows)}

    def _h_attr(self, store, p, attr_id):
        if attr_id not in store.attrs:
            raise _not_found(f"Item attribute {attr_id}")
        return {"item": dict(store.attrs[attr_id])}


def _record_for(method: str, target: str, fault: str | None = None,
                status: int | None = None) -> RequestRecord:
    parts = urlsplit(target)
    return RequestRecord(method=method, path=parts.path, route=None,
                         params=parse_qs(parts.query, keep_blank_values=True), status=status,
                         fault=fault)


def _public(rec: dict) -> dict:
    """A record without the store's own bookkeeping (``deleted`` of listed records)."""
    return {k: v for k, v in rec.items() if k != "deleted"}


class TeamView:
    """Read access to one team's current state, in wire format, for tests and notebooks.

    >>> with serve(size=200) as sb:
    ...     view = sb.data("shop")
    ...     view.team["mode"], len(view.transactions) == 200
    (2, True)
    """

    def __init__(self, store: TeamStore) -> None:
        self._store = store

    @property
    def team(self) -> dict:
        return dict(self._store.team)

    @property
    def items(self) -> list[dict]:
        """Live items (not deleted) with their current stock, id ascending."""
        s = self._store
        with s.lock:
            if s.log is None:
                return [{k: v for k, v in rec.items() if k != "deleted"}
                        for _, rec in sorted(s.items.items()) if not rec["deleted"]]
            return [s.item_json(i) for i in sorted(s.items) if not s.items[i]["deleted"]]

    @property
    def locations(self) -> list[dict]:
        s = self._store
        with s.lock:
            return [s.location_json(i) for i in sorted(s.locations)]

    @property
    def partners(self) -> list[dict]:
        return [_public(p) for _, p in sorted(self._store.partners.items()) if not p["deleted"]]

    @property
    def members(self) -> list[dict]:
        return [_public(m) for _, m in sorted(self._store.members.items()) if not m["deleted"]]

    @property
    def attrs(self) -> list[dict]:
        return [dict(a) for _, a in sorted(self._store.attrs.items())]

    @property
    def transactions(self) -> list[dict]:
        """Live transaction rows, newest first (as the list endpoint orders them)."""
        s = self._store
        if s.log is None:
            return []
        with s.lock:
            return [s.tx_row_json(r) for r in reversed(s.log.order)]

    def transaction(self, tx_id: int, revision: int | None = None) -> dict | None:
        """A transaction's detail (with lines), or None if it is unknown or deleted."""
        s = self._store
        with s.lock:
            return s.tx_version_json(tx_id, revision) if s.log else None


# -- HTTP plumbing ---------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "invtools-sandbox"
    sys_version = ""
    timeout = 30  # idle keep-alive connections are closed after this long
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits
    # for the client's delayed ACK (~40 ms a response). Real servers set TCP_NODELAY too.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        sb: Sandbox = self.server.sandbox
        faults = sb.faults
        kind = faults.decide() if faults is not None else None
        if kind == "drop":
            sb._record(_record_for(self.command, self.path, "drop"))
            self.close_connection = True
            try:  # RST rather than FIN: the client sees a reset connection, no response at all
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           b"\x01\x00\x00\x00\x00\x00\x00\x00")
            except OSError:
                pass
            return
        if kind == "slow":
            sb.stopping.wait(faults.slow_seconds)
        if kind in ("500", "502", "503"):
            status = int(kind)
            body = (f"<html><head><title>{status} {self.responses[status][0]}</title></head>"
                    f"<body><h1>{status} {self.responses[status][0]}</h1>"
                    f"<p>The upstream server is having trouble.</p></body></html>").encode()
            sb._record(_record_for(self.command, self.path, kind, status))
            self._send(status, {"Content-Type": "text/html; charset=utf-8"}, body)
            return
        status, headers, body = sb.handle(self.command, self.path, self.headers, fault=kind)
        self._send(status, headers, body)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # answered 405 by the dispatcher

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        log = self.server.log
        if log is not None:
            # requestline holds path and query only; tokens travel in headers, never here.
            log(f"{self.command} {urlsplit(self.path).path} {args[1] if len(args) > 1 else ''}")


class _Server(ThreadingHTTPServer):
    """One daemon thread per connection, tracked here so that :meth:`stop` can wake and join
    them: daemon, because the interpreter joins every non-daemon thread *before* it runs its
    atexit hooks, so a thread waiting on a client's idle keep-alive connection (up to
    ``_Handler.timeout``) would hold up the exit of any script or kernel that did not close its
    HTTP session, and the hook that stops the server would run only after that wait."""

    daemon_threads = True
    block_on_close = False  # stop() joins the connection threads itself
    allow_reuse_address = True

    def __init__(self, addr, sandbox: Sandbox, log: Callable[[str], None] | None) -> None:
        self.sandbox = sandbox
        self.log = log
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        super().__init__(addr, _Handler)

    def process_request(self, request, client_address):
        thread = threading.Thread(target=self.process_request_thread,
                                  args=(request, client_address), daemon=True,
                                  name=f"invtools-sandbox-{self.server_address[1]}-connection")
        with self._open_lock:
            self._open[request] = thread
        thread.start()

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def close_connections(self) -> list[threading.Thread]:
        """Shut every open connection down (waking threads that wait on idle keep-alive
        connections); return the connection threads, to be joined."""
        with self._open_lock:
            open_now = list(self._open.items())
        for sock, _thread in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return [thread for _sock, thread in open_now]

    def stop(self, serving: threading.Thread) -> None:
        """Stop serving, close every connection, join every thread of this server."""
        if sys.is_finalizing():
            # serve() was never left and the interpreter is tearing down: daemon threads no
            # longer run, so waiting for one (shutdown() waits for serve_forever) would never
            # end. The process is going away; the OS closes its sockets.
            return
        self.shutdown()
        threads = self.close_connections()
        self.server_close()
        for thread in threads:
            thread.join()
        serving.join()


@contextmanager
def serve(*, port: int = 0, rate_limit: int = 5, seed: int = 0, size: int | None = None,
          quirks=(), faults: Faults | None = None,
          log: Callable[[str], None] | None = None) -> Iterator[Sandbox]:
    """Run the stand-in server on 127.0.0.1 in a background thread.

    ``size`` is the number of the shop's transactions (default ``data.DEFAULT_SIZE``);
    ``log`` receives one line per request (method, path, status) when given. Leaving the block
    closes every client connection (idle keep-alive ones included) and joins every thread;
    none of its threads holds up the exit of the process, whether or not the block was left.

    >>> import json, urllib.request
    >>> with serve(size=200) as sb:
    ...     req = urllib.request.Request(sb.base_url + "/v1/teams/linked",
    ...                                  headers={"Authorization": "Bearer " + sb.tokens["shop"]})
    ...     with urllib.request.urlopen(req) as resp:
    ...         json.load(resp)["mode"]
    2
    """
    stores = demo_data.build(seed=seed, size=size)
    sandbox = Sandbox(stores, seed=seed, rate_limit=rate_limit, quirks=quirks, faults=faults)
    server = _Server(("127.0.0.1", port), sandbox, log)
    sandbox.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"invtools-sandbox-{server.server_address[1]}", daemon=True)
    thread.start()
    try:
        yield sandbox
    finally:
        sandbox.stopping.set()  # wakes "slow" faults
        server.stop(thread)
