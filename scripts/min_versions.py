"""Run the test suite against the lowest versions pyproject.toml allows (``make test-min``).

The lower bounds in ``pyproject.toml`` are a promise: ``pandas>=2.2`` says invtools works with
pandas 2.2. This script keeps it honest. For every dependency of the package and of its
``demo``, ``dlt`` and ``dev`` extras it asks the package index (``pip index versions``, one
look-up per package) for the lowest release that satisfies the declared range, pins it in a
constraints file, installs ``.[dev]`` with those pins into a fresh virtual environment, and
runs pytest there. Packages the pins do not name (the dependencies' own dependencies) resolve
as pip chooses.

    python scripts/min_versions.py                 # venv in build/min-venv, the whole suite
    python scripts/min_versions.py -- -x tests/test_frames.py

It takes several minutes (the install, then the suite), so it is not part of ``make test``.
Exit status: pytest's, or 2 when a pin cannot be found or installed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]


def declared(
    pyproject: dict, extras: tuple[str, ...] = ("demo", "dlt", "dev")
) -> list[Requirement]:
    """The package's requirements and those of ``extras`` (its own extras expanded once)."""
    name = pyproject["project"]["name"]
    specs = list(pyproject["project"]["dependencies"])
    for extra in extras:
        specs += pyproject["project"]["optional-dependencies"].get(extra, [])
    out: dict[str, Requirement] = {}
    for spec in specs:
        req = Requirement(spec)
        if req.name == name:  # "invtools[demo]" inside dev: its extras are listed above
            continue
        out.setdefault(req.name.lower(), req)
    return list(out.values())


def lowest(req: Requirement, available: list[str]) -> str | None:
    """The lowest of ``available`` versions that ``req`` allows (no pre-releases).

    >>> lowest(Requirement("pytest-timeout>=2.3"), ["2.2.0", "2.3.1", "2.4.0"])
    '2.3.1'
    """
    ok = []
    for text in available:
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if not v.is_prerelease and req.specifier.contains(v):
            ok.append(v)
    return str(min(ok)) if ok else None


def available_versions(python: str, name: str) -> list[str]:
    proc = subprocess.run(
        [python, "-m", "pip", "index", "versions", name],
        capture_output=True,
        text=True,
        check=False,
    )
    m = re.search(r"Available versions: (.+)", proc.stdout)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / "build" / "min-venv"))
    parser.add_argument("pytest_args", nargs="*", default=[])
    args = parser.parse_args(argv)

    env_dir = Path(args.venv)
    if not (env_dir / "bin" / "python").exists():
        venv.create(env_dir, with_pip=True, clear=True)
    python = str(env_dir / "bin" / "python")

    pins = []
    for req in declared(tomllib.loads((ROOT / "pyproject.toml").read_text())):
        version = lowest(req, available_versions(python, req.name))
        if version is None:
            print(f"min-versions: no release of {req} found on the index", file=sys.stderr)
            return 2
        pins.append(f"{req.name}=={version}")
    constraints = env_dir / "constraints-min.txt"
    constraints.write_text("\n".join(pins) + "\n")
    print("min-versions: " + ", ".join(pins), flush=True)

    install = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "-c", str(constraints), "-e", f"{ROOT}[dev]"],
        check=False,
    )
    if install.returncode:
        print(
            "min-versions: the lowest declared versions do not install together; raise the "
            "lower bound that pip names above",
            file=sys.stderr,
        )
        return 2
    tests = subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", *(args.pytest_args or [])],
        cwd=ROOT,
        check=False,
    )
    return tests.returncode


if __name__ == "__main__":
    sys.exit(main())
