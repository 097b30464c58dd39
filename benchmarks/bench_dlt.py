"""Benchmark: ``invtools.dlt.boxhero`` beside dlt's own ``rest_api`` pipeline and a plain loop,
at the real service's pace (issues 33 and 42). Not a test -- it prints figures.

    python benchmarks/bench_dlt.py [--size 250] [--quick] [--serial] [--no-memory]
                                   [--memory-only] [--seed 0] [--latency 0.8]

Four contenders load one shop's transactions and their lines into a DuckDB file each:

- ``invtools``: :func:`invtools.dlt.boxhero` (every table; 5 requests/s, 8 in flight, its own
  cache and mirror files; the destination is the state: each run loads the difference between
  what the warehouse holds and what the service holds);
- ``rest_api incr.``: ``dlt.sources.rest_api`` as dlt's docs set it up: bearer token, cursor
  paginator, merge on ``id``, incremental on ``transaction_time`` with ``row_order="desc"``
  (the list is newest first, so a run stops at the first page it has seen), the details a
  dependent resource (their ``items`` become dlt's nested ``transaction_details__items``);
- ``rest_api drop``: the same, run with ``refresh="drop_sources"`` every time (dlt's way to get
  edits and deletions right: reload everything);
- ``plain loop``: what an analyst writes: ``requests`` walks the pages, fetches every detail,
  and pandas replaces two DuckDB tables.

Each contender runs in its own process against its own stand-in (same seed and size, so the
same data and the same changes; ``--serial`` runs them one after another instead of side by
side) answering in 0.8 s +-25 % with the documented budget of 5 requests/s per endpoint. Four
nights, a load each:

1. a first load into an empty warehouse;
2. after two edits, a deletion, a new sale and a backdated sale on the server;
3. a quiet night: nothing changed (``invtools``' requests are also given per endpoint: list
   pages, and details, of which there should be none);
4. after renames, which change no ``revision``: the partner, the destination location and the
   item the transactions use most, and the number attribute (``Weight (kg)``).

After each load the loaded transactions (id, revision), their lines (per transaction: item,
quantity) and their names (each transaction's partner, from and to location; each line's item
name) are compared with the server's truth (``sb.data()``): "right" when nothing is wrong,
missing or extra; for ``invtools`` also its items' attribute values, in the column its
``attributes`` table names. Requests and 429s are counted by the server, and
``invtools.dlt.last_run`` (through ``summary``) is printed beside. For the first load, the pace
as fractions of the limit: transaction details fetched a second from the first detail request
to the last (the server's arrival times), and the whole load's requests a second.

The default size (250 transactions: three list pages) keeps the one-request-at-a-time
contenders, which reach about 1.2 requests/s at this latency, at about 3.5 minutes a full load;
``rest_api drop`` and the plain loop load everything each night, so the four nights take about
14 minutes side by side, and with the memory figures the whole benchmark about 16.5 minutes on
this project's 2-core machine (2026-12-07: 987 s, the load average 10 from other work). Running
them side by side does not change their figures: each is bound by the latency or by the budget
of its own stand-in (``invtools`` alone, 300 transactions: 325 requests in 85.2 s and 23 in
19.4 s; side by side: 326 in 90.4 s, 23 in 19.7 s; measured before issue 42).

Then memory (issue 33, item 4): ``invtools`` alone in a new process against a stand-in in this
one (no latency, no budget), a first load of 2,000 and of 10,000 transactions with
``batch_size=1000`` and with one batch for everything (``batch_size=100000``), and the mirror's
first sync alone (``sync``: what the source does before it loads a row); the child's peak RSS
(``ru_maxrss``) after its imports and at the end, against the rows loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout (and its children: PYTHONPATH)

LATENCY, RATE = 0.8, 5
LIST, DETAIL = "/v1/location-txs", "/v1/location-txs/{id}"
REFS = ("partner", "from_location", "to_location")  # a transaction's names compared
CONTENDERS = ("invtools", "rest_api incr.", "rest_api drop", "plain loop")
QUIET = {  # dlt: no telemetry (no network but 127.0.0.1), no warnings about empty columns
    "RUNTIME__DLTHUB_TELEMETRY": "false",
    "RUNTIME__LOG_LEVEL": "ERROR",
}


# ------------------------------------------------------------------------------ the contenders


def rest_api_config(base_url: str, token: str, incremental: bool) -> Any:
    """dlt's ``rest_api`` set up for this API the way its documentation shows."""
    transactions: dict[str, Any] = {
        "name": "transactions",
        "endpoint": {
            "path": "v1/location-txs",
            "params": {"limit": 100},
            "data_selector": "items",
            "paginator": {"type": "cursor", "cursor_path": "cursor", "cursor_param": "cursor"},
        },
        "primary_key": "id",
        "write_disposition": "merge",
    }
    if incremental:
        transactions["endpoint"]["incremental"] = {
            "cursor_path": "transaction_time",
            "row_order": "desc",
        }
    return {
        "client": {"base_url": base_url + "/", "auth": {"type": "bearer", "token": token}},
        "resources": [
            transactions,
            {
                "name": "transaction_details",
                "endpoint": {
                    "path": "v1/location-txs/{resources.transactions.id}",
                    "data_selector": "item",
                    "paginator": "single_page",
                },
                "primary_key": "id",
                "write_disposition": "merge",
            },
        ],
    }


