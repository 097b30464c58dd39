"""Transaction rows -> typed DataFrame: invtools.frames vs. the plain json_normalize approach.

Run from the repository root::

    python benchmarks/bench_frames.py            # 200,000 rows
    python benchmarks/bench_frames.py --rows 50000

Both approaches get the same input: ``--rows`` transaction rows as the API returns them (pages
of 100 serialised to JSON and parsed back with ``json.loads``, so every string is a fresh
object as it would be after a download), generated deterministically here. Parsing is not
timed. Each approach is measured in its own fresh process (so one's heap and imports do not
skew the other): a small warm-up (imports, caches), one run under ``tracemalloc`` for the peak
of Python/numpy allocations plus pyarrow's own pool (pyarrow allocations are invisible to
tracemalloc, and both approaches end up with Arrow-backed strings), then ``--repeat`` timed runs
without tracing (best kept). A last step checks the two frames agree on every shared column.

Goals (issue 4): at least 8x faster and at most half the peak memory of the plain approach.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this checkout's invtools
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from invtools.frames import transactions_df  # noqa: E402

SPEED_GOAL = 8.0    # plain time / frames time, at least
MEMORY_GOAL = 0.5   # frames peak / plain peak, at most
PAGE = 100

# ------------------------------------------------------------------------------ the input

_TYPES = ["in", "out", "move", "adjust"]
_TYPE_WEIGHTS = [30, 50, 12, 8]
_MEMOS = ["Restock", "Weekly order", "Stock count", "Damaged in transit", "Market stall",
          "Return to supplier", "Fill the shop", "Online order"]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def generate_rows(n: int, seed: int = 0) -> list[dict]:
    """``n`` realistic transaction rows, newest first, exactly in the wire format."""
    rng = random.Random(seed)
    locations = [{"id": i, "name": f"Location {i}", "deleted": i == 8} for i in range(1, 9)]
    suppliers = [{"id": 500 + i, "name": f"Supplier {i}", "deleted": rng.random() < 0.05}
                 for i in range(40)]
    customers = [{"id": 1000 + i, "name": f"Customer {i}", "deleted": rng.random() < 0.05}
                 for i in range(200)]
    members = [{"id": i, "name": f"Member {i}", "deleted": i > 10} for i in range(1, 13)]
    t = datetime(2026, 5, 2, 1, 10, tzinfo=timezone.utc)
    rows = []
    for k in range(n):
        tx_id = 2_000_000 - k
        if rng.random() > 0.02:  # 2 % share the instant of the previous (newer) transaction
            t -= timedelta(milliseconds=rng.randint(1, 600_000))
        kind = rng.choices(_TYPES, _TYPE_WEIGHTS)[0]
        lag = timedelta(days=rng.randint(1, 30)) if rng.random() < 0.03 else timedelta(
            milliseconds=rng.randint(50, 20_000))
        count = rng.randint(1, 8)
        total = round(rng.uniform(1, 200), rng.choice([0, 0, 0, 2]))
        if kind == "adjust" and rng.random() < 0.6:
            total = -total
        partner = None
        if kind == "in":
            partner = rng.choice(suppliers)
        elif kind == "out" and rng.random() < 0.9:
            partner = rng.choice(customers)
        to_loc = rng.choice(locations)
        from_loc = rng.choice([loc for loc in locations if loc is not to_loc]) if kind == "move" else None
        rows.append({
            "id": tx_id,
            "type": kind,
            "transaction_time": _iso(t),
            "created_at": _iso(t + lag),
            "created_by": dict(rng.choice(members)),
            "count_of_items": count,
            "total_quantity": total,
            "url": f"https://web.boxhero-app.com/team/77/tx/{tx_id}",
            "memo": None if rng.random() < 0.4 else f"{rng.choice(_MEMOS)} #{rng.randint(1, 999)}",
            "revision": 0 if rng.random() < 0.9 else rng.randint(1, 3),
            "partner": dict(partner) if partner else None,
            "from_location": dict(from_loc) if from_loc else None,
            "to_location": dict(to_loc),
        })
    return rows


def wire_rows(n: int, seed: int = 0) -> list[dict]:
    """The rows after a round trip through JSON pages, as ``client.rows()`` would yield them."""
    rows = generate_rows(n, seed)
    out: list[dict] = []
    for start in range(0, n, PAGE):
        page = {"items": rows[start:start + PAGE], "count": len(rows[start:start + PAGE]),
                "limit": PAGE, "cursor": None, "has_more": start + PAGE < n}
        out.extend(json.loads(json.dumps(page))["items"])
    return out


# ------------------------------------------------------------------------------ the two approaches


def plain(rows: list[dict]) -> pd.DataFrame:
    """What an analyst would write: json_normalize, then the obvious dtype fixes."""
    df = pd.json_normalize(rows)
    # json_normalize leaves an all-NaN column for a ref that is sometimes null.
    df = df.drop(columns=["partner", "from_location", "to_location"], errors="ignore")
    for col in ("transaction_time", "created_at"):
        df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601")
    df["type"] = df["type"].astype("category")
    df["total_quantity"] = pd.to_numeric(df["total_quantity"])
    return df.rename(columns=lambda c: c.replace(".", "_"))


APPROACHES = {"frames": transactions_df, "plain": plain}

# ------------------------------------------------------------------------------ measuring


def measure(name: str, n: int, repeat: int) -> dict:
    """Run in a fresh process: peak memory of one conversion, then the best of ``repeat`` times."""
    convert = APPROACHES[name]
    rows = wire_rows(n)
    convert(rows[:1000])  # warm-up: lazy imports and caches are not the conversion's cost
    gc.collect()
    pool = pa.default_memory_pool()
    arrow_before = pool.bytes_allocated()
    tracemalloc.start()
    df = convert(rows)
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrow_peak = pool.max_memory() - arrow_before
    shape = df.shape
    del df
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        df = convert(rows)
        times.append(time.perf_counter() - start)
        del df
        gc.collect()
    return {"name": name, "rows": n, "shape": shape, "seconds": min(times),
            "all_seconds": times, "py_peak": py_peak, "arrow_peak": max(arrow_peak, 0),
            "peak": py_peak + max(arrow_peak, 0)}


def measure_in_subprocess(name: str, n: int, repeat: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", name, "--rows", str(n),
                          "--repeat", str(repeat)], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_agreement(n: int) -> list[str]:
    """Compare every column both frames have; returns the names compared."""
    rows = wire_rows(n)
    ours, theirs = transactions_df(rows), plain(rows)
    shared = [c for c in ours.columns if c in theirs.columns]
    for col in shared:
        a, b = ours[col], theirs[col]
        na_a, na_b = a.isna().to_numpy(), b.isna().to_numpy()
        if not (na_a == na_b).all():
            raise AssertionError(f"{col}: missing values differ")
        # 501 == 501.0, 'in' == 'in', Timestamp(ms) == Timestamp(us): compare plain values.
        if a[~na_a].astype(object).tolist() != b[~na_b].astype(object).tolist():
            raise AssertionError(f"{col}: values differ")
    missing = set(ours.columns) - set(theirs.columns) - {"backdated"}
    if missing:
        raise AssertionError(f"plain approach lacks {sorted(missing)}")
    return shared


def mib(n: float) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=sorted(APPROACHES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.rows, args.repeat)))
        return 0

    print(f"pandas {pd.__version__}, pyarrow {pa.__version__}, {args.rows:,} transaction rows")
    results = {name: measure_in_subprocess(name, args.rows, args.repeat) for name in APPROACHES}
    for r in results.values():
        print(f"  {r['name']:7s} {r['seconds']:7.3f} s (best of {args.repeat}: "
              f"{', '.join(f'{s:.3f}' for s in r['all_seconds'])})   peak {mib(r['peak'])} "
              f"(python/numpy {mib(r['py_peak']).strip()}, arrow {mib(r['arrow_peak']).strip()})"
              f"   frame {r['shape'][0]:,} x {r['shape'][1]}")
    speedup = results["plain"]["seconds"] / results["frames"]["seconds"]
    memory = results["frames"]["peak"] / results["plain"]["peak"]
    ok_speed, ok_memory = speedup >= SPEED_GOAL, memory <= MEMORY_GOAL
    print(f"  speed-up   {speedup:6.1f}x   (goal >= {SPEED_GOAL:.0f}x)  "
          f"{'met' if ok_speed else 'NOT met'}")
    print(f"  memory     {memory:6.2f}x   (goal <= {MEMORY_GOAL})    "
          f"{'met' if ok_memory else 'NOT met'}")
    shared = check_agreement(args.rows)
    print(f"  agreement  {len(shared)} shared columns hold identical values "
          f"({', '.join(shared[:4])}, ...)")
    return 0 if ok_speed and ok_memory else 1


if __name__ == "__main__":
    sys.exit(main())
