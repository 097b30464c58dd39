"""The README says what the code does: its Python blocks run, in order, against the stand-in
server (no token in the environment, so ``invtools.connect()`` starts the demo server), its
shell blocks name only make targets and commands that exist, and it links nothing outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from invtools import notebook
from invtools.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def links(text: str) -> list[str]:
    """The targets of a Markdown text's inline links, code spans left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_python_blocks_run_in_order(demo_process, capsys):
    import matplotlib.pyplot as plt

    code = blocks(README, "python")
    assert len(code) >= 3
    namespace: dict = {"__name__": "__readme__"}
    for i, block in enumerate(code, 1):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        finally:
            plt.close("all")
    out = capsys.readouterr()
    assert "BUILT-IN DEMO SERVER" in out.err  # the quickstart said so
    assert "team 'Corner Café' (id 51877) is in Basic mode" in out.out  # the team-mode error
    for token in notebook.demo_server().tokens.values():
        assert token not in out.out + out.err


def test_shell_blocks_use_only_what_exists():
    makefile = (ROOT / "Makefile").read_text()
    for block in blocks(README, "sh"):
        for line in block.splitlines():
            cmd = line.split("#")[0].strip()
            if cmd.startswith("make "):
                target = cmd.split()[1]
                assert re.search(rf"^{target}:", makefile, flags=re.M), f"no make target {target}"
            elif cmd.startswith("python -m invtools "):
                assert cmd.split()[3] in COMMANDS


def test_every_link_stays_in_the_repository_and_resolves():
    found = links(README)
    assert len(found) >= 10
    for target in found:
        assert "://" not in target and not target.startswith("/"), f"link outside: {target}"
        assert (ROOT / target.split("#")[0]).exists(), f"broken link: {target}"


def test_it_stays_short():
    assert len(README.splitlines()) <= 170
