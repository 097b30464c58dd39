"""Build the documentation site offline (``make docs``): execute the example notebooks on the
built-in demo data into ``docs/notebooks/``, then ``mkdocs build --strict`` into ``build/site``.

    python scripts/build_docs.py            # then open build/site/index.html

The notebooks run exactly as ``make demo`` runs them: in fresh kernels whose environment has
no ``INVTOOLS_TOKEN*`` and no ``INVTOOLS_BASE_URL`` (``invtools.notebook.demo.kernel_env``), so
every page shows the demo data and no real token can reach a page. A notebook that fails, or
an example notebook missing from the site's navigation, fails the build; so does any warning
of MkDocs (a broken link, a public name without a reference page, a docstring it cannot read).

The site is read offline, from the file system, so it loads nothing from the network. Two npm
packages that its pages would otherwise fetch from a CDN are vendored into
``docs/assets/vendor/`` (git-ignored) before MkDocs runs, each pinned by version and checked
against the npm registry's sha512 ``integrity`` (the tarball is cached under ``build/vendor/``,
so a rebuild downloads nothing):

- ``@jupyter-widgets/html-manager`` (ipywidgets 8's): ``dist/embed.js``, the standalone bundle
  that renders the widget state saved in the executed notebooks (without it the widgets show
  blank offline), with the font files it loads relative to its own URL and its licenses.
  nbconvert's ``HTMLExporter.widget_renderer_url`` points the notebook pages at it, through a
  ``jupyter_nbconvert_config.json`` in a ``JUPYTER_CONFIG_DIR`` of this build's own.
- ``iframe-worker``: the shim that lets Material's search run its worker from ``file://``
  (``extra.polyfills`` in mkdocs.yml names it, so Material's ``offline`` plugin does not add the
  CDN's copy).

No PyPI package ships these files (ipywidgets, widgetsnbextension and jupyterlab_widgets ship
notebook and JupyterLab extensions, not html-manager's standalone bundle). MathJax is not
loaded at all: mkdocs-jupyter's ``custom_mathjax_url`` is empty by default (the notebooks have
no formulas). After MkDocs, every HTML page of the site is read: a script, stylesheet, image
or frame from http(s), or a .js, .mjs or .css URL in an inline script or style, fails the build
(links are fine). ``scripts/docs_check.py`` then checks the site in Chromium, offline.

Exit status: 0 when the site was built; 1 with a one-line reason when it was not.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE = ROOT / "build" / "site"
VENDOR = DOCS / "assets" / "vendor"
TARBALLS = ROOT / "build" / "vendor"
#: nbconvert's configuration for this build only (the user's ~/.jupyter is not read).
JUPYTER_CONFIG = ROOT / "build" / "docs-jupyter-config"


class BuildError(Exception):
    """A reason the site was not built, said in one line."""


@dataclass(frozen=True)
class Package:
    """An npm package to vendor: ``files`` maps a path in its tarball to a name in its folder."""

    name: str
    version: str
    tarball: str
    integrity: str  # the registry's dist.integrity (`npm view NAME@VERSION dist.integrity`)
    folder: str  # under docs/assets/vendor/
    files: dict[str, str]


HTML_MANAGER = Package(
    name="@jupyter-widgets/html-manager",
    version="1.0.15",
    tarball="https://registry.npmjs.org/@jupyter-widgets/html-manager/-/html-manager-1.0.15.tgz",
    integrity="sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
    folder="html-manager",
    files={
        "package/dist/embed.js": "embed.js",
        "package/dist/embed.js.LICENSE.txt": "embed.js.LICENSE.txt",  # what the bundle holds
        "package/package.json": "package.json",  # its "license": "BSD-3-Clause"
    },
)
IFRAME_WORKER = Package(
    name="iframe-worker",
    version="1.0.4",
    tarball="https://registry.npmjs.org/iframe-worker/-/iframe-worker-1.0.4.tgz",
    integrity="sha512-roeaaI+Lg1LJNfgpCjoRe/+WzEjy9+Z08LoEvu85MCPbBjwm+qXz8Ag5U05lHa6V1CysZyGzE0SOkAtSUA5q7Q==",
    folder="iframe-worker",
    files={
        "package/shim/index.js": "shim.js",
        "package/LICENSE": "LICENSE",
        "package/package.json": "package.json",
    },
)
#: The site's URL of the widget renderer, from the notebook pages (build/site/notebooks/*.html).
WIDGET_RENDERER_URL = "../assets/vendor/html-manager/embed.js"
#: The font files embed.js loads from next to itself (webpack's hashed names).
FONT_FILE = re.compile(r"\b[0-9a-f]{20}\.(?:woff2|woff|ttf|eot|svg)\b")


def main() -> int:
    try:
        check_navigation()
        vendor_assets()
        execute_notebooks()
        run_mkdocs()
        loads = network_loads(SITE)
    except BuildError as exc:
        print(f"build_docs: {exc}", file=sys.stderr)
        return 1
    if loads:
        print(f"build_docs: the built site loads {len(loads)} thing(s) from the network:")
        for page, url in loads:
            print(f"  {page}: {url}")
        return 1
    print(f"build_docs: site built in {SITE.relative_to(ROOT)}; it loads nothing from the network")
    return 0


def check_navigation() -> None:
    from invtools.notebook.demo import example_notebooks

    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in example_notebooks() if f"notebooks/{p.name}" not in nav]
    if missing:
        raise BuildError(f"example notebooks missing from mkdocs.yml's nav: {missing}")


# -- vendored assets ---------------------------------------------------------------------------


def vendor_assets() -> None:
    """Both packages' files into docs/assets/vendor/, and nbconvert's config naming the renderer."""
    vendor(HTML_MANAGER, extra=fonts_of_embed_js)
    write_ipywidgets_license(VENDOR / HTML_MANAGER.folder / "LICENSE")
    vendor(IFRAME_WORKER)
    JUPYTER_CONFIG.mkdir(parents=True, exist_ok=True)
    config = {"HTMLExporter": {"widget_renderer_url": WIDGET_RENDERER_URL}}
    (JUPYTER_CONFIG / "jupyter_nbconvert_config.json").write_text(json.dumps(config, indent=1))


def vendor(
    package: Package, extra: Callable[[tarfile.TarFile], dict[str, str]] | None = None
) -> None:
    """Extract ``package.files`` (and those ``extra(tar)`` names) into its folder, afresh."""
    with tarfile.open(fileobj=io.BytesIO(tarball(package)), mode="r:gz") as tar:
        files = dict(package.files)
        if extra:
            files.update(extra(tar))
        dest = VENDOR / package.folder
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for member, name in files.items():
            (dest / name).write_bytes(read_member(tar, package, member))


def read_member(tar: tarfile.TarFile, package: Package, member: str) -> bytes:
    try:
        f = tar.extractfile(member)
    except KeyError:
        f = None
    if f is None:
        raise BuildError(f"{package.name}@{package.version} has no file {member}")
    return f.read()


def fonts_of_embed_js(tar: tarfile.TarFile) -> dict[str, str]:
    """The font files embed.js names: webpack loads them relative to embed.js's own URL."""
    embed = read_member(tar, HTML_MANAGER, "package/dist/embed.js").decode("utf-8")
    names = sorted(set(FONT_FILE.findall(embed)))
    if not names:
        raise BuildError("embed.js of @jupyter-widgets/html-manager names no font files")
    return {f"package/dist/{name}": name for name in names}


