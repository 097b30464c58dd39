"""Benchmark: how soon a bigger team's first useful number comes at the real pace, and
answers that grow while the details stream in (issue 45). Not a test -- it prints figures.

    python benchmarks/bench_growing.py [--sizes 4000,20000] [--latency 0.8] [--rate 5]
        [--days 30] [--short 7] [--no-plain] [--mirror-look-back 30D]

The question, as an analyst asked it: "last month's outbound per item, and the top 10". For each
size, a stand-in shop of that many transactions answering in ``--latency`` s +-25 % and allowing
``--rate`` requests/s (the real service's pace), and in the same run, each from a fresh cache:

- ``invtools``: ``transactions_df(since=...)`` (the list alone: the first number, the month's
  units out, comes when the walk ends), then ``lines_growing(since=...)`` (its lists replayed
  from the walk just made) and, while the details stream in, the exact top 10 of the last
  ``--short`` days (``wait`` until the stretch holds them, then ``frame()``), then the whole
  month's top 10 (``result()``);
- ``lines_df(since=...)``: the same window the plain call's way (its first number is its whole);
- ``plain``: the loop an analyst writes with ``requests``: the list's pages newest first until
  the month is passed, then one detail after another, then the top 10 with pandas;
- ``mirror.sync_in_background(look_back=...)`` into a new file: when its frames first hold a
  stretch, when they hold 100 details' worth, when the sync is done.

Figures per size: seconds to the first number, to the exact short answer (and the window its
frame states), to the whole answer; the details' rate as a fraction of ``--rate``; ``lines_df``
and the plain loop, and the ratios. For 100,000 transactions the same figures follow by
arithmetic from the largest shop's measured rates. Goal (issue 45): the first number within the
list walk's seconds, an exact answer for a shorter stretch within a minute, the whole no later
than ``lines_df``, the details at >= 0.9 of the limit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from invtools import Client, TransactionMirror, analysis, frames
from invtools.sandbox import serve

TXS = "/v1/location-txs"
DAY = pd.Timedelta(days=1)


def top10(lines: pd.DataFrame, since: pd.Timestamp) -> pd.DataFrame:
    """The top 10 items by units out from ``since`` on (invtools' own ranking)."""
    out = lines[(lines["type"] == "out") & (lines["transaction_time"] >= since)]
    out = out.assign(units=out["quantity"].abs())
    return analysis.top(out, by="item_name", value="units", n=10)


def with_invtools(sb, cache: Path, days: int, short: int) -> dict:
    """The figures of invtools on a fresh cache (seconds from the call's start)."""
    client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=cache, progress=False)
    t0 = time.perf_counter()
    tx = client.transactions_df(since=f"{days}D")
    out = tx[tx["type"] == "out"]
    first = time.perf_counter() - t0
    units_out = float(out["total_quantity"].abs().sum())
    growing = client.lines_growing(since=f"{days}D")
    started = time.perf_counter() - t0
    as_of = pd.Timestamp(tx.attrs["window"]["until"])
    recent = as_of - short * DAY
    wanted = int((tx["transaction_time"] >= recent).sum())  # the list says how many
    growing.wait(details=wanted)
    part = growing.frame()
    short_top = top10(part, recent)
    short_at = time.perf_counter() - t0
    stretch = pd.Timestamp(part.attrs["window"]["since"])
    whole = growing.result()
    whole_at = time.perf_counter() - t0
    month_top = top10(whole, as_of - days * DAY)
    client.close()
    n = growing.total
    return {
        "transactions": len(tx),
        "units_out": units_out,
        "first": first,
        "list_walk": first,
        "short": short_at,
        "short_details": wanted,
        "stretch_days": (as_of - stretch) / DAY,
        "short_top": short_top["item_name"].tolist(),
        "whole": whole_at,
        "details": n,
        "rate": n / (whole_at - started) if whole_at > started else float("nan"),
        "month_top": month_top["item_name"].tolist(),
    }


