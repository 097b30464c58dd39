"""Benchmark: what the list says first, at the real service's pace (issue 45, items 1 and 4).
Not a test -- it prints figures.

    python benchmarks/bench_costs.py [--size 4000] [--latency 0.8] [--rate 5] [--since 30D]

One stand-in of ``--size`` transactions answers in ``latency`` s +-25 % and allows ``rate``
requests a second per endpoint. Each step runs in a NEW process (its imports and Client made
before the clock starts), in this order, on one cache folder:

1. ``client.fetch_costs(windows=("30D", "90D"))`` on a fresh cache (the list walked 90 days
   back), then ``windows=("30D", "90D", None)`` on another (the whole list walked): the
   seconds to the table, the requests the stand-in saw, and the table;
2. the same in a new process (Restart & Run All): seconds and requests (goal: none);
3. ``client.lines_df(since=...)`` on a fresh cache folder: the seconds to the line that says
   what the window holds (stderr, read as it is written), to the cost line after it, and to
   the whole frame; the requests the stand-in saw;
4. ``lines_df(since=...)`` after ``fetch_costs`` (step 1's cache): requests of the list
   (goal: none).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.sandbox import serve

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, os, sys, time
import pandas as pd
from invtools import Client
client = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"], progress=True)
began, t0 = time.time(), time.perf_counter()
if os.environ["OP"].startswith("costs"):
    windows = ("30D", "90D") if os.environ["OP"] == "costs-windows" else ("30D", "90D", None)
    table = client.fetch_costs(windows=windows)
    out = {"seconds": time.perf_counter() - t0, "table": table.drop(columns="since").to_string()}
    out["requests"] = table.attrs["requests"]
else:
    lines = client.lines_df(since=os.environ["SINCE"])
    out = {"seconds": time.perf_counter() - t0, "rows": len(lines)}
print(json.dumps({**out, "began": began}), flush=True)
"""


def step(sb, cache: Path, op: str, since: str) -> dict:
    """One step in a new process; ``said``: seconds from its start to each stderr line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVTOOLS_", "PYTHON"))}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), OP=op, SINCE=since)
    env["PYTHONPATH"] = str(ROOT)
    sb.clear_log()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    said: list[tuple[float, str]] = []

    def read() -> None:
        assert child.stderr is not None
        buffer = b""
        while chunk := child.stderr.read1(4096):
            buffer += chunk
            *lines, buffer = buffer.replace(b"\r", b"\n").split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").strip()
                if line:
                    said.append((time.time(), line))

    reader = threading.Thread(target=read)
    reader.start()
    out, _ = child.communicate(timeout=7200)
    reader.join()
    if child.returncode:
        raise SystemExit(f"step {op} failed:\n" + "\n".join(line for _t, line in said[-20:]))
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["said"] = [(t - result["began"], line) for t, line in said]
    routes = [r.route for r in sb.requests]
    result["list"] = routes.count("/v1/location-txs")
    result["details"] = routes.count("/v1/location-txs/{id}")
    result["requests"] = len(routes)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4000)
    ap.add_argument("--latency", type=float, default=0.8)
    ap.add_argument("--rate", type=float, default=5)
    ap.add_argument("--since", default="30D")
    args = ap.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve(latency=args.latency, jitter=0.25, rate_limit=args.rate, size=args.size) as sb,
    ):
        n = len(sb.data().transactions)
        print(f"{n:,} transactions; {args.latency:g} s +-25 % per answer, {args.rate:g}/s")
        short = step(sb, Path(tmp) / "w" / "cache.sqlite", "costs-windows", args.since)
        print(
            f"1. fetch_costs(30D, 90D), fresh cache: {short['seconds']:.1f} s, "
            f"{short['requests']} requests ({short['list']} list pages)"
        )
        print(short["table"])
        costs = Path(tmp) / "a" / "cache.sqlite"
        first = step(sb, costs, "costs", args.since)
        print(
            f"1. fetch_costs(30D, 90D, None), fresh cache: {first['seconds']:.1f} s, "
            f"{first['requests']} "
            f"requests ({first['list']} list pages, {first['details']} details)"
        )
        print(first["table"])
        again = step(sb, costs, "costs", args.since)
        print(
            f"2. fetch_costs, new process: {again['seconds']:.2f} s, {again['requests']} requests"
        )
        fresh = step(sb, Path(tmp) / "b" / "cache.sqlite", "lines", args.since)
        holds = next(
            (t, s[s.index("the window holds") :]) for t, s in fresh["said"] if " holds " in s
        )
        cost = next((t, s) for t, s in fresh["said"] if "details to fetch" in s)
        print(f"3. lines_df(since={args.since!r}), fresh cache:")
        print(f"   {holds[0]:6.1f} s  {holds[1]}")
        print(f"   {cost[0]:6.1f} s  {cost[1]}")
        print(
            f"   {fresh['seconds']:6.1f} s  the frame ({fresh['rows']:,} lines, "
            f"{fresh['requests']} requests)"
        )
        after = step(sb, costs, "lines", args.since)
        print(
            f"4. lines_df(since={args.since!r}) after fetch_costs: {after['seconds']:.1f} s, "
            f"{after['list']} list requests, {after['details']} details"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
