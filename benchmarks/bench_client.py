"""Benchmark: how close does a paced walk get to the server's rate limit, and what does a warm
cache save? Not a test -- it prints figures.

    python benchmarks/bench_client.py [--pages 200] [--rate 5]

1. Cold: walk >= 200 pages of transactions (limit=100) against the stand-in server at its
   default 5 requests/s per endpoint, with the client paced at the same 5/s. Reports the
   achieved requests per second as a fraction of the limit (goal >= 0.95) and the number of
   429 answers (goal 0).
2. Warm: the same walk again from the cache. Reports requests sent (goal 0) and the speed-up
   (goal >= 50x).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools import Client
from invtools.sandbox import serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200, help="pages of 100 transactions to walk")
    ap.add_argument("--rate", type=float, default=5.0, help="server and client requests/s")
    args = ap.parse_args(argv)

    size = args.pages * 100 + 50  # a little over, so the walk is exactly --pages pages long
    with tempfile.TemporaryDirectory() as tmp, serve(rate_limit=int(args.rate), size=size) as sb:
        c = Client(
            sb.tokens["shop"],
            base_url=sb.base_url,
            cache=Path(tmp) / "bench.sqlite",
            rate_limit=args.rate,
            progress=False,
        )
        c.team()  # bound once per client; not part of the walk
        sb.clear_log()

        with c.measure() as cold:
            t0 = time.perf_counter()
            rows = sum(len(p.rows) for p in c.pages("/v1/location-txs", max_pages=args.pages))
            cold_s = time.perf_counter() - t0
        statuses = [r.status for r in sb.requests]
        n429 = statuses.count(429)
        # Requests per second over the walk: n requests span n-1 intervals.
        rps = (cold.sent - 1) / cold_s if cold.sent > 1 else float("nan")
        print(f"cold walk: {cold.pages} pages, {rows} rows, {cold.sent} requests in {cold_s:.2f} s")
        print(
            f"  achieved {rps:.3f} req/s = {rps / args.rate:.3f} of the {args.rate:g}/s limit "
            f"(goal >= 0.95); 429 answers: {n429} (goal 0); retries: {cold.retries}"
        )

        sb.clear_log()
        with c.measure() as warm:
            t0 = time.perf_counter()
            warm_rows = sum(len(p.rows) for p in c.pages("/v1/location-txs", max_pages=args.pages))
            warm_s = time.perf_counter() - t0
        print(
            f"warm walk: {warm.pages} pages, {warm_rows} rows, {warm.sent} requests sent "
            f"(goal 0), {len(sb.requests)} reached the server, {warm.from_cache} from cache, "
            f"{warm_s:.3f} s"
        )
        print(f"  speed-up {cold_s / warm_s:.0f}x (goal >= 50x)")
        c.close()
        ok = rps / args.rate >= 0.95 and n429 == 0 and warm.sent == 0 and cold_s / warm_s >= 50
        print("all goals met" if ok else "GOAL MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
