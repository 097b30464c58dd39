"""Browser check of the notebook widgets in real JupyterLab + Chromium (not part of `make test`).

What it does, end to end, on 127.0.0.1 only:

1. starts the stand-in server (``invtools.sandbox.serve``) in this process;
2. writes a small notebook showing ``token_picker()`` (the demo tokens exported as
   ``INVTOOLS_TOKEN_SHOP`` / ``INVTOOLS_TOKEN_BASIC``) and ``activity_explorer()`` of the shop;
3. starts JupyterLab (free port, generated token, no browser, its config, settings, workspaces
   and runtime files in a scratch folder, widget state saving switched on);
4. drives Chromium with Playwright: opens the notebook, runs all cells, picks "shop" in the
   dropdown, pastes the basic team's token and presses Connect, switches the explorer to
   months, then to quantities without the opening stock counts, checks that the four Types
   checkboxes show whole inside the explorer (none clipped), and saves screenshots under
   ``build/browser-check/`` (``5-explorer.png``: the explorer alone);
5. saves the notebook (with widget state) and asserts the saved file holds the widget state
   (the team's name in the status line) but no token;
6. stops everything it started and prints how long each step took.

Needs: ``apt-get install -y chromium`` and ``pip install jupyterlab playwright`` (Playwright's
own browser download is not needed: the system Chromium is used).

    python scripts/browser_check.py [--out build/browser-check] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
NOTEBOOK = "widgets-check.ipynb"

CELLS = [
    "# Browser check of the invtools widgets (written by scripts/browser_check.py)",
    """import os
from invtools import token_picker, activity_explorer

BASE_URL = os.environ["INVTOOLS_BASE_URL"]
picker = token_picker(base_url=BASE_URL, cache=False, rate_limit=0)
picker""",
    """from invtools.api import Client

shop = Client(os.environ["INVTOOLS_TOKEN_SHOP"], base_url=BASE_URL, cache=False, rate_limit=0)
explorer = activity_explorer(shop)
explorer""",
]


class Timer:
    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.last = self.t0
        self.steps: list[tuple[str, float]] = []

    def step(self, name: str) -> None:
        now = time.monotonic()
        self.steps.append((name, now - self.last))
        self.last = now
        print(f"  {now - self.t0:5.1f} s  (+{self.steps[-1][1]:4.1f} s)  {name}", flush=True)

    @property
    def total(self) -> float:
        return time.monotonic() - self.t0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path) -> None:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": CELLS[0]}]
    cells += [
        {"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
        for src in CELLS[1:]
    ]
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    }
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"
    path.write_text(json.dumps(nb, indent=1))


def lab_environment(scratch: Path, sb) -> dict[str, str]:
    """Environment of JupyterLab and its kernels: tokens by name, the package on the path,
    and every Jupyter/cache folder in the scratch area (nothing of the user's is touched)."""
    env = dict(os.environ)
    for name, token in sb.tokens.items():
        env[f"INVTOOLS_TOKEN_{name.upper()}"] = token
    env.pop("INVTOOLS_TOKEN", None)
    env["INVTOOLS_BASE_URL"] = sb.base_url
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["JUPYTER_CONFIG_DIR"] = str(scratch / "config")
    env["JUPYTER_RUNTIME_DIR"] = str(scratch / "runtime")
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    env["IPYTHONDIR"] = str(scratch / "ipython")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    # The announcements plugin pops a "news?" toast over the notebook: off for this check.
    labconfig = scratch / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    # Widget state is saved with the notebook only when this setting is on (off by default).
    plugin = scratch / "settings" / "@jupyter-widgets" / "jupyterlab-manager"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    return env


def start_lab(
    scratch: Path, notebooks: Path, env: dict[str, str]
) -> tuple[subprocess.Popen, str, str]:
    port, token = free_port(), secrets.token_hex(16)
    log = open(scratch / "jupyterlab.log", "w")  # noqa: SIM115 - closed with the process
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={notebooks}",
        f"--LabApp.user_settings_dir={scratch / 'settings'}",
        f"--LabApp.workspaces_dir={scratch / 'workspaces'}",
        "--LabApp.news_url=",
        "--ServerApp.open_browser=False",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run as root
        cmd.append("--allow-root")
    proc = subprocess.Popen(
        cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=notebooks
    )
    proc._log = log  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early; see {scratch / 'jupyterlab.log'}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    return proc, url, token
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"JupyterLab did not answer within 90 s; see {scratch / 'jupyterlab.log'}")