def plain_loop(base_url: str, token: str, file: Path) -> None:
    """Every page, every detail, one at a time; two tables replaced."""
    import duckdb
    import pandas as pd
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def get(path: str, **params: Any) -> dict:
        while True:
            r = session.get(base_url + path, params=params, timeout=60)
            if r.status_code == 429:  # the one fix an analyst adds after the first 429
                time.sleep(float(r.headers.get("Retry-After", 1)))
                continue
            r.raise_for_status()
            return r.json()

    rows: list[dict] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = get(LIST, **params)
        rows += page["items"]
        if not page["has_more"]:
            break
        params["cursor"] = page["cursor"]
    lines = [
        {"transaction_id": row["id"], **line}
        for row in rows
        for line in get(f"{LIST}/{row['id']}")["item"]["items"]
    ]
    tx, li = pd.json_normalize(rows), pd.DataFrame(lines)
    with duckdb.connect(str(file)) as con:
        con.register("tx", tx)
        con.register("li", li)
        con.execute("CREATE OR REPLACE TABLE transactions AS SELECT * FROM tx")
        con.execute("CREATE OR REPLACE TABLE lines AS SELECT * FROM li")


class Contender:
    """One contender's warehouse: ``load()`` once a night, ``loaded()`` what its tables hold."""

    def __init__(self, name: str, sb: Any, tmp: Path) -> None:
        self.name, self.sb, self.tmp = name, sb, tmp
        self.file = tmp / "warehouse.duckdb"
        self.pipeline: Any = None
        if name != "plain loop":
            import dlt

            self.pipeline = dlt.pipeline(
                "bench_" + name.split()[-1].strip("."),
                pipelines_dir=str(tmp / "pipelines"),
                dataset_name="boxhero",
                destination=dlt.destinations.duckdb(str(self.file)),
            )

    def load(self) -> None:
        token = self.sb.tokens["shop"]
        if self.name == "invtools":
            from invtools.dlt import boxhero

            source = boxhero(
                token,
                base_url=self.sb.base_url,
                cache=str(self.tmp / "cache.sqlite"),
                mirror_path=str(self.tmp / "mirror.sqlite"),
            )
            self.pipeline.run(source)
        elif self.name == "plain loop":
            plain_loop(self.sb.base_url, token, self.file)
        else:
            from dlt.sources.rest_api import rest_api_source

            incremental = self.name == "rest_api incr."
            source = rest_api_source(rest_api_config(self.sb.base_url, token, incremental))
            self.pipeline.run(source, **({} if incremental else {"refresh": "drop_sources"}))

    def loaded(self) -> dict[str, Any]:
        """What the tables hold, in :func:`truth`'s shape: ``revisions`` (transaction id ->
        revision), ``lines`` (id -> sorted (item, quantity)), ``tx names`` (id -> partner,
        from and to location names), ``line names`` (id -> sorted (item, name)); ``split``:
        lines whose quantity dlt put in a ``quantity__v_double`` column; ``attributes``
        (invtools only): each number attribute's values in the column its row names."""
        import duckdb

        with duckdb.connect(str(self.file), read_only=True) as con:
            schema = "main" if self.name == "plain loop" else "boxhero"

            def has(table: str) -> set[str]:
                sql = "SELECT column_name FROM information_schema.columns WHERE table_schema = ? "
                return {
                    c
                    for (c,) in con.execute(sql + "AND table_name = ?", [schema, table]).fetchall()
                }

            def pick(table: str, *columns: str) -> str:  # a column no row filled is not there
                there = has(table)
                return ", ".join(c if c.strip('"') in there else "NULL" for c in columns)

            split = 0
            if self.name == "invtools":
                refs = pick("transactions", *(f"{r}_name" for r in REFS))
                lines_sql = "SELECT transaction_id, item_id, quantity, item_name FROM boxhero.lines"
            elif self.name == "plain loop":
                refs = pick("transactions", *(f'"{r}.name"' for r in REFS))
                lines_sql = "SELECT transaction_id, id, quantity, name FROM main.lines"
            else:
                refs = pick("transactions", *(f"{r}__name" for r in REFS))
                variant = "quantity__v_double" in has("transaction_details__items")
                quantity = "coalesce(i.quantity, i.quantity__v_double)" if variant else "quantity"
                lines_sql = (
                    f"SELECT d.id, i.id, {quantity}, i.name "
                    "FROM boxhero.transaction_details__items i "
                    "JOIN boxhero.transaction_details d ON i._dlt_parent_id = d._dlt_id"
                )
                if variant:
                    split = con.sql(
                        "SELECT count(*) FROM boxhero.transaction_details__items "
                        "WHERE quantity__v_double IS NOT NULL"
                    ).fetchall()[0][0]
            key = "transaction_id" if self.name == "invtools" else "id"
            tx = con.sql(f"SELECT {key}, revision, {refs} FROM {schema}.transactions").fetchall()
            lines: dict[int, list] = {}
            names: dict[int, list] = {}
            for t, item, q, name in con.sql(lines_sql).fetchall():
                lines.setdefault(int(t), []).append((int(item), float(q)))
                names.setdefault(int(t), []).append((int(item), name))
            attributes: Counter[tuple] = Counter()
            if self.name == "invtools":
                for name, column in con.sql(
                    "SELECT attr_name, column_name FROM boxhero.attributes"
                ).fetchall():
                    if column in has("items"):
                        for i, value in con.sql(
                            f"SELECT item_id, {column} FROM boxhero.items"
                        ).fetchall():
                            if isinstance(value, float):
                                attributes[(int(i), name, value)] += 1
        return {
            "revisions": {int(i): int(r) for i, r, *_ in tx},
            "lines": {t: sorted(v) for t, v in lines.items()},
            "tx names": {int(i): tuple(refs) for i, _, *refs in tx},
            "line names": {t: sorted(v) for t, v in names.items()},
            "split": split,
            "attributes": attributes,
        }


