"""Benchmark: the same question for three teams, at the real service's pace (issue 17).
Not a test -- it prints figures. Takes about 4 minutes at the defaults.

    python benchmarks/bench_teams.py [--latency 0.8] [--rate 5] [--since 2026-09-15]

The stand-in answers in ``latency`` seconds (+-``jitter``, seeded) and allows ``rate``
requests/s per token (one budget per token for all endpoints, the stricter reading); its three
location-mode teams are the shop and two smaller branches. The question is
``client.lines_df(since=...)``: the list walk, then one detail request per transaction of the
window (a few hundred per team). Measured in the same run, each on a fresh server and from a
fresh cache, with clients at the real pace (``rate_limit=rate`` per token):

1. one team alone (the shop, the largest of the three);
2. the three one after another, the loop an analyst writes;
3. the three at once with ``invtools.each_team``: goal <= 1.3x the time of one team alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import invtools
from invtools import Client
from invtools.sandbox import serve

TEAMS = ["shop", "harrogate", "york"]


def server(args):
    return serve(
        latency=args.latency,
        jitter=args.jitter,
        rate_limit=int(args.rate),
        rate_limit_scope="token",
        shops=len(TEAMS),
        seed=0,
        size=args.size,
    )


def clients(sb, names, tmp: Path, args) -> dict[str, Client]:
    cache = Path(tempfile.mkdtemp(dir=tmp)) / "responses.sqlite"  # a fresh cache each time
    return {
        n: Client(
            sb.tokens[n],
            base_url=sb.base_url,
            cache=cache,
            rate_limit=args.rate,
            rate_limit_scope="token",
            progress=False,
        )
        for n in names
    }


def served(sb) -> tuple[int, int]:
    return len(sb.requests), sum(r.status == 429 for r in sb.requests)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.8, help="seconds per answer")
    ap.add_argument("--jitter", type=float, default=0.25, help="latency +- this fraction")
    ap.add_argument("--rate", type=float, default=5.0, help="server and client requests/s")
    ap.add_argument("--since", default="2026-09-15", help="the window's start (lines_df)")
    ap.add_argument("--size", type=int, default=None, help="the shop's transactions")
    args = ap.parse_args(argv)

    def question(client: Client):
        return client.lines_df(since=args.since)

    print(
        f"-- lines_df(since={args.since!r}) for {', '.join(TEAMS)}; latency "
        f"{args.latency:g} s +-{args.jitter:.0%}, {args.rate:g} requests/s per token",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        # 1. one team alone
        with server(args) as sb:
            c = clients(sb, ["shop"], Path(tmp), args)["shop"]
            t0 = time.perf_counter()
            alone = question(c)
            t_alone = time.perf_counter() - t0
            n_alone, r429 = served(sb)
            details = {
                n: sum(r["transaction_time"] >= args.since for r in sb.data(n).transactions)
                for n in TEAMS
            }
        print(
            f"  transactions in the window (one detail each): "
            f"{', '.join(f'{n} {k}' for n, k in details.items())}",
            flush=True,
        )
        print(
            f"  one team alone (shop):        {t_alone:6.1f} s, {n_alone} requests, "
            f"{r429} answers 429",
            flush=True,
        )

        # 2. one after another
        with server(args) as sb:
            cs = clients(sb, TEAMS, Path(tmp), args)
            t0 = time.perf_counter()
            looped = {n: question(cs[n]) for n in TEAMS}
            t_loop = time.perf_counter() - t0
            n_loop, r429 = served(sb)
        print(
            f"  one after another (3 teams):  {t_loop:6.1f} s, {n_loop} requests, "
            f"{r429} answers 429; {t_loop / t_alone:.2f}x one alone",
            flush=True,
        )

        # 3. at once
        with server(args) as sb:
            cs = clients(sb, TEAMS, Path(tmp), args)
            t0 = time.perf_counter()
            answers = invtools.each_team(question, cs, progress=False)
            t_each = time.perf_counter() - t0
            n_each, r429 = served(sb)
        assert answers.errors == {}, answers.errors
        for n in TEAMS:  # the same rows as the loop's
            assert answers[n].equals(looped[n]), n
        assert alone.equals(looped["shop"])
        per_team = ", ".join(f"{n} {answers.outcome(n).seconds:.1f} s" for n in TEAMS)
        ratio = t_each / t_alone
        met = ratio <= 1.3
        print(
            f"  each_team (3 teams at once):  {t_each:6.1f} s, {n_each} requests, "
            f"{r429} answers 429 ({per_team}); {ratio:.2f}x one alone (goal <= 1.3x"
            f"{'' if met else ', MISSED'}), {t_loop / t_each:.2f}x faster than one after "
            f"another",
            flush=True,
        )
    print("goal met" if met else "GOAL MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
