"""Every example notebook runs end to end on the built-in demo server, and leaks no token.

Each notebook runs in a fresh kernel exactly as ``make demo`` runs it (no token in the kernel's
environment, so it starts the stand-in server itself); the tokens its demo server hands out are
the seeded demo tokens, which must not appear in any output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

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


def test_there_are_eight_numbered_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08"]


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
