"""Benchmark: whole walks of the transactions list at the real service's pace, next to the plain
loop an analyst writes, and what a new process on the same cache sends (issue 24). Not a test --
it prints figures.

    python benchmarks/bench_chains.py [--size 3000] [--latency 0.8] [--rate 5]
        [--since 2026-10-01] [--client NAME=PYTHON ...]

One stand-in answers in ``latency`` s +-25 % (seeded) and allows ``rate`` requests/s per
endpoint; its shop holds ``size`` transactions (the demo shop's mix at 3,000: out 2,000, move
644, in 298, adjust 58 -- the skew of issue 24's real shop). Measured in the same run:

0. the plain loop an analyst writes (``requests``, ``while has_more``, one request at a time),
   at the start and at the end of the run (the figures use their mean);
1. one chain (``chains=1``) from a fresh cache;
2. a first whole walk from another fresh cache (type chains; goal >= 0.34 of the limit);
3. a re-walk on that cache (``refresh=True``: seam chains from the first walk's record; goal
   >= 0.8), and the same with ``chains=4`` (context);
4. an analyst's first run on that cache: ``transactions_df()`` and ``lines_df(since=...)``
   (the details of the window: requests, and their pace when the list was replayed);
5. Restart & Run All: the same two calls in a new process on the same cache (goal: 0 requests).

Every step is a new process (each client's own: ``--client old=/work/old/.venv/bin/python``
measures another checkout's client in the same run, step by step beside this one's, ``new``);
the process builds its client and (walks) fetches its team before the step is timed. Requests
are counted where the server counts them (429s included); requests/s over a walk: n requests
span n-1 intervals; "x plain" is the plain loop's seconds over the walk's (the user's wait).
Every walk's rows (ids and revisions, in order) and the replayed frame's are checked equal to
the plain loop's. Goals (issue 24) are checked for ``new``: a line that misses says MISSED and
the run ends with GOAL MISSED.
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
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.sandbox import serve

TXS = "/v1/location-txs"
GAP = 1.1  # seconds between steps: a fresh one-second budget for the next
MOST_429 = 0.05

#: (name, what the child does, which cache, goal as a fraction of the limit)
STEPS: list[tuple[str, dict[str, Any], str, float | None]] = [
    ("one chain", {"op": "walk", "kw": {"chains": 1}}, "one", None),
    ("first walk (type chains)", {"op": "walk", "kw": {}}, "c", 0.34),
    ("re-walk (seam chains)", {"op": "walk", "kw": {"refresh": True}}, "c", 0.8),
    ("re-walk, 4 chains", {"op": "walk", "kw": {"refresh": True, "chains": 4}}, "c", None),
    ("first run: frames", {"op": "frames"}, "c", None),
    ("Restart & Run All", {"op": "frames"}, "c", None),
]

# Run with ``python -c`` in a scratch folder: the invtools that interpreter has installed.
_CHILD = """
import json, os, sys, time
from invtools import Client
step = json.loads(os.environ["STEP"])
c = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"],
           rate_limit=float(os.environ["R"]), progress=False)
if step["op"] == "walk":
    c.team()  # bound once per client; not part of the walk
print("ready", flush=True)
sys.stdin.readline()
out = {}
if step["op"] == "walk":
    with c.measure() as m:
        t0 = time.perf_counter()
        walk = c.transactions(**step["kw"])
        rows = [[r["id"], r["revision"]] for r in walk]
        out["seconds"] = time.perf_counter() - t0
    out.update(sent=m.sent, rows=rows, summary=walk.summary())
else:
    calls = [("transactions_df", c.transactions_df, {}),
             ("lines_df", c.lines_df, {"since": step["since"]})]
    for name, call, kw in calls:
        with c.measure() as m:
            t0 = time.perf_counter()
            df = call(**kw)
            seconds = time.perf_counter() - t0
        out[name] = {"seconds": seconds, "sent": m.sent, "n": len(df)}
        if name == "transactions_df":
            keys = zip(df["transaction_id"], df["revision"])
            out[name]["rows"] = [[int(i), int(r)] for i, r in keys]
        else:
            out[name]["lines"] = sorted([int(t), int(i)] for t, i in
                                        zip(df["transaction_id"], df["item_id"]))