def write_ipywidgets_license(path: Path) -> None:
    """html-manager's tarball has no license file (its package.json says BSD-3-Clause): the
    license of the repository it is built from, jupyter-widgets/ipywidgets, as ipywidgets'
    own distribution (a dependency of invtools) ships it."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("ipywidgets")
    except PackageNotFoundError as exc:
        raise BuildError("ipywidgets is not installed (pip install -e '.[docs]')") from exc
    text = dist.read_text("licenses/LICENSE") or dist.read_text("LICENSE")
    if not text or "Redistribution and use" not in text:
        raise BuildError("no BSD license text in the installed ipywidgets' metadata")
    header = (
        f"{HTML_MANAGER.name} {HTML_MANAGER.version}: BSD-3-Clause (its package.json), the "
        "license of https://github.com/jupyter-widgets/ipywidgets\n\n"
    )
    path.write_text(header + text, encoding="utf-8")


def tarball(package: Package) -> bytes:
    """The package's tarball, from build/vendor/ or else the registry, checked by its hash."""
    cached = TARBALLS / package.tarball.rsplit("/", 1)[1]
    if cached.is_file():
        data = cached.read_bytes()
        if integrity(data) == package.integrity:
            return data
    data = download(package.tarball)
    if integrity(data) != package.integrity:
        raise BuildError(
            f"{package.tarball}: its hash {integrity(data)} is not the pinned {package.integrity}"
        )
    TARBALLS.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(cached)
    return data