def plain_loop(sb, days: int) -> dict:
    """The loop an analyst writes: the list newest first until the month is passed, then each
    detail one at a time; the top 10 with pandas at the end."""
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {sb.tokens['shop']}"
    t0 = time.perf_counter()
    rows, params = [], {"limit": 100}
    cutoff = None
    while True:
        resp = s.get(f"{sb.base_url}{TXS}", params=params, timeout=60)
        if resp.status_code == 429:
            time.sleep(float(resp.headers.get("Retry-After", 1)))
            continue
        resp.raise_for_status()
        body = resp.json()
        if cutoff is None:
            cutoff = pd.Timestamp(resp.headers["Date"]).tz_convert("UTC") - days * DAY
        page = [r for r in body["items"] if pd.Timestamp(r["transaction_time"]) >= cutoff]
        rows += page
        if not body["has_more"] or len(page) < len(body["items"]):
            break
        params["cursor"] = body["cursor"]
    sold = []
    for r in rows:
        while True:
            resp = s.get(f"{sb.base_url}{TXS}/{r['id']}", timeout=60)
            if resp.status_code != 429:
                break
            time.sleep(float(resp.headers.get("Retry-After", 1)))
        resp.raise_for_status()
        d = resp.json()["item"]
        if d["type"] == "out":
            sold += [(line["name"], abs(float(line["quantity"]))) for line in d["items"]]
    table = pd.DataFrame(sold, columns=["item", "units"]).groupby("item")["units"].sum()
    top = table.nlargest(10)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "details": len(rows), "top": top.index.tolist()}


def lines_df_call(sb, cache: Path, since: str) -> float:
    t0 = time.monotonic()
    client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=cache, progress=False)
    client.lines_df(since=since)
    client.close()
    return time.monotonic() - t0


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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4000,20000", help="transactions per shop, comma-separated")
    ap.add_argument("--latency", type=float, default=0.8, help="seconds per answer")
    ap.add_argument("--rate", type=float, default=5, help="requests/s the stand-in allows")
    ap.add_argument("--days", type=int, default=30, help="the question's window")
    ap.add_argument("--short", type=int, default=7, help="the shorter stretch answered first")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain loop (slow)")
    ap.add_argument("--mirror-look-back", default="30D", help="'all': a full first fill")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # the figures, not the warnings of a benchmark's frames
    print(
        f"stand-in at {args.latency:g} s +-25 % per answer, {args.rate:g} requests/s; "
        f"question: the last {args.days} days' top 10 items by units out"
    )
    measured: dict[int, dict] = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        with (
            tempfile.TemporaryDirectory() as tmp,
            serve(size=size, latency=args.latency, jitter=0.25, rate_limit=args.rate) as sb,
        ):
            mine = with_invtools(sb, Path(tmp) / "a.sqlite", args.days, args.short)
            plain_df = lines_df_call(sb, Path(tmp) / "b.sqlite", f"{args.days}D")
            plain = None if args.no_plain else plain_loop(sb, args.days)
            look_back = None if args.mirror_look_back == "all" else args.mirror_look_back
            mirror(sb, Path(tmp) / "c.sqlite", Path(tmp) / "shop.sqlite", look_back)
        measured[size] = mine
        print(f"\n== {size:,} transactions: {mine['transactions']:,} in the last {args.days} days")
        print(
            f"  first number (the list alone: {mine['units_out']:,.0f} units out): "
            f"{mine['first']:.1f} s"
        )
        print(
            f"  exact top 10 of the last {args.short} days ({mine['short_details']:,} details; "
            f"the frame states {mine['stretch_days']:.1f} days): {mine['short']:.1f} s"
        )
        print(
            f"  whole answer ({mine['details']:,} details): {mine['whole']:.1f} s; details at "
            f"{mine['rate']:.2f}/s = {mine['rate'] / args.rate:.2f} of the limit"
        )
        print(f"  lines_df(since='{args.days}D'): {plain_df:.1f} s (its first number is its whole)")
        if plain is not None:
            same = plain["top"] == mine["month_top"][: len(plain["top"])]
            print(
                f"  plain loop: {plain['seconds']:.1f} s for its first (and only) number "
                f"({plain['details']:,} details at {plain['details'] / plain['seconds']:.2f}/s); "
                f"invtools' first number {plain['seconds'] / mine['first']:.0f}x sooner, whole "
                f"answer {plain['seconds'] / mine['whole']:.1f}x sooner; same top 10: {same}"
            )
    size = max(measured)
    big, k = measured[size], 100_000 / size
    month, short = big["transactions"] * k, big["short_details"] * k
    print(
        f"\n== 100,000 transactions, by arithmetic from the {size:,} shop (x{k:g}): about "
        f"{month:,.0f} in the month; the first number after the list walk, at most "
        f"{big['list_walk'] * k:.0f} s (its pages grow with the month's rows); the last "
        f"{args.short} days exact about {short / big['rate']:.0f} s after it; the whole month "
        f"after {month / big['rate'] / 60:.0f} min; the plain loop about "
        f"{month * args.latency / 60:.0f} min"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
