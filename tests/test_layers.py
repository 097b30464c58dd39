"""The package's layers hold: which part may import which (README, "The map of the package"),
no import cycles between modules, and no module reaching into another module's private names.

Read from the source with ``ast``, so an import hidden inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "invtools"

FOUNDATION = {
    "errors",
    "_config",
    "_types",
    "_durations",
    "_files",
    "_progress",
    "_clock",
}
#: part -> the parts it may import (itself always allowed).
ALLOWED: dict[str, set[str]] = {
    "foundation": set(),
    "http": {"foundation"},
    "frames": {"foundation"},
    "api": {"http", "frames", "foundation"},
    "mirror": {"api", "frames", "foundation"},
    "dlt": {"mirror", "api", "frames", "foundation"},  # the only part that imports dlt
    "analysis": {"frames", "foundation"},
    "viz": {"frames", "foundation"},
    "notebook": {"api", "viz", "mirror", "frames", "analysis", "sandbox", "foundation"},
    "sandbox": set(),  # the stand-in implements the API's contract, not the client's idea of it
    "cli": {"notebook", "sandbox", "dlt", "foundation"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def part_of(module: str) -> str | None:
    """The layer a module ``invtools.x.y`` belongs to (None: the package's front door)."""
    head = module.split(".")[1] if "." in module else None
    if head is None or head in ("__main__",):
        return None
    return "foundation" if head in FOUNDATION else head


def _imports(module: str, path: Path) -> list[tuple[str, list[str], bool]]:
    """(imported module, names imported from it, at module level?) for every invtools import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "invtools":
                    found.append((alias.name, [], id(node) in top_level))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([base] if base else [])
                )
            if base.split(".")[0] != "invtools":
                continue
            names = [a.name for a in node.names]
            # "from invtools import frames" imports the submodule frames
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
            if subs:
                found += [(s, [], id(node) in top_level) for s in subs]
            else:
                found.append((base, names, id(node) in top_level))
    return found


@pytest.mark.parametrize("module", [m for m in MODULES if part_of(m) is not None])
def test_each_part_imports_only_what_its_layer_allows(module):
    mine = part_of(module)
    bad = []
    for target, _names, _top in _imports(module, MODULES[module]):
        theirs = part_of(target)
        if theirs is None:
            bad.append(f"{target} (the package's front door: import the part itself)")
        elif theirs != mine and theirs not in ALLOWED[mine]:
            bad.append(target)
    assert not bad, f"{module} ({mine}) may import {sorted(ALLOWED[mine])}, not {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_uses_another_modules_private_names(module):
    bad = []
    for target, names, _top in _imports(module, MODULES[module]):
        if target != module:
            bad += [f"{target}.{n}" for n in names if n.startswith("_") and n != "__version__"]
    # module._name through an imported module object
    tree = ast.parse(MODULES[module].read_text())
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("invtools"):
                    aliases[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("invtools"):
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(f"{aliases[node.value.id]}.{node.attr}")
    assert not bad, f"{module} reaches into private names: {bad}"


def test_no_import_cycles_between_modules():
    graph = {
        m: {t for t, _n, top in _imports(m, p) if top and t in MODULES and t != m}
        for m, p in MODULES.items()
    }
    # A package's __init__ importing its own submodules is how it exports them: not a cycle
    # as long as the submodules do not need the __init__ back, which the edges below catch.
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])
    assert not cycles, f"import cycles: {cycles}"


def test_every_module_is_short_enough_to_read_in_one_sitting():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 450}
    assert not long, f"modules over 450 lines: {long}"


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if init.parent == PACKAGE:
            continue
        assert "import" in doc.lower() and len(doc) > 200, f"{init} needs a docstring map"
