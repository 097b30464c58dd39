"""``make dist`` builds what ``pip install invtools`` installs: the package, its example
notebooks and ``py.typed`` (when there is one), and nothing of the working tree besides: no
tests or test data, no caches, no SQLite files (a response cache or a mirror could hold a
team's data)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("build")

FORBIDDEN_PARTS = {
    "tests",
    "__pycache__",
    ".pytest_cache",
    ".ipynb_checkpoints",
    ".venv",
    "benchmarks",
    "build",
    "data",
}
FORBIDDEN_SUFFIXES = {".pyc", ".sqlite", ".sqlite3", ".db", ".json"}


def offenders(names: list[str]) -> list[str]:
    bad = []
    for name in names:
        path = PurePosixPath(name)
        if (
            FORBIDDEN_PARTS & set(path.parts[:-1])
            or path.suffix in FORBIDDEN_SUFFIXES
            or path.name.startswith(("http_cache", ".env"))
        ):
            bad.append(name)
    return bad


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    # What `make dist` runs, from the working tree as it is (with its caches and build/).
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("invtools-*.whl")
    (sdist,) = out.glob("invtools-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_holds_the_package_and_the_notebooks_and_nothing_else(built):
    names = zipfile.ZipFile(built["wheel"]).namelist()
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "invtools").rglob("*.py")}
    assert modules <= set(names)  # every module of the package
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 6  # the six example notebooks, and any added since
    assert (
        sorted(
            n.removeprefix("invtools/examples/")
            for n in names
            if n.startswith("invtools/examples/")
        )
        == notebooks
    )
    assert "invtools/py.typed" in names  # PEP 561: editors and mypy read the package's types
    assert offenders(names) == []
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"invtools"}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_sdist_carries_no_cache_or_database(built):
    with tarfile.open(built["sdist"]) as sdist:
        names = sdist.getnames()
    assert any(n.endswith("/notebooks/03-activity-over-time.ipynb") for n in names)
    assert [
        n
        for n in names
        if PurePosixPath(n).suffix in {".sqlite", ".sqlite3", ".db", ".pyc"}
        or "__pycache__" in n
        or "http_cache" in n
    ] == []
