"""Check the built docs site offline in Chromium (not part of `make test`).

Run ``make docs`` (``scripts/build_docs.py``) first; then this script opens the site's pages
from ``file://`` in headless Chromium with the network off (every request that is not for a
local file is aborted and counted: any such request fails the check) and checks that

1. the notebook page showing ``activity_explorer()`` renders it from the widget state saved in
   the page: its dropdowns, date pickers and checkboxes, and its chart as a picture;
2. the notebook page showing ``token_picker()`` renders it: its dropdown, token field and
   Connect button, and neither page shows anything token-like (its token field is empty);
3. the site's search finds a word typed into its search box.

It saves element screenshots of both widgets as ``docs/img/offline-explorer.png`` and
``docs/img/offline-picker.png`` (the pictures docs/how-to/widgets.md shows) and prints what it
checked and how long it took. Which pages show the widgets is read from the example notebooks'
code. Exit status: 0 when every check passed, 1 when one failed, 2 when it could not run.

Needs: ``apt-get install -y chromium`` and ``pip install playwright`` (Playwright's own browser
download is not needed: the system Chromium is used).

    python scripts/docs_check.py [--site build/site] [--img docs/img] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from browser_check import CHROMIUM_ARGS  # noqa: E402 - this folder's: the same flags for Chromium

#: URL schemes that stay on this machine; a request for anything else is aborted and counted.
LOCAL = ("file:", "data:", "blob:", "about:")
#: How long the html-manager may take to render a page's widgets.
RENDER_TIMEOUT_MS = 30_000
#: The demo server's tokens (``sbx_<team>_<32 characters>``)...
DEMO_TOKEN = re.compile(r"sbx_[a-z0-9]+_[A-Za-z0-9]{8,}")
#: ...and, in what a widget shows, any long secret-like run of characters.
TOKEN_LIKE = re.compile(rf"{DEMO_TOKEN.pattern}|\b[A-Za-z0-9_\-]{{32,}}\b")
SEARCH_WORD = "explorer"


class CheckFailed(Exception):
    pass


def widget_pages(site: Path) -> dict[str, Path]:
    """``{"explorer": page, "picker": page}``: the site's page of the first example notebook
    whose code calls ``activity_explorer(`` / ``token_picker(``."""
    from invtools.notebook.demo import example_notebooks

    wanted = {"explorer": "activity_explorer(", "picker": "token_picker("}
    found: dict[str, Path] = {}
    for path in example_notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        for name, call in wanted.items():
            if name not in found and call in code:
                found[name] = site / "notebooks" / f"{path.stem}.html"
    for name, call in wanted.items():
        if name not in found:
            raise CheckFailed(f"no example notebook calls {call[:-1]}()")
        if not found[name].is_file():
            raise CheckFailed(f"{found[name]} is missing: run `make docs` first")
    return found


def rendered_widget(page, has: str, what: str):
    """The rendered widget (html-manager's ``.widget-subarea``) that contains ``has``."""
    area = page.locator(".widget-subarea", has=page.locator(has)).first
    try:
        area.wait_for(state="visible", timeout=RENDER_TIMEOUT_MS)
    except Exception as exc:  # noqa: BLE001 - Playwright's timeout, said in our words
        shown = page.locator(".widget-subarea").count()
        raise CheckFailed(
            f"{what}: not rendered within {RENDER_TIMEOUT_MS / 1000:.0f} s ({shown} widget "
            f"area(s) on the page; is assets/vendor/html-manager/embed.js in the site?)"
        ) from exc
    return area


def count_visible(area, selector: str) -> int:
    items = area.locator(selector)
    return sum(items.nth(i).is_visible() for i in range(items.count()))


def expect_at_least(area, selector: str, n: int, what: str) -> int:
    shown = count_visible(area, selector)
    if shown < n:
        raise CheckFailed(f"{what}: {shown} visible {selector!r}, expected at least {n}")
    return shown


#: The controls' names (labels, checkbox names) whose text is wider than the space given them.
CUT_NAMES = """area => Array.from(area.querySelectorAll(
    '.widget-label, .widget-label-basic, .widget-checkbox label, .widget-checkbox span'))
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.textContent.trim())"""


def check_names_whole(area, what: str) -> None:
    cut = area.evaluate(CUT_NAMES)
    if cut:
        box = area.bounding_box()
        width = round(box["width"]) if box else 0
        raise CheckFailed(f"{what}: names cut short (the widget is {width} px wide): {cut}")


def check_no_token(page, area, what: str) -> None:
    """No token-like text in the page's HTML or the widget's text, no value in its inputs."""
    m = DEMO_TOKEN.search(page.content())
    if m:
        raise CheckFailed(f"{what}: a demo token is in the page: {m.group()[:12]}...")
    text = area.inner_text()
    values = area.locator("input").evaluate_all("els => els.map(e => e.value)")
    for value in [text, *values]:
        m = TOKEN_LIKE.search(value)
        if m:
            raise CheckFailed(f"{what}: something token-like is shown: {m.group()[:12]}...")
    passwords = area.locator("input[type=password]").evaluate_all("els => els.map(e => e.value)")
    if any(passwords):
        raise CheckFailed(f"{what}: the token field is not empty")


def check_explorer(page, url: str, shot: Path) -> str:
    page.goto(url)
    area = rendered_widget(page, ".widget-image", "activity explorer")
    # Split by; From and To; Per, Chart, Metric, Units; four Types and the opening counts
    dropdowns = expect_at_least(area, ".widget-dropdown select", 1, "explorer")
    dates = expect_at_least(area, ".widget-datepicker input", 2, "explorer")
    toggles = expect_at_least(area, ".widget-toggle-buttons", 4, "explorer")
    boxes = expect_at_least(area, ".widget-checkbox input[type=checkbox]", 5, "explorer")
    check_names_whole(area, "explorer")
    img = area.locator("img.widget-image, .widget-image img").first
    size = img.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]")
    box = img.bounding_box()
    if not (size[0] and size[1] > 100 and size[2] > 100 and box and box["width"] > 200):
        raise CheckFailed(f"explorer: the chart is not shown (complete, w, h = {size}; {box})")
    check_no_token(page, area, "explorer")
    area.scroll_into_view_if_needed()
    area.screenshot(path=str(shot))
    return (
        f"explorer: {dropdowns} dropdown, {dates} date pickers, {toggles} toggle button groups, "
        f"{boxes} checkboxes,"
        f" chart {size[1]}x{size[2]} px"
    )


def check_picker(page, url: str, shot: Path) -> str:
    page.goto(url)
    area = rendered_widget(page, "input[type=password]", "token picker")
    expect_at_least(area, ".widget-dropdown select", 1, "picker")
    expect_at_least(area, "input[type=password]", 1, "picker")
    connect = area.locator("button", has_text="Connect")
    if not connect.count() or not connect.first.is_visible():
        raise CheckFailed("picker: no visible Connect button")
    check_names_whole(area, "picker")
    check_no_token(page, area, "picker")
    area.scroll_into_view_if_needed()
    area.screenshot(path=str(shot))
    options = area.locator(".widget-dropdown select option").all_inner_texts()
    return f"picker: dropdown {options}, empty token field, Connect button; no token shown"


def check_search(page, url: str) -> str:
    page.goto(url)
    box = page.locator(".md-search__input")
    box.click()
    box.press_sequentially(SEARCH_WORD, delay=30)  # typed: Material searches on key events
    results = page.locator(".md-search-result__item")
    try:
        results.first.wait_for(state="visible", timeout=RENDER_TIMEOUT_MS)
    except Exception as exc:  # noqa: BLE001 - Playwright's timeout, said in our words
        meta = page.locator(".md-search-result__meta").first
        said = meta.inner_text() if meta.count() else "nothing"
        raise CheckFailed(f"search: no results for {SEARCH_WORD!r} (it says: {said})") from exc
    return f"search: {results.count()} result(s) for {SEARCH_WORD!r}"


def network_said(remote: dict[str, None]) -> str:
    return f"requests for {len(remote)} network URL(s): " + ", ".join(remote)


def run(site: Path, img: Path, chromium: str) -> list[str]:
    from playwright.sync_api import sync_playwright

    pages = widget_pages(site)
    remote: dict[str, None] = {}  # the network URLs asked for, in order (a route and the
    # request event both see most requests)
    errors: list[str] = []

    def route(r) -> None:
        if r.request.url.startswith(LOCAL):
            r.continue_()
        else:
            remote[r.request.url] = None
            r.abort("internetdisconnected")

    def on_request(request) -> None:  # also those a route might not see (workers)
        if not request.url.startswith(LOCAL):
            remote[request.url] = None

    said = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1280, "height": 1000})
            context.route("**/*", route)
            context.on("request", on_request)
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            img.mkdir(parents=True, exist_ok=True)
            explorer, picker = img / "offline-explorer.png", img / "offline-picker.png"
            said.append(check_explorer(page, pages["explorer"].as_uri(), explorer))
            said.append(check_picker(page, pages["picker"].as_uri(), picker))
            said.append(check_search(page, (site / "index.html").as_uri()))
        except CheckFailed as exc:
            if remote:  # most likely why
                raise CheckFailed(f"{exc}; {network_said(remote)}") from exc
            raise
        finally:
            browser.close()
    if errors:
        print(f"note: {len(errors)} error(s) in the browser console:")
        for e in dict.fromkeys(errors):
            print(f"  {e[:200]}")
    if remote:
        raise CheckFailed(network_said(remote))
    said.append("network: no request left the machine")
    return said


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "build" / "site"))
    ap.add_argument("--img", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args(argv)
    if not Path(args.chromium).exists():
        print(f"no Chromium at {args.chromium}: apt-get install -y chromium", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        said = run(Path(args.site), Path(args.img), args.chromium)
    except CheckFailed as exc:
        print(f"docs check FAILED: {exc}", file=sys.stderr)
        return 1
    for line in said:
        print(f"  {line}")
    print(f"docs check passed in {time.monotonic() - t0:.1f} s; screenshots in {args.img}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
