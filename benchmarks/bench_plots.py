"""How long plot_activity takes to draw and save, per frequency, on the demo shop's transactions.

The activity explorer redraws on every control change, so this is the wait an analyst sees.
Above ``invtools.viz.MAX_BAR_PERIODS`` periods the stacked bars are drawn as one step area
per category instead of one patch per period (a daily view of 18 months: ~4.4 s before).

    python benchmarks/bench_plots.py [out.png]      # optionally saves the daily picture
"""

from __future__ import annotations

import sys
import time
from io import BytesIO

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from invtools.api import Client
from invtools.sandbox import serve
from invtools.viz import activity_table, plot_activity


def main(argv: list[str]) -> int:
    with serve(port=0, rate_limit=0) as sb:
        with Client(
            sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0, progress=False
        ) as client:
            tx = client.transactions_df()
    print(
        f"{len(tx):,} transactions, {tx['transaction_time'].min():%Y-%m-%d} .. "
        f"{tx['transaction_time'].max():%Y-%m-%d}"
    )
    for freq in ("D", "W", "M"):
        periods = len(activity_table(tx, freq))
        best_draw = best_save = float("inf")
        for _ in range(3):  # best of three: the machine may be busy
            started = time.perf_counter()
            ax = plot_activity(tx, freq=freq)
            ax.figure.canvas.draw()
            drawn = time.perf_counter()
            ax.figure.savefig(BytesIO(), format="png")
            best_draw = min(best_draw, drawn - started)
            best_save = min(best_save, time.perf_counter() - drawn)
            if freq == "D" and len(argv) > 1:
                ax.figure.savefig(argv[1])
            plt.close(ax.figure)
        print(
            f"freq={freq}: {periods:4d} periods  draw {best_draw:.2f} s  "
            f"save png {best_save:.2f} s  total {best_draw + best_save:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