# ----------------------------------------------------------------------------- the comparison


def _name(ref: dict | None) -> str | None:
    return None if ref is None else ref["name"]


def truth(sb: Any) -> dict[str, Any]:
    """The server's rows in the shape of :meth:`Contender.loaded`."""
    view = sb.data("shop")
    details = {r["id"]: view.transaction(r["id"])["items"] for r in view.transactions}
    names = {a["id"]: a["attr_name"] for a in view.attrs}
    return {
        "revisions": {r["id"]: r["revision"] for r in view.transactions},
        "lines": {
            t: sorted((line["id"], float(line["quantity"])) for line in lines)
            for t, lines in details.items()
        },
        "tx names": {r["id"]: tuple(_name(r[ref]) for ref in REFS) for r in view.transactions},
        "line names": {
            t: sorted((line["id"], line["name"]) for line in lines) for t, lines in details.items()
        },
        "attributes": Counter(
            (i["id"], names[a["id"]], float(a["value"]))
            for i in view.items
            for a in i["attrs"]
            if a["type"] == "number" and a["value"] is not None
        ),
    }


def compare(loaded: dict, true: dict) -> list[int]:
    """[wrong, missing, extra] keys of ``loaded`` against ``true``."""
    wrong = sum(1 for k in loaded.keys() & true.keys() if loaded[k] != true[k])
    return [wrong, len(true.keys() - loaded.keys()), len(loaded.keys() - true.keys())]


