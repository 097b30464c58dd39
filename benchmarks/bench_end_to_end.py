"""Warm cache -> typed frame of 200,000 transactions: ``client.transactions_df()`` vs the plain
loop.

Run from the repository root::

    python benchmarks/bench_end_to_end.py            # 200,000 transactions
    python benchmarks/bench_end_to_end.py --rows 50000
    python benchmarks/bench_end_to_end.py --client old=/work/old/.venv/bin/python

A stand-in server (``invtools.sandbox.serve(size=--rows, rate_limit=0)``) serves the shop's
transactions. Two approaches, each with its own warm SQLite cache:

- ``invtools``: ``Client(token, base_url=..., cache=<file>, rate_limit=0, progress=False)`` and
  ``client.transactions_df()``.
- ``plain``: what an analyst would write with requests-cache: a ``CachedSession`` on a SQLite
  file (its defaults), walking the cursor pages with ``session.get(...).json()``, collecting
  ``page["items"]``, then ``pd.json_normalize`` and the dtype fixes of
  ``benchmarks/bench_frames.py``.

``--client NAME=PYTHON`` also measures the ``invtools`` approach with the invtools that
interpreter imports (another checkout's client: its own cache, same server, same run); this
checkout's is ``invtools``.

Each approach fills its cache in a process of its own, then runs in a new process on that
cache (Restart & Run All): its first run is timed on its own ("first": what a new kernel
waits for, lazy imports included), then ``--repeat`` timed runs (best kept), then one run under
``tracemalloc`` for the peak of Python/numpy allocations plus pyarrow's pool. Every measured
run must have been answered entirely from the cache (checked: the server's request log, and
for the client its own count). "on disk": the cache file and what lies beside it under its
name (the client's walk records), the budget file not included.

Goal (issue 4): at least 5x faster than the plain loop.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Run as a script from anywhere: use this checkout's invtools -- except in a child measuring
# another interpreter's (--client), which imports the invtools that interpreter has installed.
if str(ROOT) not in sys.path and "--installed" not in sys.argv:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SPEED_GOAL = 5.0
TXS = "/v1/location-txs"


# ------------------------------------------------------------------------------ the two approaches


def make_invtools(base_url: str, token: str, cache: str):
    from invtools import Client

    client = Client(token, base_url=base_url, cache=cache, rate_limit=0, progress=False)

    def run():
        df = client.transactions_df()
        return df, df.attrs["requests"]

    return run


def make_plain(base_url: str, token: str, cache: str):
    import pandas as pd
    import requests_cache
    from bench_frames import plain as normalise  # json_normalize + the analyst's dtype fixes

    session = requests_cache.CachedSession(cache, backend="sqlite")
    session.headers["Authorization"] = f"Bearer {token}"

    def run():
        items, params, sent = [], {"limit": 100}, 0
        while True:
            resp = session.get(base_url + TXS, params=params)
            resp.raise_for_status()
            sent += not resp.from_cache
            page = resp.json()
            items.extend(page["items"])
            if not page["has_more"]:
                break
            params = {"limit": 100, "cursor": page["cursor"]}
        df = normalise(items)
        assert isinstance(df, pd.DataFrame)
        return df, sent

    return run


APPROACHES = {"invtools": make_invtools, "plain": make_plain}


# ------------------------------------------------------------------------------ measuring


def measure(name: str, base_url: str, token: str, cache: str, repeat: int) -> dict:
    import pyarrow as pa

    run = APPROACHES[name](base_url, token, cache)
    start = time.perf_counter()
    df, first_sent = run()  # the first run of a new process; warming: fills the cache
    first = time.perf_counter() - start
    shape = df.shape
    del df
    if repeat == 0:  # only warming the cache
        return {"name": name, "shape": shape}
    times, sent = [], 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        df, n = run()
        times.append(time.perf_counter() - start)
        sent += n
        del df
    gc.collect()
    pool = pa.default_memory_pool()
    arrow_before = pool.bytes_allocated()
    tracemalloc.start()
    _df, n = run()
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    sent += n
    arrow_peak = max(pool.max_memory() - arrow_before, 0)
    return {
        "name": name,
        "shape": shape,
        "first": first,
        "first_sent": first_sent,
        "seconds": min(times),
        "all_seconds": times,
        "sent": sent,
        "py_peak": py_peak,
        "arrow_peak": arrow_peak,
        "peak": py_peak + arrow_peak,
    }


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def on_disk(cache: Path) -> int:
    """Bytes of the cache file and of what lies beside it under its name (-wal, .walks/)."""
    return sum(
        f.stat().st_size
        for p in cache.parent.glob(cache.name + "*")
        for f in ([p] if p.is_file() else p.rglob("*"))
        if f.is_file()
    )


def child(python: str, name: str, sb, cache: Path, repeat: int, installed: bool) -> dict:
    out = subprocess.run(
        [python, __file__, "--child", name, sb.base_url, sb.tokens["shop"], str(cache)]
        + ["--repeat", str(repeat)]
        + (["--installed"] if installed else []),
        capture_output=True,
        text=True,
        check=True,
        cwd=cache.parent,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client", action="append", default=[], help="NAME=PYTHON, to compare")
    parser.add_argument(
        "--child", nargs=4, metavar=("NAME", "BASE_URL", "TOKEN", "CACHE"), help=argparse.SUPPRESS
    )
    parser.add_argument("--installed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, base_url, token, cache = args.child
        print(json.dumps(measure(name, base_url, token, cache, args.repeat)))
        return 0

    import pandas as pd
    import pyarrow as pa

    from invtools.sandbox import serve

    print(
        f"pandas {pd.__version__}, pyarrow {pa.__version__}, {args.rows:,} transactions, "
        "warm SQLite caches"
    )
    # (label, approach, interpreter, imports the interpreter's installed invtools)
    runs = [("invtools", "invtools", sys.executable, False)]
    runs += [(k, "invtools", v, True) for k, v in (c.split("=", 1) for c in args.client)]
    runs += [("plain", "plain", sys.executable, False)]
    results = {}
    with tempfile.TemporaryDirectory() as tmp, serve(size=args.rows, rate_limit=0) as sb:
        for label, name, python, installed in runs:
            (Path(tmp) / label).mkdir()
            cache = Path(tmp) / label / f"{name}.sqlite"
            # Fill the cache first, in a process of its own; then a new process measures.
            child(python, name, sb, cache, 0, installed)
            sb.clear_log()
            results[label] = r = child(python, name, sb, cache, args.repeat, installed)
            r["server_hits_measured"] = len(sb.requests)
            r["disk"] = on_disk(cache)
            print(
                f"  {label:8s} {r['seconds']:7.3f} s (best of {args.repeat}: "
                f"{', '.join(f'{s:.3f}' for s in r['all_seconds'])}; first in the new process "
                f"{r['first']:.3f})   peak {mib(r['peak'])} (python/numpy {mib(r['py_peak'])}, "
                f"arrow {mib(r['arrow_peak'])})   on disk {mib(r['disk'])}   frame "
                f"{r['shape'][0]:,} x {r['shape'][1]}   requests sent in the new process: "
                f"{r['sent'] + r['first_sent']} (the server saw {r['server_hits_measured']})",
                flush=True,
            )
    speedup = results["plain"]["seconds"] / results["invtools"]["seconds"]
    memory = results["invtools"]["peak"] / results["plain"]["peak"]
    ok = speedup >= SPEED_GOAL
    warm = all(
        r["sent"] + r["first_sent"] + r["server_hits_measured"] == 0 for r in results.values()
    )
    print(
        f"  speed-up   {speedup:6.1f}x   (goal >= {SPEED_GOAL:.0f}x)  {'met' if ok else 'NOT met'}"
    )
    print(f"  memory     {memory:6.2f}x   (invtools peak / plain peak; no goal)")
    for label in results:
        if label not in ("invtools", "plain"):
            other = results[label]
            print(
                f"  {label}: {other['seconds'] / results['invtools']['seconds']:.2f}x the time, "
                f"{other['peak'] / results['invtools']['peak']:.2f}x the peak, "
                f"{other['disk'] / results['invtools']['disk']:.2f}x the bytes on disk of this "
                f"checkout's client"
            )
    print(f"  all measured runs answered from the cache: {'yes' if warm else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
