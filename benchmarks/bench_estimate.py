"""Benchmark: how close the line a long first fetch prints ("N transaction details to fetch,
about T") comes to the time the fetch then takes, at the real service's pace, for each model of
its budget (issue 25). Not a test -- it prints figures.

    python benchmarks/bench_estimate.py [--details 100] [--runs 3] [--only WORD ...]
        [--client NAME=PYTHON ...]

The stand-in (this checkout's) answers in 0.8 s +-25 % with one budget per token, counted on
arrival or after the latency, silent or stated, per second or per minute (bench_budgets.py's
models). For each model and client, ``--runs`` processes run one after another on one cache
folder, as an analyst's Restart & Run All does, each fetching ``--details`` details it has not
fetched before (8 in flight, 5/s configured). Each prints the estimate before it starts (read
from its cost line: misses / the requests/s it names) and measures the fetch.

Figures: estimate / measured per run (1.00: exact; the goal is within 5 %, from the second run
on: the first process of a fresh cache folder has seen no pace yet). ``--client
start=/path/to/python`` measures another checkout's invtools in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.sandbox import serve

MODELS = {
    "arrival, 5/s": dict(rate_limit=5),
    "after latency, 5/s, silent": dict(rate_limit=5, count_after_latency=True),
    "after latency, 5/s, stated": dict(rate_limit=5, count_after_latency=True, stated_budget=True),
    "coarse, 5/s": dict(rate_limit=5, coarse_budget=True),
    "300/min, silent": dict(rate_limit=300, rate_window=60),
    "300/min, stated": dict(rate_limit=300, rate_window=60, stated_budget=True),
}
GOAL = 0.05  # from the second run on
COST_LINE = re.compile(r"([\d,]+) transaction details to fetch, about .+? at ([\d.]+) requests/s")

_CHILD = """
import json, os, sys, time
import invtools.api.details
invtools.api.details.ANNOUNCE_SECONDS = 0.0   # say every estimate, however short
from invtools import Client
c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], rate_limit=5,
           rate_limit_scope="token", progress=True)
c.team()
pairs = [tuple(p) for p in json.loads(os.environ["P"])]
t0 = time.time()
n = sum(1 for _ in c.transaction_details(pairs))
print(json.dumps({"n": n, "seconds": time.time() - t0}), flush=True)
"""


def run(python: str, sb, pairs: list, cache: Path) -> tuple[float, float]:
    """(estimate, measured) seconds of one process fetching ``pairs`` on ``cache``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVTOOLS_", "PYTHON"))}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), P=json.dumps(pairs))
    done = subprocess.run(
        [python, "-c", _CHILD], env=env, cwd=cache.parent, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"the child failed:\n{done.stderr[-2000:]}")
    said = COST_LINE.search(done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if said is None or out["n"] != len(pairs):
        raise SystemExit(f"no cost line, or not every detail fetched:\n{done.stderr[-2000:]}")
    misses, per_second = int(said[1].replace(",", "")), float(said[2])
    return misses / per_second, out["seconds"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--details", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help="model names (a word of each)")
    ap.add_argument("--client", action="append", default=[], help="NAME=PYTHON, to compare")
    args = ap.parse_args(argv)
    clients = dict(c.split("=", 1) for c in args.client) | {"new": sys.executable}
    chosen = [m for m in MODELS if not args.only or any(w in m for w in args.only)]
    print(
        f"stand-in at 0.8 s +-25 % per answer, one budget per token; {args.runs} processes one "
        f"after another on one cache folder, {args.details} new details each, 8 in flight; "
        f"estimate / measured (goal: within {GOAL:.0%} from run 2)"
    )
    ok = True
    for name in chosen:
        model = MODELS[name]
        with serve(latency=0.8, jitter=0.25, rate_limit_scope="token", size=2500, **model) as sb:
            rows = [[r["id"], r["revision"]] for r in sb.data().transactions]
            for k, (label, python) in enumerate(clients.items()):
                with tempfile.TemporaryDirectory() as tmp:
                    figures = []
                    for i in range(args.runs):
                        start = (k * args.runs + i) * args.details
                        pairs = rows[start : start + args.details]
                        estimate, measured = run(python, sb, pairs, Path(tmp) / "c.sqlite")
                        figures.append((estimate, measured))
                        if "300" in name:  # a moment between runs; the minute runs out in run 3
                            time.sleep(2)
                met = all(abs(e / m - 1) <= GOAL for e, m in figures[1:])
                ok &= met or label != "new"
                shown = ", ".join(f"{e:.1f}/{m:.1f} s = {e / m:.2f}" for e, m in figures)
                print(f"{name:28} {label:6} {shown} {'ok' if met else 'MISSED'}", flush=True)
                if "300" in name:
                    time.sleep(61)  # a fresh window for the next client
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
