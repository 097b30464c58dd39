"""Progress bars tell the truth where they are left: a terminal's line is cleared when a bar
closes, and a notebook keeps each bar's last state as plain text, so a saved or exported
notebook does not show a bar stuck at its first state ("0/316").
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from invtools._progress import notice, progress_bar
from invtools.notebook.demo import execute_notebook, kernel_env


def screen_line(written: str) -> str:
    """What a terminal shows on the bar's line once ``written`` has been written to it: each
    carriage return goes back to column 0 and the text after it overwrites what was there."""
    line: list[str] = []
    for part in written.split("\r"):
        line[: len(part)] = part
    return "".join(line)


def test_a_closed_bar_leaves_nothing_in_a_terminal(capsys):
    with progress_bar(total=316, desc="steps", unit=" steps") as bar:
        for _ in range(316):
            bar.update(1)
    err = capsys.readouterr().err
    assert "/316" in err  # it was shown
    assert "\n" not in err and screen_line(err).strip() == ""


def test_a_bar_stopped_by_an_error_leaves_nothing_in_a_terminal(capsys):
    with pytest.raises(RuntimeError), progress_bar(total=316, desc="steps") as bar:
        bar.update(120)
        raise RuntimeError("boom")
    err = capsys.readouterr().err
    assert "/316" in err and "\n" not in err and screen_line(err).strip() == ""


def test_an_open_ended_bar_leaves_nothing_in_a_terminal(capsys):
    with progress_bar(desc="/v1/items", unit=" pages", initial=3) as bar:  # a walk's
        bar.update(2)
    err = capsys.readouterr().err
    assert "/v1/items" in err
    assert "\n" not in err and screen_line(err).strip() == ""


def test_a_notice_beside_an_open_bar_is_a_line_of_its_own(capsys):
    # each_team: one team's cost line while another team's bar is drawn on the terminal's line
    with progress_bar(total=316, desc="shop") as bar:
        bar.update(22)
        notice("york: 66 transaction details to fetch")
        bar.update(1)
    first, *_rest = capsys.readouterr().err.split("\n")
    assert screen_line(first).rstrip() == "york: 66 transaction details to fetch"


def test_disabled_bars_write_nothing(capsys):
    with progress_bar(total=316, enabled=False) as bar:
        bar.update(316)
    with progress_bar(total=0) as bar:
        pass
    with progress_bar(desc="/v1/items", unit=" pages", enabled=False) as bar:
        bar.update(5)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


NOTEBOOK_CELLS = [
    """\
    import time
    from invtools._progress import notice, progress_bar

    class Page:
        def __init__(self, size):
            self.rows = [{}] * size
    """,
    """\
    with progress_bar(total=316, desc="transaction details", unit=" details") as bar:
        for _ in range(316):
            time.sleep(0.001)
            bar.update(1)
    """,
    """\
    with progress_bar(desc="/v1/items", unit=" pages", initial=3) as bar:  # a walk's, shown late
        for _ in range(2):
            time.sleep(0.05)
            bar.update(1)
    """,
    """\
    try:
        with progress_bar(total=316, desc="transaction details", unit=" details") as bar:
            for i in range(316):
                if i == 120:
                    raise KeyboardInterrupt
                bar.update(1)
    except KeyboardInterrupt:
        pass
    """,
    """\
    with progress_bar(total=316, desc="quiet", enabled=False) as bar:
        bar.update(316)
    """,
]


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_saved_notebook_keeps_each_bars_last_state(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(src)) for src in NOTEBOOK_CELLS]
    path = tmp_path / "bars.ipynb"
    nbformat.write(nb, path)

    ran, _ = execute_notebook(path, env=kernel_env())
    outputs = [cell.outputs for cell in ran.cells]

    def shown(i: int) -> list[str]:
        """The cell's outputs, each as the only representation left in the saved file."""
        assert all(set(out["data"]) == {"text/plain"} for out in outputs[i]), outputs[i]
        return [out["data"]["text/plain"] for out in outputs[i]]

    assert outputs[0] == []
    [done] = shown(1)
    assert done.startswith("transaction details: 316/316 [") and "details/s]" in done
    [walk] = shown(2)  # first shown at its fourth page
    assert walk.startswith("/v1/items: 5 pages [") and walk.endswith(" pages/s]")
    [stopped] = shown(3)
    assert stopped.startswith("transaction details: stopped at 120/316 [")
    assert outputs[4] == []
    assert not re.search(r"(?<!\d)0/316", json.dumps(outputs))  # no first state anywhere