def integrity(data: bytes) -> str:
    """npm's Subresource Integrity form of the data's hash: ``sha512-<base64>``."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def download(url: str) -> bytes:
    print(f"build_docs: downloading {url}", flush=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise BuildError(
            f"could not download {url}: {exc}. The first build fetches it from the npm "
            "registry: check the network or proxy and run make docs again (later builds use "
            f"the copy kept in {TARBALLS.relative_to(ROOT)}/)"
        ) from exc


# -- notebooks and MkDocs ----------------------------------------------------------------------


def execute_notebooks() -> None:
    import nbformat

    from invtools.notebook.demo import example_notebooks, execute_notebook, kernel_env

    notebooks = example_notebooks()
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
            raise BuildError(f"{path.name} failed: {exc}") from exc
        nbformat.write(nb, out / path.name)


def run_mkdocs() -> None:
    # docs/_ext holds the site's own Markdown extension (doctest examples as Python sessions)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(DOCS / "_ext"), os.environ.get("PYTHONPATH")) if p
        ),
        "NO_MKDOCS_2_WARNING": "1",
        "JUPYTER_CONFIG_DIR": str(JUPYTER_CONFIG),  # mkdocs-jupyter's nbconvert reads it
    }
    cmd = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
    ]
    if subprocess.call(cmd, cwd=ROOT, env=env) != 0:
        raise BuildError("mkdocs build --strict failed (its messages are above)")


# -- what the built site loads -----------------------------------------------------------------

#: A URL that leaves the machine: http(s) or protocol-relative.
REMOTE = re.compile(r"^\s*(?:https?:)?//", re.I)
#: A .js/.mjs/.css URL from the network, quoted in an inline script or in url(...) of a style.
REMOTE_IN_TEXT = re.compile(
    r"""["'`(]\s*((?:https?:)?//[^"'`()\s]+?\.(?:m?js|css)(?:\?[^"'`()\s]*)?)\s*["'`)]""", re.I
)
#: Elements that load what their attribute names when the page is shown.
LOADS = {
    "script": "src",
    "img": "src",
    "iframe": "src",
    "embed": "src",
    "source": "src",
    "audio": "src",
    "video": "src",
    "track": "src",
    "object": "data",
}
#: <link rel=...> values that load their href (canonical, alternate, next... are links).
LINK_LOADS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest"}
#: nbconvert's lab template imports MermaidJS from cdnjs only on a page that has a Mermaid
#: diagram (an element of class jp-Mermaid): on the others its module script returns first.
ONLY_WITH_MERMAID = "https://cdnjs.cloudflare.com/ajax/libs/mermaid"


class LoadFinder(HTMLParser):
    """The network URLs one HTML page loads: see ``LOADS``, ``LINK_LOADS``, ``REMOTE_IN_TEXT``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self.has_mermaid = False
        self._in: str | None = None  # "script" or "style" while inside one

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "jp-Mermaid" in a.get("class", "").split():
            self.has_mermaid = True
        if tag in LOADS and REMOTE.match(a.get(LOADS[tag], "")):
            self.urls.append(a[LOADS[tag]].strip())
        if tag in ("img", "source") and any(
            REMOTE.match(part) for part in a.get("srcset", "").split(",") if part.strip()
        ):
            self.urls.append(a["srcset"].strip())
        rels = set(a.get("rel", "").lower().split())
        if tag == "link" and rels & LINK_LOADS and REMOTE.match(a.get("href", "")):
            self.urls.append(a["href"].strip())
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.urls.extend(m.group(1) for m in REMOTE_IN_TEXT.finditer(data))

    def loads(self) -> list[str]:
        return [u for u in self.urls if self.has_mermaid or not u.startswith(ONLY_WITH_MERMAID)]


def network_loads(site: Path) -> list[tuple[str, str]]:
    """(page, URL) for everything the site's HTML pages would load from the network."""
    pages = sorted(site.rglob("*.html"))
    if not pages:
        raise BuildError(f"no HTML pages in {site}")
    found = []
    for page in pages:
        finder = LoadFinder()
        finder.feed(page.read_text(encoding="utf-8"))
        finder.close()
        found += [(page.relative_to(site).as_posix(), url) for url in finder.loads()]
    return found


if __name__ == "__main__":
    sys.exit(main())
