"""The API's routes, parameter checks, endpoint handlers and error envelope.

:data:`ROUTES` maps each path template to its handler and says whether it is only for teams
that manage stock by location; :func:`find_route` finds a path's template. A handler takes
``(store, params, id, quirks)`` and returns the JSON-able answer, or raises :class:`ApiError`,
whose :meth:`~ApiError.body` is the envelope every error answers with (``id``, ``type``,
``title``, ``correlation_id``, extra fields).
Authentication, the rate limit and the team-mode gate come before the handler
(:mod:`invtools.sandbox.service`).

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

>>> find_route("/v1/items/100001"), find_route("/v1/items"), find_route("/v1/items/abc")
(('/v1/items/{id}', 100001), ('/v1/items', None), None)
"""

from __future__ import annotations

import builtins
import re
import secrets
import string
from collections.abc import Callable
from typing import Any

from invtools.sandbox.store import TeamStore
from invtools.sandbox.txlog import TYPE_CODE

__all__ = ["ApiError", "Params", "ROUTES", "find_route", "MAX_LIMIT", "ID_CHARS"]

MAX_LIMIT = 100
ID_CHARS = string.ascii_lowercase + string.digits  # of the service's random ids and tokens


def _rand_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(ID_CHARS) for _ in range(24))


class ApiError(Exception):
    """An error answer: status, envelope type and title, extra envelope fields, and extra
    response headers (a 429's rate-limit headers).

    >>> err = ApiError(404, "/errors/not-found", "Item 7 was not found")
    >>> body = err.body()
    >>> err.status, body["type"], body["title"], body["id"][:3], body["correlation_id"][:3]
    (404, '/errors/not-found', 'Item 7 was not found', 'ex_', 'rq_')
    """

    def __init__(
        self,
        status: int,
        type_: str,
        title: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(title)
        self.status, self.type, self.title, self.extra = status, type_, title, extra
        self.headers = dict(headers or {})

    def body(self) -> dict:
        return {
            "id": _rand_id("ex_"),
            "type": self.type,
            "title": self.title,
            "correlation_id": _rand_id("rq_"),
            **self.extra,
        }


def _not_found(what: str) -> ApiError:
    return ApiError(404, "/errors/not-found", f"{what} was not found")


Handler = Callable[[TeamStore, "Params", "int | None", "set[str]"], Any]


# -- parameters ------------------------------------------------------------------------------
class Params:
    """Query parameters with validation problems collected for one 400 answer.

    >>> p = Params({"limit": ["500"], "type": ["in"]})
    >>> p.int("limit", default=100, lo=1, hi=100), p.choice("type", TYPE_CODE)
    (100, 0)
    >>> [e["parameter"] for e in p.errors]
    ['limit']
    """

    def __init__(self, params: dict[str, list[str]]) -> None:
        self.raw = params
        self.errors: list[dict] = []

    def bad(self, name: str, given: Any, message: str) -> None:
        """Note one invalid parameter."""
        self.errors.append({"parameter": name, "given": given, "message": message})

    def int(self, name: str, *, default=None, lo=0, hi=2**31 - 1):
        text = self.raw.get(name, [None])[-1]
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            self.bad(name, text, f"{name} must be an integer")
            return default
        if not lo <= value <= hi:
            self.bad(name, text, f"{name} must be between {lo} and {hi}")
            return default
        return value

    def int_list(self, name: str) -> list[builtins.int] | None:  # `int` here is the method
        values = [v for raw in self.raw.get(name, []) for v in raw.split(",") if v != ""]
        out = []
        for v in values:
            try:
                out.append(int(v))
            except ValueError:
                self.bad(name, v, f"{name} must be integers (repeat the key for several)")
        return out or None

    def choice(self, name: str, allowed: dict[str, Any]):
        value = self.raw.get(name, [None])[-1]
        if value is None:
            return None
        if value not in allowed:
            self.bad(name, value, f"{name} must be one of {', '.join(allowed)}")
        return allowed.get(value)

    def check(self) -> None:
        """Raise the 400 answer if any parameter was invalid."""
        if self.errors:
            title = "The request has invalid parameters"
            raise ApiError(400, "/errors/invalid-request", title, errors=self.errors)


# -- handlers: (store, params, id, quirks) -> JSON-able --------------------------------------
def _page(rows: list[dict], limit: int, more: bool, quirks: set[str]) -> dict:
    cursor = rows[-1]["id"] if rows and (more or "last_cursor_not_null" in quirks) else None
    return {"items": rows, "count": len(rows), "limit": limit, "cursor": cursor, "has_more": more}


def _id_page(store: TeamStore, kind: str, ids: list[int], limit: int, cursor, quirks, locs=None):
    """The page after ``cursor`` of ``kind``'s records ``ids`` (ascending)."""
    ids = [i for i in ids if cursor is None or i > cursor]
    rows = [store.record(kind, i, locs) for i in ids[:limit]]
    return _page(rows, limit, len(ids) > limit, quirks)


def _paging(p: Params) -> tuple[int, int | None]:
    return p.int("limit", default=MAX_LIMIT, lo=1, hi=MAX_LIMIT), p.int("cursor")


def _team(store: TeamStore, p: Params, _id, quirks: set[str]):
    team = dict(store.team)
    return {"item": team} if "team_wrapped" in quirks else team


def _items(store: TeamStore, p: Params, _id, quirks: set[str]):
    limit, cursor = _paging(p)
    wanted, location_ids = p.int_list("item_ids"), p.int_list("location_ids")
    p.check()
    ids = [i for i in store.ids("items") if wanted is None or i in wanted]
    return _id_page(store, "items", ids, limit, cursor, quirks, location_ids)


def _partners(store: TeamStore, p: Params, _id, quirks: set[str]):
    limit, cursor = _paging(p)
    ptype = p.choice("type", {"0": 0, "1": 1})
    p.check()
    ids = [i for i in store.ids("partners") if ptype in (None, store.partners[i]["type"])]
    return _id_page(store, "partners", ids, limit, cursor, quirks)


def _txs(store: TeamStore, p: Params, _id, quirks: set[str]):
    limit, cursor = _paging(p)
    type_code = p.choice("type", TYPE_CODE)
    p.check()
    log = store.log
    assert log is not None  # a location-mode team: the team-mode gate passed
    after = None if cursor is None else log.row(cursor)
    if cursor is not None and after is None:
        hint = "cursor is not one this list handed out; start again without a cursor"
        p.bad("cursor", str(cursor), hint)
        p.check()
    rows, has_more = log.page_newest_first(after, limit, type_code)
    return _page([store.tx_row_json(r) for r in rows], limit, has_more, quirks)


def _tx(store: TeamStore, p: Params, tx_id, quirks: set[str]):
    revision = p.int("revision")
    p.check()
    detail = store.tx_version_json(tx_id, revision)
    if detail is None:
        what = f"Transaction {tx_id}" + (f" revision {revision}" if revision is not None else "")
        raise _not_found(what)
    return {"item": detail}


def _listing(kind: str) -> Handler:
    """The handler of a list that is answered whole: ``kind``'s listed records."""

    def handler(store: TeamStore, p: Params, _id, quirks: set[str]):
        rows = store.records(kind)
        return {"items": rows, "count": len(rows)}

    return handler


def _detail(kind: str, what: str) -> Handler:
    """The handler of one record of ``kind`` by id (an item's answer takes ``location_ids``)."""

    def handler(store: TeamStore, p: Params, rec_id, quirks: set[str]):
        location_ids = p.int_list("location_ids") if kind == "items" else None
        p.check()
        if not store.listed(kind, rec_id):
            raise _not_found(f"{what} {rec_id}")
        return {"item": store.record(kind, rec_id, location_ids)}

    return handler


# -- routes ----------------------------------------------------------------------------------
#: path template -> (handler, whether only teams that manage stock by location are answered)
ROUTES: dict[str, tuple[Handler, bool]] = {
    "/v1/teams/linked": (_team, False),
    "/v1/items": (_items, True),
    "/v1/items/{id}": (_detail("items", "Item"), True),
    **{f"/v1/{txs}": (_txs, True) for txs in ("location-txs", "transactions")},
    **{f"/v1/{txs}/{{id}}": (_tx, True) for txs in ("location-txs", "transactions")},
    "/v1/locations": (_listing("locations"), True),
    "/v1/locations/{id}": (_detail("locations", "Location"), True),
    "/v1/partners": (_partners, False),
    "/v1/members": (_listing("members"), False),
    "/v1/members/{id}": (_detail("members", "Member"), False),
    "/v1/item-attrs": (_listing("attrs"), False),
    "/v1/item-attrs/{id}": (_detail("attrs", "Item attribute"), False),
}
_PATH = re.compile(r"(/v1/[a-z/-]+?)(?:/(\d{1,10}))?")  # a template's fixed part, then an id


def find_route(path: str) -> tuple[str, int | None] | None:
    """The template of the route a path matches and the id in it (None for a list), or None."""
    match = _PATH.fullmatch(path)
    if match is None or (template := match[1] + ("/{id}" if match[2] else "")) not in ROUTES:
        return None
    return template, int(match[2]) if match[2] else None
