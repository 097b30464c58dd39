"""The linters keep the codebase: ruff and mypy, as configured in pyproject.toml, find nothing.

Run with this interpreter (``sys.executable -m ruff`` / ``-m mypy``), so the versions are the
ones the ``dev`` extra installed. Skipped only where a linter is not installed at all.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What ruff checks and formats: the package, its tests, benchmarks, scripts and the docs' own
#: Markdown extension.
CODE = ("invtools", "tests", "benchmarks", "scripts", "docs/_ext", "conftest.py")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


@pytest.mark.slow
def test_ruff_finds_nothing():
    _needs("ruff")
    proc = _run("ruff", "check", "--no-cache", "--output-format", "concise", *CODE)
    assert proc.returncode == 0, f"ruff check:\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow
def test_ruff_format_would_change_nothing():
    _needs("ruff")
    proc = _run("ruff", "format", "--check", "--no-cache", *CODE)
    assert proc.returncode == 0, f"ruff format --check (run `ruff format`):\n{proc.stdout}"


@pytest.mark.slow
@pytest.mark.timeout(600)  # as its subprocess's: on a loaded machine mypy took over 120 s
def test_mypy_finds_nothing():
    _needs("mypy")
    # The files to check are [tool.mypy]'s; no cache, so a stale one never hides a finding.
    proc = _run("mypy", "--no-incremental", "--cache-dir", os.devnull)
    assert proc.returncode == 0, f"mypy:\n{proc.stdout}{proc.stderr}"


def test_the_linters_are_configured_and_the_package_says_it_is_typed():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert tool["mypy"]["files"] == ["invtools"]
    assert tool["ruff"]["line-length"] == 100
    assert (ROOT / "invtools" / "py.typed").is_file()  # PEP 561
    assert "py.typed" in tool["setuptools"]["package-data"]["invtools"]
