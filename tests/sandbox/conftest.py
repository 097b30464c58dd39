"""Fixtures for the stand-in server's tests: real HTTP with urllib, no invtools client.

``shop_server`` is one server per module for read-only tests (rate limit off); tests that
mutate data, set quirks or faults, or exercise the rate limit start their own with ``serve()``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest

from invtools.sandbox import serve


@dataclass
class Reply:
    status: int
    headers: dict
    raw: bytes

    @property
    def json(self):
        return json.loads(self.raw)


def call(sb, path: str, params=None, *, team: str | None = "shop", token: str | None = None,
         method: str = "GET", auth: str | None = None, timeout: float = 10) -> Reply:
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


@pytest.fixture(scope="module")
def shop_server():
    with serve(rate_limit=0) as sb:
        yield sb
