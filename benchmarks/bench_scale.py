"""Benchmark: how the client's cost grows with a team's history (issue 34). Not a test -- it
prints figures.

    python benchmarks/bench_scale.py [--sizes 4000,20000,100000] [--repeat 3]
        [--client NAME=PYTHON ...]

For each size, a stand-in shop of that many transactions (rate_limit=0, no latency: what shows
is the client's own cost, not the service's budget) and one fresh cache folder; each step runs
in a NEW process on that cache, in this order:

- ``transactions_df()``, first fetch then re-run;
- ``lines_df()``, first fetch then re-run (the analyst's Restart & Run All);
- ``lines_df(since="90D")``, first (its details already cached) then re-run;
- a mirror sync into a new mirror file, on the same cache;
- the mirror's reads of the same rows, offline: ``transactions_df()``, ``lines_df()``,
  ``lines_df(since="90D")``.

Per step: seconds of the call (the process's imports and its Client made before the clock
starts), requests the server saw, the process's peak RSS and how far the call raised it
(``+peak``), the frame's own ``memory_usage(deep=True)``, and the cache folder's size on disk
(the SQLite file, its WAL, the walk records) per transaction. Each re-run's ratio to the
mirror's read of the same rows is printed last; goal (issue 34): ``lines_df()`` re-run
within 2x of the mirror's at every size. Each re-run and each mirror read runs ``--repeat``
times (each a new process) and its fastest is shown: on a shared machine one run can be
slowed twofold by another's work.

``--keep DIR`` keeps each size's cache folder and mirror file in ``DIR/SIZE`` (a new folder)
instead of a temporary one, to look at or measure again afterwards.

``--client base=/path/to/python`` measures another checkout's client in the same run: after
this checkout's (``new``) steps, its re-runs and its mirror's reads, on the same cache and
mirror file (first fetches are bound by the service's budget: ``bench_chains.py`` and
``bench_budgets.py`` compare them at the real pace). A python that is a wrapper script setting
``PYTHONPATH`` to a checkout measures that checkout.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools.sandbox import serve

ROOT = Path(__file__).resolve().parents[1]

#: (label, what the child does, the mirror read it is compared with)
STEPS: list[tuple[str, dict[str, Any], str | None]] = [
    ("transactions_df() first", {"op": "client", "call": "transactions_df"}, None),
    ("transactions_df() re-run", {"op": "client", "call": "transactions_df"}, "mirror tx"),
    ("lines_df() first", {"op": "client", "call": "lines_df"}, None),
    ("lines_df() re-run", {"op": "client", "call": "lines_df"}, "mirror lines"),
    ("lines_df(90D) first", {"op": "client", "call": "lines_df", "since": "90D"}, None),
    ("lines_df(90D) re-run", {"op": "client", "call": "lines_df", "since": "90D"}, "mirror 90D"),
    ("mirror sync", {"op": "sync"}, None),
    ("mirror tx", {"op": "mirror", "call": "transactions_df"}, None),
    ("mirror lines", {"op": "mirror", "call": "lines_df"}, None),
    ("mirror 90D", {"op": "mirror", "call": "lines_df", "since": "90D"}, None),
]

# Run with ``python -c`` in a scratch folder: the invtools that interpreter imports.
_CHILD = """
import json, os, resource, sys, time
from invtools import Client, TransactionMirror
step = json.loads(os.environ["STEP"])
kw = {"since": step["since"]} if "since" in step else {}
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
client = None
if step["op"] != "mirror":
    client = Client(os.environ["T"], base_url=os.environ["U"], cache=os.environ["C"],
                    rate_limit=0, progress=False)
before = rss()
t0 = time.perf_counter()
if step["op"] == "sync":
    report = TransactionMirror(os.environ["M"], client).sync()
    seconds, df = time.perf_counter() - t0, None
else:
    source = client if client is not None else TransactionMirror(os.environ["M"])
    df = getattr(source, step["call"])(**kw)
    seconds = time.perf_counter() - t0
out = {"seconds": seconds, "peak": rss(), "grew": rss() - before}
if df is not None:
    out.update(rows=len(df), frame=int(df.memory_usage(deep=True).sum()))
    if "item_id" in df.columns:
        out["digest"] = hash(tuple(sorted(zip(df["transaction_id"].tolist(),
                                              df["item_id"].tolist(),
                                              df["quantity"].tolist()))))
    else:
        out["digest"] = hash(tuple(sorted(zip(df["transaction_id"].tolist(),
                                              df["revision"].tolist()))))
if client is not None:
    client.close()
