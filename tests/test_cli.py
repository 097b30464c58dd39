"""The `invtools demo` and `invtools lab` commands, run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, tmp_path, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    return subprocess.run([sys.executable, "-m", "invtools", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_demo_writes_html_figures_and_a_summary(tmp_path):
    out = tmp_path / "demo"
    proc = _run(["demo", "notebooks/01-quickstart.ipynb", "--out", str(out)], ROOT, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[1/1] 01-quickstart.ipynb ... ok" in proc.stdout
    assert "team Greenfield Hardware & Garden" in proc.stdout and "from cache" in proc.stdout
    assert "1 of 1 notebooks ran." in proc.stdout
    html = (out / "html" / "01-quickstart.html").read_text()
    assert "Greenfield Hardware &amp; Garden" in html or "Greenfield Hardware & Garden" in html
    pngs = sorted((out / "figures").glob("01-quickstart-*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
    # the demo's answers were cached in the kernel's temporary folder, removed with it: not
    # in the user's cache, and not left in the build folder
    assert not (tmp_path / "xdg" / "invtools").exists()
    assert not list(out.rglob("*.sqlite"))


def test_demo_and_lab_outside_the_repository_say_where_to_run_them(tmp_path):
    for cmd in (["demo"], ["lab"]):
        proc = _run(cmd, tmp_path, tmp_path, timeout=60)
        assert proc.returncode == 1
        assert "top folder" in proc.stderr, proc.stderr


def test_a_failing_notebook_fails_the_demo_and_says_why(tmp_path):
    import nbformat

    bad = tmp_path / "99-broken.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('the shelf is empty')"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, bad)
    proc = _run(["demo", str(bad), "--out", str(tmp_path / "o")], ROOT, tmp_path)
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout and "the shelf is empty" in proc.stdout
    assert "\x1b[" not in proc.stdout  # no terminal colour codes in the summary
