"""Benchmark: what a re-sync of the transaction mirror costs after 1% of the history changed,
against re-fetching everything. Not a test -- it prints figures.

    python benchmarks/bench_mirror.py [--size 50000] [--changed 0.01]

1. Full sync of ``size`` transactions into a new mirror file: one request per list page plus
   one detail per transaction -- exactly what a full re-fetch of rows and lines costs.
2. Re-sync with nothing changed: list pages only.
3. Edit ``changed`` of the transactions through the sandbox's mutation API, re-sync: list
   pages plus the changed details only. The main figure is the request count.

The sandbox and the client run with rate_limit=0 so it finishes in minutes; at the real
service's 5 requests/s the request counts translate into time as ``requests / 5`` seconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.api import Client
from invtools.mirror import TransactionMirror
from invtools.sandbox import serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=50_000, help="transactions of the shop")
    ap.add_argument("--changed", type=float, default=0.01, help="fraction edited")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    with (
        serve(rate_limit=0, size=args.size, seed=args.seed) as sb,
        tempfile.TemporaryDirectory() as tmp,
    ):
        print(f"sandbox with {args.size:,} transactions built in {time.perf_counter() - t0:.1f} s")
        client = Client(
            sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0, progress=False
        )
        mirror = TransactionMirror(Path(tmp) / "mirror.sqlite", client)

        full = mirror.sync()
        print(
            f"\n1. full sync (= full re-fetch): {full.requests:,} requests "
            f"({full.list_pages:,} list pages + {full.details_fetched:,} details) "
            f"in {full.seconds:.1f} s"
        )
        same = mirror.sync()
        print(
            f"2. re-sync, nothing changed: {same.requests:,} requests "
            f"({same.list_pages:,} list pages + {same.details_fetched} details) "
            f"in {same.seconds:.1f} s"
        )

        rows = sb.data("shop").transactions
        random.Random(args.seed).shuffle(rows)
        target = int(len(rows) * args.changed)
        t = time.perf_counter()
        edited = 0
        for row in rows:
            if edited == target:
                break
            try:
                sb.edit_transaction(row["id"])
                edited += 1
            except Exception:  # noqa: BLE001 - an edit that would oversell is refused; skip it
                pass
        print(
            f"   ({edited:,} transactions edited via the sandbox in "
            f"{time.perf_counter() - t:.1f} s)"
        )
        delta = mirror.sync()
        print(
            f"3. re-sync after {edited:,} edits: {delta.requests:,} requests "
            f"({delta.list_pages:,} list pages + {delta.details_fetched:,} details) "
            f"in {delta.seconds:.1f} s; report: {delta.changed:,} changed, "
            f"{delta.unchanged:,} unchanged"
        )
        ratio = full.requests / max(delta.requests, 1)
        print(
            f"\n   requests: re-sync {delta.requests:,} vs full re-fetch {full.requests:,} "
            f"({ratio:.0f}x fewer); at 5 req/s: {delta.requests / 5 / 60:.1f} min vs "
            f"{full.requests / 5 / 60:.1f} min"
        )
        t = time.perf_counter()
        tx, lines = mirror.transactions_df(), mirror.lines_df()
        print(
            f"   reading the mirror (no network): {len(tx):,} rows + {len(lines):,} lines "
            f"in {time.perf_counter() - t:.1f} s"
        )
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
