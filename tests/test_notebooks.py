"""Every example notebook runs end to end on the built-in demo server, and leaks no token.

Each notebook runs in a fresh kernel exactly as ``make demo`` runs it (no token in the kernel's
environment, so it starts the stand-in server itself); the tokens its demo server hands out are
the seeded demo tokens, which must not appear in any output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from truth import raw_lines

from invtools import notebook
from invtools.notebook.demo import execute_notebook, kernel_env
from invtools.sandbox import serve

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


@pytest.fixture(scope="module")
def demo_tokens() -> list[str]:
    from invtools.sandbox.data import MAX_SHOPS

    # The same seed as the notebooks' demo server, and every team it may serve (the tokens of
    # the first teams do not depend on how many there are).
    with serve(rate_limit=0, size=50, shops=MAX_SHOPS) as sb:
        return list(sb.tokens.values())


def test_there_are_nine_numbered_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{n:02d}" for n in range(1, 10)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebooks_carry_no_outputs_or_widget_state(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_the_demo_server_without_leaking_a_token(path, demo_tokens, tmp_path):
    env = kernel_env(
        {"INVTOOLS_CACHE_DIR": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    )
    nb, summary = execute_notebook(path, env=env)  # raises on any cell error
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    everything = json.dumps(nb)  # outputs and the widget state nbclient saves in metadata
    for token in demo_tokens:
        assert token not in everything
    assert "BUILT-IN DEMO SERVER" in outputs  # said loudly
    assert "Traceback" not in outputs
    # A progress bar's saved text is its last state, not the first ("0/4000 [00:00<?, ? ...]").
    assert not re.search(r"\[\d\d:\d\d(<\?)?, \? ", outputs)
    assert "Greenfield Hardware & Garden" in summary["teams"]
    assert summary["sent"] > 0 and summary["rows"] > 0


# ------------------------------------------------------- notebook 09: its numbers are the truth's

NINE = ROOT / "notebooks" / "09-abc-cover-adjustments-and-reconciliation.ipynb"
DAY = pd.Timedelta(days=1)


def _run_in_process(path: Path) -> dict:
    """Every code cell of the notebook, in order, in this process: its variables."""
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__notebook__"}
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            try:
                exec(compile("".join(cell["source"]), path.name, "exec"), namespace)
            finally:
                plt.close("all")
    return namespace


def _truth_lines(view) -> pd.DataFrame:
    """The server's lines (tests/truth.py), each member by name and the opening stocktake said."""
    raw = raw_lines(view)
    opening = (raw["type"] == "adjust") & (raw["memo"] == "Opening stocktake")
    return raw.assign(member=raw["member_name"], opening=opening)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_notebook_09_answers_the_day_one_questions_as_the_servers_json_does(demo_process):
    got = _run_in_process(NINE)
    view = notebook.demo_server().data("shop")
    as_of = got["as_of"]
    raw = _truth_lines(view)
    live = {it["id"]: it for it in view.items}
    held = pd.DataFrame(
        {"item": it["id"], "location": q["location_id"], "qty": float(q["quantity"])}
        for it in view.items
        for q in it["quantities"]
    )
    places = {loc["id"]: loc["name"] for loc in view.locations}
    out = raw[(raw["type"] == "out") & (raw["time"] <= as_of) & raw["item"].isin(live)]

    # 1. ABC: the classes by 90 days' outbound value at cost, each class's stock value per place
    units = out[out["time"] >= as_of - 90 * DAY].groupby("item")["qty"].sum().abs()
    value = units.reindex(sorted(live), fill_value=0.0) * [float(live[i]["cost"]) for i in live]
    ordered = value.sort_values(ascending=False, kind="stable")
    before = (ordered / ordered.sum()).cumsum().shift(fill_value=0.0)
    cls = pd.Series(np.where(before < 0.8, "A", np.where(before < 0.95, "B", "C")), ordered.index)
    cls[ordered <= 0] = "C"
    assert got["classes"].set_index("item_id")["class"].astype(str).to_dict() == cls.to_dict()
    stocked = held[held["qty"] > 0]
    worth = (stocked["qty"] * stocked["item"].map(lambda i: float(live[i]["cost"]))).groupby(
        [stocked["location"].map(places), stocked["item"].map(cls)]
    )
    want = worth.sum().unstack()
    shown = got["value_by_class"]
    assert sorted(shown.index) == sorted(want.index) and list(map(str, shown.columns)) == list(
        want.columns
    )
    for place, row in want.iterrows():
        assert shown.loc[place].tolist() == pytest.approx(row.tolist())

    # 2. cover per item and location over 8 weeks, 14 days' lead: what runs out, what answers it
    sold = out[out["time"] >= as_of - 56 * DAY].groupby(["item", "location"])["qty"].sum().abs()
    pace = sold / 56
    on_hand = held.set_index(["item", "location"])["qty"]
    spare = (on_hand.clip(lower=0) - pace.reindex(on_hand.index, fill_value=0.0) * 14).clip(0)
    here = on_hand.reindex(pace.index).fillna(0.0).clip(lower=0)
    short = pace[here / pace <= 14]
    flagged = {}
    for (item, place), daily in short.items():
        shortfall = max(daily * 14 - here[(item, place)], 0.0)
        elsewhere = spare.xs(item, level="item").drop(place, errors="ignore").sum()
        flagged[(item, place)] = (
            "order"
            if elsewhere <= 0
            else "transfer"
            if elsewhere >= shortfall
            else "transfer and order"
        )
    now = got["now"]
    shown_actions = zip(now["item_id"], now["location_id"], now["action"], strict=True)
    assert {(i, p): a for i, p, a in shown_actions} == flagged
    assert len(now) == len(flagged) > 0 and "transfer" in flagged.values()
    pooled = out[out["time"] >= as_of - 56 * DAY].groupby("item")["qty"].sum().abs() / 56
    cover = pd.Series({i: max(float(live[i]["quantity"]), 0.0) for i in pooled.index}) / pooled
    pooled_flags = got["pooled"].set_index("item_id")["runs_out_in_lead_time"]
    assert sorted(pooled_flags[pooled_flags].index) == sorted(cover[cover <= 14].index)

    # 3. members' adjustments: per member and month, each type, the opening stocktake left out
    rows = pd.DataFrame(
        {
            "id": t["id"],
            "member": t["created_by"]["name"],
            "month": pd.Timestamp(t["transaction_time"]).strftime("%Y-%m"),
            "type": t["type"],
            "opening": t["type"] == "adjust" and t["memo"] == "Opening stocktake",
        }
        for t in view.transactions
    )
    openings = sorted(rows.loc[rows["opening"], "id"])
    assert len(openings) == 4
    per_member = got["per_member"]
    assert per_member.attrs["opening_counts_excluded"] == openings
    kept = rows[~rows["opening"]]
    want = pd.crosstab([kept["member"], kept["month"]], kept["type"])
    pd.testing.assert_frame_equal(
        per_member, want.reindex(index=per_member.index, columns=per_member.columns).fillna(0),
        check_names=False, check_dtype=False,
    )  # fmt: skip
    assert per_member.to_numpy().sum() == len(view.transactions) - 4
    adjusts = raw[(raw["type"] == "adjust") & ~raw["opening"]]
    net = adjusts.groupby(["member", adjusts["time"].dt.strftime("%Y-%m")])["qty"].sum()
    shown_net = got["net"].stack()
    assert shown_net[shown_net != 0].to_dict() == pytest.approx(net[net != 0].to_dict())
    assert got["net"].attrs["opening_counts_excluded"] == openings

    # 4. the lines' last level is the stock the service shows, per item and per location
    assert got["per_item"][got["per_item"] != 0].empty
    assert got["per_place"][got["per_place"] != 0].empty
    moved = set(raw["item"]) & set(live)
    assert got["last"].to_dict() == {i: float(live[i]["quantity"]) for i in moved}
    levels = got["where"].set_index(["item_id", "location_id"])["stock"]
    truth = on_hand[on_hand.index.get_level_values("item").isin(moved)]
    assert levels.reindex(truth.index).fillna(0.0).tolist() == pytest.approx(truth.tolist())
    assert len(got["per_place"]) == len(held)  # every place an item is listed at, compared

    # 5. the cost of each window before anything is fetched; the lines of 30 days as they grow
    costs = got["costs"]
    assert costs.loc["everything", "transactions"] == len(view.transactions)
    assert costs["to_fetch"].tolist() == [0, 0, 0]  # every detail fetched by the cells above
    assert costs["time"].tolist() == ["nothing to send"] * 3

    def rows(lines):
        return sorted(
            zip(lines["transaction_id"], lines["item_id"], lines["quantity"], strict=True)
        )

    def truth_since(since):
        late = raw[raw["time"] >= pd.Timestamp(since)]
        return sorted(zip(late["tx"], late["item"], late["qty"], strict=True))

    month, part = got["month"], got["part"]
    assert got["growing"].done and rows(month) == truth_since(month.attrs["window"]["since"])
    assert rows(part) == truth_since(part.attrs["window"]["since"])  # its window, held in full
    assert costs.loc["30D", "transactions"] == month["transaction_id"].nunique()
