"""Issue 43's crash, reproduced in many processes: ``with Client(...) as c: c.lines_df()`` where
one detail fails (500, ``retries=0``) while others are in flight. Before the fix, the ``with``
block closed the cache file's SQLite connection under a request still running: a segfault in 3
of 12 processes. Each process runs the reproduction against its own stand-in server and cache.

    .venv/bin/python scripts/close_crash.py                  # 100 processes, one run each
    .venv/bin/python scripts/close_crash.py --processes 12 --runs 5

Half the processes close the client with ``with`` and check that no request of it is still at
the server once the block is left; the other half only drop the client (its finalizer closes
it). It prints how many processes crashed (killed by a signal: -11 is a segfault), how many
failed otherwise, and how many were fine. ``--child FOLDER MODE RUNS`` is one process
(``tests/test_client_close.py`` runs it too).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The detail answered 500; those before it and after it take up to ``SLOW`` seconds.
FAIL_AT, SLOW = 40, 0.05


def child(folder: str, mode: str, runs: int) -> None:
    """``runs`` reproductions in this process; exits non-zero naming what went wrong."""
    from invtools.api import Client
    from invtools.errors import ServerError
    from invtools.sandbox import serve

    with serve(rate_limit=0, seed=0, size=200) as sb:
        answer, lock, seen = sb.handle, threading.Lock(), [0]

        def handle(method, target, authorization, fault=None):
            if target.startswith("/v1/location-txs/"):
                with lock:
                    seen[0] += 1
                    n = seen[0]
                if n == FAIL_AT:
                    return 500, {"Content-Type": "text/html"}, b"<html>down</html>"
                time.sleep(random.uniform(0, SLOW))
            return answer(method, target, authorization, fault)

        sb.handle = handle

        def fetch(run: int) -> None:
            client = Client(
                sb.tokens["shop"],
                base_url=sb.base_url,
                cache=f"{folder}/c{run}.sqlite",
                rate_limit=0,
                retries=0,
                concurrency=8,
                progress=False,
            )
            if mode == "with":
                with client:
                    client.lines_df()
            else:  # dropped once the call failed: its finalizer closes it
                client.lines_df()

        problems = []
        for run in range(runs):
            seen[0] = 0
            try:
                fetch(run)
            except ServerError:
                pass
            else:
                sys.exit("the batch did not fail")
            if mode == "with" and sb.in_flight:
                problems.append(f"run {run}: {sb.in_flight} request(s) at the server after close()")
            # requests of a client closed under them end here, and meet its closed cache file
            deadline = time.monotonic() + 5
            while sb.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
    if problems:
        sys.exit("; ".join(problems))
    print("ok")


def spawn(folder: Path, mode: str, runs: int, timeout: float) -> tuple[int | str, str, str]:
    """One child process: ``(exit code or "hung", its stdout, its stderr)``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-X", "faulthandler", __file__, "--child", str(folder), mode]
    try:
        done = subprocess.run(
            [*command, str(runs)], env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        return "hung", str(exc.stdout or ""), str(exc.stderr or "")
    return done.returncode, done.stdout, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1, help="reproductions per process")
    parser.add_argument("--parallel", type=int, default=4, help="processes at once")
    parser.add_argument("--child", nargs=3, metavar=("FOLDER", "MODE", "RUNS"))
    args = parser.parse_args()
    if args.child:
        folder, mode, runs = args.child
        child(folder, mode, int(runs))
        return
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.parallel) as pool:
        folders = [Path(tmp) / f"p{i}" for i in range(args.processes)]
        for folder in folders:
            folder.mkdir()
        modes = ["with" if i % 2 == 0 else "dropped" for i in range(args.processes)]
        jobs = zip(folders, modes, strict=True)
        results = list(pool.map(lambda job: spawn(*job, args.runs, 120.0), jobs))
    codes = Counter(code for code, _out, _err in results)
    crashed = sum(n for code, n in codes.items() if isinstance(code, int) and code < 0)
    fine = sum(1 for code, out, _err in results if code == 0 and out.strip() == "ok")
    print(
        f"{args.processes} processes x {args.runs} run(s) in {time.monotonic() - began:.0f} s: "
        f"{crashed} crashed, {args.processes - crashed - fine} failed otherwise, {fine} fine; "
        f"exit codes {dict(codes)}"
    )
    for code, out, err in results:
        if code != 0:
            at = err.find("Current thread")
            print(f"--- exit {code}: {out.strip()}")
            print(err[at : at + 1500] if at >= 0 else err[-800:])
            break


if __name__ == "__main__":
    main()