c.close()
print(json.dumps(out), flush=True)
"""


def plain_loop(sb) -> tuple[list[list[int]], int, float, int]:
    """The cursor loop an analyst writes, one request at a time: rows (id, revision),
    requests, seconds, answers 429."""
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {sb.tokens['shop']}"
    rows, params, n, n429 = [], {"limit": 100}, 0, 0
    t0 = time.perf_counter()
    while True:
        resp = s.get(f"{sb.base_url}{TXS}", params=params, timeout=60)
        n += 1
        if resp.status_code == 429:  # only faster than the real pace: wait as it says
            n429 += 1
            time.sleep(float(resp.headers.get("Retry-After", 1)))
            continue
        resp.raise_for_status()
        body = resp.json()
        rows += [[r["id"], r["revision"]] for r in body["items"]]
        if not body["has_more"]:
            return rows, n, time.perf_counter() - t0, n429
        params["cursor"] = body["cursor"]


def run_step(python: str, sb, cache: Path, step: dict, rate: float) -> dict:
    """Run one step in a new process of ``python``; the server's count of what it sent from
    ``ready`` on (a walk: after its team) is added as ``server`` and ``n429``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVTOOLS_", "PYTHON"))}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), R=str(rate), STEP=json.dumps(step))
    if step["op"] != "walk":
        sb.clear_log()  # every request of the new process counts, its team's too
    p = subprocess.Popen(
        [python, "-c", _CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cache.parent,
    )
    assert p.stdout is not None and p.stdin is not None
    if p.stdout.readline().strip() != "ready":
        p.kill()
        raise RuntimeError(f"{python}: the step's process did not start ({step})")
    if step["op"] == "walk":
        sb.clear_log()
    p.stdin.write("go\n")
    p.stdin.flush()
    out, _ = p.communicate(timeout=1800)
    if p.returncode:
        raise RuntimeError(f"{python}: the step failed ({step}), exit {p.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    statuses = [r.status for r in sb.requests]
    result["server"], result["n429"] = len(statuses), statuses.count(429)
    return result


def rate_of(n: int, seconds: float) -> float:
    return (n - 1) / seconds if n > 1 and seconds > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=3000, help="transactions in the demo shop")
    ap.add_argument("--latency", type=float, default=0.8, help="seconds per answer")
    ap.add_argument("--jitter", type=float, default=0.25, help="latency +- this fraction")
    ap.add_argument("--rate", type=int, default=5, help="server and client requests/s")
    ap.add_argument("--since", default="2026-10-01", help="the window of lines_df(since=...)")
    ap.add_argument("--client", action="append", default=[], help="NAME=PYTHON, to compare")
    args = ap.parse_args(argv)
    clients = dict(c.split("=", 1) for c in args.client) | {"new": sys.executable}
    ok = True

    def check(label: str, met: bool) -> str:
        nonlocal ok
        ok &= met or label != "new"
        return "" if met else " MISSED"

    with (
        tempfile.TemporaryDirectory() as tmp,
        serve(latency=args.latency, jitter=args.jitter, rate_limit=args.rate, size=args.size) as sb,
    ):
        mix: dict[str, int] = {}
        for t in sb.data().transactions:
            mix[t["type"]] = mix.get(t["type"], 0) + 1
        print(
            f"{args.size:,} transactions ({', '.join(f'{k} {v:,}' for k, v in mix.items())}), "
            f"{args.latency:g} s +-{args.jitter:.0%} per answer, {args.rate}/s per endpoint; "
            f"clients: {', '.join(f'{k} ({v})' for k, v in clients.items())}",
            flush=True,
        )
        reference, n_plain, first_s, plain_429 = plain_loop(sb)
        print(
            f"plain loop (start): {n_plain} requests in {first_s:.1f} s = "
            f"{rate_of(n_plain, first_s) / args.rate:.2f} of the limit",
            flush=True,
        )
        folders = {}
        for label in clients:
            folders[label] = Path(tmp) / label
            folders[label].mkdir()
        results: dict[tuple[str, str], dict] = {}
        for name, step, cache, goal in STEPS:
            step = {**step, "since": args.since}
            for label, python in clients.items():
                time.sleep(GAP)
                r = run_step(python, sb, folders[label] / f"{cache}.sqlite", step, args.rate)
                results[name, label] = r
                if step["op"] == "walk":
                    s, n, n429 = r["seconds"], r["server"], r["n429"]
                    share = n429 / n if n else 0.0
                    limit = rate_of(n, s) / args.rate
                    same = r["rows"] == reference
                    met = (goal is None or limit >= goal) and share <= MOST_429 and same
                    summary = r["summary"]
                    fell = summary["fallback"]
                    print(
                        f"{name:26} {label:5} {summary['chains']} chains ({summary['plan']}"
                        f"{f'; fell back: {fell}' if fell else ''}), {n} requests in "
                        f"{s:.1f} s = {rate_of(n, s):.2f}/s = {limit:.2f} of "
                        f"the limit{f' (goal >= {goal})' if goal else ''}; 429 {n429}/{n} "
                        f"({share:.1%}); rows as the plain loop: {same}" + check(label, met),
                        flush=True,
                    )
                else:
                    tx, lines = r["transactions_df"], r["lines_df"]
                    replay = name.startswith("Restart")
                    same = tx["rows"] == reference
                    if replay:
                        same &= (
                            lines["lines"]
                            == results["first run: frames", label]["lines_df"]["lines"]
                        )
                    met = same and (not replay or r["server"] == 0)
                    print(
                        f"{name:26} {label:5} transactions_df() {tx['n']:,} rows in "
                        f"{tx['seconds']:.2f} s, {tx['sent']} sent; lines_df(since="
                        f"{args.since!r}) {lines['n']:,} lines in {lines['seconds']:.2f} s, "
                        f"{lines['sent']} sent; the server saw {r['server']} requests "
                        f"(429 {r['n429']}){' (goal 0)' if replay else ''}; rows as the "
                        f"plain loop{' and lines as the first run' if replay else ''}: {same}"
                        + check(label, met),
                        flush=True,
                    )
        time.sleep(GAP)
        _rows, n_end, last_s, end_429 = plain_loop(sb)
        plain_s = (first_s + last_s) / 2
        print(
            f"plain loop (end): {n_end} requests in {last_s:.1f} s = "
            f"{rate_of(n_end, last_s) / args.rate:.2f} of the limit; mean {plain_s:.1f} s",
            flush=True,
        )
    print(
        "\n| step | client | requests | seconds | requests/s | x limit | x plain | 429 |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    print(
        f"| plain loop | - | {n_plain} | {plain_s:.1f} | {rate_of(n_plain, plain_s):.2f} | "
        f"{rate_of(n_plain, plain_s) / args.rate:.2f} | 1.00 | {plain_429} + {end_429} |"
    )
    for name, _step, _cache, _goal in STEPS:
        for label in clients:
            r = results[name, label]
            if "rows" in r:
                s, n, n429 = r["seconds"], r["server"], r["n429"]
                print(
                    f"| {name} | {label} | {n} | {s:.1f} | {rate_of(n, s):.2f} | "
                    f"{rate_of(n, s) / args.rate:.2f} | {plain_s / s:.2f} | "
                    f"{n429} ({n429 / max(n, 1):.1%}) |"
                )
            else:
                tx, lines = r["transactions_df"], r["lines_df"]
                n, s = r["server"], lines["seconds"]
                # details only (the list replayed): their pace, as a multiple of the limit
                pace = (
                    f"{rate_of(n, s):.2f} | {rate_of(n, s) / args.rate:.2f}"
                    if n > 1 and tx["sent"] == 0
                    else " | "
                )
                print(
                    f"| {name} | {label} | {n} | {tx['seconds']:.2f} + {s:.2f} | {pace} | | "
                    f"{r['n429']} |"
                )
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
