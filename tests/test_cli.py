"""The `invtools demo` and `invtools lab` commands, run as a user runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, tmp_path, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    return subprocess.run(
        [sys.executable, "-m", "invtools", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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
    # What the same requests would take on the real service, paced at its 5 requests/s.
    sent = int(re.search(r"([\d,]+) requests sent \(about", proc.stdout)[1].replace(",", ""))
    cost = re.search(r"about (\d+) (s|min) on the real service at 5 requests/s", proc.stdout)
    assert sent > 0 and cost
    seconds = int(cost.group(1)) * (60 if cost.group(2) == "min" else 1)
    assert abs(seconds - sent / 5) <= (30 if cost.group(2) == "min" else 1)  # rounded
    html = (out / "html" / "01-quickstart.html").read_text()
    assert "Greenfield Hardware &amp; Garden" in html or "Greenfield Hardware & Garden" in html
    pngs = sorted((out / "figures").glob("01-quickstart-*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
    # the demo's answers were cached in the kernel's temporary folder, removed with it: not
    # in the user's cache, and not left in the build folder
    assert not (tmp_path / "xdg" / "invtools").exists()
    assert not list(out.rglob("*.sqlite"))


def test_lab_outside_the_repository_says_where_to_run_it(tmp_path):
    proc = _run(["lab"], tmp_path, tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "top folder" in proc.stderr, proc.stderr


def test_demo_outside_the_repository_runs_the_notebooks_that_ship_with_invtools(tmp_path):
    # issue 11 item 12: `pip install 'invtools[demo]'` then `invtools demo` anywhere
    from invtools.cli import _notebook_paths
    from invtools.notebook.demo import example_notebooks

    shipped = example_notebooks()
    assert [p.name for p in shipped] == sorted(
        p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")
    ) and len(shipped) == 9
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert _notebook_paths([]) == shipped
    finally:
        os.chdir(cwd)


def test_demo_without_the_demo_extra_says_what_to_install(tmp_path):
    # nbclient and friends come with the 'demo' extra, not the base install
    code = (
        "import sys; sys.modules['nbclient'] = None\n"
        "import importlib.util as u; real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'nbclient' else real(n, *a)\n"
        "from invtools.cli import main; raise SystemExit(main(['demo']))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "needs nbclient" in proc.stderr and "pip install 'invtools[demo]'" in proc.stderr


def test_a_failing_notebook_fails_the_demo_and_says_why(tmp_path):
    import nbformat

    bad = tmp_path / "99-broken.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('the shelf is empty')"))
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, bad)
    proc = _run(["demo", str(bad), "--out", str(tmp_path / "o")], ROOT, tmp_path)
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout and "the shelf is empty" in proc.stdout
    assert "\x1b[" not in proc.stdout  # no terminal colour codes in the summary


def test_sandbox_serves_the_demos_teams_by_default(tmp_path):
    """`make sandbox` (`invtools sandbox`) serves what connect()'s demo serves: the shop, its
    branches in Harrogate and York, and the Basic-mode café."""
    import signal

    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "invtools", "sandbox", "--port", "0", "--quiet", "--size", "300"]
    lines = []
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("Ctrl-C stops it"):
                    break
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
    teams = dict(re.findall(r"^  (\w+)\s+\(mode (\d)\): ", "".join(lines), re.M))
    assert teams == {"shop": "2", "harrogate": "2", "york": "2", "basic": "0"}
    assert "--shops" in _run(["sandbox", "--help"], ROOT, tmp_path).stdout  # documented there