print(json.dumps(out), flush=True)
"""


def disk(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run_step(python: str, sb, folder: Path, step: dict) -> dict:
    """One step in a new process of ``python``; ``requests``: what the server saw."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVTOOLS_", "PYTHON"))}
    env.update(
        T=sb.tokens["shop"],
        U=sb.base_url,
        C=str(folder / "cache"),
        M=str(folder / "mirror.sqlite"),
        STEP=json.dumps(step),
        PYTHONHASHSEED="0",  # the rows' digests compare across processes
    )
    if python == sys.executable:
        env["PYTHONPATH"] = str(ROOT)  # this checkout's invtools
    sb.clear_log()
    done = subprocess.run(
        [python, "-c", _CHILD], env=env, cwd=folder, capture_output=True, text=True, timeout=7200
    )
    if done.returncode:
        raise RuntimeError(f"{python}: step {step} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["requests"] = len(sb.requests)
    result["disk"] = disk(folder / "cache")
    return result


def mib(n: float, digits: int = 0) -> str:
    return f"{n / 2**20:,.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4000,20000,100000", help="transactions, comma-separated")
    ap.add_argument("--client", action="append", default=[], help="NAME=PYTHON, to compare")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each re-run, the fastest")
    ap.add_argument("--keep", type=Path, help="keep each size's cache and mirror under KEEP/SIZE")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    taken = [str(args.keep / str(s)) for s in sizes if args.keep and (args.keep / str(s)).exists()]
    if taken:
        ap.error(f"--keep: {', '.join(taken)} exist already; give a new folder")
    clients = {"new": sys.executable} | dict(c.split("=", 1) for c in args.client)
    ok = True
    for size in sizes:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp, serve(rate_limit=0, size=size) as sb:
            folder = Path(tmp) if args.keep is None else args.keep / str(size)
            n = len(sb.data().transactions)
            print(
                f"\n== {n:,} transactions (stand-in built in {time.perf_counter() - t:.1f} s); "
                f"rate_limit=0, no latency; each step a new process on one cache; load average "
                f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
                + ("" if args.keep is None else f"; kept in {folder} (served at {sb.base_url})"),
                flush=True,
            )
            print(
                f"{'client':<6} {'step':<26} {'seconds':>8} {'requests':>8} {'rows':>8} "
                f"{'peak MiB':>8} {'+peak':>6} {'frame':>6} {'cache MiB':>9} {'B/tx':>6}"
            )
            (folder / "cache").mkdir(parents=True)
            for label, python in clients.items():
                got: dict[str, dict] = {}
                for name, step, _ in STEPS:
                    again = "re-run" in name or step["op"] == "mirror"
                    if label != "new" and not again:
                        continue  # another client: re-runs and reads on new's cache and mirror
                    runs = [run_step(python, sb, folder, step)]
                    runs += [
                        run_step(python, sb, folder, step) for _ in range(again * (args.repeat - 1))
                    ]
                    r = got[name] = min(runs, key=lambda run: run["seconds"])
                    print(
                        f"{label:<6} {name:<26} {r['seconds']:>8.2f} {r['requests']:>8,} "
                        f"{r.get('rows', ''):>8} {mib(r['peak']):>8} {mib(r['grew']):>6} "
                        f"{mib(r.get('frame', 0), 1):>6} {mib(r['disk']):>9} "
                        f"{r['disk'] / n:>6,.0f}",
                        flush=True,
                    )
                for name, _, mirror in STEPS:
                    if mirror is None:
                        continue
                    ours, theirs = got[name], got[mirror]
                    ratio = ours["seconds"] / theirs["seconds"]
                    same = "same rows" if ours["digest"] == theirs["digest"] else "ROWS DIFFER"
                    goal = name == "lines_df() re-run"
                    missed = goal and ratio > 2
                    ok &= not (missed and label == "new") and same == "same rows"
                    print(
                        f"{label:<6} {name} / {mirror}: {ratio:.1f}x "
                        f"({ours['seconds']:.2f} s / {theirs['seconds']:.2f} s, {same})"
                        + (" (goal <= 2x: MISSED)" if missed else " (goal <= 2x)" if goal else "")
                    )
                lines = got["lines_df() re-run"]
                print(
                    f"{label:<6} lines_df() re-run raised the peak RSS by {mib(lines['grew'])} "
                    f"MiB for a frame of {mib(lines['frame'], 1)} MiB "
                    f"({lines['grew'] / max(lines['frame'], 1):.1f}x; goal about 3x at most)",
                    flush=True,
                )
    if not ok:
        print("\nGOAL MISSED (or rows differ)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
