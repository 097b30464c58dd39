"""Benchmark: ``invtools.dlt.boxhero`` beside dlt's own ``rest_api`` pipeline and a plain loop,
at the real service's pace (issue 33). Not a test -- it prints figures.

    python benchmarks/bench_dlt.py [--size 250] [--quick] [--serial] [--no-memory]

Four contenders load one shop's transactions and their lines into a DuckDB file each:

- ``invtools``: :func:`invtools.dlt.boxhero` (every table; 5 requests/s, 8 in flight, its own
  cache and mirror files);
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
side) answering in 0.8 s +-25 % with the documented budget of 5 requests/s per endpoint. The
scenario: a first load; then on the server two edits, a deletion, a new sale and a backdated
sale; a second load. After each load the loaded transactions (id, revision) and lines (per
transaction: item, quantity) are compared with the server's truth (``sb.data()``): "right"
when nothing is wrong, missing or extra. Requests and 429s are counted by the server.

The default size (250 transactions: three list pages) keeps the one-request-at-a-time
contenders, which reach about 1.2 requests/s at this latency, at about 3.5 minutes a full
load, so ``rest_api drop`` and the plain loop (two full loads each) take about 7 minutes side
by side (run one after another, the four would take about 18); with the memory figures the
whole benchmark takes 10-12 minutes on this project's 2-core machine. Running them side by
side does not change their figures: each is bound by the latency or by the budget of its own
stand-in (``invtools`` alone, 300 transactions: 325 requests in 85.2 s and 23 in 19.4 s; side
by side: 326 in 90.4 s, 23 in 19.7 s).

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout (and its children: PYTHONPATH)

LATENCY, RATE = 0.8, 5
LIST, DETAIL = "/v1/location-txs", "/v1/location-txs/{id}"
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
    """One contender's warehouse: ``load()`` once a run, ``loaded()`` what its tables hold."""

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

    def loaded(self) -> tuple[dict[int, int], dict[int, list], int]:
        """(transaction id -> revision, transaction id -> sorted (item, quantity) lines, lines
        whose quantity dlt put in a ``quantity__v_double`` column)."""
        import duckdb

        with duckdb.connect(str(self.file), read_only=True) as con:
            schema = "main" if self.name == "plain loop" else "boxhero"
            tx = con.sql(f"SELECT id, revision FROM {schema}.transactions").fetchall()
            if self.name == "invtools":
                sql = "SELECT transaction_id, item_id, quantity FROM boxhero.lines"
                split = 0
            elif self.name == "plain loop":
                sql, split = "SELECT transaction_id, id, quantity FROM main.lines", 0
            else:
                columns = {
                    c
                    for (c,) in con.sql(
                        "SELECT column_name FROM information_schema.columns WHERE "
                        "table_schema = 'boxhero' AND table_name = 'transaction_details__items'"
                    ).fetchall()
                }
                variant = "quantity__v_double" in columns
                quantity = "coalesce(i.quantity, i.quantity__v_double)" if variant else "quantity"
                sql = (
                    f"SELECT d.id, i.id, {quantity} FROM boxhero.transaction_details__items i "
                    "JOIN boxhero.transaction_details d ON i._dlt_parent_id = d._dlt_id"
                )
                split = (
                    con.sql(
                        "SELECT count(*) FROM boxhero.transaction_details__items "
                        "WHERE quantity__v_double IS NOT NULL"
                    ).fetchall()[0][0]
                    if variant
                    else 0
                )
            lines: dict[int, list] = {}
            for t, item, q in con.sql(sql).fetchall():
                lines.setdefault(int(t), []).append((int(item), float(q)))
        return {int(i): int(r) for i, r in tx}, {t: sorted(v) for t, v in lines.items()}, split


# ----------------------------------------------------------------------------- the comparison


def truth(sb: Any) -> tuple[dict[int, int], dict[int, list]]:
    view = sb.data("shop")
    revisions = {r["id"]: r["revision"] for r in view.transactions}
    lines = {
        r["id"]: sorted(
            (line["id"], float(line["quantity"])) for line in view.transaction(r["id"])["items"]
        )
        for r in view.transactions
    }
    return revisions, lines


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


def child(name: str, size: int, seed: int, latency: float) -> None:
    """One contender's scenario against its own stand-in; prints its figures as JSON."""
    os.environ.update(QUIET)
    from invtools.sandbox import serve

    with (
        serve(latency=latency, rate_limit=RATE, size=size, seed=seed) as sb,
        tempfile.TemporaryDirectory() as tmp,
    ):
        contender = Contender(name, sb, Path(tmp))
        loads, changes = [], ""
        for n in range(2):
            if n == 1:
                changes = change_the_server(sb)
            before = len(sb.requests)
            started = time.perf_counter()
            contender.load()
            seconds = time.perf_counter() - started
            sent = sb.requests[before:]
            routes = Counter(r.route for r in sent)
            revisions, lines, split = contender.loaded()
            true_revisions, true_lines = truth(sb)
            loads.append(
                {
                    "requests": len(sent),
                    "list": routes[LIST],
                    "detail": routes[DETAIL],
                    "other": len(sent) - routes[LIST] - routes[DETAIL],
                    "429": sum(1 for r in sent if r.status == 429),
                    "seconds": seconds,
                    "tx": compare(revisions, true_revisions),
                    "lines": compare(lines, true_lines),
                    "rows": [len(revisions), sum(len(v) for v in lines.values())],
                    "split": split,
                }
            )
        counts = None
        if name == "invtools":
            from invtools.dlt import last_run

            (counts,) = last_run(contender.pipeline).values()
    print(json.dumps({"name": name, "loads": loads, "changes": changes, "last_run": counts}))


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
    print(f"\nchanges before the second load: {results[0]['changes']}")
    for n, title in enumerate(("first load (empty warehouse)", "second load (after the changes)")):
        print(f"\n{title}")
        print(
            f"  {'contender':<15} {'requests':>8} {'list':>5} {'detail':>6} {'other':>5} "
            f"{'429':>4} {'seconds':>8}  {'transactions right':<19} {'lines right':<17} rows"
        )
        for r in results:
            x = r["loads"][n]
            split = f", {x['split']} quantities in quantity__v_double" if x["split"] else ""
            print(
                f"  {r['name']:<15} {x['requests']:>8,} {x['list']:>5} {x['detail']:>6} "
                f"{x['other']:>5} {x['429']:>4} {x['seconds']:>8.1f}  {fmt(x['tx']):<19} "
                f"{fmt(x['lines']):<17} {x['rows'][0]:,} tx, {x['rows'][1]:,} lines{split}"
            )
        mine = by["invtools"]["loads"][n]
        for other in ("rest_api drop", "plain loop"):
            them = by[other]["loads"][n]
            print(
                f"  invtools / {other}: requests {mine['requests'] / them['requests']:.2f}, "
                f"time {mine['seconds'] / them['seconds']:.2f}"
            )
    print("  (wrong/missing/extra: transactions by revision, lines by transaction)")
    print(f"  invtools' own count of the second load: {by['invtools']['last_run']}")


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
        tx, lines = counts["transactions"][0], counts["lines"][0]
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
