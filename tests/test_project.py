"""The project's ground: the two commands, CI, and environment.yml agreeing with pyproject."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _conda_deps() -> dict[str, str]:
    """Top-level conda dependencies of environment.yml as name -> version spec."""
    deps: dict[str, str] = {}
    in_deps = False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if line.startswith("dependencies:"):
            in_deps = True
            continue
        m = re.match(r"^  - ([A-Za-z0-9_.\-]+)\s*([<>=!~].*)?$", line)
        if in_deps and m:
            deps[m.group(1).lower()] = (m.group(2) or "").strip()
    return deps


def test_environment_yml_has_the_same_runtime_dependencies_as_pyproject():
    conda = _conda_deps()
    for spec in _pyproject()["project"]["dependencies"]:
        req = Requirement(spec)
        assert req.name.lower() in conda, f"{req.name} is in pyproject but not environment.yml"
        assert conda[req.name.lower()] == str(req.specifier), (
            f"{req.name}: pyproject says {req.specifier}, environment.yml {conda[req.name.lower()]}"
        )
    assert conda["python"] == ">=" + _pyproject()["project"]["requires-python"].lstrip(">=")


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme


def test_pytest_turns_warnings_into_errors():
    opts = _pyproject()["tool"]["pytest"]["ini_options"]
    assert opts["filterwarnings"][0] == "error"
    assert opts["timeout"] > 0
