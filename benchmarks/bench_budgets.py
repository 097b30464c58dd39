"""Benchmark: how the client's pacing does against each model of the service's budget (issues 18,
24). Not a test -- it prints figures.

    python benchmarks/bench_budgets.py [--details 200] [--minute 600] [--only WORD ...]
        [--client NAME=PYTHON ...]

The real service's budget is not pinned down: 5 requests a second per endpoint (documented) or
300 a minute per token (reported), counted when a request arrives or after the network's
latency, said on every answer, only on a 429, or in the coarse form of many services (the limit
per minute while it counts per second, resets in whole seconds rounded up). For each model the
stand-in (this checkout's) answers in 0.8 s +-25 % with one budget per token, and a client
fetches ``details`` transaction details (8 in flight) from a fresh cache folder.

Each client runs in its own process: ``--client main=/work/main/.venv/bin/python`` runs the
same figures, in the same run against the same servers, with the invtools that interpreter
imports (``new`` is this one's, always measured). ``two processes``: two processes of one
token on one cache folder, each fetching ``details`` other details at once; together.
``300/min``: also ``--minute`` details, and the most requests reaching the counter in any
60 s (429s included; goal <= 300).

Figures: answers per second (429s included: what the server was sent) as multiples of 5/s (n
answers span n-1 intervals), and the share of them that were 429.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.sandbox import serve

RATE = 5.0
DETAIL = "/v1/location-txs/{id}"
MODELS = {
    "arrival, 5/s": dict(rate_limit=5),
    "after latency, 5/s, silent": dict(rate_limit=5, count_after_latency=True),
    "after latency, 5/s, stated": dict(rate_limit=5, count_after_latency=True, stated_budget=True),
    "coarse, 5/s": dict(rate_limit=5, coarse_budget=True),
    "300/min, stated": dict(rate_limit=300, rate_window=60, stated_budget=True),
}
#: (least answers/s as a multiple of 5/s, most share of 429s)
GOALS = {
    "arrival, 5/s": (0.90, 0.05),
    "after latency, 5/s, silent": (0.75, 0.05),
    "after latency, 5/s, stated": (0.75, 0.05),
    "coarse, 5/s": (0.75, 0.05),
    "300/min, stated": (1.5, 0.05),
    "two processes": (0.80, 0.05),
}

_CHILD = """
import json, os, sys, time
from invtools import Client
c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], rate_limit=5,
           rate_limit_scope="token", progress=False)
pairs = [tuple(p) for p in json.loads(os.environ["P"])]
c.team()
print("ready", flush=True)
sys.stdin.readline()
t0 = time.time()
n = sum(1 for _ in c.transaction_details(pairs))
print(json.dumps({"n": n, "start": t0, "end": time.time()}), flush=True)
"""


def children(python: str, sb, halves: list[list], folder: Path) -> list[dict]:
    """Run one child per list of ``(id, revision)`` pairs, all on one cache folder; start them
    together once each has fetched its team (so only the details are counted)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVTOOLS_", "PYTHON"))}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(folder / "c.sqlite"))
    procs = [
        subprocess.Popen(
            [python, "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**env, "P": json.dumps(half)},
            cwd=folder,
        )
        for half in halves
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    sb.clear_log()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    return [json.loads(p.communicate(timeout=1800)[0].strip().splitlines()[-1]) for p in procs]


def measure(python: str, sb, halves: list[list]) -> tuple[float, float, bool, str]:
    """(answers/s as a multiple of RATE, share of 429s, all fetched, the figures in words)."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = children(python, sb, halves, Path(tmp))
    statuses = [r.status for r in sb.requests if r.route == DETAIL]
    seconds = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    n, n429 = len(statuses), statuses.count(429)
    rate = (n - 1) / seconds / RATE if n > 1 else float("nan")
    share = n429 / n if n else 0.0
    done = all(o["n"] == len(h) for o, h in zip(outs, halves, strict=True))
    return rate, share, done, f"{n} answers in {seconds:.1f} s, 429 {n429}/{n}"


def busiest_minute(stamps: list[float]) -> int:
    stamps = sorted(stamps)
    j = most = 0
    for i, t in enumerate(stamps):
        while stamps[j] <= t - 60:
            j += 1
        most = max(most, i - j + 1)
    return most


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--details", type=int, default=200)
    ap.add_argument("--minute", type=int, default=600, help="details of the 300/min check")
    ap.add_argument("--only", nargs="*", default=None, help="model names (a word of each)")
    ap.add_argument("--client", action="append", default=[], help="NAME=PYTHON, to compare")
    args = ap.parse_args(argv)
    clients = dict(c.split("=", 1) for c in args.client) | {"new": sys.executable}
    chosen = [m for m in GOALS if not args.only or any(w in m for w in args.only)]
    print(
        f"stand-in at 0.8 s +-25 % per answer, one budget per token; {args.details} details "
        f"from a fresh cache, 8 in flight; answers/s as multiples of {RATE:g}/s, share of 429"
    )
    ok = True
    for name in chosen:
        goal_rate, goal_429 = GOALS[name]
        model = MODELS.get(name, MODELS["arrival, 5/s"])
        stamps: list[float] = []
        with serve(latency=0.8, jitter=0.25, rate_limit_scope="token", size=2500, **model) as sb:
            count = sb.limiter.hit

            def counted(key, **kw):  # when the server counts each request, refused or not
                stamps.append(kw["now"])  # noqa: B023 - only while this server runs
                return count(key, **kw)  # noqa: B023

            sb.limiter.hit = counted
            rows = [[r["id"], r["revision"]] for r in sb.data().transactions]
            for label, python in clients.items():
                if name == "two processes":
                    halves = [rows[: args.details], rows[args.details : 2 * args.details]]
                else:
                    halves = [rows[: args.details]]
                rate, share, done, words = measure(python, sb, halves)
                met = rate >= goal_rate and share <= goal_429 and done
                ok &= met or label != "new"
                print(
                    f"{name:28} {label:6} {rate:.2f}x, 429 {share:5.1%} ({words}; goal >= "
                    f"{goal_rate}, <= {goal_429:.0%}) {'ok' if met else 'MISSED'}",
                    flush=True,
                )
                if "300" in name:
                    time.sleep(61)  # a fresh window for what follows
                    stamps.clear()
                    many = [rows[: args.minute]]
                    _rate, _share, _done, words = measure(python, sb, many)
                    most = busiest_minute(stamps)
                    ok &= most <= 300 or label != "new"
                    print(
                        f"{'':28} {label:6} {args.minute} details: {words}; most in 60 s: "
                        f"{most} (goal <= 300)",
                        flush=True,
                    )
                    time.sleep(61)
                else:
                    time.sleep(1.1)
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
