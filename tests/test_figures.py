"""Figures read right (issue 44, item 7): room above the tallest bar of ``plot_activity``,
notebook 07's dead-stock bars in the order of the shares they draw, the year in every date a
title shows, and the README's count of the example notebooks.

Frames come over real HTTP from the stand-in (``sb``); notebook 07's cells run in this process
against the built-in demo server, as its reader runs them. Assertions are on artists (bar
heights and widths, the y limit, title text), never on pixels.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless, before pyplot is imported

import matplotlib.pyplot as plt
import pandas as pd
import pytest

import invtools
from invtools import notebook
from invtools.notebook.demo import example_notebooks
from invtools.viz import plot_calendar
from invtools.viz.common import span_text

ROOT = Path(__file__).resolve().parents[1]
#: A date in a title: "31 Oct", "Oct", "October" (what must carry its year).
MONTH = r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b"
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
WORDS |= {9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def months_without_a_year(title: str) -> list[str]:
    """Each month a title names with no year after it (within the date it is part of)."""
    return [
        m.group(0) for m in re.finditer(MONTH, title) if not re.match(r"\s+\d{4}", title[m.end() :])
    ]


def bar_tops(ax) -> list[float]:
    return [p.get_y() + p.get_height() for p in ax.patches if p.get_height() > 0]


# ------------------------------------------------------------------------- plot_activity


@pytest.fixture(scope="module")
def tx():
    """A small shop's whole history (its tallest weekly and monthly stacks touched the frame:
    a zero-height bar stacked on the tallest pins matplotlib's margin to it)."""
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300) as small:
        client = invtools.Client(
            small.tokens["shop"], base_url=small.base_url, cache=False, rate_limit=0
        )
        with client:
            yield client.transactions_df()


@pytest.mark.parametrize("options", [{}, {"by": "type"}, {"metric": "quantity", "freq": "M"}])
def test_the_tallest_bar_has_room_above_it(tx, options):
    ax = invtools.plot_activity(tx, **{"freq": "W", **options})
    tallest = max(bar_tops(ax))
    bottom, top = ax.get_ylim()
    assert bottom == 0 and top >= tallest * 1.04  # not touching the frame
    assert top <= tallest * 1.25  # and not a quarter of the figure empty


def test_the_tallest_point_of_a_line_has_room_above_it(tx):
    ax = invtools.plot_activity(tx, freq="W", kind="line")
    highest = max(max(line.get_ydata()) for line in ax.get_lines())
    assert ax.get_ylim()[1] >= highest * 1.04


# ---------------------------------------------------------------------- dates in titles


def test_every_date_of_an_activity_title_has_its_year(sb, make_client):
    tx = make_client(sb).transactions_df(since="2026-10-01")
    for freq in ("D", "W", "M"):
        title = invtools.plot_activity(tx, freq=freq).get_title()
        assert re.search(r"\d{4}", title) and not months_without_a_year(title), title
    assert span_text(pd.DatetimeIndex(["2026-10-05", "2026-10-26"]), "week") == (
        "5 Oct 2026 to 26 Oct 2026"
    )


def test_a_calendar_title_gives_both_months_their_year(sb, make_client):
    tx = make_client(sb).transactions_df(since="2026-05-01")
    title = plot_calendar(tx).get_title()
    assert "May 2026 to Oct 2026" in title and not months_without_a_year(title), title


def test_no_notebook_titles_a_figure_with_a_date_but_no_year():
    """The titles written in the notebooks' code (``title=``, ``set_title``)."""
    for path in example_notebooks():
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            for call in re.findall(r"(?:set_title\(|title=)\s*(f?\"[^\"]*\")", source):
                bare = re.sub(r"\{[^}]*%Y[^}]*\}", "2026", call)  # a format with its year
                assert not months_without_a_year(bare), f"{path.name}: {call}"


# ---------------------------------------------------------------------------- notebook 07


@pytest.fixture
def demo_process(monkeypatch, tmp_path):
    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    yield
    notebook.stop_demo_server()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_notebook_07_orders_its_dead_stock_bars_by_the_share_they_draw(demo_process):
    path = ROOT / "notebooks" / "07-reorder-and-audit.ipynb"
    cells = [
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    code = [c for c in cells if "invtools.connect()" in c or "dead_stock(lines, items, stock" in c]
    plotted = next(c for c in cells if 'y="share_of_value"' in c)
    namespace: dict = {}
    for source in [*code[:2], plotted]:
        exec(compile(source, path.name, "exec"), namespace)
    ax, dead = namespace["ax"], namespace["dead"]
    bars = sorted(ax.patches, key=lambda p: p.get_y())  # the y axis is inverted: top first
    assert ax.yaxis_inverted()
    drawn = [p.get_width() for p in bars]
    assert drawn == sorted(dead["share_of_value"].astype(float), reverse=True)  # largest on top
    assert len(drawn) > 1 and drawn[0] > drawn[-1]
    title, until = ax.get_title(), namespace["until"]
    assert f"as of {until:%d %b %Y}" in title and not months_without_a_year(title)


# -------------------------------------------------------------------------------- README


def test_the_readme_counts_the_example_notebooks_that_ship():
    readme = (ROOT / "README.md").read_text()
    shipped = len(example_notebooks())
    said = re.findall(r"\b(\w+) (?:example )?notebooks\b", readme)
    counts = [n for n, w in WORDS.items() if w in {s.lower() for s in said}]
    assert counts in ([], [shipped]), f"README counts {counts}, {shipped} ship"
    table = re.findall(r"^\| \[`(\d\d-[\w-]+)`\]", readme, flags=re.M)
    assert sorted(table) == sorted(p.stem for p in example_notebooks())
