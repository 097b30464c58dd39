"""Benchmark: answers that grow while the details stream in (issue 45, items 2 and 3), at the
real service's pace. Not a test -- it prints figures.

    python benchmarks/bench_growing.py [--size 4000] [--since 90D] [--mirror-look-back 30D]

The stand-in (this checkout's) serves a shop of ``--size`` transactions, answering in 0.8 s
+-25 % and allowing 5 requests a second. Each step starts from a fresh cache:

- ``client.lines_growing(since=...)``: when it returns (the lists walked), when its first
  detail is in, when the stretch it holds in full reaches 7 days back (an exact answer for the
  last 7 days: ``analysis.top`` of the outbound units per item on it), when the whole frame is
  in, and the details' rate once it returned;
- ``client.lines_df(since=...)``, the same window: when its frame is in (the first number the
  plain call gives);
- ``mirror.sync_in_background(look_back=...)`` into a new file: when its frames first hold a
  stretch, when they hold 100 details' worth, when the sync is done.

Goal (issue 45): an exact answer for a shorter stretch within a minute, the whole no later than
``lines_df``, the details at >= 0.9 of the limit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools import TransactionMirror, analysis, frames
from invtools.api import Client
from invtools.sandbox import serve

LATENCY, RATE = 0.8, 5


def growing(sb, cache: Path, since: str) -> None:
    t0 = time.monotonic()
    client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=cache, progress=False)
    g = client.lines_growing(since=since)
    returned = time.monotonic() - t0
    g.wait(1)
    first = time.monotonic() - t0
    end = frames.context_of(g.frame()).window[1]
    while True:  # until the stretch held in full reaches 7 days back
        g.wait(min(g.total, g.arrived + 10))
        part = g.frame()
        if frames.context_of(part).window[0] <= end - pd.Timedelta("7D") or g.done:
            break
    seven, held = time.monotonic() - t0, g.arrived
    analysis.top(part[part["type"] == "out"], by="item_id", value="quantity", n=10)
    whole = g.result()
    done = time.monotonic() - t0
    rate = g.total / (done - returned)
    print(f"lines_growing(since={since!r}): {g.total:,} details, {len(whole):,} lines")
    print(f"  returned (lists walked)   {returned:7.1f} s")
    print(f"  first detail in           {first:7.1f} s")
    print(f"  last 7 days exact         {seven:7.1f} s  ({held:,} details)")
    share = f"{rate:.2f} details/s, {rate / RATE:.2f} of the limit"
    print(f"  whole frame               {done:7.1f} s  ({share})")
    client.close()


def plain(sb, cache: Path, since: str) -> None:
    t0 = time.monotonic()
    client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=cache, progress=False)
    lines = client.lines_df(since=since)
    print(f"lines_df(since={since!r}): {len(lines):,} lines in {time.monotonic() - t0:.1f} s")
    client.close()


def mirror(sb, cache: Path, path: Path, look_back: str | None) -> None:
    t0 = time.monotonic()
    client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=cache, progress=False)
    filling = TransactionMirror(path, client).sync_in_background(look_back=look_back)
    filling.wait(details=1)
    first, one = time.monotonic() - t0, filling.lines_df()
    filling.wait(details=100)
    hundred, more = time.monotonic() - t0, filling.lines_df()
    report = filling.result()
    done = time.monotonic() - t0
    print(f"mirror.sync_in_background(look_back={look_back!r}): {report.details_fetched:,} details")
    for what, when, df in (("first stretch", first, one), ("100 details", hundred, more)):
        since = frames.context_of(df).window[0]
        print(f"  {what:<25} {when:7.1f} s  ({len(df):,} lines from {since:%d %b %H:%M})")
    print(f"  sync done                 {done:7.1f} s")
    client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4000)
    ap.add_argument("--since", default="90D")
    ap.add_argument("--mirror-look-back", default="30D", help="'all': a full first fill")
    args = ap.parse_args(argv)
    look_back = None if args.mirror_look_back == "all" else args.mirror_look_back
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve(latency=LATENCY, jitter=0.25, rate_limit=RATE, size=args.size) as sb,
    ):
        print(f"stand-in: {args.size:,} transactions, {LATENCY} s latency, {RATE} requests/s")
        growing(sb, Path(tmp) / "a.sqlite", args.since)
        plain(sb, Path(tmp) / "b.sqlite", args.since)
        mirror(sb, Path(tmp) / "c.sqlite", Path(tmp) / "shop.sqlite", look_back)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