def stop_lab(proc: subprocess.Popen, url: str, token: str) -> None:
    """Shut the server down through its API (which stops its kernels), then make sure."""
    try:
        req = urllib.request.Request(
            f"{url}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
        )
        urllib.request.urlopen(req, timeout=5).close()
    except OSError:
        pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the session this script started, nothing else
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    proc._log.close()  # type: ignore[attr-defined]


def drive(url: str, token: str, sb, out: Path, chromium: str, timer: Timer) -> None:
    from playwright.sync_api import expect, sync_playwright

    basic_token = sb.tokens["basic"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            page.set_default_timeout(30_000)
            page.goto(f"{url}/lab/tree/{NOTEBOOK}?token={token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
            accept_kernel_dialog(page, 5000)
            # Wait until the kernel is ready, or "Run All" may be swallowed.
            expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle").first).to_be_visible()
            timer.step("JupyterLab open, kernel idle")

            run_all(page)
            dropdown = page.locator(".widget-dropdown select").first
            expect(dropdown).to_be_visible()
            image = page.locator(".widget-image").first
            expect(image).to_be_visible(timeout=120_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
            timer.step("all cells run, widgets shown")
            page.screenshot(path=str(out / "1-run-all.png"), full_page=True)

            dropdown.select_option(label="shop")
            status = page.locator(".widget-html", has_text="Connected to").first
            expect(status).to_contain_text("Greenfield Hardware")
            timer.step("picked 'shop' in the dropdown")
            page.screenshot(path=str(out / "2-picked-shop.png"), full_page=True)

            password = page.locator(".widget-password input, input[type='password']").first
            password.fill(basic_token)
            page.locator("button", has_text="Connect").first.click()
            expect(page.locator(".widget-html", has_text="Corner").first).to_contain_text(
                "does not manage stock by location"
            )
            expect(password).to_have_value("")  # emptied by the kernel, synced back
            timer.step("pasted the basic token, Connect, field emptied")
            page.screenshot(path=str(out / "3-pasted-basic.png"), full_page=True)

            before = (
                image.locator("img").get_attribute("src")
                if image.locator("img").count()
                else image.get_attribute("src")
            )
            page.locator(".widget-toggle-buttons button", has_text="month").first.click()
            page.wait_for_function(
                "([before]) => { const i = document.querySelector('img.widget-image') ||"
                " document.querySelector('.widget-image img'); return i && i.src !== before; }",
                arg=[before],
            )
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
            timer.step("explorer switched to months, picture redrawn")
            image.scroll_into_view_if_needed()
            page.screenshot(path=str(out / "4-explorer-months.png"), full_page=True)

            explorer = page.locator(".widget-vbox", has=page.locator(".widget-image")).first
            before = image_src(page)
            explorer.locator(".widget-toggle-buttons button", has_text="quantity").first.click()
            wait_redrawn(page, before)
            summary = explorer.locator(".widget-html", has_text="Total:").first
            expect(summary).to_contain_text("units (absolute")
            expect(summary).to_contain_text("Includes 4 opening stock counts")
            before = image_src(page)
            explorer.locator(".widget-checkbox", has_text="Leave out opening stock counts").locator(
                "input"
            ).click()
            wait_redrawn(page, before)
            expect(summary).to_contain_text("Left out: 4 opening stock counts")
            timer.step("explorer: quantities, opening stock counts left out")
            check_types_shown(explorer)
            explorer.scroll_into_view_if_needed()
            explorer.screenshot(path=str(out / "5-explorer.png"))
            timer.step("Types checkboxes whole; explorer screenshot")

            save(page, url, token)
            timer.step("notebook saved")
        except Exception:
            page.screenshot(path=str(out / "failure.png"), full_page=True)
            (out / "failure.html").write_text(page.content())
            raise
        finally:
            browser.close()


def save(page, url: str, token: str) -> None:
    """File > Save, then wait until the server holds the notebook with its outputs and widget
    state: a panel that was never marked dirty looks saved at once, and stopping JupyterLab
    then left the file as it was written (no outputs, no state). Tried a second time with
    Ctrl+S if the first save does not arrive."""
    for attempt in range(2):
        page.locator(".jp-NotebookPanel").first.click(position={"x": 5, "y": 5})
        if attempt == 0:
            page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
            page.locator("li[data-command='docmanager:save']").first.click()
        else:
            page.keyboard.press("Control+s")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            req = urllib.request.Request(
                f"{url}/api/contents/{NOTEBOOK}?content=1",
                headers={"Authorization": f"token {token}"},
            )
            with urllib.request.urlopen(req, timeout=5) as r:
                model = json.load(r)
            if model["content"]["metadata"].get("widgets"):
                return
            time.sleep(0.3)
    raise AssertionError("the notebook was not saved with its widget state within 40 s")


def image_src(page) -> str | None:
    """The explorer picture's current ``src`` (a data URL that changes with every redraw)."""
    return page.evaluate(
        "() => { const i = document.querySelector('img.widget-image') ||"
        " document.querySelector('.widget-image img'); return i && i.src; }"
    )


def wait_redrawn(page, before: str | None) -> None:
    page.wait_for_function(
        "([before]) => { const i = document.querySelector('img.widget-image') ||"
        " document.querySelector('.widget-image img'); return i && i.src !== before; }",
        arg=[before],
    )
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")


def check_types_shown(explorer) -> None:
    """Each of the four Types checkboxes, box and name, lies whole inside the explorer and
    inside its own row: nothing clipped (the old four-row list cut its first row)."""
    outer = explorer.bounding_box()
    for kind in ("in", "out", "move", "adjust"):
        box = (
            explorer.locator(".widget-checkbox")
            .filter(has=explorer.page.get_by_text(kind, exact=True))
            .first
        )
        for part in (box.locator("input"), box.get_by_text(kind, exact=True)):
            b = part.bounding_box()
            assert b and b["width"] > 0 and b["height"] > 0, f"Types {kind!r} is not shown"
            assert (
                outer["x"] <= b["x"]
                and b["x"] + b["width"] <= outer["x"] + outer["width"]
                and outer["y"] <= b["y"]
                and b["y"] + b["height"] <= outer["y"] + outer["height"]
            ), f"Types {kind!r} is cut off: {b} outside {outer}"
        row = box.bounding_box()
        text = box.get_by_text(kind, exact=True).bounding_box()
        assert (
            row["y"] - 0.5 <= text["y"]
            and text["y"] + text["height"] <= row["y"] + row["height"] + 0.5
        ), f"Types {kind!r}: its name overflows its row"


def accept_kernel_dialog(page, wait_ms: int) -> None:
    """JupyterLab may ask which kernel to start; the notebook's own (Python 3) is preselected."""
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    try:
        dialog.wait_for(state="visible", timeout=wait_ms)
    except Exception:  # noqa: BLE001 - no dialog: the kernel started on its own
        return
    dialog.locator("button.jp-mod-accept").click()
    dialog.wait_for(state="hidden")


def run_all(page) -> None:
    """Run > Run All Cells, through the menu as a person would."""
    page.locator(".jp-NotebookPanel .jp-Cell").first.click()
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").first.click()
    accept_kernel_dialog(page, 3000)


def check_saved(path: Path, sb) -> dict:
    text = path.read_text()
    for name, token in sb.tokens.items():
        assert token not in text, f"the saved notebook contains team {name!r}'s token"
    nb = json.loads(text)
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json")
    assert state and state.get("state"), "the notebook was saved without widget state"
    html_values = [
        m["state"].get("value", "")
        for m in state["state"].values()
        if m.get("model_name") == "HTMLModel"
    ]
    assert any("Corner" in v for v in html_values), "the picker's status is not in the state"
    passwords = [
        m["state"].get("value")
        for m in state["state"].values()
        if m.get("model_name") == "PasswordModel"
    ]
    assert passwords and all(v in ("", None) for v in passwords), passwords
    return {
        "bytes": len(text),
        "widgets": len(state["state"]),
        "images": sum(m.get("model_name") == "ImageModel" for m in state["state"].values()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "browser-check"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not Path(args.chromium).exists():
        print(f"no Chromium at {args.chromium}: apt-get install -y chromium", file=sys.stderr)
        return 2

    from invtools.sandbox import serve

    timer = Timer()
    scratch = Path(tempfile.mkdtemp(prefix="invtools-browser-check-"))
    notebooks = scratch / "notebooks"
    notebooks.mkdir()
    proc = None
    try:
        with ExitStack() as stack:
            sb = stack.enter_context(serve(port=0, rate_limit=0, seed=0))
            write_notebook(notebooks / NOTEBOOK)
            env = lab_environment(scratch, sb)
            timer.step("stand-in server up, notebook written")
            proc, url, token = start_lab(scratch, notebooks, env)
            timer.step("JupyterLab server answering")
            try:
                drive(url, token, sb, out, args.chromium, timer)
            finally:
                stop_lab(proc, url, token)
                timer.step("JupyterLab stopped")
            saved = out / "saved-notebook.ipynb"
            shutil.copy(notebooks / NOTEBOOK, saved)
            figures = check_saved(saved, sb)
            print(
                f"saved notebook {saved}: {figures['bytes']:,} bytes, {figures['widgets']} "
                f"widget models ({figures['images']} image), no token in it"
            )
    finally:
        if args.keep:
            print(f"scratch folder kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"browser check passed in {timer.total:.1f} s; screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
