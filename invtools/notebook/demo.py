"""Run the example notebooks end to end on the built-in demo data (``make demo``).

Each notebook runs in a fresh kernel with no token in its environment, so it starts the
stand-in server itself (see :func:`invtools.connect`). For each notebook this writes an executed
HTML copy and every figure as a PNG under the output folder, and prints a short summary: team,
rows fetched, requests sent, cache hits, where the files are.

Not run as a test (it starts a Jupyter kernel and executes the whole notebook):

>>> results = run_notebooks(["notebooks/01-quickstart.ipynb"], "build/demo")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from invtools._config import BASE_URL_ENV, TOKEN_ENV
from invtools.api.details import about

__all__ = [
    "NotebookRun",
    "run_notebooks",
    "kernel_env",
    "SUMMARY_MARKER",
    "example_notebooks",
    "missing_demo_packages",
    "DEMO_MODULES",
]

#: What running the notebooks takes besides invtools itself: the ``demo`` extra
#: (``pip install 'invtools[demo]'``); openpyxl because notebook 06 saves a workbook.
DEMO_MODULES = ("nbclient", "nbformat", "nbconvert", "ipykernel", "openpyxl")


def missing_demo_packages() -> list[str]:
    """The :data:`DEMO_MODULES` that are not installed (``[]`` when the demo can run)."""
    import importlib.util

    return [name for name in DEMO_MODULES if importlib.util.find_spec(name) is None]


def example_notebooks() -> list[Path]:
    """The example notebooks, in order: those that ship inside the package
    (``invtools/examples/`` of an installed wheel), else the ``notebooks/`` folder next to the
    package (a checkout of the repository, an editable install).

    >>> [p.name for p in example_notebooks()][:2]
    ['01-quickstart.ipynb', '02-stock-investigation.ipynb']
    """
    here = Path(__file__).resolve().parents[1]  # the invtools package folder
    for folder in (here / "examples", here.parent / "notebooks"):
        found = sorted(folder.glob("[0-9]*.ipynb"))
        if found:
            return found
    return []


SUMMARY_MARKER = "__INVTOOLS_SUMMARY__"

# Appended to each notebook while it runs (and removed before export): reports what the
# notebook's clients did, so the demo can print it without the notebooks doing bookkeeping.
_SUMMARY_CELL = (
    "import json as _json\nfrom invtools.notebook import session_summary as _summary\n"
    f"print({SUMMARY_MARKER!r} + _json.dumps(_summary()))"
)


@dataclass
class NotebookRun:
    """What running one notebook gave: where its files are and what its clients did."""

    path: Path
    html: Path | None = None
    figures: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def kernel_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for demo kernels: this one without any ``INVTOOLS_TOKEN*`` (the demo
    runs on the built-in data, never on a real team), plus ``extra``.

    >>> env = kernel_env({"MY_SETTING": "1"})
    >>> env["MY_SETTING"], any(name.startswith("INVTOOLS_TOKEN") for name in env)
    ('1', False)
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(TOKEN_ENV)}  # and _<NAME>
    env.pop(BASE_URL_ENV, None)
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    env.update(extra or {})
    return env


def execute_notebook(path: Path, *, env: dict[str, str], timeout: int = 600):
    """Execute the notebook at ``path`` in a fresh kernel; return (notebook, summary dict).

    Raises nbclient's ``CellExecutionError`` when a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_SUMMARY_CELL))
    with tempfile.TemporaryDirectory(prefix="invtools-kernel-") as sockets:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            # IPC sockets: the kernel's traffic never crosses TCP, not even on loopback. Their
            # path must be absolute: the kernel runs in the notebook's folder, not ours.
            config=Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "k")}}),
        ).execute(env=env)
    said = [out.get("text", "") for out in nb.cells.pop().get("outputs", [])]  # the summary cell's
    marked = [text.split(SUMMARY_MARKER, 1)[1] for text in said if SUMMARY_MARKER in text]
    return nb, json.loads(marked[-1]) if marked else {}


def _save_figures(nb, stem: str, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    outputs = (out for cell in nb.cells for out in cell.get("outputs", []))
    pngs = [out["data"]["image/png"] for out in outputs if "image/png" in out.get("data", {})]
    saved = [folder / f"{stem}-{i:02d}.png" for i in range(1, len(pngs) + 1)]
    for target, png in zip(saved, pngs, strict=True):
        target.write_bytes(base64.b64decode(png))
    return saved


def _export_html(nb, target: Path) -> Path:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    return target


def run_notebooks(
    notebooks: Iterable[str | os.PathLike], out_dir: str | os.PathLike
) -> list[NotebookRun]:
    """Execute ``notebooks`` one after another, writing HTML and PNGs under ``out_dir``.

    A failing notebook is reported and the others still run; progress is printed.
    """
    out = Path(out_dir)
    # Each kernel starts its own demo server, whose answers are cached in a temporary folder
    # of its own, removed when the kernel ends (invtools.connect): the user's cache is left
    # alone, and no build folder fills with answers no later run can use.
    env = kernel_env()
    paths = [Path(p) for p in notebooks]
    runs = []
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}] {path.name} ...", end=" ", flush=True)
        run = NotebookRun(path)
        started = time.perf_counter()
        try:
            nb, run.summary = execute_notebook(path, env=env)
        except Exception as exc:  # report and go on with the other notebooks
            run.error = _last_line(exc)
        run.seconds = time.perf_counter() - started
        if run.ok:
            run.html = _export_html(nb, out / "html" / f"{path.stem}.html")
            run.figures = _save_figures(nb, path.stem, out / "figures")
            print(_summary_line(run))
        else:
            print(f"FAILED after {run.seconds:.1f} s: {run.error}")
        runs.append(run)
    return runs


def _last_line(exc: BaseException) -> str:
    """The gist of a notebook failure: the error's last line, without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return f"{type(exc).__name__}: {text.splitlines()[-1] if text else ''}"


#: The real service's documented limit: what the demo's requests would cost there.
REAL_SERVICE_RATE = 5.0


def real_service_cost(sent: int) -> str:
    """What ``sent`` requests take on the real service, paced at its limit (the demo server
    answers at once; the real one about 5 a second at best).

    >>> real_service_cost(4046), real_service_cost(0)
    ('about 13 min on the real service at 5 requests/s', 'nothing on the real service')
    """
    if sent <= 0:
        return "nothing on the real service"
    return (
        f"{about(sent / REAL_SERVICE_RATE)} on the real service at {REAL_SERVICE_RATE:g} requests/s"
    )


def _summary_line(run: NotebookRun) -> str:
    s = run.summary or {}
    teams = ", ".join(s.get("teams", [])) or "-"
    sent = int(s.get("sent", 0))
    return (
        f"ok in {run.seconds:.1f} s: team {teams}; {s.get('rows', 0):,} rows fetched, "
        f"{sent:,} requests sent ({real_service_cost(sent)}), "
        f"{s.get('from_cache', 0):,} from cache; {len(run.figures)} figures"
    )


def report(runs: Sequence[NotebookRun], out_dir: str | os.PathLike) -> str:
    """A closing summary of a demo run."""
    out = Path(out_dir)
    lines = [
        "",
        f"{sum(r.ok for r in runs)} of {len(runs)} notebooks ran.",
        f"HTML copies: {out / 'html'}",
        f"Figures:     {out / 'figures'} ({sum(len(r.figures) for r in runs)} PNG files)",
        *(f"FAILED: {r.path.name}: {r.error}" for r in runs if not r.ok),
    ]
    return "\n".join(lines)
