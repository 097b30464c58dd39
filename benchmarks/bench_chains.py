"""Benchmark: how close do whole walks of the transactions list get to the rate limit when the
server answers like the real one (about 0.8 s a page)? Not a test -- it prints figures.

    python benchmarks/bench_chains.py [--size 4000] [--latency 0.8] [--rate 5]

Against the stand-in at ``latency`` seconds per answer (+-25 %) and ``rate`` requests/s per
endpoint, with the client paced at the same rate, three whole walks of the demo shop's list
(``size`` transactions, 100 a page):

1. one chain (``chains=1``): one request per round trip, about 1/latency requests/s;
2. a first walk: the head page, then one chain per type (goal >= 0.35 of the limit);
3. a re-walk from the cursors the first walk kept, 8 chains (goal >= 0.8 of the limit).

Requests/s is counted over the walk (n requests span n-1 intervals). Each walk's rows are
checked against the one-chain walk's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools import Client
from invtools.api.plan import MemoryStore
from invtools.sandbox import serve


def timed_walk(client, sb, **kw):
    """Rows, requests sent, seconds, 429 answers and the walk's summary."""
    sb.clear_log()
    with client.measure() as m:
        t0 = time.perf_counter()
        walk = client.transactions(**kw)
        rows = list(walk)
        seconds = time.perf_counter() - t0
    n429 = sum(r.status == 429 for r in sb.requests)
    return rows, m.sent, seconds, n429, walk.summary()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4000, help="transactions in the demo shop")
    ap.add_argument("--latency", type=float, default=0.8, help="seconds per answer")
    ap.add_argument("--rate", type=int, default=5, help="server and client requests/s")
    args = ap.parse_args(argv)

    goals = {"one chain": None, "first walk (type chains)": 0.35, "re-walk (stored cursors)": 0.8}
    ok = True
    with serve(rate_limit=args.rate, size=args.size, latency=args.latency) as sb:
        client = Client(
            sb.tokens["shop"],
            base_url=sb.base_url,
            cache=False,
            rate_limit=args.rate,
            progress=False,
        )
        client.team()  # bound once per client; not part of a walk
        MemoryStore.forget()
        reference = None
        print(
            f"{args.size} transactions ({-(-args.size // 100)} pages), "
            f"{args.latency:g} s per answer, {args.rate}/s per endpoint"
        )
        for (name, goal), kw in zip(goals.items(), [{"chains": 1}, {}, {}], strict=True):
            if name.startswith("first"):
                MemoryStore.forget()  # what a new process does
            rows, sent, seconds, n429, summary = timed_walk(client, sb, **kw)
            reference = reference if reference is not None else rows
            rps = (sent - 1) / seconds if sent > 1 else float("nan")
            same = rows == reference
            met = goal is None or rps / args.rate >= goal
            ok = ok and same and met and n429 == 0
            print(
                f"{name}: {summary['chains']} chains ({summary['plan']}), {sent} requests "
                f"in {seconds:.1f} s = {rps:.2f} req/s = {rps / args.rate:.2f} of the limit"
                + (f" (goal >= {goal})" if goal else "")
                + f"; 429 answers: {n429}; rows as one chain: {same}"
                + (f"; fell back: {summary['fallback']}" if summary["fallback"] else "")
            )
        client.close()
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
