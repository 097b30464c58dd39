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


# -- issue 11, item 12: packaging ------------------------------------------------------------


def test_every_package_folder_is_packaged_and_the_notebooks_ship_with_it():
    tool = _pyproject()["tool"]["setuptools"]
    folders = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "invtools").rglob("__init__.py")
    }
    assert set(tool["packages"]) == folders | {"invtools.examples"}
    assert tool["package-dir"] == {"invtools.examples": "notebooks"}
    assert tool["package-data"]["invtools.examples"] == ["*.ipynb"]
    assert len(list((ROOT / "notebooks").glob("[0-9]*.ipynb"))) == 9


def test_the_demo_extra_has_what_invtools_demo_needs_and_dev_includes_it():
    from invtools.notebook.demo import DEMO_MODULES

    extras = _pyproject()["project"]["optional-dependencies"]
    assert {Requirement(s).name for s in extras["demo"]} == set(DEMO_MODULES)
    assert "invtools[demo]" in extras["dev"]
    base = {Requirement(s).name for s in _pyproject()["project"]["dependencies"]}
    assert not base & set(DEMO_MODULES)  # the base install stays light


def test_the_minimum_versions_run_covers_every_declared_dependency():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "min_versions", ROOT / "scripts" / "min_versions.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = {r.name for r in mod.declared(_pyproject())}
    extras = _pyproject()["project"]["optional-dependencies"]
    want = {
        Requirement(s).name
        for s in _pyproject()["project"]["dependencies"]
        + extras["demo"]
        + extras["dlt"]
        + extras["dev"]
    } - {"invtools"}
    assert names == want
    assert all(r.specifier for r in mod.declared(_pyproject()))  # every one has a lower bound
    assert mod.lowest(Requirement("nbconvert>=7.16.5"), ["7.16.4", "7.16.6", "7.17.0"]) == "7.16.6"
    assert "test-min:" in (ROOT / "Makefile").read_text()
    assert "make test-min" in (ROOT / ".ci" / "run").read_text()
    assert "make test-min" in (ROOT / "README.md").read_text()
