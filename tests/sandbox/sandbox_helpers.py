"""Helpers for the stand-in server's tests: HTTP with urllib only (no invtools client), and an
independent replay of the history to check stock levels.

(A module of its own, not conftest.py: the project's tests/conftest.py would shadow it.)
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest


@dataclass
class Reply:
    status: int
    headers: dict
    raw: bytes

    @property
    def json(self):
        return json.loads(self.raw)


def call(
    sb,
    path: str,
    params=None,
    *,
    team: str | None = "shop",
    token: str | None = None,
    method: str = "GET",
    auth: str | None = None,
    timeout: float = 10,
) -> Reply:
    """One request to the sandbox; ``params`` may hold lists (repeated keys)."""
    url = sb.base_url + path
    if params:
        url += "?" + urlencode(params, doseq=True)
    headers = {}
    if auth is not None:
        headers["Authorization"] = auth
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    elif team is not None:
        headers["Authorization"] = f"Bearer {sb.tokens[team]}"
    req = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Reply(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, dict(err.headers), err.read())


def walk(sb, path: str, params=None, *, team: str = "shop", limit: int = 100, between=None):
    """Follow the cursor to the end; ``between(page_number, page)`` runs after each page."""
    params = dict(params or {}, limit=limit)
    rows, pages = [], 0
    while True:
        page = call(sb, path, params, team=team)
        assert page.status == 200, page.json
        body = page.json
        rows.extend(body["items"])
        pages += 1
        if not body["has_more"]:
            return rows, pages
        if between is not None:
            between(pages, body)
        params["cursor"] = body["cursor"]


def replay(details):
    """Independent replay of transaction details (oldest first) -> mismatches and final stock.

    Semantics per api-facts: in/out/adjust act on to_location (out subtracts, adjust adds its
    signed quantity); move takes from from_location and adds to to_location.
    """
    at, total, problems = defaultdict(float), defaultdict(float), []
    for d in details:
        frm = d["from_location"]["id"] if d["from_location"] else None
        to = d["to_location"]["id"]
        for line in d["items"]:
            i, q = line["id"], line["quantity"]
            if d["type"] == "move":
                at[(i, frm)] -= q
                at[(i, to)] += q
                got = (
                    line["new_stock_level"],
                    line["from_location_new_stock_level"],
                    line["to_location_new_stock_level"],
                )
                want = (total[i], at[(i, frm)], at[(i, to)])
            else:
                delta = -q if d["type"] == "out" else q
                at[(i, to)] += delta
                total[i] += delta
                got = (
                    line["new_stock_level"],
                    line["from_location_new_stock_level"],
                    line["to_location_new_stock_level"],
                )
                want = (total[i], None, at[(i, to)])
            if got != pytest.approx(want) and got != want:
                problems.append((d["id"], i, got, want))
    return problems, at, total


def history(sb, team="shop"):
    view = sb.data(team)
    rows = view.transactions[::-1]  # oldest first
    return [view.transaction(r["id"]) for r in rows]


def assert_consistent(sb, team="shop"):
    details = history(sb, team)
    problems, at, total = replay(details)
    assert problems == []
    for item in sb.data(team).items:
        for q in item["quantities"]:
            assert q["quantity"] == pytest.approx(at[(item["id"], q["location_id"])])
        assert item["quantity"] == pytest.approx(total[item["id"]])
    return details
