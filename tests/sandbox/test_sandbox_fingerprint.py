"""The demo data and the wire bytes, pinned: a hash per seed and size of everything the stand-in
serves, so a change to the sandbox's code that changes one figure of the demo data (the example
notebooks, the docs and many tests depend on exact figures) or one byte on the wire fails here.

What is hashed: the tokens and, for every team, each ``sb.data(team)`` view and every revision
of every transaction's detail; the raw bodies, statuses and headers (not ``Date``) of list pages
(first and second), details, filters and errors over HTTP (an error envelope's random ``id``
and ``correlation_id`` masked); the answers and the data after a series of mutations; the
rate-limit headers of every budget model on a fake clock; and the answers of injected faults.

When the demo data is changed on purpose, print the new figures with
``python tests/sandbox/test_sandbox_fingerprint.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # when run as a script
from sandbox_helpers import call

from invtools.sandbox import Faults, serve

#: data-/wire-SEED-SIZE-SHOPS: the demo data, and the wire bytes, of ``serve(seed, size, shops)``
EXPECTED = {
    "data-0-None-1": "2f4896769c1a92c6",
    "wire-0-None-1": "77c421ee7515b777",
    "data-1-200-5": "4e1b0b56c76a044e",
    "wire-1-200-5": "4533f23b27bffccf",
    "data-7-50-2": "575a251c722e7863",
    "wire-7-50-2": "11f234d8e29f204f",
    "data-3-1000-1": "7b7e960b92f6ab04",
    "wire-3-1000-1": "805aefb331045c10",
    "data-2-20000-1": "cd97e6a05ec30573",
    "wire-2-20000-1": "b2d51db2a65ad08f",
    "mutations": "97d3943f0373231b",
    "limits": "7d66487a2064071a",
    "faults": "7f81feaed41b5e79",
}
_RANDOM_IDS = re.compile(r'"(id|correlation_id)":"(ex|rq)_[a-z0-9]{24}"')


def digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def views(sb) -> dict:
    out: dict = {"tokens": sb.tokens}
    for team in sb.tokens:
        v = sb.data(team)
        rows = v.transactions
        out[team] = {
            "team": v.team,
            "items": v.items,
            "locations": v.locations,
            "partners": v.partners,
            "members": v.members,
            "attrs": v.attrs,
            "transactions": rows,
            "details": [
                [v.transaction(r["id"], rev) for rev in range(r["revision"] + 1)] for r in rows
            ],
        }
    return out


def wire(sb) -> list:
    out: list = []

    def get(path, params=None, team="shop", **kw):
        r = call(sb, path, params, team=team, **kw)
        headers = {k: v for k, v in r.headers.items() if k != "Date"}
        out.append((path, params, team, r.status, headers, _RANDOM_IDS.sub("", r.raw.decode())))
        return r

    lists = ["/v1/teams/linked", "/v1/items", "/v1/partners", "/v1/members", "/v1/item-attrs"]
    for team in ("shop", "basic"):
        for path in [*lists, "/v1/locations", "/v1/location-txs", "/v1/transactions"]:
            r = get(path, {"limit": 7}, team)
            if r.status == 200 and r.json.get("cursor"):
                get(path, {"limit": 7, "cursor": r.json["cursor"]}, team)
    rows = sb.data("shop").transactions
    for row in rows[:: max(1, len(rows) // 9)]:
        get(f"/v1/location-txs/{row['id']}")
        get(f"/v1/transactions/{row['id']}")
    for row in [r for r in rows if r["revision"]][:3]:
        get(f"/v1/location-txs/{row['id']}", {"revision": 0})
        get(f"/v1/location-txs/{row['id']}", {"revision": row["revision"] + 1})
    for t in ("in", "out", "move", "adjust", "count", "sale"):
        get("/v1/transactions", {"type": t, "limit": 5})
    items, locs = sb.data("shop").items, [loc["id"] for loc in sb.data("shop").locations]
    get("/v1/partners", {"type": 1, "limit": 100})
    get("/v1/partners", {"type": 0, "cursor": 6105})
    get("/v1/items", {"item_ids": f"{items[2]['id']},{items[6]['id']}", "location_ids": locs[1:]})
    get(f"/v1/items/{items[1]['id']}", {"location_ids": locs[2]})
    for path in ("/v1/locations/", "/v1/members/", "/v1/item-attrs/", "/v1/items/"):
        get(path + "1")  # 404s
    get(f"/v1/locations/{locs[0]}")
    get(f"/v1/members/{sb.data('shop').members[0]['id']}")
    get(f"/v1/item-attrs/{sb.data('shop').attrs[2]['id']}")
    get("/v1/items", {"limit": "0", "cursor": "x", "item_ids": "1,a", "location_ids": "b"})
    get("/v1/location-txs", {"cursor": "1"})
    get("/v1/nowhere")
    get("/v1/items", team=None)
    get("/v1/items", team=None, auth="Bearer nope")
    get("/v1/items", team=None, auth=sb.tokens["shop"])
    get("/v1/items", method="POST")
    return out


def mutations() -> list:
    out: list = []
    with serve(size=200, rate_limit=0, seed=5) as sb:
        out.append(sb.add_transaction())
        out.append(sb.add_transaction(type="in", memo="delivery"))
        out.append(sb.add_transaction(type="move"))
        out.append(
            sb.add_transaction(
                type="count", lines=[(100001, -2)], transaction_time="2026-01-01T10:00:00Z"
            )
        )
        out.append(sb.add_transaction(type="adjust", to_location=3101, created_by=7003))
        tx = sb.data().transactions[30]["id"]
        out.append(sb.edit_transaction(tx))
        out.append(sb.edit_transaction(tx, memo="fixed", partner=None))
        out.append(sb.edit_transaction(sb.data().transactions[50]["id"], lines=[(100005, 1.5)]))
        out.append(
            sb.edit_transaction(sb.data().transactions[70]["id"], transaction_time=1_700_000_000)
        )
        sb.delete_transaction(sb.data().transactions[60]["id"])
        out.append(sb.edit_partner(sb.data().partners[3]["id"], name="X Ltd"))
        out.append(sb.edit_partner(sb.data().partners[4]["id"], deleted=True))
        out.append(sb.edit_partner(6601, team="basic", memo="new"))
        out.append(views(sb))
        out.append(wire(sb))
    return out


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def limits() -> list:
    out: list = []
    models = [
        {},
        {"stated_budget": True},
        {"coarse_budget": True},
        {"rate_window": 60, "rate_limit": 3},
        {"quirks": "ratelimit_headers:reset"},
        {"quirks": "ratelimit_headers:retry_after"},
        {"quirks": "ratelimit_headers:none"},
        {"rate_limit_scope": "token"},
        {"coarse_budget": True, "quirks": "ratelimit_headers:none"},
    ]
    for model in models:
        clock = Clock()
        with serve(size=50, **{"rate_limit": 2, "clock": clock, **model}) as sb:
            for t, path in [(0, "/v1/members"), (0.1, "/v1/members"), (0.2, "/v1/item-attrs")]:
                for dt in (0, 0.25, 0.5, 0.7, 1.05):
                    clock.now = 1000 + t + dt
                    r = call(sb, path)
                    headers = {k: v for k, v in r.headers.items() if k != "Date"}
                    out.append(
                        (model, path, r.status, headers, _RANDOM_IDS.sub("", r.raw.decode()))
                    )
    return out


def faults() -> list:
    out: list = []
    kinds = ("500", "502", "503", "truncated", "empty", "empty_object", "mislabelled", "drop")
    with serve(size=50, rate_limit=0) as sb:
        for kind in kinds:
            sb.faults = Faults(on_requests={2}, kinds=(kind,))
            for path in ("/v1/members", "/v1/members", "/v1/nowhere"):
                try:
                    r = call(sb, path)
                except OSError:  # the connection dropped
                    out.append((kind, path, "dropped"))
                    continue
                headers = {k: v for k, v in r.headers.items() if k != "Date"}
                out.append((kind, path, r.status, headers, _RANDOM_IDS.sub("", r.raw.decode())))
        sb.faults = Faults(rate=0.5, seed=3, kinds=("500", "503", "empty"))
        out.append([call(sb, "/v1/members").status for _ in range(30)])
        out.append([(r.path, r.route, r.params, r.status, r.team, r.fault) for r in sb.requests])
    return out


def fingerprint(name: str) -> str:
    if name.startswith(("data-", "wire-")):
        seed, size, shops = name.split("-")[1:]
        with serve(
            seed=int(seed), size=None if size == "None" else int(size), shops=int(shops)
        ) as sb:
            sb.rate_limit = 0
            return digest(views(sb) if name.startswith("data-") else wire(sb))
    return digest({"mutations": mutations, "limits": limits, "faults": faults}[name]())


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_demo_data_and_the_wire_bytes_are_unchanged(name):
    assert fingerprint(name) == EXPECTED[name]


if __name__ == "__main__":
    for name in EXPECTED:
        print(f'    "{name}": "{fingerprint(name)}",')
