"""The documentation site's pages say what the code does (``make docs`` builds them; CI builds
them with warnings as errors): their Python blocks run, in the site's order, against the
stand-in server; the API reference has an entry for every public name; every internal link
resolves; the navigation lists every page and every example notebook."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from test_readme import blocks, links

from invtools import notebook
from invtools.notebook.demo import example_notebooks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS = (ROOT / "mkdocs.yml").read_text()
NAV = re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.(?:md|ipynb))$", MKDOCS, flags=re.M)


def pages() -> list[Path]:
    """The Markdown pages, in the navigation's order."""
    return [DOCS / p for p in NAV if p.endswith(".md")]


def test_the_navigation_lists_every_page_and_every_example_notebook():
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_ext" not in p.parts}
    assert written == {p for p in NAV if p.endswith(".md")}
    assert [p for p in NAV if p.endswith(".ipynb")] == [
        f"notebooks/{p.name}" for p in example_notebooks()
    ]


def test_every_internal_link_resolves():
    notebooks = {p.name for p in example_notebooks()}
    for page in pages():
        for target in links(page.read_text()):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = target.split("#")[0]
            resolved = (page.parent / path).resolve()
            if resolved.parent == (DOCS / "notebooks").resolve():
                assert resolved.name in notebooks, f"{page.name}: no notebook {target}"
            else:
                assert resolved.exists(), f"{page.relative_to(DOCS)}: broken link {target}"


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_the_reference_has_an_entry_for_every_public_name():
    import invtools

    documented = {
        id(_resolve(path))
        for page in (DOCS / "reference").glob("*.md")
        for path in re.findall(r"^::: (\S+)", page.read_text(), flags=re.M)
    }
    surface = [
        (invtools, n)
        for n in invtools.__all__
        if n != "__version__" and n not in ("frames", "analysis", "sandbox")
    ]
    for module in ("frames", "analysis", "sandbox"):
        mod = getattr(invtools, module)
        surface += [(mod, n) for n in mod.__all__]
    missing = [f"{mod.__name__}.{n}" for mod, n in surface if id(getattr(mod, n)) not in documented]
    assert not missing, f"public names without a reference entry: {missing}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_python_blocks_run_in_order(demo_process, capsys):
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__docs__"}
    ran = 0
    for page in pages():
        for i, block in enumerate(blocks(page.read_text(), "python"), 1):
            try:
                exec(
                    compile(block, f"{page.relative_to(DOCS)} python block {i}", "exec"), namespace
                )
            finally:
                plt.close("all")
            ran += 1
    assert ran >= 10
    out = capsys.readouterr()
    assert "BUILT-IN DEMO SERVER" in out.err  # getting started said so
    assert "team 'Corner Café' (id 51877) is in Basic mode" in out.out  # the team-mode error
    assert "1 changed" in out.out  # the mirror page saw the colleague's edit
    for token in notebook.demo_server().tokens.values():
        assert token not in out.out + out.err