def change_the_server(sb: Any) -> str:
    """Two edits, a deletion, a new sale and a backdated sale (the same on every stand-in)."""
    rows = sb.data("shop").transactions  # newest first
    n = len(rows)
    edited = [rows[5]["id"], rows[n // 2]["id"]]  # one near the top, one half way down
    for tx in edited:
        sb.edit_transaction(tx)  # one line's quantity corrected: revision + 1
    deleted = rows[20]["id"]
    sb.delete_transaction(deleted)
    sb.add_transaction(type="out")
    sb.add_transaction(type="out", transaction_time=rows[3 * n // 4]["transaction_time"])
    return f"edited {edited}, deleted {deleted}, a new sale, a sale backdated to row {3 * n // 4}"


def rename_on_the_server(sb: Any) -> str:
    """The partner, the destination location and the item the live transactions use most, and
    the number attribute, renamed (no transaction's revision changes)."""
    view = sb.data("shop")
    rows = view.transactions
    lines = [line for r in rows for line in view.transaction(r["id"])["items"]]
    used = {
        kind: Counter(r[kind]["id"] for r in rows if r[kind] and not r[kind]["deleted"])
        for kind in ("partner", "to_location")
    }
    used["item"] = Counter(line["id"] for line in lines if not line["deleted"])
    (partner, on_partner), (location, on_location), (item, on_item) = (
        used[kind].most_common(1)[0] for kind in ("partner", "to_location", "item")
    )
    sb.edit_partner(partner, name="Renamed Supplies Ltd")
    sb.edit_location(location, name="Floor 2")
    sb.edit_item(item, name="Renamed Compost 50L")
    attr = next(a for a in view.attrs if a["attr_type"] == "number")
    held = sum(1 for i in view.items for a in i["attrs"] if a["id"] == attr["id"])
    sb.edit_attribute(attr["id"], attr_name="Mass (kg)")
    return (
        f"partner {partner} (on {on_partner} transactions), location {location} (the "
        f"destination of {on_location}), item {item} (on {on_item} lines) renamed; attribute "
        f"{attr['attr_name']!r} (held by {held} items) renamed 'Mass (kg)'"
    )


NIGHTS = {  # the night's title: what changes on the server before its load
    "first load (empty warehouse)": None,
    "second load (after the changes)": change_the_server,
    "quiet night (nothing changed)": lambda sb: "nothing",
    "night with renames": rename_on_the_server,
}


def pace(sent: list[tuple[float, str | None, int]], seconds: float) -> dict[str, float]:
    """Fractions of the limit: transaction details fetched (answered 200) a second from the
    first detail request's arrival at the server to the last's, and the load's requests (429s
    included) a second over its whole time."""
    details = sorted(t for t, route, _ in sent if route == DETAIL)
    fetched = sum(1 for _, route, status in sent if route == DETAIL and status == 200)
    span = details[-1] - details[0] if len(details) > 1 else 0.0
    return {
        "detail": (fetched - 1) / span / RATE if span else 0.0,
        "detail seconds": span,
        "whole": len(sent) / seconds / RATE,
    }


def child(name: str, size: int, seed: int, latency: float) -> None:
    """One contender's nights against its own stand-in; prints its figures as JSON."""
    os.environ.update(QUIET)
    from invtools.sandbox import serve
    from invtools.sandbox.routes import find_route

    with (
        serve(latency=latency, rate_limit=RATE, size=size, seed=seed) as sb,
        tempfile.TemporaryDirectory() as tmp,
    ):
        arrivals: list[tuple[float, str | None, int]] = []  # (arrival, route, status)
        handle = sb.handle  # wrapped as the tests do: the time each request is answered

        def timed(method: str, target: str, authorization: str | None, fault: Any = None) -> Any:
            at = time.perf_counter()
            reply = handle(method, target, authorization, fault=fault)
            found = find_route(urlsplit(target).path)
            arrivals.append((at, found[0] if found else None, reply[0]))
            return reply

        sb.handle = timed
        contender = Contender(name, sb, Path(tmp))
        nights = []
        for change in NIGHTS.values():
            changes = change(sb) if change else ""
            before, timed_before = len(sb.requests), len(arrivals)
            started = time.perf_counter()
            contender.load()
            seconds = time.perf_counter() - started
            sent = sb.requests[before:]
            routes = Counter(r.route for r in sent)
            got, true = contender.loaded(), truth(sb)
            night = {
                "changes": changes,
                "requests": len(sent),
                "list": routes[LIST],
                "detail": routes[DETAIL],
                "other": len(sent) - routes[LIST] - routes[DETAIL],
                "routes": dict(routes),
                "429": sum(1 for r in sent if r.status == 429),
                "seconds": seconds,
                "pace": pace(arrivals[timed_before:], seconds),
                "rows": [len(got["revisions"]), sum(len(v) for v in got["lines"].values())],
                "split": got["split"],
            }
            for what in ("revisions", "lines", "tx names", "line names"):
                night[what] = compare(got[what], true[what])
            if name == "invtools":
                from invtools.dlt import last_run, summary

                (counts,) = last_run(contender.pipeline).values()
                night["summary"] = summary(counts, seconds)
                night["attributes"] = [
                    sum((got["attributes"] - true["attributes"]).values()),
                    sum((true["attributes"] - got["attributes"]).values()),
                ]
            nights.append(night)
    print(json.dumps({"name": name, "nights": nights}))


def run_children(names: tuple[str, ...], args: argparse.Namespace, size: int) -> list[dict]:
    def one(name: str) -> dict:
        argv = [sys.executable, __file__, "--child", name, "--size", str(size)]
        argv += ["--seed", str(args.seed), "--latency", str(args.latency)]
        out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **QUIET})
        if out.returncode:
            sys.stderr.write(out.stderr)
            raise SystemExit(f"{name}: exit {out.returncode}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(1 if args.serial else len(names)) as pool:
        return list(pool.map(one, names))


def fmt(counts: list[int]) -> str:
    return "yes" if not any(counts) else "no ({}/{}/{})".format(*counts)


def report(results: list[dict]) -> None:
    by = {r["name"]: r for r in results}
    mine = by["invtools"]["nights"]
    for n, title in enumerate(NIGHTS):
        print(f"\n{title}" + (f": {mine[n]['changes']}" if mine[n]["changes"] else ""))
        print(
            f"  {'contender':<15} {'requests':>8} {'list':>5} {'detail':>6} {'other':>5} "
            f"{'429':>4} {'seconds':>8}  {'tx right':<12} {'lines right':<12} "
            f"{'names right':<25} rows"
        )
        for r in results:
            x = r["nights"][n]
            split = f", {x['split']} quantities in quantity__v_double" if x["split"] else ""
            names = f"{fmt(x['tx names'])} / {fmt(x['line names'])}"
            print(
                f"  {r['name']:<15} {x['requests']:>8,} {x['list']:>5} {x['detail']:>6} "
                f"{x['other']:>5} {x['429']:>4} {x['seconds']:>8.1f}  {fmt(x['revisions']):<12} "
                f"{fmt(x['lines']):<12} {names:<25} "
                f"{x['rows'][0]:,} tx, {x['rows'][1]:,} lines{split}"
            )
        for other in ("rest_api drop", "plain loop"):
            them = by[other]["nights"][n]
            print(
                f"  invtools / {other}: requests {mine[n]['requests'] / them['requests']:.2f}, "
                f"time {mine[n]['seconds'] / them['seconds']:.2f}"
            )
        print(
            f"  invtools' own count (last_run, summary): {mine[n]['summary']} (the server "
            f"saw {mine[n]['requests']})"
        )
        if n == 0:
            print(
                f"  pace, fractions of the limit ({RATE}/s): transaction details fetched a "
                "second from the first detail request to the last / the whole load's requests "
                "(429s included) a second"
            )
            for r in results:
                p = r["nights"][0]["pace"]
                print(
                    f"    {r['name']:<15} details {p['detail']:.2f} (over "
                    f"{p['detail seconds']:.1f} s), whole load {p['whole']:.2f}"
                )
        if title.startswith("quiet"):
            routes = mine[n]["routes"]
            lists = {k: v for k, v in routes.items() if k and "{id}" not in k}
            details = sum(v for k, v in routes.items() if not k or "{id}" in k)
            print(
                "  invtools' requests by endpoint: "
                + ", ".join(f"{k} {v}" for k, v in sorted(lists.items()))
                + f"; details (an id in the path) {details}"
            )
        if title.startswith("night with renames"):
            print(
                "  invtools' items: number attribute values in the column its attributes row "
                "names: " + fmt([0, *mine[n]["attributes"]]) + " (missing/extra)"
            )
    print(
        "\n(right: yes, or no (wrong/missing/extra) keys: transactions by revision, lines by "
        "transaction (item, quantity); names: each transaction's partner, from and to location, "
        "each line's item name)"
    )


# -------------------------------------------------------------------------------- the memory

_RSS_CHILD = """
import json, os, resource, sys, tempfile, time
os.environ.update(json.loads(os.environ["BENCH_QUIET"]))
import dlt, duckdb
from invtools.api import Client
from invtools.dlt import boxhero, last_run
from invtools.mirror import TransactionMirror
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
batch = int(os.environ["BENCH_BATCH"])
with tempfile.TemporaryDirectory() as tmp:
    client = Client(os.environ["BENCH_TOKEN"], base_url=os.environ["BENCH_URL"], rate_limit=0,
                    cache=False, progress=False)
    t = time.perf_counter()
    if batch:  # the source's first load
        p = dlt.pipeline("bench_rss", pipelines_dir=tmp, dataset_name="boxhero",
                         destination=dlt.destinations.duckdb(f"{tmp}/w.duckdb"))
        p.run(boxhero(os.environ["BENCH_TOKEN"], client=client, mirror_path=f"{tmp}/m.sqlite",
                      batch_size=batch))
        (counts,) = last_run(p).values()
        tx, lines = counts["transactions"]["new"], counts["lines"]["new"]
    else:  # the mirror's first sync alone, what the source starts with
        mirror = TransactionMirror(f"{tmp}/m.sqlite", client)
        mirror.sync()
        info = mirror.info()
        tx, lines = info["transactions"], info["lines"]
    seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"base": base, "peak": peak, "seconds": seconds, "tx": tx, "lines": lines}))
"""


def memory(sizes: list[int], batches: list[int], seed: int) -> None:
    from invtools.sandbox import serve

    print(
        "\nmemory: invtools' first load in a new process, stand-in in this one (no latency, "
        "no budget); peak RSS (ru_maxrss) after imports and at the end; batch 'sync': the "
        "mirror's first sync alone (TransactionMirror.sync, what the source starts with)"
    )
    print(
        f"  {'transactions':>12} {'lines':>7} {'batch':>7} {'imports MiB':>11} "
        f"{'peak MiB':>8} {'peak - imports':>14} {'seconds':>7}"
    )
    for size in sizes:
        with serve(rate_limit=0, size=size, seed=seed) as sb:
            for batch in batches:
                env = {
                    **os.environ,
                    "PYTHONPATH": str(ROOT),
                    "BENCH_QUIET": json.dumps(QUIET),
                    "BENCH_TOKEN": sb.tokens["shop"],
                    "BENCH_URL": sb.base_url,
                    "BENCH_BATCH": str(batch),
                }
                out = subprocess.run(
                    [sys.executable, "-c", _RSS_CHILD], capture_output=True, text=True, env=env
                )
                if out.returncode:
                    sys.stderr.write(out.stderr)
                    raise SystemExit(f"memory child: exit {out.returncode}")
                x = json.loads(out.stdout.strip().splitlines()[-1])
                base, peak = x["base"] / 1024, x["peak"] / 1024
                label = f"{batch:,}" if batch else "sync"
                print(
                    f"  {x['tx']:>12,} {x['lines']:>7,} {label:>7} {base:>11.0f} {peak:>8.0f} "
                    f"{peak - base:>14.0f} {x['seconds']:>7.1f}"
                )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=None, help="transactions (default 250; quick 120)")
    ap.add_argument("--quick", action="store_true", help="120 transactions, memory at 2,000/4,000")
    ap.add_argument("--serial", action="store_true", help="contenders one after another")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak RSS figures")
    ap.add_argument("--memory-only", action="store_true", help="only the peak RSS figures")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", type=float, default=LATENCY, help="seconds an answer")
    ap.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    size = args.size or (120 if args.quick else 250)
    if args.child:
        child(args.child, size, args.seed, args.latency)
        return 0
    started = time.perf_counter()
    print(
        f"{size:,} transactions; each contender in its own process with its own stand-in "
        f"({'one after another' if args.serial else 'side by side'}) answering in "
        f"{args.latency} s +-25 %, {RATE} requests/s per endpoint; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if not args.memory_only:
        report(run_children(CONTENDERS, args, size))
    if not args.no_memory:
        sizes = [2000, 4000] if args.quick else [2000, 10_000]
        memory(sizes, [0, 1000, 10 * max(sizes)], args.seed)
    print(f"\n({time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
