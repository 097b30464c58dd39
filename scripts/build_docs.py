"""Build the documentation site offline (``make docs``): execute the example notebooks on the
built-in demo data into ``docs/notebooks/``, then ``mkdocs build --strict`` into ``build/site``.

    python scripts/build_docs.py            # then open build/site/index.html

The notebooks run exactly as ``make demo`` runs them: in fresh kernels whose environment has
no ``INVTOOLS_TOKEN*`` and no ``INVTOOLS_BASE_URL`` (``invtools.notebook.demo.kernel_env``), so
every page shows the demo data and no real token can reach a page. A notebook that fails, or
an example notebook missing from the site's navigation, fails the build; so does any warning
of MkDocs (a broken link, a public name without a reference page, a docstring it cannot read).
Exit status: 0 when the site was built.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def main() -> int:
    import nbformat

    from invtools.notebook.demo import example_notebooks, execute_notebook, kernel_env

    notebooks = example_notebooks()
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in notebooks if f"notebooks/{p.name}" not in nav]
    if missing:
        print(
            f"build_docs: example notebooks missing from mkdocs.yml's nav: {missing}",
            file=sys.stderr,
        )
        return 1
    out = DOCS / "notebooks"
    out.mkdir(exist_ok=True)
    for stale in out.glob("*.ipynb"):
        stale.unlink()
    env = kernel_env()
    for i, path in enumerate(notebooks, 1):
        print(f"[{i}/{len(notebooks)}] executing {path.name} on the demo data", flush=True)
        try:
            nb, _summary = execute_notebook(path, env=env)
        except Exception as exc:  # the cell's error, then stop: a page must not be half run
            print(f"build_docs: {path.name} failed: {exc}", file=sys.stderr)
            return 1
        nbformat.write(nb, out / path.name)
    # docs/_ext holds the site's own Markdown extension (doctest examples as Python sessions)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(DOCS / "_ext"), os.environ.get("PYTHONPATH")) if p
        ),
        "NO_MKDOCS_2_WARNING": "1",
    }
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
        ],
        cwd=ROOT,
        env=env,
    )


if __name__ == "__main__":
    sys.exit(main())
