"""Build time and memory of the stand-in server's demo data, and page latency.

Not a test: prints figures. Each size is built in a fresh subprocess so the peak RSS is its own.

    python benchmarks/bench_sandbox.py            # default, 100k, 1M
    python benchmarks/bench_sandbox.py 4000 50000
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, resource, sys, time, urllib.request
size = None if sys.argv[1] == "default" else int(sys.argv[1])
from invtools.sandbox import data, serve

def rss_mib():  # current resident set size
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

before = rss_mib()
t = time.perf_counter()
stores = data.build(seed=0, size=size)
build = time.perf_counter() - t
gc.collect()
out = {"size": len(stores["shop"].log), "build_s": round(build, 2),
       "held_mib": round(rss_mib() - before, 1),
       "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
del stores
t = time.perf_counter()
with serve(size=size, rate_limit=0) as sb:
    out["serve_start_s"] = round(time.perf_counter() - t, 2)
    hdr = {"Authorization": "Bearer " + sb.tokens["shop"]}
    def get(path):
        with urllib.request.urlopen(urllib.request.Request(sb.base_url + path, headers=hdr)) as r:
            return json.load(r)
    get("/v1/location-txs?limit=100")
    runs = []
    cursor = None
    for _ in range(20):
        t = time.perf_counter()
        page = get("/v1/location-txs?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        runs.append(time.perf_counter() - t)
        cursor = page["cursor"]
    runs.sort()
    out["tx_page_100_ms_median"] = round(runs[len(runs) // 2] * 1000, 2)
    tx = page["items"][0]["id"]
    t = time.perf_counter()
    sb.edit_transaction(tx)
    out["edit_s"] = round(time.perf_counter() - t, 2)
print(json.dumps(out))
"""


def main(sizes: list[str]) -> None:
    for size in sizes:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, size],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode:
            print(f"size {size}: failed\n{proc.stderr}")
            continue
        r = json.loads(proc.stdout)
        print(
            f"size {r['size']:>9,}: build {r['build_s']:6.2f} s, "
            f"data held {r['held_mib']:7.1f} MiB "
            f"(process max RSS {r['max_rss_mib']:7.1f} MiB), "
            f"serve() start {r['serve_start_s']:.2f} s, 100-row tx page "
            f"{r['tx_page_100_ms_median']:.1f} ms, one edit (full replay) {r['edit_s']:.2f} s"
        )


if __name__ == "__main__":
    main(sys.argv[1:] or ["default", "100000", "1000000"])
