"""Transaction rows -> typed DataFrame: invtools.frames vs. the plain json_normalize approach.

Run from the repository root::

    python benchmarks/bench_frames.py            # 200,000 rows
    python benchmarks/bench_frames.py --rows 50000

Both approaches get the same input: ``--rows`` transaction rows as the API returns them (pages
of 100 serialised to JSON and parsed back with ``json.loads``, so every string is a fresh
object as it would be after a download), generated deterministically here. Parsing is not
timed. The plain approach applies the dtype fixes needed to end with the same frame (nullable
ids and flags, the ``backdated`` column): its ~0.04 s are part of its time. Each approach is
measured in its own fresh process (so one's heap and imports do not skew the other): a small
warm-up (imports, caches), one run under ``tracemalloc`` for the peak of Python/numpy
allocations plus pyarrow's own pool (pyarrow allocations are invisible to tracemalloc, and both
approaches end up with Arrow-backed strings), then ``--repeat`` timed runs without tracing (best
kept). A last step checks the two frames have the same columns holding the same values.

Goals (issue 4): at least 8x faster and at most half the peak memory of the plain approach.

For context, a "floor" line times only reading every field into Arrow arrays (no typing, no
frame), the least any conversion of these rows must do, and a last line times the same rows
from their page bytes, parse included: ``transactions_df_from_pages`` (what
``client.transactions_df()`` does with a whole walk) against ``json.loads`` plus the plain
approach.
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
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this checkout's invtools
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from invtools.frames import transactions_df, transactions_df_from_pages  # noqa: E402

SPEED_GOAL = 8.0  # plain time / frames time, at least
MEMORY_GOAL = 0.5  # frames peak / plain peak, at most
PAGE = 100

# ------------------------------------------------------------------------------ the input

_TYPES = ["in", "out", "move", "adjust"]
_TYPE_WEIGHTS = [30, 50, 12, 8]
_MEMOS = [
    "Restock",
    "Weekly order",
    "Stock count",
    "Damaged in transit",
    "Market stall",
    "Return to supplier",
    "Fill the shop",
    "Online order",
]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def generate_rows(n: int, seed: int = 0) -> list[dict]:
    """``n`` realistic transaction rows, newest first, exactly in the wire format."""
    rng = random.Random(seed)
    locations = [{"id": i, "name": f"Location {i}", "deleted": i == 8} for i in range(1, 9)]
    suppliers = [
        {"id": 500 + i, "name": f"Supplier {i}", "deleted": rng.random() < 0.05} for i in range(40)
    ]
    customers = [
        {"id": 1000 + i, "name": f"Customer {i}", "deleted": rng.random() < 0.05}
        for i in range(200)
    ]
    members = [{"id": i, "name": f"Member {i}", "deleted": i > 10} for i in range(1, 13)]
    t = datetime(2026, 5, 2, 1, 10, tzinfo=UTC)
    rows = []
    for k in range(n):
        tx_id = 2_000_000 - k
        if rng.random() > 0.02:  # 2 % share the instant of the previous (newer) transaction
            t -= timedelta(milliseconds=rng.randint(1, 600_000))
        kind = rng.choices(_TYPES, _TYPE_WEIGHTS)[0]
        lag = (
            timedelta(days=rng.randint(1, 30))
            if rng.random() < 0.03
            else timedelta(milliseconds=rng.randint(50, 20_000))
        )
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
        from_loc = (
            rng.choice([loc for loc in locations if loc is not to_loc]) if kind == "move" else None
        )
        rows.append(
            {
                "id": tx_id,
                "type": kind,
                "transaction_time": _iso(t),
                "created_at": _iso(t + lag),
                "created_by": dict(rng.choice(members)),
                "count_of_items": count,
                "total_quantity": total,
                "url": f"https://web.boxhero-app.com/team/77/tx/{tx_id}",
                "memo": None
                if rng.random() < 0.4
                else f"{rng.choice(_MEMOS)} #{rng.randint(1, 999)}",
                "revision": 0 if rng.random() < 0.9 else rng.randint(1, 3),
                "partner": dict(partner) if partner else None,
                "from_location": dict(from_loc) if from_loc else None,
                "to_location": dict(to_loc),
            }
        )
    return rows


def wire_pages(n: int, seed: int = 0) -> list[bytes]:
    """The rows as the API sends them: JSON bodies of pages of ``PAGE`` rows."""
    rows = generate_rows(n, seed)
    return [
        json.dumps(
            {
                "items": rows[start : start + PAGE],
                "count": len(rows[start : start + PAGE]),
                "limit": PAGE,
                "cursor": None,
                "has_more": start + PAGE < n,
            }
        ).encode()
        for start in range(0, n, PAGE)
    ]


def wire_rows(n: int, seed: int = 0) -> list[dict]:
    """The rows after ``json.loads`` of their pages, as ``client.transactions()`` yields them."""
    return rows_of(wire_pages(n, seed))


def rows_of(bodies: list[bytes]) -> list[dict]:
    return [row for body in bodies for row in json.loads(body)["items"]]


# ------------------------------------------------------------------------------ the two approaches


def plain(rows: list[dict]) -> pd.DataFrame:
    """What an analyst would write to get the same frame: json_normalize, then the dtype fixes."""
    df = pd.json_normalize(rows)
    # json_normalize leaves an all-NaN column for a ref that is sometimes null.
    df = df.drop(columns=["partner", "from_location", "to_location"], errors="ignore")
    df = df.rename(columns=lambda c: c.replace(".", "_")).rename(columns={"id": "transaction_id"})
    for col in ("transaction_time", "created_at"):
        df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601")
    df["type"] = df["type"].astype("category")
    df["total_quantity"] = pd.to_numeric(df["total_quantity"])
    # Where the stock changed: the destination (to_location), else the source.
    to = df["to_location_id"].notna()
    df["location_id"] = df["to_location_id"].where(to, df["from_location_id"])
    df["location_name"] = df["to_location_name"].where(to, df["from_location_name"])
    # A sometimes-null reference's id comes out float64 and its flag object: nullable types.
    for col in df.columns:
        if col.endswith("_id") or col in ("revision", "count_of_items"):
            df[col] = df[col].astype("Int64")
        elif col.endswith("_deleted"):
            df[col] = df[col].astype("boolean")
    df["backdated"] = df["created_at"] - df["transaction_time"] > pd.Timedelta(days=1)
    return df


_FLOOR_TYPES = {
    "id": pa.int64(),
    "type": pa.string(),
    "transaction_time": pa.string(),
    "created_at": pa.string(),
    "revision": pa.int64(),
    "count_of_items": pa.int64(),
    "total_quantity": pa.float64(),
    "memo": pa.string(),
    "url": pa.string(),
    **{
        ref: pa.struct([("id", pa.int64()), ("name", pa.string()), ("deleted", pa.bool_())])
        for ref in ("partner", "from_location", "to_location", "created_by")
    },
}


def floor(rows: list[dict]) -> list[pa.Array]:
    """Only what any conversion must do: every field read once, into an Arrow array by
    pyarrow (chunk by chunk, in C). No typing, no frame, no checks: a lower bound on time."""
    out = []
    for start in range(0, len(rows), 1024):
        chunk = rows[start : start + 1024]
        layout = tuple(chunk[0])
        columns = zip(*map(itemgetter(*layout), chunk), strict=True)
        out.extend(
            pa.array(values, _FLOOR_TYPES[key]) for key, values in zip(layout, columns, strict=True)
        )
    return out


#: name -> (the input it gets, the conversion timed). The goals compare "frames" with "plain" on
#: the same decoded rows. "pages" and "loads" are context: what client.transactions_df() does
#: with the page bodies of a whole walk (parse included), and the json.loads that "plain" needs
#: before it can start. "floor" is the least any conversion of the rows has to do.
APPROACHES = {
    "frames": (wire_rows, transactions_df),
    "plain": (wire_rows, plain),
    "floor": (wire_rows, floor),
    "pages": (wire_pages, transactions_df_from_pages),
    "loads": (wire_pages, rows_of),
}

# ------------------------------------------------------------------------------ measuring


def measure(name: str, n: int, repeat: int) -> dict:
    """Run in a fresh process: peak memory of one conversion, then the best of ``repeat`` times."""
    make_input, convert = APPROACHES[name]
    rows = make_input(n)
    convert(rows[: max(1, len(rows) // 200)])  # warm-up: imports and caches are not its cost
    gc.collect()
    pool = pa.default_memory_pool()
    arrow_before = pool.bytes_allocated()
    tracemalloc.start()
    df = convert(rows)
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrow_peak = pool.max_memory() - arrow_before
    shape = getattr(df, "shape", (len(df), 0))
    del df
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        df = convert(rows)
        times.append(time.perf_counter() - start)
        del df
        gc.collect()
    return {
        "name": name,
        "rows": n,
        "shape": shape,
        "seconds": min(times),
        "all_seconds": times,
        "py_peak": py_peak,
        "arrow_peak": max(arrow_peak, 0),
        "peak": py_peak + max(arrow_peak, 0),
    }


def measure_in_subprocess(name: str, n: int, repeat: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--rows", str(n), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_agreement(n: int) -> list[str]:
    """Both frames hold the same columns with the same values; returns the column names."""
    rows = wire_rows(n)
    ours, theirs = transactions_df(rows), plain(rows)
    # opening_count is invtools' own rule (frames/openings.py): the plain frame has none
    ours = ours.drop(columns="opening_count")
    if sorted(ours.columns) != sorted(theirs.columns):
        raise AssertionError(f"columns differ: {sorted(set(ours.columns) ^ set(theirs.columns))}")
    for col in ours.columns:
        a, b = ours[col], theirs[col]
        na_a, na_b = a.isna().to_numpy(), b.isna().to_numpy()
        if not (na_a == na_b).all():
            raise AssertionError(f"{col}: missing values differ")
        # 501 == 501.0, 'in' == 'in', Timestamp(ms) == Timestamp(us): compare plain values.
        if a[~na_a].astype(object).tolist() != b[~na_b].astype(object).tolist():
            raise AssertionError(f"{col}: values differ")
    return list(ours.columns)


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
        if r["name"] in ("pages", "loads", "floor"):
            continue
        print(
            f"  {r['name']:7s} {r['seconds']:7.3f} s (best of {args.repeat}: "
            f"{', '.join(f'{s:.3f}' for s in r['all_seconds'])})   peak {mib(r['peak'])} "
            f"(python/numpy {mib(r['py_peak']).strip()}, arrow {mib(r['arrow_peak']).strip()})"
            f"   frame {r['shape'][0]:,} x {r['shape'][1]}"
        )
    speedup = results["plain"]["seconds"] / results["frames"]["seconds"]
    memory = results["frames"]["peak"] / results["plain"]["peak"]
    ok_speed, ok_memory = speedup >= SPEED_GOAL, memory <= MEMORY_GOAL
    print(
        f"  speed-up   {speedup:6.1f}x   (goal >= {SPEED_GOAL:.0f}x)  "
        f"{'met' if ok_speed else 'NOT met'}"
    )
    print(
        f"  memory     {memory:6.2f}x   (goal <= {MEMORY_GOAL})    "
        f"{'met' if ok_memory else 'NOT met'}"
    )
    shared = check_agreement(args.rows)
    print(f"  agreement  both frames have the same {len(shared)} columns with identical values")
    least = results["floor"]["seconds"]
    print(
        f"  floor      reading every field into Arrow, nothing else: {least:.3f} s, "
        f"{results['plain']['seconds'] / least:.1f}x the plain time; frames spends "
        f"{results['frames']['seconds'] - least:.3f} s more on types, checks and the frame"
    )
    pages, loads = results["pages"]["seconds"], results["loads"]["seconds"]
    ratio = (loads + results["plain"]["seconds"]) / pages
    print(
        f"  context    from the page bytes, parse included: pages->frame {pages:.3f} s against "
        f"json.loads {loads:.3f} s + plain = {ratio:.1f}x"
    )
    return 0 if ok_speed and ok_memory else 1


if __name__ == "__main__":
    sys.exit(main())
